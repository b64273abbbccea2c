//! simkube (in progress).
use std::path::PathBuf;

use super::ImportContext;
use crate::error::TraceError;

pub fn import(_cx: &mut ImportContext<'_>, _inputs: &[PathBuf]) -> Result<(), TraceError> {
    Err(TraceError::at_field(
        "simkube",
        "",
        "importer not written yet",
    ))
}
