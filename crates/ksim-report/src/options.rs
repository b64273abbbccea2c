//! Settings of the outputs ([`ReportOptions`]), shared by the recorder and `utilization.csv`.

/// The most steps a run's grid may have by default.
pub const MAX_STEPS: i64 = 2_000;

/// Settings of the outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportOptions {
    /// Upper bound on the number of grid steps of `utilization.csv` (samples = steps + 1).
    pub max_steps: i64,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            max_steps: MAX_STEPS,
        }
    }
}
