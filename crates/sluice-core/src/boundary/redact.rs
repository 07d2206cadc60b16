//! Secret redaction over every string of a result.
//!
//! Three rules, each replacing what it finds with [`REDACTED`] and keeping
//! the JSON structure and keys:
//!
//! 1. **Exact values** sluice knows are secret: the credentials in upstream
//!    `headers` and `env`, and the values of `[redaction] secret_env`.
//! 2. **Secret keys**: every string under an object key that names a secret
//!    (`password`, `api_key`, `Authorization`, `sessionToken`, ...). Keys are
//!    compared word by word, case- and separator-insensitively: `x-api-key`
//!    and `apiKey` name `api_key`; `tokenizer` does not name `token`.
//! 3. **Value patterns**: well-known credential shapes (cloud keys, forge
//!    and chat tokens, JWTs, PEM private keys, `Bearer` tokens, passwords in
//!    URLs, `password=...` assignments). Where a pattern has a context part
//!    (`Bearer `, `user:` before `@`), only the secret part is replaced.
//!
//! Binary payloads (`data` of image and audio blocks, `blob` of resource
//! contents) are base64, not text: no rule reads them, and they are never
//! altered.
//!
//! The patterns are compiled once ([`Redactor::new`]). One case-insensitive
//! Aho-Corasick pass over a string finds the literal anchors the patterns
//! need; only patterns whose anchor occurs run, so ordinary text costs one
//! linear scan.

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;
use serde_json::Value;

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// Exact secrets shorter than this are not matched: a short value (`"1"`,
/// `"debug"`) would redact ordinary text everywhere.
pub const MIN_EXACT_SECRET: usize = 8;

/// The key names that mark a value as secret when none are configured.
pub const DEFAULT_SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "access_key",
    "private_key",
    "authorization",
    "cookie",
    "session",
];

/// The value patterns: a name (its rule kind), anchors (lowercase literals
/// one of which every match contains, found case-insensitively in one
/// pass before any expression runs), and the expression. A group named `s`
/// marks the part to replace; without one the whole match goes.
const PATTERNS: &[(&str, &[&str], &str)] = &[
    (
        "aws-access-key-id",
        &["akia", "asia", "abia", "acca"],
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    ),
    (
        "aws-secret-access-key",
        &["aws"],
        r#"(?i)aws_?(?:secret_?)?(?:access_?)?key(?:_?id)?["']?\s*[:=]\s*["']?(?P<s>[A-Za-z0-9/+=]{40})\b"#,
    ),
    (
        "github-token",
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,251}\b",
    ),
    (
        "github-token",
        &["github_pat_"],
        r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b",
    ),
    (
        "gitlab-token",
        &[
            "glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "glimt-", "gloas-", "glsoat-", "glft-",
        ],
        r"\bgl(?:pat|ptt|dt|rt|cbt|imt|oas|soat|ft)-[A-Za-z0-9_-]{20,}",
    ),
    ("slack-token", &["xox"], r"\bxox[abpre]-[A-Za-z0-9-]{10,}"),
    (
        "slack-webhook",
        &["hooks.slack.com"],
        r"https://hooks\.slack\.com/services/[A-Za-z0-9_/-]{20,}",
    ),
    (
        "stripe-key",
        &["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
        r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b",
    ),
    ("google-api-key", &["aiza"], r"\bAIza[0-9A-Za-z_-]{35}"),
    (
        "ai-provider-key",
        &["sk-"],
        r"\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
    ),
    (
        "jwt",
        &["eyj"],
        r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
    ),
    (
        "private-key",
        &["private key"],
        // A key cut before its END line (a paged read) goes to the end of
        // the text.
        r"(?s)-----BEGIN[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----(?:.*?-----END[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----|.*)",
    ),
    // A token has a digit or punctuation in it: "bearer responsibilities"
    // is prose.
    (
        "bearer-token",
        &["bearer"],
        r"(?i)\bbearer\s+(?P<s>[A-Za-z]*[0-9._~+/-][A-Za-z0-9._~+/-]{6,}=*)",
    ),
    (
        "url-password",
        // `@` is rarer than `://` in text full of links.
        &["@"],
        r#"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@?#"',{}\[\]]{1,256}:(?P<s>[^\s@/?#"',{}\[\]]{1,256})@"#,
    ),
    (
        "secret-assignment",
        &[
            "passw",
            "secret",
            "apikey",
            "api_key",
            "accesskey",
            "access_key",
            "privatekey",
            "private_key",
            "token",
        ],
        r#"(?i)(?:password|passwd|secret|api_?key|access_?key|private_?key|token)["']?\s*[:=]\s*["']?(?P<s>[^\s"',;&)}\[\]]{6,})"#,
    ),
];

/// How many replacements each rule made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Redactions {
    /// Exact configured values.
    pub exact: usize,
    /// Strings under secret keys.
    pub key: usize,
    /// Value patterns.
    pub pattern: usize,
}

/// The compiled rules.
#[derive(Debug, Clone)]
pub struct Redactor {
    exact: Option<AhoCorasick>,
    /// Each secret key name, as lowercase words.
    keys: Vec<Vec<String>>,
    /// Every word of every secret key: a key containing none of them is
    /// not secret (checked without allocating).
    key_words: Option<AhoCorasick>,
    /// The patterns' anchors; each anchor's pattern index.
    anchors: Option<AhoCorasick>,
    anchor_pattern: Vec<usize>,
    patterns: Vec<Regex>,
}

// === impl Redactions ===

impl Redactions {
    /// Replacements of every kind.
    pub fn total(&self) -> usize {
        self.exact + self.key + self.pattern
    }
}

// === impl Redactor ===

impl Redactor {
    /// Compiles the rules. Exact secrets shorter than [`MIN_EXACT_SECRET`]
    /// are left out (the caller warns about them).
    pub fn new<S: AsRef<str>>(
        exact_secrets: impl IntoIterator<Item = String>,
        secret_keys: &[S],
    ) -> Redactor {
        let mut exact: Vec<String> = exact_secrets
            .into_iter()
            .filter(|s| s.len() >= MIN_EXACT_SECRET)
            .collect();
        exact.sort();
        exact.dedup();
        let exact = if exact.is_empty() {
            None
        } else {
            // Leftmost-longest: a secret that contains another is replaced
            // whole.
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&exact)
                .ok()
        };
        // The patterns are constants, checked by the tests below.
        let patterns = PATTERNS
            .iter()
            .filter_map(|(_, _, p)| Regex::new(p).ok())
            .collect();
        let (anchor_pattern, anchor_literals): (Vec<usize>, Vec<&str>) = PATTERNS
            .iter()
            .enumerate()
            .flat_map(|(i, (_, anchors, _))| anchors.iter().map(move |a| (i, *a)))
            .unzip();
        let keys: Vec<Vec<String>> = secret_keys.iter().map(|k| words(k.as_ref())).collect();
        let mut all_words: Vec<&str> = keys.iter().flatten().map(String::as_str).collect();
        all_words.sort_unstable();
        all_words.dedup();
        Redactor {
            exact,
            key_words: case_insensitive(&all_words),
            anchors: case_insensitive(&anchor_literals),
            anchor_pattern,
            keys,
            patterns,
        }
    }

    /// Whether an object key names a secret.
    pub fn is_secret_key(&self, key: &str) -> bool {
        let Some(words_ac) = &self.key_words else {
            return false;
        };
        words_ac.is_match(key) && key_names_secret(&words(key), &self.keys)
    }

    /// Redacts every string in `value`, in place.
    pub fn redact(&self, value: &mut Value) -> Redactions {
        let mut counts = Redactions::default();
        self.walk(value, &mut counts);
        counts
    }

    /// Redacts one string; `None` when nothing in it is secret.
    pub fn redact_str(&self, text: &str, counts: &mut Redactions) -> Option<String> {
        let mut out: Option<String> = None;
        if let Some(ac) = &self.exact {
            let found = ac.find_iter(text).count();
            if found > 0 {
                counts.exact += found;
                out = Some(ac.replace_all(text, &vec![REDACTED; ac.patterns_len()]));
            }
        }
        let current = out.as_deref().unwrap_or(text);
        let Some(anchors) = &self.anchors else {
            return out;
        };
        // Which patterns may match: those with an anchor in the text.
        let mut candidates: u64 = 0;
        for m in anchors.find_overlapping_iter(current) {
            if let Some(&i) = self.anchor_pattern.get(m.pattern().as_usize()) {
                candidates |= 1 << i;
            }
        }
        if candidates == 0 {
            return out;
        }
        let mut s = current.to_owned();
        for (i, re) in self.patterns.iter().enumerate() {
            if candidates & (1 << i) == 0 {
                continue;
            }
            let (replaced, n) = replace(re, &s);
            counts.pattern += n;
            s = replaced;
        }
        Some(s)
    }

    /// A text that is itself a JSON document (tools often put their
    /// structured result in a text block too) is parsed, walked like a
    /// result, and written back (compact) when anything in it was secret;
    /// `true` when it was handled so. Only texts that could hide something
    /// are parsed (the caller checked that the text starts like JSON):
    /// those that mention a secret key word or an anchor, or
    /// escape characters (`\/`, `\u...`) that could hide one.
    fn redact_embedded_json(&self, text: &mut String, counts: &mut Redactions) -> bool {
        let worth_parsing = text.contains('\\')
            || self
                .key_words
                .as_ref()
                .is_some_and(|ac| ac.is_match(text.as_str()))
            || self
                .anchors
                .as_ref()
                .is_some_and(|ac| ac.is_match(text.as_str()))
            || self
                .exact
                .as_ref()
                .is_some_and(|ac| ac.is_match(text.as_str()));
        if !worth_parsing {
            return false;
        }
        let Ok(mut doc) = serde_json::from_str::<Value>(text) else {
            return false;
        };
        let mut inner = Redactions::default();
        self.walk(&mut doc, &mut inner);
        if inner.total() > 0 {
            counts.exact += inner.exact;
            counts.key += inner.key;
            counts.pattern += inner.pattern;
            *text = doc.to_string();
        }
        true
    }

    fn walk(&self, value: &mut Value, counts: &mut Redactions) {
        match value {
            Value::String(s) => {
                // A text that is a JSON document is redacted as one (keys
                // and all), so that no text pattern can cut across its
                // quotes; any other text by its patterns.
                let json_text = matches!(s.trim_start().as_bytes().first(), Some(b'{' | b'['));
                if json_text && self.redact_embedded_json(s, counts) {
                    return;
                }
                if let Some(redacted) = self.redact_str(s, counts) {
                    *s = redacted;
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.walk(item, counts);
                }
            }
            Value::Object(obj) => {
                let binary_data = matches!(
                    obj.get("type").and_then(Value::as_str),
                    Some("image" | "audio")
                );
                for (key, v) in obj.iter_mut() {
                    // Binary payloads, and the MRTR state a client must
                    // echo unchanged, are not text.
                    if key == "blob" || key == "requestState" || (binary_data && key == "data") {
                        continue;
                    }
                    if self.is_secret_key(key) {
                        counts.key += blank_strings(v);
                    }
                    self.walk(v, counts);
                }
            }
            _ => {}
        }
    }
}

fn case_insensitive(literals: &[&str]) -> Option<AhoCorasick> {
    if literals.is_empty() {
        return None;
    }
    // A full DFA: one table lookup a byte. The anchors start with common
    // letters, so no prefilter can skip text, and the default automaton's
    // failure transitions cost several lookups a byte on ordinary prose.
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .build(literals)
        .ok()
}

/// Whether `key` names one of `secret_keys` (see the module docs).
pub fn names_secret<S: AsRef<str>>(key: &str, secret_keys: &[S]) -> bool {
    let secrets: Vec<Vec<String>> = secret_keys.iter().map(|k| words(k.as_ref())).collect();
    key_names_secret(&words(key), &secrets)
}

fn key_names_secret(key_words: &[String], secrets: &[Vec<String>]) -> bool {
    let joined: String = key_words.concat();
    secrets.iter().any(|secret| {
        !secret.is_empty()
            && (key_words
                .windows(secret.len())
                .any(|w| w == secret.as_slice())
                || joined == secret.concat())
    })
}

/// Replaces every match of `re` (its `s` group, when it has one); returns
/// the text and how many were replaced.
fn replace(re: &Regex, text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut n = 0;
    for caps in re.captures_iter(text) {
        let Some(span) = caps.name("s").or_else(|| caps.get(0)) else {
            continue;
        };
        out.push_str(&text[last..span.start()]);
        out.push_str(REDACTED);
        last = span.end();
        n += 1;
    }
    out.push_str(&text[last..]);
    (out, n)
}

/// Replaces the strings a secret key holds: its string value, or the
/// strings of its array. An object under it (a schema, a nested record) is
/// walked like any other, not blanked whole.
fn blank_strings(value: &mut Value) -> usize {
    match value {
        Value::String(s) if s != REDACTED => {
            *s = REDACTED.to_owned();
            1
        }
        Value::Array(items) => items.iter_mut().map(blank_strings).sum(),
        _ => 0,
    }
}

/// A key's words, lowercase: split at separators and at lower-to-upper
/// case changes (`sessionToken` -> `session`, `token`).
fn words(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redactor() -> Redactor {
        Redactor::new(
            vec!["s3cr3t-upstream-token".to_owned(), "short".to_owned()],
            DEFAULT_SECRET_KEYS,
        )
    }

    #[test]
    fn every_pattern_compiles_and_has_lowercase_anchors() {
        for (name, anchors, p) in PATTERNS {
            assert!(Regex::new(p).is_ok(), "{name}");
            assert!(!anchors.is_empty(), "{name}");
            for a in *anchors {
                assert_eq!(*a, a.to_lowercase(), "{name}");
            }
        }
        let r = redactor();
        assert_eq!(r.patterns.len(), PATTERNS.len());
        assert!(PATTERNS.len() <= 64, "candidates are a u64 bit set");
    }

    #[test]
    fn keys_are_matched_word_by_word() {
        let r = redactor();
        for key in [
            "password",
            "PASSWORD",
            "db_password",
            "x-api-key",
            "apiKey",
            "APIKEY",
            "api_key",
            "sessionToken",
            "access_token",
            "Authorization",
            "set-cookie",
            "privateKey",
            "client_secret",
            "session_id",
        ] {
            assert!(r.is_secret_key(key), "{key}");
        }
        for key in [
            "tokenizer",
            "max_tokens",
            "author",
            "secretary",
            "keyboard",
            "name",
            "sessions_total",
            "passwordless",
        ] {
            assert!(!r.is_secret_key(key), "{key}");
        }
    }

    #[test]
    fn structure_and_keys_are_kept() {
        let r = redactor();
        let mut v = json!({
            "user": "ada",
            "credentials": {"password": "hunter2!", "apiKey": ["k1-abcdefgh", {"nested": "deep"}], "retries": 3},
            "note": "call with s3cr3t-upstream-token please",
            "content": [{"type": "text", "text": "Authorization: Bearer abcdef0123456789xyz"}],
        });
        let counts = r.redact(&mut v);
        assert_eq!(
            v,
            json!({
                "user": "ada",
                // An object under a secret key is walked, not blanked whole.
                "credentials": {"password": "[redacted]", "apiKey": ["[redacted]", {"nested": "deep"}], "retries": 3},
                "note": "call with [redacted] please",
                "content": [{"type": "text", "text": "Authorization: Bearer [redacted]"}],
            })
        );
        assert_eq!(
            counts,
            Redactions {
                exact: 1,
                key: 2,
                pattern: 1
            }
        );
    }

    #[test]
    fn json_inside_a_text_block_gets_the_key_rule() {
        let r = redactor();
        // A passphrase with spaces: the text pattern takes its first word
        // only; the key rule takes all of it.
        let mut v = json!({"content": [{"type": "text", "text": "{\"user\": \"ada\", \"password\": \"correct horse battery\", \"n\": 1}"}]});
        let counts = r.redact(&mut v);
        assert_eq!(
            v["content"][0]["text"],
            "{\"user\":\"ada\",\"password\":\"[redacted]\",\"n\":1}"
        );
        assert_eq!(counts.key, 1);
        // JSON without secrets keeps its exact text.
        let original = "{ \"user\" : \"ada\" }";
        let mut v = json!(original);
        r.redact(&mut v);
        assert_eq!(v, json!(original));
    }

    #[test]
    fn review_cases_json_text_pem_schemas_and_state() {
        let r = redactor();
        // A URL-password rule never cuts across JSON quotes.
        let mut v = json!("{\"url\":\"https://a.io\",\"email\":\"x@y.z\"}");
        r.redact(&mut v);
        assert_eq!(v, json!("{\"url\":\"https://a.io\",\"email\":\"x@y.z\"}"));
        // Escapes do not hide a password from the JSON pass.
        let mut v = json!("{\"dsn\":\"postgres:\\/\\/app:pa55w0rd@db\",\"n\":1}");
        r.redact(&mut v);
        assert!(!v.to_string().contains("pa55w0rd"), "{v}");
        // A private key cut before its END line.
        let mut c = Redactions::default();
        let cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1L";
        assert_eq!(r.redact_str(cut, &mut c).as_deref(), Some("[redacted]"));
        // A schema property named like a secret keeps its schema; a
        // requestState is echoed as it came.
        let mut v = json!({"requestedSchema": {"properties": {"apiToken": {"type": "string"}}},
                           "requestState": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefgh"});
        let before = v.clone();
        r.redact(&mut v);
        assert_eq!(v, before);
    }

    #[test]
    fn binary_data_is_never_touched() {
        let r = redactor();
        // Base64 that happens to contain a secret-looking run.
        let data = "AKIAABCDEFGHIJKLMNOPghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        let mut v = json!({"content": [
            {"type": "image", "data": data, "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "x://1", "blob": data}},
        ]});
        let before = v.clone();
        assert_eq!(r.redact(&mut v).total(), 0);
        assert_eq!(v, before);
    }

    #[test]
    fn short_exact_values_are_ignored() {
        let r = redactor();
        let mut counts = Redactions::default();
        assert_eq!(r.redact_str("a short story", &mut counts), None);
    }

    #[test]
    fn only_the_secret_part_of_a_context_pattern_goes() {
        let r = redactor();
        let mut c = Redactions::default();
        assert_eq!(
            r.redact_str("postgres://app:pa55w0rd@db.internal:5432/prod", &mut c)
                .as_deref(),
            Some("postgres://app:[redacted]@db.internal:5432/prod")
        );
        assert_eq!(
            r.redact_str(
                "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                &mut c
            )
            .as_deref(),
            Some("export AWS_SECRET_ACCESS_KEY=[redacted]")
        );
    }
}
