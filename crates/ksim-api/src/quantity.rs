//! `resource.Quantity` as upstream parses it.
//!
//! A quantity is kept as its original text plus two integers computed once at parse time:
//! [`Quantity::value`] (whole units, rounded up) and [`Quantity::milli_value`] (thousandths,
//! rounded up). Those are exactly what kube-scheduler reads (`Value()` for memory, storage,
//! pods and extended resources; `MilliValue()` for cpu), so the scheduler never touches the text.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a quantity string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("quantity {0:?} is empty")]
    Empty(String),
    #[error("quantity {0:?} is not a number followed by an optional suffix (Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3)")]
    Syntax(String),
    #[error("quantity {0:?} is out of range")]
    OutOfRange(String),
}

/// A parsed Kubernetes quantity.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Quantity {
    text: String,
    /// Whole units, rounded up away from zero as upstream's `Value()`.
    value: i64,
    /// Thousandths of a unit, rounded up as upstream's `MilliValue()`.
    milli: i64,
}

impl Quantity {
    /// Parses a quantity string (`"500m"`, `"1.5Gi"`, `"1e3"`, `"2"`).
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        let (value, milli) = parse_scaled(s)?;
        Ok(Quantity {
            text: s.to_string(),
            value,
            milli,
        })
    }

    /// Builds a quantity from whole units.
    pub fn from_value(v: i64) -> Quantity {
        Quantity {
            text: v.to_string(),
            value: v,
            milli: v.saturating_mul(1000),
        }
    }

    /// Builds a quantity from thousandths of a unit (written as `"<n>m"` unless whole).
    pub fn from_milli(m: i64) -> Quantity {
        let text = if m % 1000 == 0 {
            (m / 1000).to_string()
        } else {
            format!("{m}m")
        };
        Quantity {
            text,
            value: round_up(m as i128, 1000).clamp(i64::MIN as i128, i64::MAX as i128) as i64,
            milli: m,
        }
    }

    /// Whole units, rounded up (upstream `Value()`).
    pub fn value(&self) -> i64 {
        self.value
    }

    /// Thousandths, rounded up (upstream `MilliValue()`).
    pub fn milli_value(&self) -> i64 {
        self.milli
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn is_zero(&self) -> bool {
        self.milli == 0
    }
}

/// By amount (thousandths, then whole units), then text: consistent with `Eq`, so that
/// quantities can sit in ordered results.
impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.milli, self.value, &self.text).cmp(&(other.milli, other.value, &other.text))
    }
}

impl fmt::Debug for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Quantity({})", self.text)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Quantity;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a Kubernetes quantity such as \"500m\", \"2Gi\" or 4")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Quantity, E> {
                Quantity::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Quantity, E> {
                Quantity::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Quantity, E> {
                Quantity::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Quantity, E> {
                Quantity::parse(&v.to_string()).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// Ceiling division: `Value()`/`MilliValue()` round a fraction up.
fn round_up(n: i128, d: i128) -> i128 {
    // floor division, then +1 when there is a remainder: ceiling for both signs.
    let q = n.div_euclid(d);
    if n.rem_euclid(d) != 0 {
        q + 1
    } else {
        q
    }
}

/// Returns (Value, MilliValue).
fn parse_scaled(s: &str) -> Result<(i64, i64), QuantityError> {
    if s.is_empty() {
        return Err(QuantityError::Empty(s.to_string()));
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut negative = false;
    if bytes[0] == b'+' || bytes[0] == b'-' {
        negative = bytes[0] == b'-';
        i = 1;
    }
    let num_start = i;
    let mut int_digits = String::new();
    let mut frac_digits = String::new();
    let mut seen_dot = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() {
            if seen_dot {
                frac_digits.push(c as char);
            } else {
                int_digits.push(c as char);
            }
        } else if c == b'.' && !seen_dot {
            seen_dot = true;
        } else {
            break;
        }
        i += 1;
    }
    if i == num_start || (int_digits.is_empty() && frac_digits.is_empty()) {
        return Err(QuantityError::Syntax(s.to_string()));
    }
    let suffix = &s[i..];
    // (base-10 exponent, base-2 exponent)
    let (exp10, exp2): (i32, i32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        other => {
            let rest = other
                .strip_prefix('e')
                .or_else(|| other.strip_prefix('E'))
                .ok_or_else(|| QuantityError::Syntax(s.to_string()))?;
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(QuantityError::Syntax(s.to_string()));
            }
            let e: i32 = rest
                .parse()
                .map_err(|_| QuantityError::OutOfRange(s.to_string()))?;
            (e, 0)
        }
    };
    // Strip leading zeros of the integer part and trailing zeros of the fraction: they carry
    // no value and would only overflow the arithmetic below.
    let int_trim = int_digits.trim_start_matches('0');
    let frac_trim = frac_digits.trim_end_matches('0');
    let digits = format!("{int_trim}{frac_trim}");
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Ok((0, 0));
    }
    if digits.len() > 30 {
        return Err(QuantityError::OutOfRange(s.to_string()));
    }
    let mantissa: i128 = digits
        .parse()
        .map_err(|_| QuantityError::OutOfRange(s.to_string()))?;
    let mantissa = if negative { -mantissa } else { mantissa };
    // value = mantissa * 10^(exp10 - frac_len) * 2^exp2
    let scale10 = exp10 - frac_trim.len() as i32;
    let value = scaled(mantissa, scale10, exp2, s)?;
    let milli = scaled(mantissa, scale10 + 3, exp2, s)?;
    Ok((value, milli))
}

fn scaled(mantissa: i128, scale10: i32, exp2: i32, s: &str) -> Result<i64, QuantityError> {
    let oor = || QuantityError::OutOfRange(s.to_string());
    let mut n = mantissa;
    if exp2 > 0 {
        n = n.checked_mul(1i128 << exp2).ok_or_else(oor)?;
    }
    let r = if scale10 >= 0 {
        if scale10 > 38 {
            return Err(oor());
        }
        n.checked_mul(10i128.checked_pow(scale10 as u32).ok_or_else(oor)?)
            .ok_or_else(oor)?
    } else {
        let d = -scale10;
        if d > 38 {
            // Far below one unit: rounds up to 1 for positives, 0 for negatives.
            if n > 0 {
                1
            } else {
                0
            }
        } else {
            round_up(n, 10i128.pow(d as u32))
        }
    };
    if r > i64::MAX as i128 || r < i64::MIN as i128 {
        return Err(oor());
    }
    Ok(r as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> (i64, i64) {
        let q = Quantity::parse(s).unwrap();
        (q.value(), q.milli_value())
    }

    #[test]
    fn parses_upstream_examples() {
        assert_eq!(q("500m"), (1, 500));
        assert_eq!(q("2"), (2, 2000));
        assert_eq!(q("1.5"), (2, 1500));
        assert_eq!(q("1Ki"), (1024, 1_024_000));
        assert_eq!(q("1Gi"), (1 << 30, (1i64 << 30) * 1000));
        assert_eq!(q("1e3"), (1000, 1_000_000));
        assert_eq!(q("1E3"), (1000, 1_000_000));
        assert_eq!(q("1.5Gi"), (1_610_612_736, 1_610_612_736_000));
        assert_eq!(q("100n"), (1, 1));
        assert_eq!(q("0.1m"), (1, 1));
        assert_eq!(q("1u"), (1, 1));
        assert_eq!(q("0"), (0, 0));
        assert_eq!(q("0.000"), (0, 0));
        assert_eq!(q("128974848"), (128_974_848, 128_974_848_000));
        assert_eq!(q("129e6"), (129_000_000, 129_000_000_000));
        assert_eq!(q("123Mi"), (128_974_848, 128_974_848_000));
        assert_eq!(q("+1"), (1, 1000));
        assert_eq!(q(".5"), (1, 500));
        assert_eq!(q("1e-3"), (1, 1));
    }

    #[test]
    fn negative_rounds_toward_positive_infinity() {
        assert_eq!(q("-1500m"), (-1, -1500));
        assert_eq!(q("-1"), (-1, -1000));
    }

    #[test]
    fn rejects_junk() {
        for s in [
            "", "abc", "1.5.5", "1Kb", "Gi", "1 Gi", "1e", "1e+", "--1", "1ii",
        ] {
            assert!(Quantity::parse(s).is_err(), "{s:?} should be rejected");
        }
    }

    #[test]
    fn deserializes_numbers_and_strings() {
        let v: Vec<Quantity> = serde_json::from_str(r#"["1Gi", 4, 0.5]"#).unwrap();
        assert_eq!(v[0].value(), 1 << 30);
        assert_eq!(v[1].milli_value(), 4000);
        assert_eq!(v[2].milli_value(), 500);
    }

    proptest::proptest! {
        #[test]
        fn milli_of_whole_numbers_is_thousand_times(n in 0i64..1_000_000_000) {
            let q = Quantity::parse(&n.to_string()).unwrap();
            proptest::prop_assert_eq!(q.milli_value(), n * 1000);
            proptest::prop_assert_eq!(q.value(), n);
        }

        #[test]
        fn never_panics(s in "\\PC{0,12}") {
            let _ = Quantity::parse(&s);
        }
    }
}
