//! Time units.
//!
//! All durations and instants in locksim are integers of nanoseconds. *True time* is the
//! simulator's global clock (nanoseconds since the run started); only the recorder and the
//! checkers see it. Protocol code sees its node's local clocks (see docs/design.md §3).

/// Nanoseconds: a true-time instant (since the start of the run) or a duration.
pub type Nanos = u64;

/// One millisecond in nanoseconds.
pub const MS: Nanos = 1_000_000;
/// One second in nanoseconds.
pub const SEC: Nanos = 1_000_000_000;

/// Formats nanoseconds for people: `1.250s`, `35ms`, `12µs`, `-0.500s` for negative values.
pub fn fmt_nanos(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    if a >= SEC as u128 {
        format!(
            "{sign}{}.{:03}s",
            a / SEC as u128,
            (a % SEC as u128) / MS as u128
        )
    } else if a >= MS as u128 {
        format!("{sign}{}ms", a / MS as u128)
    } else if a >= 1_000 {
        format!("{sign}{}µs", a / 1_000)
    } else {
        format!("{sign}{a}ns")
    }
}

/// Parses a duration such as `500ms`, `2s`, `1.5s`, `250us` or `100ns` into nanoseconds; the
/// unit is required (a bare `500` is ambiguous) except for `0`. Negative values are allowed
/// with a leading `-` (for clock steps), and a leading `+` is accepted and means nothing (so
/// `+5s` is `5s`, as the timeline writes a forward clock step). Digits below a nanosecond
/// (`1.0000000001s`) are dropped.
///
/// # Errors
/// A message naming the problem when the text is not a number followed by a unit among `ns`,
/// `us`, `µs`, `ms`, `s`, `m`, `h`, or when its magnitude exceeds `i64::MAX` nanoseconds
/// (about 292 years): `is too large`, never a wrapped value.
pub fn parse_duration(text: &str) -> Result<i128, String> {
    let t = text.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(format!("`{text}` is not a duration (e.g. 500ms, 2s, 1.5s)"));
    }
    let scale: u128 = match unit {
        "" if num.chars().all(|c| c == '0') => 1,
        "" => return Err(format!("`{text}` needs a unit, e.g. {num}ms or {num}s")),
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => MS as u128,
        "s" => SEC as u128,
        "m" | "min" => 60 * SEC as u128,
        "h" => 3_600 * SEC as u128,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}` (use ns, us, ms, s, m or h)"
            ))
        }
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if frac.contains('.') || (int.is_empty() && frac.is_empty()) {
        return Err(format!("`{text}` is not a duration (e.g. 500ms, 2s, 1.5s)"));
    }
    let int_v: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| format!("`{text}` is too large"))?
    };
    let mut v = int_v
        .checked_mul(scale)
        .ok_or_else(|| format!("`{text}` is too large"))?;
    let mut place = scale;
    for d in frac.chars() {
        place /= 10;
        v = v
            .checked_add((d as u128 - '0' as u128) * place)
            .ok_or_else(|| format!("`{text}` is too large"))?;
    }
    if v > i64::MAX as u128 {
        return Err(format!("`{text}` is too large"));
    }
    Ok(if neg { -(v as i128) } else { v as i128 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("500ms"), Ok(500 * MS as i128));
        assert_eq!(parse_duration("1.5s"), Ok(1_500 * MS as i128));
        assert_eq!(parse_duration("-2s"), Ok(-2 * SEC as i128));
        assert_eq!(parse_duration("7ns"), Ok(7));
        assert_eq!(parse_duration("0"), Ok(0));
        assert!(parse_duration("500").unwrap_err().contains("needs a unit"));
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert_eq!(parse_duration("+5s"), Ok(5 * SEC as i128));
    }

    #[test]
    fn too_large_is_an_error_never_a_wrapped_value() {
        // The integer part times an hour is just below 2^128; the fraction used to wrap it.
        for t in [
            "94522879700260684295381835h",
            "94522879700260684295381835.9h",
            "94522879700260684295381835.999999999999h",
            "9223372036854775808ns",
            "-9223372036854775808ns",
            "106752d",
        ] {
            let e = parse_duration(t).unwrap_err();
            assert!(
                e.contains("too large") || e.contains("unknown unit"),
                "{t}: {e}"
            );
        }
        assert_eq!(
            parse_duration("9223372036854775807ns"),
            Ok(i64::MAX as i128)
        );
        assert_eq!(
            parse_duration("2562047h"),
            Ok(2_562_047 * 3_600 * SEC as i128)
        );
        assert!(parse_duration("2562048h")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_nanos(1_250 * MS as i128), "1.250s");
        assert_eq!(fmt_nanos(35 * MS as i128), "35ms");
        assert_eq!(fmt_nanos(-(SEC as i128) / 2), "-500ms");
        assert_eq!(fmt_nanos(-(3 * SEC as i128) / 2), "-1.500s");
    }
}
