//! Pod importance (upstream `util.MoreImportantPod`, `GetPodStartTime`,
//! `GetEarliestPodStartTime`): start times parsed from RFC 3339, and the order victims are
//! reprieved and candidates compared in.

use std::cmp::Ordering;

use crate::pod_info::PodInfo;

/// A pod's start time as `util.GetPodStartTime` reads it: `status.startTime`, or "now" for a pod
/// that has not started (ordered after every real time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StartTime {
    /// Nanoseconds since the Unix epoch.
    At(i128),
    NotStarted,
}

impl StartTime {
    pub fn of(pod: &PodInfo) -> StartTime {
        pod.pod
            .status
            .start_time
            .as_deref()
            .and_then(parse_rfc3339_nanos)
            .map_or(StartTime::NotStarted, StartTime::At)
    }

    /// `Time.UnixNano()` as a score (later is higher).
    pub(super) fn as_score(self) -> i128 {
        match self {
            StartTime::At(t) => t,
            StartTime::NotStarted => i128::MAX,
        }
    }

    /// `Time.Before`.
    pub fn before(self, other: StartTime) -> bool {
        self.cmp(&other) == Ordering::Less
    }
}

/// `util.MoreImportantPod`: higher priority, then earlier start.
pub fn more_important_pod(p1: &PodInfo, p2: &PodInfo) -> bool {
    more_important(
        (p1.priority(), StartTime::of(p1)),
        (p2.priority(), StartTime::of(p2)),
    )
}

/// [`more_important_pod`] on precomputed `(priority, start time)` keys.
pub fn more_important(a: (i32, StartTime), b: (i32, StartTime)) -> bool {
    if a.0 != b.0 {
        return a.0 > b.0;
    }
    a.1.before(b.1)
}

/// `util.GetEarliestPodStartTime`: the earliest start among the highest-priority victims.
pub fn earliest_start_of_highest_priority<P: AsRef<PodInfo>>(victims: &[P]) -> Option<StartTime> {
    let first = victims.first()?.as_ref();
    let mut earliest = StartTime::of(first);
    let mut max_priority = first.priority();
    for p in victims {
        let p = p.as_ref();
        let pr = p.priority();
        if pr == max_priority {
            let t = StartTime::of(p);
            if t.before(earliest) {
                earliest = t;
            }
        } else if pr > max_priority {
            max_priority = pr;
            earliest = StartTime::of(p);
        }
    }
    Some(earliest)
}

/// Parses an RFC 3339 timestamp (`2024-01-01T00:32:33Z`, optional fraction, `Z` or `±hh:mm`)
/// into nanoseconds since the Unix epoch. `None` when malformed.
pub fn parse_rfc3339_nanos(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let year = num(0, 4)?;
    let month = num(5, 2)?;
    let day = num(8, 2)?;
    let hour = num(11, 2)?;
    let min = num(14, 2)?;
    let sec = num(17, 2)?;
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac_nanos: i128 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits = &s[start..i];
        if digits.is_empty() {
            return None;
        }
        // Nanosecond precision; further digits are truncated as Go does.
        let mut scaled = String::from(&digits[..digits.len().min(9)]);
        while scaled.len() < 9 {
            scaled.push('0');
        }
        frac_nanos = scaled.parse().ok()?;
    }
    let offset_secs: i64 = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let oh = num(i + 1, 2)?;
            let om = num(i + 4, 2)?;
            let o = oh * 3600 + om * 60;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + min * 60 + sec - offset_secs;
    Some(secs as i128 * 1_000_000_000 + frac_nanos)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
