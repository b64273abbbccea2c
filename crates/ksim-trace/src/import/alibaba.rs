//! Alibaba v2017, v2018, v2020 machines, v2025 DLRM and v2026 spot nodes (in progress).
use std::path::PathBuf;

use super::ImportContext;
use crate::error::TraceError;

fn todo(what: &str) -> Result<(), TraceError> {
    Err(TraceError::at_field(what, "", "importer not written yet"))
}
pub fn import_v2017(_cx: &mut ImportContext<'_>, _inputs: &[PathBuf]) -> Result<(), TraceError> {
    todo("alibaba-v2017")
}
pub fn import_v2018(_cx: &mut ImportContext<'_>, _inputs: &[PathBuf]) -> Result<(), TraceError> {
    todo("alibaba-v2018")
}
pub fn import_v2020_machines(
    _cx: &mut ImportContext<'_>,
    _inputs: &[PathBuf],
) -> Result<(), TraceError> {
    todo("x")
}
pub fn import_v2025_dlrm(
    _cx: &mut ImportContext<'_>,
    _inputs: &[PathBuf],
) -> Result<(), TraceError> {
    todo("x")
}
pub fn import_v2026_spot(
    _cx: &mut ImportContext<'_>,
    _inputs: &[PathBuf],
) -> Result<(), TraceError> {
    todo("x")
}
