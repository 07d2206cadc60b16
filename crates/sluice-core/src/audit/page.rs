//! Pages of the audit log: the reading `sluice audit`'s arguments ask for,
//! and the page of rows in the envelope of sluice's own lists, with its
//! sealed cursor.

use serde_json::{Value, json};

use crate::envelope::{
    Cursors, DEFAULT_LIMIT, DEFAULT_PAGE_BYTES, MAX_LIMIT, Page, Position, Shape, build_page,
};

use super::decision::Decision;
use super::filter::{AuditArgs, AuditArgsError, AuditQuery, parse_since};
use super::record::{AuditRow, RowKey};
use super::time::format_time_ms;

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
        "view": args.view,
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
            view: args.view.map(str::to_owned),
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::audit::{AuditRecord, SizeBucket};
    use proptest::prelude::*;

    const NOW: u64 = 1_796_030_400_000; // 2026-11-30T09:20:00Z

    fn row(id: i64, time_ms: i64, upstream: &str, decision: Decision) -> AuditRow {
        AuditRow {
            id,
            record: AuditRecord {
                time_ms,
                principal: "local".into(),
                // Even rows came through a view, odd ones through none.
                view: (id % 2 == 0).then(|| "narrow".into()),
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
            AuditArgs {
                view: Some("narrow"),
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
                   "view": null, "method": "tools/call", "upstream": "fx", "target": "fx__t3", "decision": "tool_error",
                   "code": null, "duration_us": 1_003, "size": "<1KiB"})
        );
        assert_eq!(items[1]["id"], 2);
        assert_eq!(items[1]["view"], "narrow");
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
            through_view in any::<bool>(),
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
                view: through_view.then_some("narrow"),
                limit: Some(limit),
                cursor: None,
            };
            let cursors = Cursors::new([9; 32]);
            let mut expected: Vec<&AuditRow> = store
                .iter()
                .filter(|r| since.is_none_or(|s| r.record.time_ms >= s))
                .filter(|r| upstream.is_none_or(|u| r.record.upstream.as_deref() == Some(names[u])))
                .filter(|r| decision.is_none_or(|d| r.record.decision == d))
                .filter(|r| !through_view || r.id % 2 == 0)
                .collect();
            expected.sort_by_key(|r| std::cmp::Reverse(r.key()));
            let expected: Vec<i64> = expected.iter().map(|r| r.id).collect();
            prop_assert_eq!(drain(&store, args, &cursors), expected);
        }
    }
}
