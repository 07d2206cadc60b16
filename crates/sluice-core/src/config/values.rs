//! The syntaxes of values any section may use: `${VAR}` references to the
//! environment, and durations (`"250ms"`, `"60s"`, `"5m"`, `"1h"`, `"30d"`).

use std::time::Duration;

/// Expands `${VAR}` references. `$` not followed by `{` is kept. Returns the
/// name of the first variable that is not set.
pub fn expand_env(template: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let var = &after[..end];
        out.push_str(&env(var).ok_or_else(|| var.to_owned())?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Parses `"250ms"`, `"60s"`, `"5m"`, `"1h"`, `"30d"`.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    match unit {
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "m" => n.checked_mul(60).map(Duration::from_secs),
        "h" => n.checked_mul(3600).map(Duration::from_secs),
        "d" => n.checked_mul(86_400).map(Duration::from_secs),
        _ => None,
    }
}

/// A duration as a diagnostic shows a bound: whole days when it is more
/// than one, else seconds, or milliseconds when it has a fraction.
pub(super) fn format_duration(d: Duration) -> String {
    if d.subsec_millis() != 0 || d.is_zero() {
        format!("{}ms", d.as_millis())
    } else if d.as_secs() > 86_400 && d.as_secs().is_multiple_of(86_400) {
        format!("{}d", d.as_secs() / 86_400)
    } else {
        format!("{}s", d.as_secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_expansion() {
        let env = |k: &str| (k == "A").then(|| "1".to_owned());
        assert_eq!(expand_env("x${A}y${A}", &env), Ok("x1y1".into()));
        assert_eq!(expand_env("$A ${", &env), Ok("$A ${".into()));
        assert_eq!(expand_env("${B}", &env), Err("B".into()));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("60"), None);
        assert_eq!(parse_duration("s"), None);
        assert_eq!(parse_duration("1d"), Some(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("1w"), None);
    }
}
