//! Google Borg 2011 / 2019 (in progress).
use std::path::PathBuf;

use super::ImportContext;
use crate::error::TraceError;

pub fn import_2011(_cx: &mut ImportContext<'_>, _inputs: &[PathBuf]) -> Result<(), TraceError> {
    Err(TraceError::at_field(
        "borg-2011",
        "",
        "importer not written yet",
    ))
}
pub fn import_2019(_cx: &mut ImportContext<'_>, _inputs: &[PathBuf]) -> Result<(), TraceError> {
    Err(TraceError::at_field(
        "borg-2019",
        "",
        "importer not written yet",
    ))
}
