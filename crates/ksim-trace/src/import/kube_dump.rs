//! kube dump (in progress).
use std::path::{Path, PathBuf};

use super::ImportContext;
use crate::error::TraceError;

pub fn import(
    _cx: &mut ImportContext<'_>,
    _inputs: &[PathBuf],
    _out: &Path,
) -> Result<(), TraceError> {
    Err(TraceError::at_field(
        "kube-dump",
        "",
        "importer not written yet",
    ))
}
