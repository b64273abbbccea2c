//! A progress bar by virtual time, shown only when stderr is a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use ksim_engine::SimTime;

pub struct VirtualTimeProgress {
    bar: Option<ProgressBar>,
    last_secs: i64,
}

impl VirtualTimeProgress {
    /// `horizon` None: a spinner showing the virtual time reached.
    pub fn new(label: &str, horizon: Option<SimTime>) -> VirtualTimeProgress {
        if !std::io::stderr().is_terminal() || std::env::var_os("CI").is_some() {
            return VirtualTimeProgress {
                bar: None,
                last_secs: -1,
            };
        }
        let bar = match horizon {
            Some(h) => {
                let b = ProgressBar::with_draw_target(
                    Some(h.whole_secs().max(1) as u64),
                    ProgressDrawTarget::stderr(),
                );
                b.set_style(
                    ProgressStyle::with_template(
                        "{msg} [{bar:40}] {pos}/{len} s virtual ({elapsed} wall)",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                );
                b
            }
            None => {
                let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                b.set_style(
                    ProgressStyle::with_template(
                        "{spinner} {msg} {pos} s virtual ({elapsed} wall)",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                b
            }
        };
        bar.set_message(label.to_string());
        VirtualTimeProgress {
            bar: Some(bar),
            last_secs: -1,
        }
    }

    pub fn update(&mut self, at: SimTime) {
        let s = at.whole_secs();
        if s != self.last_secs {
            self.last_secs = s;
            if let Some(b) = &self.bar {
                b.set_position(s.max(0) as u64);
            }
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// One overall bar for the runs of a sweep, shown only when stderr is a terminal.
pub struct RunsProgress {
    bar: Option<ProgressBar>,
}

impl RunsProgress {
    pub fn new(label: &str, runs: u64) -> RunsProgress {
        if !std::io::stderr().is_terminal() || std::env::var_os("CI").is_some() {
            return RunsProgress { bar: None };
        }
        let b = ProgressBar::with_draw_target(Some(runs), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:40}] {pos}/{len} runs ({elapsed} wall, eta {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b.set_message(label.to_string());
        RunsProgress { bar: Some(b) }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl ksim_sweep::SweepProgress for RunsProgress {
    fn run_done(&self, _id: &str) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }
}
