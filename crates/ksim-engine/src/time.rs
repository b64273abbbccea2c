//! Virtual time: integer microseconds, never floating point, never the wall clock.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in virtual time, in microseconds since the start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimTime(pub i64);

/// A span of virtual time, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimDuration(pub i64);

pub const MICROS_PER_SECOND: i64 = 1_000_000;

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(i64::MAX);

    pub fn from_secs(s: i64) -> SimTime {
        SimTime(s.saturating_mul(MICROS_PER_SECOND))
    }
    pub fn micros(self) -> i64 {
        self.0
    }
    /// Whole seconds, rounded down.
    pub fn whole_secs(self) -> i64 {
        self.0.div_euclid(MICROS_PER_SECOND)
    }
    /// Seconds with up to six decimals, as written in reports ("12.5", "3", "0.000001").
    pub fn secs_string(self) -> String {
        format_micros(self.0)
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / MICROS_PER_SECOND as f64
    }
    pub fn saturating_add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
    pub fn since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0 - earlier.0)
    }
}

impl std::ops::Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        self.saturating_add(d)
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);
    pub fn from_secs(s: i64) -> SimDuration {
        SimDuration(s.saturating_mul(MICROS_PER_SECOND))
    }
    pub fn from_micros(us: i64) -> SimDuration {
        SimDuration(us)
    }
    pub fn from_millis(ms: i64) -> SimDuration {
        SimDuration(ms.saturating_mul(1000))
    }
    pub fn micros(self) -> i64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / MICROS_PER_SECOND as f64
    }

    /// Parses a Go-style duration ("1h2m3.5s", "250ms", "10us", "1.5h") or a plain number of
    /// seconds ("90", "1.5"). Negative durations are rejected.
    pub fn parse(s: &str) -> Result<SimDuration, String> {
        let t = s.trim();
        if t.is_empty() {
            return Err("empty duration".into());
        }
        if t.starts_with('-') {
            return Err(format!("negative duration {s:?}"));
        }
        if let Ok(n) = t.parse::<f64>() {
            if !n.is_finite() || n < 0.0 {
                return Err(format!("invalid duration {s:?}"));
            }
            return secs_f64_to_micros(n, s).map(SimDuration);
        }
        let b = t.as_bytes();
        let mut i = 0;
        let mut total: i128 = 0;
        let t = t.strip_prefix('+').unwrap_or(t);
        let b = if b.first() == Some(&b'+') { &b[1..] } else { b };
        if t == "0" {
            return Ok(SimDuration::ZERO);
        }
        while i < b.len() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            if start == i {
                return Err(format!(
                    "invalid duration {s:?}: expected a number at {:?}",
                    &t[start..]
                ));
            }
            let num = &t[start..i];
            let ustart = i;
            while i < b.len() && !(b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            let unit = &t[ustart..i];
            let per_unit: i128 = match unit {
                "ns" => 0, // handled below
                "us" | "µs" | "μs" => 1,
                "ms" => 1_000,
                "s" => 1_000_000,
                "m" => 60_000_000,
                "h" => 3_600_000_000,
                "d" => 86_400_000_000,
                "" => return Err(format!("invalid duration {s:?}: missing unit after {num}")),
                other => {
                    return Err(format!(
                        "invalid duration {s:?}: unknown unit {other:?} (use ns, us, ms, s, m, h)"
                    ))
                }
            };
            let v: f64 = num
                .parse()
                .map_err(|_| format!("invalid duration {s:?}: bad number {num:?}"))?;
            let micros = if unit == "ns" {
                (v / 1000.0).round()
            } else {
                (v * per_unit as f64).round()
            };
            // Checked before the cast and the sum: a huge number saturates the cast, and the
            // sum of two saturated parts overflows (found by fuzzing).
            if !micros.is_finite() || micros.abs() > i64::MAX as f64 {
                return Err(format!("duration {s:?} is too large"));
            }
            total += micros as i128;
            if total > i64::MAX as i128 {
                return Err(format!("duration {s:?} is too large"));
            }
        }
        Ok(SimDuration(total as i64))
    }
}

fn secs_f64_to_micros(n: f64, s: &str) -> Result<i64, String> {
    let m = (n * MICROS_PER_SECOND as f64).round();
    if m > i64::MAX as f64 {
        return Err(format!("duration {s:?} is too large"));
    }
    Ok(m as i64)
}

/// Formats microseconds as seconds with up to six decimals and no trailing zeros.
pub fn format_micros(us: i64) -> String {
    let neg = us < 0;
    let a = us.unsigned_abs();
    let whole = a / 1_000_000;
    let frac = a % 1_000_000;
    let mut out = if neg {
        format!("-{whole}")
    } else {
        whole.to_string()
    };
    if frac != 0 {
        let f = format!("{frac:06}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
    out
}

/// The UTC calendar fields of a virtual time counted from 1970-01-01T00:00:00Z: (year, month,
/// day, hour, minute, second, microsecond).
fn civil(t: SimTime) -> (i64, i64, i64, i64, i64, i64, i64) {
    let secs = t.0.div_euclid(MICROS_PER_SECOND);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    let micros = t.0.rem_euclid(MICROS_PER_SECOND);
    (y, m, d, rem / 3600, (rem % 3600) / 60, rem % 60, micros)
}

/// RFC 3339 text of a virtual time, counting from 1970-01-01T00:00:00Z (used for the
/// timestamps the API server would write: `status.startTime`, `deletionTimestamp`).
pub fn rfc3339(t: SimTime) -> String {
    let (y, m, d, hour, minute, second, micros) = civil(t);
    // Written digit by digit: every pod start stamps one, and `format!` costs several times
    // more. Years outside 0..=9999 take the general path.
    let mut out = String::with_capacity(27);
    if (0..=9999).contains(&y) {
        push_digits(&mut out, y, 4);
    } else {
        out.push_str(&format!("{y:04}"));
    }
    out.push('-');
    push_digits(&mut out, m, 2);
    out.push('-');
    push_digits(&mut out, d, 2);
    out.push('T');
    push_digits(&mut out, hour, 2);
    out.push(':');
    push_digits(&mut out, minute, 2);
    out.push(':');
    push_digits(&mut out, second, 2);
    if micros != 0 {
        out.push('.');
        push_digits(&mut out, micros, 6);
    }
    out.push('Z');
    out
}

/// Appends `v` (in `0..10^width`) as exactly `width` decimal digits.
fn push_digits(out: &mut String, v: i64, width: usize) {
    let mut buf = [b'0'; 8];
    let mut v = v;
    for b in buf[..width].iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
    // ASCII digits, so always valid UTF-8: one append instead of a char push per digit.
    out.push_str(std::str::from_utf8(&buf[..width]).unwrap_or_default());
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", format_micros(self.0))
    }
}

impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", format_micros(self.0))
    }
}

impl Serialize for SimTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(self.0)
    }
}

impl<'de> Deserialize<'de> for SimTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        i64::deserialize(d).map(SimTime)
    }
}

/// Durations in files are written as Go-style strings or numbers of seconds.
impl<'de> Deserialize<'de> for SimDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        match v {
            serde_json::Value::String(s) => {
                SimDuration::parse(&s).map_err(serde::de::Error::custom)
            }
            serde_json::Value::Number(n) => {
                let f = n
                    .as_f64()
                    .ok_or_else(|| serde::de::Error::custom("bad number"))?;
                if !f.is_finite() || f < 0.0 {
                    return Err(serde::de::Error::custom(format!("invalid duration {f}")));
                }
                secs_f64_to_micros(f, &n.to_string())
                    .map(SimDuration)
                    .map_err(serde::de::Error::custom)
            }
            other => Err(serde::de::Error::custom(format!(
                "expected a duration such as \"1m30s\" or a number of seconds, got {other}"
            ))),
        }
    }
}

impl Serialize for SimDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}s", format_micros(self.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(SimDuration::parse("1h2m3.5s").unwrap().0, 3_723_500_000);
        assert_eq!(SimDuration::parse("250ms").unwrap().0, 250_000);
        assert_eq!(SimDuration::parse("10us").unwrap().0, 10);
        assert_eq!(SimDuration::parse("1.5").unwrap().0, 1_500_000);
        assert_eq!(SimDuration::parse("90").unwrap().0, 90_000_000);
        assert_eq!(SimDuration::parse("0").unwrap().0, 0);
        for bad in ["", "-1s", "1x", "s", "1", "abc", "1h-2m"] {
            if bad == "1" {
                continue;
            }
            assert!(SimDuration::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rfc3339_matches_format_everywhere() {
        // The digit writer against the obvious `format!` of the same calendar fields, over
        // times from before 1970 to far past 9999, with and without fractions.
        let reference = |t: SimTime| {
            let (y, m, d, hour, minute, second, micros) = civil(t);
            let frac = if micros == 0 {
                String::new()
            } else {
                format!(".{micros:06}")
            };
            format!("{y:04}-{m:02}-{d:02}T{hour:02}:{minute:02}:{second:02}{frac}Z")
        };
        let mut t: i64 = -100_000_000_000_000_000;
        while t < 300_000_000_000_000_000 {
            for dt in [0, 1, 999_999, 1_000_000, 86_399_999_999] {
                let at = SimTime(t + dt);
                assert_eq!(rfc3339(at), reference(at), "{}", t + dt);
            }
            t += 7_777_777_777_777;
        }
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(SimTime(0)), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(SimTime::from_secs(86_400 * 365 + 61)),
            "1971-01-01T00:01:01Z"
        );
        assert_eq!(rfc3339(SimTime(1_500_000)), "1970-01-01T00:00:01.500000Z");
    }

    #[test]
    fn formats_seconds() {
        assert_eq!(format_micros(12_500_000), "12.5");
        assert_eq!(format_micros(3_000_000), "3");
        assert_eq!(format_micros(1), "0.000001");
    }
}
