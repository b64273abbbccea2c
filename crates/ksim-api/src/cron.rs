//! CronJob schedules as upstream reads them: the standard parser of `github.com/robfig/cron/v3`
//! (`cron.ParseStandard`, which the CronJob controller and the API server's validation call):
//! five fields (minute, hour, day of month, month, day of week) or a descriptor (`@yearly`,
//! `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`, `@every <duration>`),
//! optionally after `TZ=<zone>` or `CRON_TZ=<zone>`.
//!
//! The grammar and error messages are robfig's `getField` / `getRange` / `parseIntOrName` /
//! `normalizeFields` / `parseDescriptor`: `*` and `?` mean the whole range, `a-b`, `/step`
//! (`N/step` means `N-max/step`), `,` lists, month names `jan`..`dec` and weekday names
//! `sun`..`sat` (any case), weekdays 0..6. Quartz extensions (`L`, `W`, `#`) are refused with
//! robfig's message (`failed to parse int from L: strconv.Atoi: parsing "L": invalid syntax`).
//! Day of month and day of week combine as robfig's `dayMatches`: both must match when either
//! field was given as `*`/`?` (a step of more than 1 clears that mark), else either may.
//!
//! The next instant is robfig's `SpecSchedule.Next` (month, then day, then hour, minute,
//! second, each in the schedule's zone with its daylight-saving corrections, giving up after
//! five years) and `ConstantDelaySchedule.Next` for `@every` (the delay rounded down to whole
//! seconds, at least one second). Zones come from the IANA database of `chrono-tz`; a
//! schedule without a zone runs in UTC (kube-controller-manager's `time.Local` in a container).

use std::str::FromStr;

use chrono::{DateTime, Datelike, NaiveDate, Offset, TimeZone, Timelike, Utc};
use chrono_tz::Tz;

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    kind: Kind,
    /// The zone it is evaluated in (`None`: UTC).
    pub zone: Option<Tz>,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// Bit sets of the matching values, bit 63 the "star" mark (robfig's `starBit`).
    Spec {
        second: u64,
        minute: u64,
        hour: u64,
        dom: u64,
        month: u64,
        dow: u64,
    },
    /// `@every`: whole seconds.
    Every(i64),
}

const STAR: u64 = 1 << 63;

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

fn bits(min: u32, max: u32, step: u32) -> u64 {
    if step == 1 {
        return !(u64::MAX << (max + 1)) & (u64::MAX << min);
    }
    let mut b = 0;
    let mut i = min;
    while i <= max {
        b |= 1 << i;
        i += step;
    }
    b
}

fn all(r: &Bounds) -> u64 {
    bits(r.min, r.max, 1) | STAR
}

/// Go's `strconv.Atoi` as robfig's `mustParseInt` reports it.
fn must_parse_int(expr: &str) -> Result<u32, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: invalid syntax"
        ));
    }
    let Ok(n) = expr.parse::<i64>() else {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: value out of range"
        ));
    };
    if n < 0 {
        return Err(format!("negative number ({n}) not allowed: {expr}"));
    }
    // Values past a field's bounds are refused by the range checks; anything past 64 is
    // already out of every field.
    Ok(n.min(1 << 20) as u32)
}

fn int_or_name(expr: &str, r: &Bounds) -> Result<u32, String> {
    let lower = expr.to_lowercase();
    if let Some((_, v)) = r.names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    must_parse_int(expr)
}

/// robfig's `getRange`: one element of a comma list.
fn get_range(expr: &str, r: &Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end, mut extra);
    if low_and_high[0] == "*" || low_and_high[0] == "?" {
        start = r.min;
        end = r.max;
        extra = STAR;
    } else {
        start = int_or_name(low_and_high[0], r)?;
        end = match low_and_high.len() {
            1 => start,
            2 => int_or_name(low_and_high[1], r)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        extra = 0;
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let s = must_parse_int(range_and_step[1])?;
            if single {
                end = r.max;
            }
            if s > 1 {
                extra = 0;
            }
            s
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < r.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            r.min
        ));
    }
    if end > r.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            r.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(bits(start, end, step) | extra)
}

/// robfig's `getField`: a comma list (empty elements are skipped, as `strings.FieldsFunc`).
fn get_field(field: &str, r: &Bounds) -> Result<u64, String> {
    let mut b = 0;
    for expr in field.split(',').filter(|e| !e.is_empty()) {
        b |= get_range(expr, r)?;
    }
    Ok(b)
}

/// Go's `time.ParseDuration` for the `@every` descriptor, in whole seconds (robfig's `Every`
/// keeps whole seconds, at least one).
fn go_duration_secs(text: &str) -> Option<i64> {
    let (neg, mut s) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if s == "0" {
        return Some(0);
    }
    if s.is_empty() {
        return None;
    }
    let mut nanos: f64 = 0.0;
    while !s.is_empty() {
        let num_end = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let num = &s[..num_end];
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return None;
        }
        let v: f64 = num.parse().ok()?;
        s = &s[num_end..];
        let unit_end = s
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(s.len());
        let unit = match &s[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        s = &s[unit_end..];
        nanos += v * unit;
    }
    if nanos > 9.223_372_036_854_775e18 {
        return None;
    }
    let secs = (nanos / 1e9).floor() as i64;
    Some(if neg { -secs } else { secs })
}

fn descriptor(d: &str) -> Result<Kind, String> {
    let spec = |minute, hour, dom, month, dow| Kind::Spec {
        second: 1,
        minute,
        hour,
        dom,
        month,
        dow,
    };
    Ok(match d {
        "@yearly" | "@annually" => spec(1, 1, 1 << 1, 1 << 1, all(&DOW)),
        "@monthly" => spec(1, 1, 1 << 1, all(&MONTHS), all(&DOW)),
        "@weekly" => spec(1, 1, all(&DOM), all(&MONTHS), 1),
        "@daily" | "@midnight" => spec(1, 1, all(&DOM), all(&MONTHS), all(&DOW)),
        "@hourly" => spec(1, all(&HOURS), all(&DOM), all(&MONTHS), all(&DOW)),
        _ => {
            if let Some(dur) = d.strip_prefix("@every ") {
                let secs = go_duration_secs(dur).ok_or_else(|| {
                    format!("failed to parse duration {d}: time: invalid duration {dur:?}")
                })?;
                return Ok(Kind::Every(secs.max(1)));
            }
            return Err(format!("unrecognized descriptor: {d}"));
        }
    })
}

/// Go's `fmt` of a `[]string`: `[a b c]`.
fn go_list(fields: &[&str]) -> String {
    format!("[{}]", fields.join(" "))
}

/// Loads an IANA zone as Go's `time.LoadLocation` does (`""` and `UTC` are UTC).
pub fn load_location(name: &str) -> Result<Tz, String> {
    if name.is_empty() || name == "UTC" {
        return Ok(Tz::UTC);
    }
    Tz::from_str(name).map_err(|_| format!("unknown time zone {name}"))
}

impl Schedule {
    /// `cron.ParseStandard`: the schedule or robfig's error message.
    pub fn parse(spec: &str) -> Result<Schedule, String> {
        if spec.is_empty() {
            return Err("empty spec string".into());
        }
        let mut spec = spec;
        let mut zone = None;
        if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
            let eq = spec.find('=').unwrap_or(0);
            let Some(sp) = spec.find(' ') else {
                return Err(format!(
                    "provided bad location {}: no schedule after the time zone",
                    &spec[eq + 1..]
                ));
            };
            let name = &spec[eq + 1..sp];
            let tz =
                load_location(name).map_err(|e| format!("provided bad location {name}: {e}"))?;
            zone = Some(tz);
            spec = spec[sp..].trim();
        }
        if spec.starts_with('@') {
            return Ok(Schedule {
                kind: descriptor(spec)?,
                zone,
            });
        }
        let fields: Vec<&str> = spec.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields, found {}: {}",
                fields.len(),
                go_list(&fields)
            ));
        }
        Ok(Schedule {
            kind: Kind::Spec {
                second: 1,
                minute: get_field(fields[0], &MINUTES)?,
                hour: get_field(fields[1], &HOURS)?,
                dom: get_field(fields[2], &DOM)?,
                month: get_field(fields[3], &MONTHS)?,
                dow: get_field(fields[4], &DOW)?,
            },
            zone,
        })
    }

    /// The same as [`Schedule::next`].
    pub fn next_after(&self, t: i64) -> Option<i64> {
        self.next(t)
    }

    /// The first scheduled instant strictly after Unix second `t` (robfig's `Next`), `None`
    /// when none comes within five years.
    pub fn next(&self, t: i64) -> Option<i64> {
        match &self.kind {
            Kind::Every(d) => Some(t + d),
            Kind::Spec {
                second,
                minute,
                hour,
                dom,
                month,
                dow,
            } => {
                let tz = self.zone.unwrap_or(Tz::UTC);
                spec_next(tz, t, [*second, *minute, *hour, *dom, *month, *dow])
            }
        }
    }
}

/// Local calendar fields of an instant in `tz`.
fn local(tz: Tz, t: i64) -> Option<DateTime<Tz>> {
    Some(DateTime::<Utc>::from_timestamp(t, 0)?.with_timezone(&tz))
}

/// Go's `time.Date` in `tz` for possibly unnormalised fields (month 13, day 32 roll over):
/// the instant `L - offset(L - offset(L))`, `L` the local time read as UTC.
fn go_date(tz: Tz, y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Option<i64> {
    // Normalise the month, then let days roll over from the first of it.
    let y = y + (mo as i32 - 1).div_euclid(12);
    let mo = (mo as i32 - 1).rem_euclid(12) as u32 + 1;
    let first = NaiveDate::from_ymd_opt(y, mo, 1)?;
    let date = first.checked_add_days(chrono::Days::new(u64::from(d.saturating_sub(1))))?;
    let l = date.and_hms_opt(0, 0, 0)?.and_utc().timestamp()
        + i64::from(h) * 3600
        + i64::from(mi) * 60
        + i64::from(s);
    let off = |x: i64| -> Option<i64> {
        let n = DateTime::<Utc>::from_timestamp(x, 0)?.naive_utc();
        Some(i64::from(
            tz.offset_from_utc_datetime(&n).fix().local_minus_utc(),
        ))
    };
    let o1 = off(l)?;
    Some(l - off(l - o1)?)
}

/// robfig's `SpecSchedule.Next`.
fn spec_next(tz: Tz, t: i64, f: [u64; 6]) -> Option<i64> {
    let [second, minute, hour, dom, month, dow] = f;
    let has = |set: u64, v: u32| set & (1u64 << v) != 0;
    let day_matches = |d: &DateTime<Tz>| {
        let dm = has(dom, d.day());
        let wm = has(dow, d.weekday().num_days_from_sunday());
        if dom & STAR != 0 || dow & STAR != 0 {
            dm && wm
        } else {
            dm || wm
        }
    };
    let mut t = t + 1;
    let mut added = false;
    let year_limit = local(tz, t)?.year() + 5;
    'wrap: loop {
        let d = local(tz, t)?;
        if d.year() > year_limit {
            return None;
        }
        let mut d = d;
        while !has(month, d.month()) {
            if !added {
                added = true;
                t = go_date(tz, d.year(), d.month(), 1, 0, 0, 0)?;
                d = local(tz, t)?;
            }
            // AddDate(0, 1, 0)
            t = go_date(
                tz,
                d.year(),
                d.month() + 1,
                d.day(),
                d.hour(),
                d.minute(),
                d.second(),
            )?;
            d = local(tz, t)?;
            if d.month() == 1 {
                continue 'wrap;
            }
        }
        while !day_matches(&d) {
            if !added {
                added = true;
                t = go_date(tz, d.year(), d.month(), d.day(), 0, 0, 0)?;
                d = local(tz, t)?;
            }
            // AddDate(0, 0, 1), then the daylight-saving correction back to midnight.
            t = go_date(
                tz,
                d.year(),
                d.month(),
                d.day() + 1,
                d.hour(),
                d.minute(),
                d.second(),
            )?;
            d = local(tz, t)?;
            if d.hour() != 0 {
                if d.hour() > 12 {
                    t += i64::from(24 - d.hour()) * 3600;
                } else {
                    t -= i64::from(d.hour()) * 3600;
                }
                d = local(tz, t)?;
            }
            if d.day() == 1 {
                continue 'wrap;
            }
        }
        while !has(hour, d.hour()) {
            if !added {
                added = true;
                t = go_date(tz, d.year(), d.month(), d.day(), d.hour(), 0, 0)?;
            }
            t += 3600;
            d = local(tz, t)?;
            if d.hour() == 0 {
                continue 'wrap;
            }
        }
        while !has(minute, d.minute()) {
            if !added {
                added = true;
                t -= t.rem_euclid(60);
            }
            t += 60;
            d = local(tz, t)?;
            if d.minute() == 0 {
                continue 'wrap;
            }
        }
        while !has(second, d.second()) {
            if !added {
                added = true;
            }
            t += 1;
            d = local(tz, t)?;
            if d.second() == 0 {
                continue 'wrap;
            }
        }
        return Some(t);
    }
}

#[cfg(test)]
mod tests;
