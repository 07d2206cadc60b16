//! Reading `sluice.toml` into its serde form ([`RawConfig`]) with every
//! structural problem reported in one pass: syntax errors, unknown keys
//! (with the nearest allowed key), values of the wrong type, missing keys.
//!
//! serde stops at the first problem, so the document is parsed once into
//! its spanned tree and deserialized again after each problem, with the
//! entry at fault taken out: each problem is reported where it is, under its
//! full key path, and the checks of every later section still run. The
//! allowed keys and expected types come from serde's own errors, so the
//! serde types in `raw` stay the one place a key is declared.

use std::fmt::Write as _;
use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue, Deserializer};

use super::diagnostics::Diagnostics;
use super::raw::RawConfig;

/// The document as serde reads it, and whether it may be validated: `None`
/// when a problem left nothing to validate (a syntax error, a missing key).
/// Every problem found is in `diags`.
pub(super) fn read(text: &str, diags: &mut Diagnostics<'_>) -> Option<RawConfig> {
    let (mut doc, syntax) = DeTable::parse_recoverable(text);
    if !syntax.is_empty() {
        for e in syntax {
            diags.push(e.span(), "", e.message().trim().to_owned());
        }
        return None;
    }
    // serde finds problems in its own order; they are reported in the
    // file's.
    let mut found = Vec::new();
    let mut stopped = false;
    let raw = deserialize_around_problems(&mut doc, &mut found, &mut stopped);
    found.sort_by_key(|(span, _, _)| span.as_ref().map(|s| s.start));
    for (span, key, message) in found {
        diags.push(span, &key, message);
    }
    if stopped {
        diags.push(
            None,
            "",
            format!("stopped after {MAX_PROBLEMS} problems: fix these and check again"),
        );
    }
    raw
}

/// One problem: where, its key path, what is wrong.
type Found = (Option<Range<usize>>, String, String);

/// The most problems reported in one pass. Each costs a deserialization of
/// the whole document, so a file of thousands of bad keys would cost
/// thousands of passes; twenty is more than anyone fixes at once.
const MAX_PROBLEMS: usize = 20;

/// Deserializes `doc`, taking out each entry at fault and trying again,
/// until serde takes the rest or a problem cannot be stepped over.
fn deserialize_around_problems(
    doc: &mut Spanned<DeTable<'_>>,
    found: &mut Vec<Found>,
    stopped: &mut bool,
) -> Option<RawConfig> {
    // Each round takes one entry out, so this ends; the bound is a guard.
    for _ in 0..=entries(doc.get_ref()) {
        let e = match RawConfig::deserialize(Deserializer::from(doc.clone())) {
            Ok(raw) => return Some(raw),
            Err(e) => e,
        };
        if found.len() == MAX_PROBLEMS {
            *stopped = true;
            return None;
        }
        let span = e.span();
        let path = span
            .as_ref()
            .map(|s| locate(doc.get_ref(), s))
            .unwrap_or_default();
        let problem = Problem::parse(e.message().trim());
        let (key, message) = problem.describe(&path);
        found.push((span, key, message));
        if matches!(problem, Problem::Missing(_)) || !take_out(doc.get_mut(), &path) {
            return None;
        }
    }
    None
}

/// One step of a key path: a key of a table, or an index in an array.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// How a key path is written in diagnostics: `upstream[2].env.TOKEN`.
fn dotted(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        }
    }
    out
}

/// The path of the innermost key or value whose span holds `span`.
fn locate(table: &DeTable<'_>, span: &Range<usize>) -> Vec<Step> {
    let holds = |s: Range<usize>| s.start <= span.start && span.end <= s.end;
    let mut path = Vec::new();
    let mut table = table;
    loop {
        let Some((key, value)) = table
            .iter()
            .find(|(k, v)| holds(k.span()) || holds(v.span()) || holds_within(v, span))
        else {
            return path;
        };
        path.push(Step::Key(key.get_ref().to_string()));
        let mut value = value;
        // Into arrays (of tables, or of values) down to the element.
        while let DeValue::Array(items) = value.get_ref() {
            let Some((i, item)) = items
                .iter()
                .enumerate()
                .find(|(_, item)| holds(item.span()) || holds_within(item, span))
            else {
                return path;
            };
            path.push(Step::Index(i));
            value = item;
        }
        match value.get_ref() {
            DeValue::Table(inner) => table = inner,
            _ => return path,
        }
    }
}

/// Whether a table or array holds `span` in one of its entries (a header
/// table's own span need not cover the entries below its header).
fn holds_within(value: &Spanned<DeValue<'_>>, span: &Range<usize>) -> bool {
    let holds = |s: Range<usize>| s.start <= span.start && span.end <= s.end;
    match value.get_ref() {
        DeValue::Table(t) => t
            .iter()
            .any(|(k, v)| holds(k.span()) || holds(v.span()) || holds_within(v, span)),
        DeValue::Array(items) => items
            .iter()
            .any(|item| holds(item.span()) || holds_within(item, span)),
        _ => false,
    }
}

/// Takes out the last key of `path` from its table (an array's element is
/// never taken out, so the indices of the others stay those of the file);
/// false when the path names no key.
fn take_out(table: &mut DeTable<'_>, path: &[Step]) -> bool {
    let Some(last_key) = path.iter().rposition(|s| matches!(s, Step::Key(_))) else {
        return false;
    };
    let Some(parent) = table_at(table, &path[..last_key]) else {
        return false;
    };
    match &path[last_key] {
        Step::Key(k) => parent.remove(k.as_str()).is_some(),
        Step::Index(_) => false,
    }
}

/// The table at `path`, if it is one.
fn table_at<'t, 'i>(table: &'t mut DeTable<'i>, path: &[Step]) -> Option<&'t mut DeTable<'i>> {
    let Some((first, rest)) = path.split_first() else {
        return Some(table);
    };
    let Step::Key(k) = first else {
        return None;
    };
    let mut value = table.get_mut(k.as_str())?.get_mut();
    let mut rest = rest;
    while let Some((Step::Index(i), after)) = rest.split_first() {
        let DeValue::Array(items) = value else {
            return None;
        };
        value = items.get_mut(*i)?.get_mut();
        rest = after;
    }
    match value {
        DeValue::Table(inner) => table_at(inner, rest),
        _ => None,
    }
}

/// How many entries the document has, at every depth.
fn entries(table: &DeTable<'_>) -> usize {
    fn count(value: &DeValue<'_>) -> usize {
        match value {
            DeValue::Table(t) => entries(t),
            DeValue::Array(items) => items.iter().map(|i| count(i.get_ref())).sum(),
            _ => 0,
        }
    }
    table.iter().map(|(_, v)| 1 + count(v.get_ref())).sum()
}

/// What serde found wrong, read from its message.
#[derive(Debug, PartialEq)]
enum Problem {
    /// A key serde does not know, and the keys it allows there.
    Unknown { key: String, allowed: Vec<String> },
    /// A value of the wrong type or out of the type's range.
    WrongType { found: String, expected: String },
    /// A key that must be present.
    Missing(String),
    /// Anything else, as serde said it.
    Other(String),
}

impl Problem {
    /// Reads serde's standard wording (`serde::de::Error`'s provided
    /// messages: `unknown field`, `invalid type`, `invalid value`,
    /// `missing field`).
    fn parse(message: &str) -> Problem {
        if let Some(rest) = message.strip_prefix("unknown field ") {
            let mut names = backticked(rest);
            if names.is_empty() {
                return Problem::Other(message.to_owned());
            }
            let key = names.remove(0);
            return Problem::Unknown {
                key,
                allowed: names,
            };
        }
        for prefix in ["invalid type: ", "invalid value: "] {
            if let Some(rest) = message.strip_prefix(prefix)
                && let Some((found, expected)) = rest.rsplit_once(", expected ")
            {
                return Problem::WrongType {
                    found: found_words(found),
                    expected: expected_words(expected),
                };
            }
        }
        if let Some(rest) = message.strip_prefix("missing field ")
            && let Some(key) = backticked(rest).into_iter().next()
        {
            return Problem::Missing(key);
        }
        Problem::Other(message.to_owned())
    }

    /// The key path and the message of the diagnostic, for a problem found
    /// at `path`.
    fn describe(&self, path: &[Step]) -> (String, String) {
        match self {
            Problem::Unknown { key, allowed } => {
                // serde's span is the unknown key's, so `path` ends with it;
                // when it does not, the key is added.
                let mut path = path.to_vec();
                if path.last() != Some(&Step::Key(key.clone())) {
                    path.push(Step::Key(key.clone()));
                }
                let mut message = "unknown key".to_owned();
                if let Some(near) = nearest(key, allowed) {
                    let _ = write!(message, "; did you mean `{near}`?");
                }
                if allowed.is_empty() {
                    message.push_str(" (this table takes no keys)");
                } else {
                    let _ = write!(message, " (allowed: {})", allowed.join(", "));
                }
                (dotted(&path), message)
            }
            Problem::WrongType { found, expected } => {
                (dotted(path), format!("expected {expected}, found {found}"))
            }
            Problem::Missing(key) => {
                let mut path = path.to_vec();
                path.push(Step::Key(key.clone()));
                (dotted(&path), "is required but missing".to_owned())
            }
            Problem::Other(message) => (dotted(path), message.clone()),
        }
    }
}

/// The allowed key closest to `key`, when it is close enough to be the one
/// meant (a typo or two, or another case).
fn nearest<'a>(key: &str, allowed: &'a [String]) -> Option<&'a str> {
    let key = key.to_ascii_lowercase();
    allowed
        .iter()
        .map(|a| (strsim::damerau_levenshtein(&key, a), a))
        .filter(|(d, a)| *d <= (a.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a.as_str())
}

/// Every `` `name` `` in serde's message, in order.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// serde's name for what a key expects, in the words of TOML.
fn expected_words(expected: &str) -> String {
    match expected {
        "a boolean" => "a boolean (true or false)".to_owned(),
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" | "usize" | "isize" => {
            "an integer".to_owned()
        }
        "f32" | "f64" => "a number".to_owned(),
        "a sequence" => "an array".to_owned(),
        "a map" => "a table".to_owned(),
        "a string" | "a borrowed string" => "a string".to_owned(),
        e if e.starts_with("struct ") => "a table".to_owned(),
        e => e.to_owned(),
    }
}

/// serde's name for the value it found, in the words of TOML.
fn found_words(found: &str) -> String {
    match found {
        "sequence" => "an array".to_owned(),
        "map" => "a table".to_owned(),
        f => f.replace('`', ""),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::testing::errors;

    #[test]
    fn every_structural_problem_in_one_pass_with_its_key_path() {
        let text = "\
[server]
separater = \"__\"
listen = 8787

[[upstream]]
name = \"time\"
command = \"mcp-server-time\"
trusted = \"yes\"

[[upstream]]
name = \"files\"
command = \"node\"
args = [\"a\", 1]
env = { TOKEN = 5 }
Prefix = true

[catalg]
mode = \"eager\"
";
        assert_eq!(
            errors(text),
            [
                "sluice.toml:2:1: server.separater: unknown key; did you mean `separator`? (allowed: listen, separator, request_timeout, session_idle_timeout, max_sessions, session_max_age, startup_timeout, shutdown_grace, allowed_origins, public_url, connections)",
                "sluice.toml:3:10: server.listen: expected a string, found integer 8787",
                "sluice.toml:8:11: upstream[0].trusted: expected a boolean (true or false), found string \"yes\"",
                "sluice.toml:13:14: upstream[1].args[1]: expected a string, found integer 1",
                "sluice.toml:14:17: upstream[1].env.TOKEN: expected a string, found integer 5",
                "sluice.toml:15:1: upstream[1].Prefix: unknown key; did you mean `prefix`? (allowed: name, command, args, env, cwd, url, headers, trusted, read_only_tools, mcp_read_response_max_bytes, tool_read_budget, prefix, allow_private, rate_limit, tool_rate_limit, rlimit, sandbox, allow_dangerous, auth, oauth)",
                "sluice.toml:17:2: catalg: unknown key; did you mean `catalog`? (allowed: server, upstream, catalog, limits, redaction, policy, state, auth, ratelimit, metrics, telemetry, view, sandbox, console)",
            ]
        );
    }

    #[test]
    fn the_checks_of_values_run_after_structural_problems() {
        let text = "[server]\nlistn = \"x\"\nrequest_timeout = \"forever\"\n";
        assert_eq!(
            errors(text),
            [
                "sluice.toml:2:1: server.listn: unknown key; did you mean `listen`? (allowed: listen, separator, request_timeout, session_idle_timeout, max_sessions, session_max_age, startup_timeout, shutdown_grace, allowed_origins, public_url, connections)",
                "sluice.toml:3:19: server.request_timeout: \"forever\" is not a duration: write a number with a unit, ms, s, m, h or d (e.g. \"60s\")",
            ]
        );
    }

    #[test]
    fn a_missing_key_names_its_table_and_stops_there() {
        let text = "[[upstream]]\ncommand = \"x\"\ntrusted = 1\n";
        assert_eq!(
            errors(text),
            [
                "sluice.toml:1:1: upstream[0].name: is required but missing",
                "sluice.toml:3:11: upstream[0].trusted: expected a boolean (true or false), found integer 1",
            ]
        );
    }

    #[test]
    fn syntax_errors_are_reported_with_their_place() {
        let e = errors("[server]\nlisten = \n");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("sluice.toml:2:"), "{e:?}");
    }

    #[test]
    fn a_far_key_gets_no_suggestion() {
        let text = "[server]\nwhatever = 1\n";
        let e = errors(text);
        assert!(
            e[0].starts_with("sluice.toml:2:1: server.whatever: unknown key (allowed: listen,"),
            "{e:?}"
        );
    }

    #[test]
    fn a_file_of_many_bad_keys_reports_twenty_and_says_it_stopped() {
        let text: String = (0..200).map(|i| format!("bad_{i} = 1\n")).collect();
        let e = crate::config::testing::errors(&text);
        assert_eq!(e.len(), super::MAX_PROBLEMS + 1, "{e:?}");
        assert!(
            e[0].starts_with("sluice.toml:1:1: bad_0: unknown key"),
            "{e:?}"
        );
        assert_eq!(
            e[super::MAX_PROBLEMS],
            "sluice.toml: stopped after 20 problems: fix these and check again"
        );
    }
}
