//! What sluice records about each decision it takes on a client's request:
//! the audit log's rows and the outcome labels of its metrics.
//!
//! A record names who asked, which upstream and which tool (or only the
//! scheme of a resource URI), what sluice decided and why, how long it took
//! and how large the answer was, as a bucket. It never holds arguments,
//! results, error messages or secret values: nothing a client or an upstream
//! wrote, except the names the catalog routes by.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::parse_duration;
use crate::envelope::{
    Cursors, DEFAULT_LIMIT, DEFAULT_PAGE_BYTES, MAX_LIMIT, Page, Position, Shape, build_page,
};

/// What became of one request, as the audit log and the metrics name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Passed, and the upstream answered with a result.
    Ok,
    /// Passed; the upstream's result says the tool failed (`isError`).
    ToolError,
    /// A read whose answer was larger than the read budget, withheld whole.
    RefusedSize,
    /// A call to an entry withheld because it drifted from `sluice.lock`.
    BlockedDrift,
    /// Over its principal's rate limit (S-24).
    RateLimited,
    /// The principal lacks a scope the call needs (S-20).
    RefusedScope,
    /// An elicitation asking for sensitive data ended the call (S-27).
    RefusedElicitation,
    /// Refused before routing: unknown entry, malformed params.
    Invalid,
    /// The upstream answered with an error, was unavailable, lost the
    /// connection, or sent something that is not JSON-RPC.
    UpstreamError,
    /// The upstream did not answer within `server.request_timeout`.
    Timeout,
    /// The call paused for the client's input (an MRTR round: the answer
    /// is `input_required`); the retry that answers it is a record of its
    /// own.
    InputRequired,
    /// The client cancelled the request or went away before its answer;
    /// what the upstream did with it is unknown.
    Cancelled,
}

impl Decision {
    /// Every decision, in declaration order.
    pub const ALL: [Decision; 12] = [
        Decision::Ok,
        Decision::ToolError,
        Decision::RefusedSize,
        Decision::BlockedDrift,
        Decision::RateLimited,
        Decision::RefusedScope,
        Decision::RefusedElicitation,
        Decision::Invalid,
        Decision::UpstreamError,
        Decision::Timeout,
        Decision::InputRequired,
        Decision::Cancelled,
    ];

    /// The snake_case name used in the audit log, metric labels and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Ok => "ok",
            Decision::ToolError => "tool_error",
            Decision::RefusedSize => "refused_size",
            Decision::BlockedDrift => "blocked_drift",
            Decision::RateLimited => "rate_limited",
            Decision::RefusedScope => "refused_scope",
            Decision::RefusedElicitation => "refused_elicitation",
            Decision::Invalid => "invalid",
            Decision::UpstreamError => "upstream_error",
            Decision::Timeout => "timeout",
            Decision::InputRequired => "input_required",
            Decision::Cancelled => "cancelled",
        }
    }

    /// The decision named `name` (as [`Decision::as_str`] spells it).
    pub fn parse(name: &str) -> Option<Decision> {
        Decision::ALL.into_iter().find(|d| d.as_str() == name)
    }

    /// The decision for a result the upstream sent and sluice passed: a
    /// tool result with `isError: true` is a tool error, an
    /// `input_required` result a paused call.
    pub fn of_result(result: &Value) -> Decision {
        if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
            Decision::InputRequired
        } else if result.get("isError").and_then(Value::as_bool) == Some(true) {
            Decision::ToolError
        } else {
            Decision::Ok
        }
    }
}

/// The size of an answer as compact JSON, in buckets a factor of 16 apart:
/// enough to tell a flood from a trickle without recording exact sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SizeBucket {
    /// Under 1 KiB.
    Under1K,
    /// 1 KiB to under 16 KiB.
    Under16K,
    /// 16 KiB to under 256 KiB.
    Under256K,
    /// 256 KiB to under 4 MiB.
    Under4M,
    /// 4 MiB or more.
    Over4M,
}

impl SizeBucket {
    /// The bucket of `bytes`.
    pub fn of(bytes: usize) -> SizeBucket {
        match bytes {
            0..1_024 => SizeBucket::Under1K,
            1_024..16_384 => SizeBucket::Under16K,
            16_384..262_144 => SizeBucket::Under256K,
            262_144..4_194_304 => SizeBucket::Under4M,
            _ => SizeBucket::Over4M,
        }
    }

    /// Its name in the audit log: the bucket's upper bound.
    pub fn as_str(self) -> &'static str {
        match self {
            SizeBucket::Under1K => "<1KiB",
            SizeBucket::Under16K => "<16KiB",
            SizeBucket::Under256K => "<256KiB",
            SizeBucket::Under4M => "<4MiB",
            SizeBucket::Over4M => ">=4MiB",
        }
    }

    /// The bucket named `name`.
    pub fn parse(name: &str) -> Option<SizeBucket> {
        [
            SizeBucket::Under1K,
            SizeBucket::Under16K,
            SizeBucket::Under256K,
            SizeBucket::Under4M,
            SizeBucket::Over4M,
        ]
        .into_iter()
        .find(|b| b.as_str() == name)
    }
}

/// What a request targets, as the audit log names it: a routed tool or
/// prompt by its exposed name, a resource only by its URI's scheme (the
/// rest of a URI may carry identifiers or data).
pub fn resource_kind(uri: &str) -> String {
    match uri.split_once(':') {
        Some((scheme, _))
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            format!("{}:", scheme.to_ascii_lowercase())
        }
        _ => "(not a URI)".to_owned(),
    }
}

/// One row of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// When the request arrived, in milliseconds since the Unix epoch.
    pub time_ms: i64,
    /// Who asked: the principal's key (issuer and name).
    pub principal: String,
    /// The MCP method (`tools/call`, `prompts/get`, `resources/read`, ...).
    pub method: String,
    /// The upstream it was routed to, when it was routed.
    pub upstream: Option<String>,
    /// The exposed tool or prompt name, or the resource's URI scheme;
    /// `None` when the request named nothing sluice serves.
    pub target: Option<String>,
    /// What sluice decided.
    pub decision: Decision,
    /// The JSON-RPC error code the client received, if it got an error.
    pub code: Option<i64>,
    /// From arrival to answer, in microseconds.
    pub duration_us: i64,
    /// The size of the answer the client received, when it got a result.
    pub size: Option<SizeBucket>,
}

/// A stored row: the record and the id the store gave it (increasing in
/// the order rows were written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    /// The store's id.
    pub id: i64,
    /// What was recorded.
    pub record: AuditRecord,
}

/// Where a row sits in the order `sluice audit` reads, newest first: by
/// time, then by id among rows of the same millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowKey {
    /// The row's `time_ms`.
    pub time_ms: i64,
    /// The row's id.
    pub id: i64,
}

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
    /// `--limit`: rows a page (1 to [`MAX_LIMIT`], default [`DEFAULT_LIMIT`]).
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
        "--cursor: invalid cursor (use the nextCursor of a page read with the same --since, --upstream and --decision, within an hour)"
    )]
    InvalidCursor,
}

/// One page of the audit log to read: the query for the store, and what
/// the page's cursor will be bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditReading {
    /// What to ask the store for (one row more than the page holds, to
    /// tell whether rows follow).
    pub query: AuditQuery,
    /// Rows a page.
    pub limit: usize,
    /// The filter as given, which cursors are bound to.
    filter: Value,
    /// Rows read on the pages before.
    offset: usize,
}

/// The surface name cursors of `sluice audit` are sealed for.
const SURFACE: &str = "sluice audit";

fn decision_names() -> String {
    Decision::ALL.map(Decision::as_str).join(", ")
}

/// Reads `sluice audit`'s arguments at `now_ms` into the page to fetch. A
/// relative `--since` is resolved on the first page; the pages after keep
/// that same lower bound (it travels in the cursor), so paging never loses
/// the rows that age past it meanwhile.
pub fn plan_reading(
    args: &AuditArgs<'_>,
    cursors: &Cursors,
    now_ms: u64,
) -> Result<AuditReading, AuditArgsError> {
    let decision = args
        .decision
        .map(|name| {
            Decision::parse(name).ok_or_else(|| AuditArgsError::UnknownDecision(name.into()))
        })
        .transpose()?;
    let limit = match args.limit {
        None => DEFAULT_LIMIT,
        Some(n) if (1..=MAX_LIMIT).contains(&n) => n,
        Some(n) => return Err(AuditArgsError::BadLimit(n)),
    };
    let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
    let since_ms = args
        .since
        .map(|text| parse_since(text, now).ok_or_else(|| AuditArgsError::BadSince(text.into())))
        .transpose()?;
    let filter = json!({
        "since": args.since,
        "upstream": args.upstream,
        "decision": decision.map(Decision::as_str),
    });
    let (before, since_ms, offset) = match args.cursor {
        None => (None, since_ms, 0),
        Some(token) => {
            let position = cursors
                .open(&Value::from(token), SURFACE, &filter, now_ms)
                .map_err(|_| AuditArgsError::InvalidCursor)?;
            let (key, since) =
                decode_position(&position.last_key).ok_or(AuditArgsError::InvalidCursor)?;
            (Some(key), since, position.offset)
        }
    };
    Ok(AuditReading {
        query: AuditQuery {
            since_ms,
            upstream: args.upstream.map(str::to_owned),
            decision,
            before,
            limit: limit + 1,
        },
        limit,
        filter,
        offset,
    })
}

/// The page of `rows` (what the store returned for `reading.query`, newest
/// first) in the envelope of sluice's own lists: `{items, nextCursor?,
/// isCapped?}`, the cursor sealed and bound to the filter.
pub fn audit_page(
    reading: &AuditReading,
    rows: &[AuditRow],
    cursors: &Cursors,
    now_ms: u64,
) -> Page {
    let shown = &rows[..rows.len().min(reading.limit)];
    let items: Vec<Value> = shown.iter().map(row_json).collect();
    let shape = Shape {
        field: "items",
        capped_flag: true,
    };
    build_page(
        &items,
        rows.len() > shown.len(),
        DEFAULT_PAGE_BYTES,
        shape,
        |n| {
            let last = &shown[n - 1];
            let position = Position {
                offset: reading.offset + n,
                last_key: encode_position(last.key(), reading.query.since_ms),
            };
            cursors.issue(SURFACE, &reading.filter, &position, now_ms)
        },
    )
}

/// A row as `sluice audit --json` prints it: the record's fields, its id,
/// and its time in RFC 3339.
fn row_json(row: &AuditRow) -> Value {
    let mut fields = serde_json::Map::new();
    fields.insert("id".into(), row.id.into());
    fields.insert("time".into(), format_time_ms(row.record.time_ms).into());
    if let Ok(Value::Object(record)) = serde_json::to_value(&row.record) {
        fields.extend(record);
    }
    Value::Object(fields)
}

/// `time_ms:id:since_ms` (the last empty without `--since`).
fn encode_position(key: RowKey, since_ms: Option<i64>) -> String {
    let since = since_ms.map(|s| s.to_string()).unwrap_or_default();
    format!("{}:{}:{since}", key.time_ms, key.id)
}

fn decode_position(text: &str) -> Option<(RowKey, Option<i64>)> {
    let mut parts = text.split(':');
    let time_ms = parts.next()?.parse().ok()?;
    let id = parts.next()?.parse().ok()?;
    let since = match parts.next()? {
        "" => None,
        s => Some(s.parse().ok()?),
    };
    parts
        .next()
        .is_none()
        .then_some((RowKey { time_ms, id }, since))
}

impl AuditRow {
    /// Its place in the newest-first order.
    pub fn key(&self) -> RowKey {
        RowKey {
            time_ms: self.record.time_ms,
            id: self.id,
        }
    }
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

/// `time_ms` as RFC 3339 in UTC with milliseconds
/// (`2026-11-30T09:45:39.120Z`).
pub fn format_time_ms(time_ms: i64) -> String {
    let days = time_ms.div_euclid(86_400_000);
    let in_day = time_ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1_000 % 60,
        in_day % 1_000
    )
}

/// An RFC 3339 time (`2026-11-30T09:45:39Z`, `...39.5+01:00`) in
/// milliseconds since the epoch; digits past milliseconds are dropped.
pub fn parse_rfc3339_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let sep = |i: usize, allowed: &[u8]| b.get(i).is_some_and(|c| allowed.contains(c));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=days_in_month(year, month)).contains(&day)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut i = 19;
    let mut millis = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
        let ms_digits = &b[start..i.min(start + 3)];
        millis = ms_digits
            .iter()
            .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'))
            * 10i64.pow(3 - ms_digits.len() as u32);
    }
    let offset_minutes = match b.get(i..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (digits(i + 1..i + 3)?, digits(i + 4..i + 6)?);
            if h > 23 || m > 59 {
                return None;
            }
            let minutes = h * 60 + m;
            if *sign == b'+' { minutes } else { -minutes }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1_000 + millis)
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (eras of 400
/// years, each 146,097 days, counted from March so the leap day is last).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day count since 1970-01-01 (the inverse of
/// [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl Serialize for SizeBucket {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SizeBucket {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        SizeBucket::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown size bucket {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_decision_round_trips_through_its_name() {
        for d in Decision::ALL {
            assert_eq!(Decision::parse(d.as_str()), Some(d));
            assert_eq!(
                serde_json::to_value(d).unwrap(),
                Value::String(d.as_str().into())
            );
        }
        assert_eq!(Decision::parse("OK"), None);
    }

    #[test]
    fn a_tool_error_is_told_from_a_result() {
        assert_eq!(Decision::of_result(&json!({"content": []})), Decision::Ok);
        assert_eq!(
            Decision::of_result(&json!({"content": [], "isError": true})),
            Decision::ToolError
        );
        assert_eq!(
            Decision::of_result(&json!({"isError": "yes"})),
            Decision::Ok
        );
        assert_eq!(
            Decision::of_result(&json!({"resultType": "input_required", "inputRequests": {}})),
            Decision::InputRequired
        );
    }

    #[test]
    fn sizes_fall_in_buckets_a_factor_of_16_apart() {
        let cases = [
            (0, SizeBucket::Under1K),
            (1_023, SizeBucket::Under1K),
            (1_024, SizeBucket::Under16K),
            (16_383, SizeBucket::Under16K),
            (16_384, SizeBucket::Under256K),
            (262_144, SizeBucket::Under4M),
            (4_194_303, SizeBucket::Under4M),
            (4_194_304, SizeBucket::Over4M),
            (usize::MAX, SizeBucket::Over4M),
        ];
        for (bytes, bucket) in cases {
            assert_eq!(SizeBucket::of(bytes), bucket, "{bytes} bytes");
            assert_eq!(SizeBucket::parse(bucket.as_str()), Some(bucket));
        }
    }

    #[test]
    fn a_resource_is_named_by_its_scheme_only() {
        assert_eq!(resource_kind("file:///etc/secret-plans.txt"), "file:");
        assert_eq!(resource_kind("HTTPS://x.example/?token=abc"), "https:");
        assert_eq!(resource_kind("demo+x://a"), "demo+x:");
        assert_eq!(resource_kind("no scheme here"), "(not a URI)");
        assert_eq!(resource_kind(":x"), "(not a URI)");
    }

    #[test]
    fn a_record_serializes_without_anything_but_its_fields() {
        let record = AuditRecord {
            time_ms: 1,
            principal: "local".into(),
            method: "tools/call".into(),
            upstream: Some("fs".into()),
            target: Some("fs__read".into()),
            decision: Decision::RefusedSize,
            code: None,
            duration_us: 10,
            size: Some(SizeBucket::Under16K),
        };
        let v = serde_json::to_value(&record).unwrap();
        assert_eq!(v["decision"], "refused_size");
        assert_eq!(v["size"], "<16KiB");
        assert_eq!(serde_json::from_value::<AuditRecord>(v).unwrap(), record);
    }

    const NOW: u64 = 1_796_030_400_000; // 2026-11-30T09:20:00Z

    fn row(id: i64, time_ms: i64, upstream: &str, decision: Decision) -> AuditRow {
        AuditRow {
            id,
            record: AuditRecord {
                time_ms,
                principal: "local".into(),
                method: "tools/call".into(),
                upstream: Some(upstream.into()),
                target: Some(format!("{upstream}__t{id}")),
                decision,
                code: None,
                duration_us: 1_000 + id,
                size: Some(SizeBucket::Under1K),
            },
        }
    }

    /// What a store answers: the matching rows, newest first, `limit` at most.
    fn fetch(store: &[AuditRow], query: &AuditQuery) -> Vec<AuditRow> {
        let mut rows: Vec<AuditRow> = store.iter().filter(|r| query.matches(r)).cloned().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.key()));
        rows.truncate(query.limit);
        rows
    }

    /// Reads every page, following the cursors; the ids in order.
    fn drain(store: &[AuditRow], args: AuditArgs<'_>, cursors: &Cursors) -> Vec<i64> {
        let mut ids = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..=store.len() {
            let args = AuditArgs {
                cursor: cursor.as_deref(),
                ..args
            };
            let reading = plan_reading(&args, cursors, NOW).unwrap();
            let rows = fetch(store, &reading.query);
            let page = audit_page(&reading, &rows, cursors, NOW);
            for item in page.value["items"].as_array().unwrap() {
                ids.push(item["id"].as_i64().unwrap());
            }
            match page.value.get("nextCursor") {
                None => return ids,
                Some(next) => cursor = Some(next.as_str().unwrap().to_owned()),
            }
        }
        panic!("more pages than rows");
    }

    #[test]
    fn times_are_written_and_read_as_rfc_3339() {
        assert_eq!(format_time_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_time_ms(NOW as i64 + 39_120),
            "2026-11-30T09:20:39.120Z"
        );
        assert_eq!(format_time_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(parse_rfc3339_ms("2026-11-30T09:20:00Z"), Some(NOW as i64));
        assert_eq!(
            parse_rfc3339_ms("2026-11-30T10:20:00.5+01:00"),
            Some(NOW as i64 + 500)
        );
        assert_eq!(
            parse_rfc3339_ms("2026-11-30t09:20:00.123456z"),
            Some(NOW as i64 + 123)
        );
        for bad in [
            "2026-11-30",
            "2026-11-30T09:20:00",
            "2026-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T09:20:00.Z",
            "2026-11-30T09:20:00+1:00",
            "2026-11-30T09:20:00Zjunk",
            "+026-11-30T09:20:00Z",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn a_formatted_time_reads_back_the_same(ms in 0i64..253_402_300_800_000) {
            prop_assert_eq!(parse_rfc3339_ms(&format_time_ms(ms)), Some(ms));
        }
    }

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

    #[test]
    fn bad_arguments_are_usage_errors_that_say_what_is_allowed() {
        let cursors = Cursors::new([3; 32]);
        let plan = |args: AuditArgs<'_>| {
            plan_reading(&args, &cursors, NOW)
                .err()
                .map(|e| e.to_string())
        };
        assert_eq!(
            plan(AuditArgs {
                decision: Some("denied"),
                ..AuditArgs::default()
            })
            .unwrap(),
            "--decision \"denied\" is not a decision; the decisions are: ok, tool_error, refused_size, blocked_drift, rate_limited, refused_scope, refused_elicitation, invalid, upstream_error, timeout, input_required, cancelled"
        );
        assert!(
            plan(AuditArgs {
                since: Some("last week"),
                ..AuditArgs::default()
            })
            .unwrap()
            .contains("e.g. 90s, 30m, 1h, 7d) nor an RFC 3339 time")
        );
        assert_eq!(
            plan(AuditArgs {
                limit: Some(201),
                ..AuditArgs::default()
            })
            .unwrap(),
            "--limit must be from 1 to 200 (got 201)"
        );
        assert!(
            plan(AuditArgs {
                cursor: Some("not-a-cursor"),
                ..AuditArgs::default()
            })
            .unwrap()
            .starts_with("--cursor: invalid cursor")
        );
    }

    #[test]
    fn a_cursor_is_bound_to_the_filters_that_made_it() {
        let cursors = Cursors::new([3; 32]);
        let store: Vec<AuditRow> = (1..=5)
            .map(|i| row(i, 1_000 * i, "fx", Decision::Ok))
            .collect();
        let args = AuditArgs {
            upstream: Some("fx"),
            limit: Some(2),
            ..AuditArgs::default()
        };
        let reading = plan_reading(&args, &cursors, NOW).unwrap();
        let page = audit_page(&reading, &fetch(&store, &reading.query), &cursors, NOW);
        let next = page.value["nextCursor"].as_str().unwrap();
        let same = AuditArgs {
            cursor: Some(next),
            ..args
        };
        assert_eq!(
            plan_reading(&same, &cursors, NOW).unwrap().query.before,
            Some(RowKey {
                time_ms: 4_000,
                id: 4
            })
        );
        for other in [
            AuditArgs {
                upstream: Some("gh"),
                ..same
            },
            AuditArgs {
                decision: Some("ok"),
                ..same
            },
            AuditArgs {
                since: Some("1h"),
                ..same
            },
        ] {
            assert_eq!(
                plan_reading(&other, &cursors, NOW),
                Err(AuditArgsError::InvalidCursor)
            );
        }
        let other_key = Cursors::new([4; 32]);
        assert_eq!(
            plan_reading(&same, &other_key, NOW),
            Err(AuditArgsError::InvalidCursor)
        );
    }

    #[test]
    fn pages_are_newest_first_with_the_list_envelope() {
        let cursors = Cursors::new([3; 32]);
        // Two rows in the same millisecond: the later id comes first.
        let store = vec![
            row(1, 5_000, "fx", Decision::Ok),
            row(2, 7_000, "gh", Decision::RateLimited),
            row(3, 7_000, "fx", Decision::ToolError),
        ];
        let args = AuditArgs {
            limit: Some(2),
            ..AuditArgs::default()
        };
        let reading = plan_reading(&args, &cursors, NOW).unwrap();
        let page = audit_page(&reading, &fetch(&store, &reading.query), &cursors, NOW);
        let items = page.value["items"].as_array().unwrap();
        assert_eq!(page.rows, 2);
        assert_eq!(
            items[0],
            json!({"id": 3, "time": "1970-01-01T00:00:07.000Z", "time_ms": 7_000, "principal": "local",
                   "method": "tools/call", "upstream": "fx", "target": "fx__t3", "decision": "tool_error",
                   "code": null, "duration_us": 1_003, "size": "<1KiB"})
        );
        assert_eq!(items[1]["id"], 2);
        assert!(page.value["nextCursor"].is_string());
        assert_eq!(drain(&store, args, &cursors), vec![3, 2, 1]);
        // The last page has no cursor.
        let all = AuditArgs {
            limit: Some(3),
            ..AuditArgs::default()
        };
        let reading = plan_reading(&all, &cursors, NOW).unwrap();
        let page = audit_page(&reading, &fetch(&store, &reading.query), &cursors, NOW);
        assert_eq!(
            page.value.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["items"]
        );
    }

    #[test]
    fn a_relative_since_keeps_its_first_bound_on_later_pages() {
        let cursors = Cursors::new([3; 32]);
        let hour = 3_600_000;
        let now = NOW as i64;
        let store: Vec<AuditRow> = [now - 2 * hour, now - hour + 10, now - hour + 20, now - 5]
            .iter()
            .zip(1..)
            .map(|(t, id)| row(id, *t, "fx", Decision::Ok))
            .collect();
        let args = AuditArgs {
            since: Some("1h"),
            limit: Some(1),
            ..AuditArgs::default()
        };
        let reading = plan_reading(&args, &cursors, NOW).unwrap();
        let page = audit_page(&reading, &fetch(&store, &reading.query), &cursors, NOW);
        let next = page.value["nextCursor"].as_str().unwrap();
        // 15 ms later, "1h" would exclude row 2; the cursor's bound keeps it.
        let later = plan_reading(
            &AuditArgs {
                cursor: Some(next),
                ..args
            },
            &cursors,
            NOW + 15,
        )
        .unwrap();
        assert_eq!(later.query.since_ms, Some(now - hour));
        assert_eq!(drain(&store, args, &cursors), vec![4, 3, 2]);
    }

    fn arb_decision() -> impl Strategy<Value = Decision> {
        (0..Decision::ALL.len()).prop_map(|i| Decision::ALL[i])
    }

    proptest! {
        /// Draining the pages gives every matching row exactly once, in
        /// newest-first order, whatever the page size and filters.
        #[test]
        fn draining_pages_gives_each_matching_row_once(
            rows in prop::collection::vec((0i64..20, 0usize..3, arb_decision()), 0..40),
            limit in 1usize..7,
            upstream in prop::option::of(0usize..3),
            decision in prop::option::of(arb_decision()),
            since in prop::option::of(0i64..20),
        ) {
            let names = ["fx", "gh", "db"];
            let store: Vec<AuditRow> = rows
                .iter()
                .zip(1..)
                .map(|((t, u, d), id)| row(id, *t, names[*u], *d))
                .collect();
            let since_text = since.map(format_time_ms);
            let args = AuditArgs {
                since: since_text.as_deref(),
                upstream: upstream.map(|u| names[u]),
                decision: decision.map(Decision::as_str),
                limit: Some(limit),
                cursor: None,
            };
            let cursors = Cursors::new([9; 32]);
            let mut expected: Vec<&AuditRow> = store
                .iter()
                .filter(|r| since.is_none_or(|s| r.record.time_ms >= s))
                .filter(|r| upstream.is_none_or(|u| r.record.upstream.as_deref() == Some(names[u])))
                .filter(|r| decision.is_none_or(|d| r.record.decision == d))
                .collect();
            expected.sort_by_key(|r| std::cmp::Reverse(r.key()));
            let expected: Vec<i64> = expected.iter().map(|r| r.id).collect();
            prop_assert_eq!(drain(&store, args, &cursors), expected);
        }
    }
}
