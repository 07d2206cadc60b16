//! Which rows a reading asks for: the store's query, the arguments of
//! `sluice audit` as given, and what `--since` names.

use crate::config::parse_duration;
use crate::envelope::MAX_LIMIT;

use super::decision::Decision;
use super::record::{AuditRow, RowKey};
use super::time::parse_rfc3339_ms;

/// What one reading of the audit log asks its store for: the rows that
/// match, newest first, at most `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only rows at or after this time (milliseconds since the epoch).
    pub since_ms: Option<i64>,
    /// Only rows routed to this upstream.
    pub upstream: Option<String>,
    /// Only rows with this decision.
    pub decision: Option<Decision>,
    /// Only rows of requests through this `[[view]]`.
    pub view: Option<String>,
    /// Only rows before this key in time order (the keyset position of the
    /// page before).
    pub before: Option<RowKey>,
    /// At most this many rows.
    pub limit: usize,
}

/// The arguments of `sluice audit`, as given.
#[derive(Debug, Clone, Copy, Default)]
pub struct AuditArgs<'a> {
    /// `--since`: a duration back from now (`1h`), or an RFC 3339 time.
    pub since: Option<&'a str>,
    /// `--upstream`.
    pub upstream: Option<&'a str>,
    /// `--decision`, by its name.
    pub decision: Option<&'a str>,
    /// `--view`.
    pub view: Option<&'a str>,
    /// `--limit`: rows a page (1 to [`MAX_LIMIT`], default
    /// [`DEFAULT_LIMIT`](crate::envelope::DEFAULT_LIMIT)).
    pub limit: Option<usize>,
    /// `--cursor`: the `nextCursor` of the page before.
    pub cursor: Option<&'a str>,
}

/// Why `sluice audit`'s arguments cannot be read: a usage error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditArgsError {
    /// `--decision` names no decision.
    #[error("--decision {0:?} is not a decision; the decisions are: {names}", names = decision_names())]
    UnknownDecision(String),
    /// `--since` is neither form.
    #[error(
        "--since {0:?} is neither a duration back from now (e.g. 90s, 30m, 1h, 7d) nor an RFC 3339 time (e.g. 2026-11-30T09:00:00Z)"
    )]
    BadSince(String),
    /// `--limit` is outside its range.
    #[error("--limit must be from 1 to {MAX_LIMIT} (got {0})")]
    BadLimit(usize),
    /// `--cursor` is not one this command issued for the same filters, or
    /// it expired.
    #[error(
        "--cursor: invalid cursor (use the nextCursor of a page read with the same --since, --upstream, --decision and --view, within an hour)"
    )]
    InvalidCursor,
}

fn decision_names() -> String {
    Decision::ALL.map(Decision::as_str).join(", ")
}

impl AuditQuery {
    /// Whether `row` is one this query asks for (the store's `WHERE`).
    pub fn matches(&self, row: &AuditRow) -> bool {
        let r = &row.record;
        self.since_ms.is_none_or(|since| r.time_ms >= since)
            && self
                .upstream
                .as_ref()
                .is_none_or(|u| r.upstream.as_ref() == Some(u))
            && self.decision.is_none_or(|d| r.decision == d)
            && self
                .view
                .as_ref()
                .is_none_or(|v| r.view.as_ref() == Some(v))
            && self.before.is_none_or(|before| row.key() < before)
    }
}

/// The lower time bound `--since TEXT` names at `now_ms`: a duration back
/// from now (`90s`, `30m`, `1h`, `7d`) or an RFC 3339 time.
pub fn parse_since(text: &str, now_ms: i64) -> Option<i64> {
    match parse_duration(text) {
        Some(back) => Some(now_ms.saturating_sub(i64::try_from(back.as_millis()).ok()?)),
        None => parse_rfc3339_ms(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_796_030_400_000; // 2026-11-30T09:20:00Z

    #[test]
    fn since_is_a_duration_back_from_now_or_a_time() {
        let now = NOW as i64;
        assert_eq!(parse_since("1h", now), Some(now - 3_600_000));
        assert_eq!(parse_since("7d", now), Some(now - 7 * 86_400_000));
        assert_eq!(
            parse_since("2026-11-30T09:00:00Z", now),
            Some(now - 1_200_000)
        );
        assert_eq!(parse_since("yesterday", now), None);
    }
}
