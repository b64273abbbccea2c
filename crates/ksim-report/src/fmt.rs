//! Number formatting shared by the HTML page and the terminal tables (display only; the CSV and
//! JSON files carry exact values).

/// Seconds for display: up to 3 decimals, trailing zeros dropped.
pub(crate) fn secs(s: f64) -> String {
    let t = format!("{s:.3}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    if t.is_empty() || t == "-" {
        "0".to_string()
    } else {
        t.to_string()
    }
}

/// A long span for people: "19d 16h 2m", "1h 5m 3s"; empty under a minute (the seconds say it).
pub(crate) fn human(s: f64) -> String {
    if !s.is_finite() || s < 60.0 {
        return String::new();
    }
    let total = s.round() as u64;
    let (d, h, m, sec) = (
        total / 86_400,
        total / 3600 % 24,
        total / 60 % 60,
        total % 60,
    );
    let parts = [(d, "d"), (h, "h"), (m, "m"), (sec, "s")];
    let first = parts.iter().position(|p| p.0 > 0).unwrap_or(3);
    // The three most significant units are enough to read.
    parts[first..(first + 3).min(4)]
        .iter()
        .map(|(v, u)| format!("{v}{u}"))
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn opt_secs(s: Option<f64>) -> String {
    s.map(|s| format!("{} s", secs(s)))
        .unwrap_or_else(|| "–".to_string())
}

pub(crate) fn opt_pct(x: Option<f64>) -> String {
    x.map(|x| format!("{:.1}%", x * 100.0))
        .unwrap_or_else(|| "–".to_string())
}

pub(crate) fn pct_pair(a: Option<f64>, b: Option<f64>) -> String {
    format!("{} / {}", opt_pct(a), opt_pct(b))
}

/// An integer with thin thousands separators (display only).
pub(crate) fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(secs(1.5), "1.5");
        assert_eq!(secs(2.0), "2");
        assert_eq!(secs(0.0001), "0");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(12), "12");
        assert_eq!(opt_pct(Some(0.5)), "50.0%");
        assert_eq!(human(59.0), "");
        assert_eq!(human(3903.0), "1h 5m 3s");
        assert_eq!(human(1_699_349.59), "19d 16h 2m");
    }
}
