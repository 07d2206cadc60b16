//! Secret redaction over every string of a result.
//!
//! Three kinds of rule, each replacing what it finds with [`REDACTED`] and
//! keeping the JSON structure and keys:
//!
//! 1. **Exact values** sluice knows are secret: the credentials in upstream
//!    `headers` and `env`, and the values of `[redaction] secret_env`, in
//!    any letter case and in their common encodings
//!    ([`encodings::known_forms`]).
//! 2. **Secret keys** ([`context`]): every string under an object key that
//!    names a secret (`password`, `api_key`, `Authorization`,
//!    `sessionToken`, ...), and a value after such a name in text (`.env`,
//!    ini and properties lines, `password: ...` in prose, query strings).
//! 3. **Value rules** ([`rules::RULES`]): the documented token formats of
//!    credential providers, and context rules (HTTP headers written in
//!    prose, URL userinfo, signed query strings). Where a rule has a context
//!    part (`Bearer `, `user:` before `@`), only the secret part is
//!    replaced.
//!
//! Before matching, invisible characters are stripped, and base64, hex,
//! percent-encoded and JSON-escaped runs that hold an encoded anchor are
//! decoded and scanned ([`encodings`]). Text a client would join (adjacent
//! text blocks, the strings of one array or object) is also scanned across
//! each join.
//!
//! Binary payloads (`data` of image and audio blocks, `blob` of resource
//! contents) are base64, not text: no rule reads them, and they are never
//! altered, except a `blob` whose `mimeType` is textual (`text/*`, JSON,
//! XML, YAML, TOML, JavaScript, shell): it is decoded, redacted as text
//! and encoded again when it held a secret.
//!
//! All of it is compiled once ([`Redactor::new`]) into one case-insensitive
//! Aho-Corasick pass ([`engine`], stepped by [`pass`]): ordinary text costs
//! one linear scan, with no allocation and no copy.

pub mod context;
pub mod encodings;
mod engine;
mod pass;
pub mod rules;
pub mod text;

use serde_json::Value;

pub use context::DEFAULT_SECRET_KEYS;
use context::{key_names_secret, words};
use engine::{Found, Kind, Scanner};
use pass::{Pass, Resume};

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// Exact secrets shorter than this are not matched: a short value (`"1"`,
/// `"debug"`) would redact ordinary text everywhere.
pub const MIN_EXACT_SECRET: usize = 8;

/// How much of each side of a join is scanned across it: the longest
/// token a rule takes without a space.
const JOIN_REACH: usize = 512;

/// How many replacements each rule made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Redactions {
    /// Exact configured values.
    pub exact: usize,
    /// Strings under secret keys.
    pub key: usize,
    /// Value rules (and values after a secret name in text).
    pub pattern: usize,
}

/// The compiled rules.
#[derive(Debug, Clone)]
pub struct Redactor {
    scanner: Scanner,
    /// Each secret key name, as lowercase words.
    keys: Vec<Vec<String>>,
    /// Every word of every secret key: a key containing none of them is
    /// not secret (checked without allocating).
    key_words: Option<Pass>,
    /// The length of the shortest of them: a shorter key (`id`, `ok`)
    /// holds none, and is not stepped through the pass.
    shortest_key_word: usize,
}

// === impl Redactions ===

impl Redactions {
    /// Replacements of every kind.
    pub fn total(&self) -> usize {
        self.exact + self.key + self.pattern
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: Redactions) {
        self.exact += other.exact;
        self.key += other.key;
        self.pattern += other.pattern;
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
        let keys: Vec<Vec<String>> = secret_keys.iter().map(|k| words(k.as_ref())).collect();
        let mut all_words: Vec<&str> = keys.iter().flatten().map(String::as_str).collect();
        all_words.sort_unstable();
        all_words.dedup();
        let key_words = Pass::new(&all_words);
        let shortest_key_word = all_words.iter().map(|w| w.len()).min().unwrap_or(0);
        Redactor {
            scanner: Scanner::new(&exact, keys.clone()),
            keys,
            key_words,
            shortest_key_word,
        }
    }

    /// Whether an object key names a secret.
    pub fn is_secret_key(&self, key: &str) -> bool {
        let Some(words_ac) = &self.key_words else {
            return false;
        };
        if key.len() < self.shortest_key_word {
            return false;
        }
        words_ac.any(key.as_bytes()) && self.words_name_secret(key)
    }

    /// [`Redactor::is_secret_key`] of a key holding a secret key's word:
    /// out of line, since it allocates the key's words, and most keys hold
    /// none.
    #[inline(never)]
    fn words_name_secret(&self, key: &str) -> bool {
        key_names_secret(&words(key), &self.keys)
    }

    /// Redacts every string in `value`, in place.
    pub fn redact(&self, value: &mut Value) -> Redactions {
        let mut counts = Redactions::default();
        self.walk(value, &mut counts, &mut String::new());
        counts
    }

    /// Redacts one string; `None` when nothing in it is secret.
    pub fn redact_str(&self, text: &str, counts: &mut Redactions) -> Option<String> {
        self.redact_text(text, counts).0
    }

    /// [`Redactor::redact_str`], and the pass's state at the end of a text
    /// that held no trigger at all.
    fn redact_text(&self, text: &str, counts: &mut Redactions) -> (Option<String>, Option<Resume>) {
        // No rule matches fewer bytes than the shortest exact secret (a
        // short value under a secret key is the key rule's).
        if text.len() < MIN_EXACT_SECRET {
            return (None, None);
        }
        let mut found = Vec::new();
        let scanned = self.scanner.scan(text, 0, &mut found);
        if scanned.invisible {
            // Invisible characters go only from a text that held a secret.
            let stripped = encodings::strip_invisible(text);
            let mut in_stripped = Vec::new();
            self.scanner.scan(&stripped, 0, &mut in_stripped);
            if !in_stripped.is_empty() {
                return (Some(replaced(&stripped, in_stripped, counts)), None);
            }
        }
        if found.is_empty() {
            (None, scanned.clean_end)
        } else {
            (Some(replaced(text, found, counts)), None)
        }
    }

    /// A text that is itself a JSON document (tools often put their
    /// structured result in a text block too) is parsed, walked like a
    /// result, and written back (compact) when anything in it was secret;
    /// `true` when it was handled so. Only texts that could hide something
    /// are parsed (the caller checked that the text starts like JSON):
    /// those that hold a trigger or a key word, or escape characters
    /// (`\/`, `\u...`) that could hide one.
    fn redact_embedded_json(
        &self,
        text: &mut String,
        counts: &mut Redactions,
        scratch: &mut String,
    ) -> bool {
        let worth_parsing = text.contains('\\')
            || self
                .key_words
                .as_ref()
                .is_some_and(|p| p.any(text.as_bytes()))
            || self.scanner.any(text);
        if !worth_parsing {
            return false;
        }
        let Ok(mut doc) = serde_json::from_str::<Value>(text) else {
            return false;
        };
        let mut inner = Redactions::default();
        self.walk(&mut doc, &mut inner, scratch);
        if inner.total() > 0 {
            counts.add(inner);
            *text = doc.to_string();
        }
        true
    }

    /// Redacts `value`; for a string that held no trigger, the pass's
    /// state at its end (for the join after it).
    fn walk(
        &self,
        value: &mut Value,
        counts: &mut Redactions,
        scratch: &mut String,
    ) -> Option<Resume> {
        match value {
            Value::String(s) => return self.walk_string(s, counts, scratch),
            Value::Array(items) => {
                // Adjacent text blocks, and the strings of an array, as a
                // client would join them: each join once both its sides
                // are redacted.
                let mut previous = None;
                for item in items.iter_mut() {
                    let end = self.walk_child(item, counts, scratch);
                    let text = match item {
                        Value::String(s) => Some((s, end)),
                        Value::Object(block)
                            if field(block, "type").and_then(Value::as_str) == Some("text") =>
                        {
                            match block.get_mut("text") {
                                Some(Value::String(s)) => Some((s, None)),
                                _ => None,
                            }
                        }
                        _ => None,
                    };
                    if let Some((text, end)) = text {
                        self.join_next(&mut previous, text, end, counts, scratch);
                    }
                }
            }
            Value::Object(obj) => {
                let (kind, mime) = fields_type_and_mime(obj);
                let binary_data = matches!(kind, Some("image" | "audio"));
                if mime.is_some_and(textual)
                    && let Some(Value::String(blob)) = obj.get_mut("blob")
                {
                    self.redact_text_blob(blob, counts);
                }
                // A secret split across the string values of one object.
                let mut previous = None;
                for (key, v) in obj.iter_mut() {
                    // Binary payloads, and the MRTR state a client must
                    // echo unchanged, are not text.
                    if opaque(key, binary_data) {
                        continue;
                    }
                    if self.is_secret_key(key) {
                        counts.key += blank_strings(v);
                    }
                    let end = self.walk_child(v, counts, scratch);
                    if let Value::String(s) = v {
                        self.join_next(&mut previous, s, end, counts, scratch);
                    }
                }
            }
            _ => {}
        }
        None
    }

    /// [`Redactor::walk`] of an item or a field, without a call for a
    /// scalar or a string (most of a record's values).
    #[inline(always)]
    fn walk_child(
        &self,
        value: &mut Value,
        counts: &mut Redactions,
        scratch: &mut String,
    ) -> Option<Resume> {
        match value {
            Value::String(s) => self.walk_string(s, counts, scratch),
            Value::Array(_) | Value::Object(_) => self.walk(value, counts, scratch),
            _ => None,
        }
    }

    /// Redacts one string of a result; the pass's state at its end when it
    /// held no trigger.
    fn walk_string(
        &self,
        s: &mut String,
        counts: &mut Redactions,
        scratch: &mut String,
    ) -> Option<Resume> {
        // Most strings of a record: too short for any rule, and no JSON.
        if s.len() < MIN_EXACT_SECRET && !starts_like_json(s) {
            return None;
        }
        // A text that is a JSON document is redacted as one (keys and all),
        // so that no text pattern can cut across its quotes; any other text
        // by its patterns.
        if starts_like_json(s) && self.redact_embedded_json(s, counts, scratch) {
            return None;
        }
        let (redacted, clean_end) = self.redact_text(s, counts);
        if let Some(redacted) = redacted {
            *s = redacted;
        }
        clean_end
    }

    /// A base64 blob of text: decoded, redacted, and encoded again when it
    /// held a secret. A blob that is not base64 of UTF-8 is left alone.
    fn redact_text_blob(&self, blob: &mut String, counts: &mut Redactions) {
        use base64::Engine;
        let engine = base64::engine::general_purpose::STANDARD;
        let Some(text) = engine
            .decode(blob.trim())
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
        else {
            return;
        };
        if let Some(redacted) = self.redact_str(&text, counts) {
            *blob = engine.encode(redacted);
        }
    }

    /// Joins `text` to the text before it (`previous`), redacting on both
    /// sides what crosses the join, and makes it the text before the next;
    /// an empty text is skipped, as a client joining them would.
    fn join_next<'v>(
        &self,
        previous: &mut Option<(&'v mut String, Option<Resume>)>,
        text: &'v mut String,
        mut end: Option<Resume>,
        counts: &mut Redactions,
        scratch: &mut String,
    ) {
        if text.is_empty() {
            return;
        }
        // A join that changed the start of `text` leaves no end state to
        // trust for the next join.
        if let Some((left, left_end)) = previous.take()
            && self.redact_join(left, left_end, text, counts, scratch)
        {
            end = None;
        }
        *previous = Some((text, end));
    }

    /// One join: the end of `left` and the start of `right`, each up to a
    /// space or [`JOIN_REACH`], scanned as one; `true` when it redacted
    /// something. `left_end`: the pass's state at the end of a `left` that
    /// held no trigger.
    fn redact_join(
        &self,
        left: &mut String,
        left_end: Option<Resume>,
        right: &mut String,
        counts: &mut Redactions,
        scratch: &mut String,
    ) -> bool {
        let head_end = join_head(right);
        // Most joins hold no trigger: checked in place, before any copy.
        // After a `left` with none, only a trigger that ends in `right`'s
        // first word can be there, and the pass goes on from `left`'s end.
        if head_end == 0
            || left_end.is_some_and(|end| !self.scanner.any_after(end, &right[..head_end]))
        {
            return false;
        }
        let tail_start = join_tail(left);
        let tail_len = left.len() - tail_start;
        if tail_len == 0
            || tail_len + head_end < MIN_EXACT_SECRET
            || !self
                .scanner
                .any_across(&left[tail_start..], &right[..head_end])
        {
            return false;
        }
        self.redact_crossing(left, tail_start, right, head_end, counts, scratch)
    }

    /// A join that holds a trigger: `left` from `tail_start` and `right`
    /// up to `head_end`, copied and scanned as one; what crosses the join
    /// is redacted on both sides. Out of line: most joins never get here,
    /// and the ones that do not pay for its frame.
    #[inline(never)]
    fn redact_crossing(
        &self,
        left: &mut String,
        tail_start: usize,
        right: &mut String,
        head_end: usize,
        counts: &mut Redactions,
        scratch: &mut String,
    ) -> bool {
        let tail_len = left.len() - tail_start;
        scratch.clear();
        scratch.push_str(&left[tail_start..]);
        scratch.push_str(&right[..head_end]);
        let mut found = Vec::new();
        self.scanner.scan(scratch, 0, &mut found);
        let crossing = || {
            found
                .iter()
                .filter(|f| f.range.start < tail_len && f.range.end > tail_len)
        };
        let (Some(cut_left), Some(cut_right), Some(first)) = (
            crossing().map(|f| f.range.start).min(),
            crossing().map(|f| f.range.end).max(),
            crossing().next(),
        ) else {
            return false;
        };
        count(counts, first.kind);
        left.replace_range(tail_start + cut_left.., REDACTED);
        right.replace_range(..cut_right - tail_len, REDACTED);
        true
    }
}

/// Whether a MIME type names text (a resource blob of it is redacted).
fn textual(mime: &str) -> bool {
    let essence = mime.split(';').next().unwrap_or_default().trim();
    let essence = essence.to_ascii_lowercase();
    essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence.as_str(),
            "application/json"
                | "application/xml"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/javascript"
                | "application/x-sh"
                | "application/x-www-form-urlencoded"
        )
}

/// Keys whose values are not text: binary payloads, and the MRTR state a
/// client must echo unchanged.
fn opaque(key: &str, binary_data: bool) -> bool {
    key == "blob" || key == "requestState" || (binary_data && key == "data")
}

/// Whether a text starts like a JSON document (after any white space).
fn starts_like_json(text: &str) -> bool {
    match text.as_bytes().first() {
        Some(b'{' | b'[') => true,
        // Most texts: one byte decides.
        Some(&b) if b.is_ascii() && !char::from(b).is_whitespace() => false,
        _ => matches!(text.trim_start().as_bytes().first(), Some(b'{' | b'[')),
    }
}

/// A result's objects are small: comparing a few names costs less than
/// hashing one.
const SMALL: usize = 8;

/// A field of an object (see [`SMALL`]).
fn field<'v>(obj: &'v serde_json::Map<String, Value>, name: &str) -> Option<&'v Value> {
    if obj.len() > SMALL {
        return obj.get(name);
    }
    obj.iter()
        .find_map(|(key, value)| (key == name).then_some(value))
}

/// An object's `type` and `mimeType`, when they are strings: in one look
/// at each name of a small object (every record asks for both).
fn fields_type_and_mime(obj: &serde_json::Map<String, Value>) -> (Option<&str>, Option<&str>) {
    if obj.len() > SMALL {
        let get = |name| obj.get(name).and_then(Value::as_str);
        return (get("type"), get("mimeType"));
    }
    let (mut kind, mut mime) = (None, None);
    for (key, value) in obj {
        match key.as_str() {
            "type" => kind = value.as_str(),
            "mimeType" => mime = value.as_str(),
            _ => {}
        }
    }
    (kind, mime)
}

/// Whether a byte ends an ASCII byte-by-byte search for white space: a
/// space, or a byte of a character that needs decoding.
fn space_or_not_ascii(b: &u8) -> bool {
    !b.is_ascii() || char::from(*b).is_whitespace()
}

/// Where the last word of `text` starts (at most [`JOIN_REACH`] back).
/// Only that reach is read, byte by byte while it is ASCII (most text).
fn join_tail(text: &str) -> usize {
    let floor = text.len().saturating_sub(JOIN_REACH);
    let tail = text.as_bytes().get(floor..).unwrap_or_default();
    let mut start = match tail.iter().rposition(space_or_not_ascii) {
        None => floor,
        Some(i) if tail.get(i).is_some_and(u8::is_ascii) => floor + i + 1,
        Some(_) => text
            .rfind(char::is_whitespace)
            .map_or(0, |i| {
                i + text[i..].chars().next().map_or(1, char::len_utf8)
            })
            .max(floor),
    };
    while !text.is_char_boundary(start) {
        start += 1;
    }
    start
}

/// Where the first word of `text` ends (at most [`JOIN_REACH`] on); see
/// [`join_tail`].
fn join_head(text: &str) -> usize {
    let head = text
        .as_bytes()
        .get(..JOIN_REACH.min(text.len()))
        .unwrap_or_default();
    let mut end = match head.iter().position(space_or_not_ascii) {
        None => head.len(),
        Some(i) if head.get(i).is_some_and(u8::is_ascii) => i,
        Some(_) => text
            .find(char::is_whitespace)
            .unwrap_or(text.len())
            .min(JOIN_REACH),
    };
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

fn count(counts: &mut Redactions, kind: Kind) {
    match kind {
        Kind::Exact => counts.exact += 1,
        Kind::Pattern => counts.pattern += 1,
    }
}

/// `text` with every found range replaced (overlapping and touching ranges
/// as one), counting each replacement.
fn replaced(text: &str, mut found: Vec<Found>, counts: &mut Redactions) -> String {
    found.sort_by_key(|f| (f.range.start, std::cmp::Reverse(f.range.end)));
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut iter = found.into_iter().peekable();
    while let Some(first) = iter.next() {
        let mut end = first.range.end;
        while let Some(next) = iter.next_if(|n| n.range.start <= end) {
            end = end.max(next.range.end);
        }
        let start = first.range.start.max(last);
        if start >= end {
            continue;
        }
        out.push_str(&text[last..start]);
        out.push_str(REDACTED);
        count(counts, first.kind);
        last = end;
    }
    out.push_str(&text[last..]);
    out
}

/// Whether `key` names one of `secret_keys` (see [`context`]).
pub fn names_secret<S: AsRef<str>>(key: &str, secret_keys: &[S]) -> bool {
    let secrets: Vec<Vec<String>> = secret_keys.iter().map(|k| words(k.as_ref())).collect();
    key_names_secret(&words(key), &secrets)
}

/// Replaces the strings a secret key holds: its string value, or the
/// strings of its array. An object under it (a schema, a nested record) is
/// walked like any other, not blanked whole; a placeholder stays.
pub fn blank_strings(value: &mut Value) -> usize {
    match value {
        Value::String(s) if !context::placeholder(s) => {
            *s = REDACTED.to_owned();
            1
        }
        Value::Array(items) => items.iter_mut().map(blank_strings).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
