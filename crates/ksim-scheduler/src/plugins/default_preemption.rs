//! `DefaultPreemption`: being implemented (see the helper working on this file).

use std::sync::Arc;

use crate::framework::{FactoryArgs, Plugin, PluginRef};

pub const NAME: &str = "DefaultPreemption";

pub struct Plug;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(Plug))
}

impl Plugin for Plug {
    fn name(&self) -> &'static str {
        NAME
    }
}
