//! Redaction of a result carried as JSON text, without a tree of it.
//!
//! A `serde_json::Value` costs tens of bytes a value (a map, a key, a
//! number's digits are each an allocation), so a result of a million tiny
//! objects takes a hundred times its size as a tree. Here the text is
//! walked one container at a time: a subtree of at most [`TREE_VALUES`]
//! values (a record, a text block, a string however long) is parsed and
//! redacted by the tree walker ([`Redactor::redact`]'s), and a larger
//! container is walked element by element over the text, keeping its
//! rules: joins across adjacent texts, secret keys, binary payloads, text
//! blobs. What it holds at once is the output, a few subtrees and the text
//! between two joined strings: a small multiple of the text, whatever its
//! shape.
//!
//! The output is the compact JSON of what the tree walker would produce:
//! the same values, keys in the same order, the same number spellings, so
//! its length is the result's measured size ([`super::super::budget`]).
//! Two things differ from a tree only in form: a large object's duplicate
//! keys are all kept (a tree keeps the last, at the first's place), and a
//! large opaque container (an MRTR state under `requestState`) is copied as
//! it came, less its white space (its escapes as the upstream wrote them).
//!
//! Each level of containers too large for a tree reads its text once more,
//! so the time is the text's size times that nesting (at most
//! [`MAX_DEPTH`]); the memory does not grow with it.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::super::budget;
use super::pass::Resume;
use super::{Redactions, Redactor, blank_strings, opaque, textual};
use crate::payload::{each_element, each_field};

/// A subtree of at most this many values (keys counted) is parsed into a
/// tree and walked as one: about a megabyte at most, and most records and
/// blocks are far smaller.
pub const TREE_VALUES: usize = 4096;

/// Containers nested deeper than this are refused, as the parser refuses
/// them in a tree.
const MAX_DEPTH: usize = 128;

/// Why a text could not be redacted.
#[derive(Debug, thiserror::Error)]
#[error("not a JSON document: {0}")]
pub struct TextError(#[from] serde_json::Error);

/// Where what is written goes: `out` until a text that a later one may
/// join is seen; then that item is held (`previous`), and what follows it
/// goes to `tail`, until the next joinable text decides both.
struct Sink<'o> {
    out: &'o mut Vec<u8>,
    previous: Option<Held>,
    tail: Vec<u8>,
    first: bool,
    /// Whether the `text` field is lifted out rather than written: the
    /// sink of a large text block, whose text the array around it joins.
    lift: bool,
    lifted: Option<(usize, Value)>,
}

/// A joinable item, not written yet: a join with the next text may change
/// it. `value` is a string or a text block; `before` and `after`, what
/// goes around it (a field's key; the rest of a large text block).
struct Held {
    before: Vec<u8>,
    value: Value,
    after: Vec<u8>,
    /// The pass state at the end of its text, when that text held no
    /// trigger and nothing changed it since.
    end: Option<Resume>,
    /// An object's field named `text`.
    text_field: bool,
}

/// One walk's running state.
struct Walk<'r> {
    redactor: &'r Redactor,
    /// The most values of a subtree parsed into a tree ([`TREE_VALUES`]).
    tree_values: usize,
    counts: Redactions,
    /// The decoded size of the binary payloads written
    /// ([`budget::binary_bytes`]).
    binary: usize,
    scratch: String,
}

/// What a walk over text found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextRedacted {
    /// The secrets redacted.
    pub redactions: Redactions,
    /// The decoded size of the binary payloads in the output, as
    /// [`budget::binary_bytes`] counts them in a tree.
    pub binary_bytes: usize,
}

// === impl Redactor ===

impl Redactor {
    /// Redacts the JSON document `text` into `out`, as compact JSON.
    pub fn redact_text_json(
        &self,
        text: &str,
        out: &mut Vec<u8>,
    ) -> Result<TextRedacted, TextError> {
        self.redact_text_json_in(text, out, TREE_VALUES)
    }

    /// [`Redactor::redact_text_json`] with trees of at most `tree_values`.
    fn redact_text_json_in(
        &self,
        text: &str,
        out: &mut Vec<u8>,
        tree_values: usize,
    ) -> Result<TextRedacted, TextError> {
        let mut walk = Walk {
            redactor: self,
            tree_values,
            counts: Redactions::default(),
            binary: 0,
            scratch: String::new(),
        };
        // A document small enough for a tree is parsed once, as one.
        match walk.container(text) {
            None => write(out, &walk.tree(text, false)?.0)?,
            kind => walk.value(serde_json::from_str(text)?, kind, false, 0, out)?,
        }
        Ok(TextRedacted {
            redactions: walk.counts,
            binary_bytes: walk.binary,
        })
    }
}

// === impl Walk ===

impl<'de> Walk<'_> {
    /// Redacts one value into `out`; `kind`: its [`Walk::container`];
    /// `blank`: it is under a secret key (its strings, and those of its
    /// arrays, are replaced).
    fn value(
        &mut self,
        raw: &'de RawValue,
        kind: Option<u8>,
        blank: bool,
        depth: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        match kind {
            Some(b'[') => self.array(raw, blank, depth, out),
            Some(_) => {
                let fields = self.type_and_mime(raw)?;
                self.object(raw, fields, depth, out, false).map(drop)
            }
            None => write(out, &self.tree(raw.get(), blank)?.0),
        }
    }

    /// A subtree small enough for a tree: parsed (and blanked under a
    /// secret key, as the tree walker does before walking it), redacted,
    /// its binary payloads counted; with the pass state at the end of its
    /// text.
    fn tree(
        &mut self,
        text: &str,
        blank: bool,
    ) -> Result<(Value, Option<Resume>), serde_json::Error> {
        let mut value: Value = serde_json::from_str(text)?;
        if blank {
            self.counts.key += blank_strings(&mut value);
        }
        let end = self
            .redactor
            .walk_child(&mut value, &mut self.counts, &mut self.scratch);
        self.binary += budget::binary_bytes(&value);
        Ok((value, end))
    }

    /// A large array, element by element: each string and text block
    /// joined to the text before it, as in the tree walker.
    fn array(
        &mut self,
        raw: &'de RawValue,
        blank: bool,
        depth: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        too_deep(depth)?;
        out.push(b'[');
        let mut sink = Sink::new(out);
        each_element(raw, |item| {
            let kind = self.container(item.get());
            if kind == Some(b'{') {
                let fields = self.type_and_mime(item)?;
                if fields.0.as_deref() != Some("text") {
                    return self
                        .object(item, fields, depth + 1, sink.next_item(), false)
                        .map(drop);
                }
                let mut block = Vec::new();
                return match self.object(item, fields, depth + 1, &mut block, true)? {
                    Some((at, text)) => {
                        let after = block.split_off(at);
                        let held = Held {
                            before: block,
                            value: text,
                            after,
                            end: None,
                            text_field: false,
                        };
                        self.join(&mut sink, held)
                    }
                    None => {
                        sink.next_item().append(&mut block);
                        Ok(())
                    }
                };
            }
            if kind.is_some() {
                return self.array(item, blank, depth + 1, sink.next_item());
            }
            let (mut value, end) = self.tree(item.get(), blank)?;
            match array_text(&mut value) {
                // A text block's pass state is not kept, as in the tree.
                Some((_, is_string)) => {
                    let held = Held::item(value, end.filter(|_| is_string));
                    self.join(&mut sink, held)
                }
                None => write(sink.next_item(), &value),
            }
        })?;
        sink.finish()?;
        out.push(b']');
        Ok(())
    }

    /// A large object, field by field: its strings joined as in the tree
    /// walker. `fields`: its `type` and `mimeType`
    /// ([`Walk::type_and_mime`], read first, since they decide which of its
    /// fields are binary). `lift`: it is a text block whose `text` an array
    /// joins: that text is returned, with where it goes in `out`, instead
    /// of written.
    fn object(
        &mut self,
        raw: &'de RawValue,
        fields: (Option<String>, Option<String>),
        depth: usize,
        out: &mut Vec<u8>,
        lift: bool,
    ) -> Result<Option<(usize, Value)>, serde_json::Error> {
        too_deep(depth)?;
        let (kind, mime) = fields;
        let binary_data = matches!(kind.as_deref(), Some("image" | "audio"));
        let text_blob = mime.as_deref().is_some_and(textual);
        out.push(b'{');
        let mut sink = Sink::new(out);
        sink.lift = lift;
        each_field(raw, |key, value| {
            if opaque(&key, binary_data) {
                let into = sink.next_field(&key)?;
                if self.container(value.get()).is_none() {
                    let mut payload: Value = serde_json::from_str(value.get())?;
                    match &mut payload {
                        Value::String(blob) if key == "blob" && text_blob => {
                            self.redactor.redact_text_blob(blob, &mut self.counts);
                        }
                        _ => {}
                    }
                    self.binary += match (&payload, key.as_ref()) {
                        (Value::String(s), "blob" | "data") => s.len() / 4 * 3,
                        _ => budget::binary_bytes(&payload),
                    };
                    return write(into, &payload);
                }
                // A large opaque container (an MRTR state) as it came.
                self.binary += self.binary_in(value, depth + 1)?;
                copy_compact(value.get(), into);
                return Ok(());
            }
            let secret = self.redactor.is_secret_key(&key);
            let kind = self.container(value.get());
            if kind.is_some() {
                let into = sink.next_field(&key)?;
                let blank = secret && kind == Some(b'[');
                return self.value(value, kind, blank, depth + 1, into);
            }
            let (value, end) = self.tree(value.get(), secret)?;
            if matches!(&value, Value::String(s) if !s.is_empty()) {
                let mut before = Vec::new();
                write_key(&mut before, &key)?;
                let held = Held {
                    before,
                    value,
                    after: Vec::new(),
                    end,
                    text_field: key == "text",
                };
                return self.join(&mut sink, held);
            }
            let into = sink.next_field(&key)?;
            write(into, &value)
        })?;
        let lifted = sink.finish()?;
        out.push(b'}');
        Ok(lifted)
    }

    /// `[` or `{` when `raw` is a container too large for a tree; `None`
    /// for a scalar, a string or a small container.
    fn container(&self, raw: &str) -> Option<u8> {
        let first = *raw.trim_start().as_bytes().first()?;
        let container = first == b'[' || first == b'{';
        (container && text_values_over(raw, self.tree_values)).then_some(first)
    }

    /// [`budget::binary_bytes`] of a value, over its text.
    fn binary_in(&self, raw: &RawValue, depth: usize) -> Result<usize, serde_json::Error> {
        too_deep(depth)?;
        let mut sum = 0;
        match self.container(raw.get()) {
            None => sum = budget::binary_bytes(&serde_json::from_str(raw.get())?),
            Some(b'[') => each_element(raw, |item| {
                sum += self.binary_in(item, depth + 1)?;
                Ok(())
            })?,
            Some(_) => {
                let binary = matches!(
                    self.type_and_mime(raw)?.0.as_deref(),
                    Some("image" | "audio")
                );
                each_field(raw, |key, value| {
                    let payload = key == "blob" || (binary && key == "data");
                    sum += match value.get().starts_with('"') {
                        true if payload => {
                            serde_json::from_str::<String>(value.get())?.len() / 4 * 3
                        }
                        _ => self.binary_in(value, depth + 1)?,
                    };
                    Ok(())
                })?;
            }
        }
        Ok(sum)
    }

    /// An object's `type` and `mimeType` (the last of each, as a tree
    /// keeps them), when they are strings.
    fn type_and_mime(
        &self,
        raw: &RawValue,
    ) -> Result<(Option<String>, Option<String>), serde_json::Error> {
        let (mut kind, mut mime) = (None, None);
        each_field(raw, |key, value| {
            let slot = match key.as_ref() {
                "type" => &mut kind,
                "mimeType" => &mut mime,
                _ => return Ok(()),
            };
            *slot = match self.container(value.get()) {
                None => serde_json::from_str::<Value>(value.get())?
                    .as_str()
                    .map(str::to_owned),
                Some(_) => None,
            };
            Ok(())
        })?;
        Ok((kind, mime))
    }

    /// A joinable item: joined to the held one, which is then written, and
    /// held in its turn.
    fn join(&mut self, sink: &mut Sink<'_>, mut item: Held) -> Result<(), serde_json::Error> {
        if let Some(mut held) = sink.previous.take() {
            if let (Some(left), Some(right)) =
                (held_text(&mut held.value), held_text(&mut item.value))
                && self.redactor.redact_join(
                    left,
                    held.end,
                    right,
                    &mut self.counts,
                    &mut self.scratch,
                )
            {
                item.end = None;
            }
            sink.release(held)?;
        }
        sink.hold(item);
        Ok(())
    }
}

// === impl Held ===

impl Held {
    /// An array's string or small text block.
    fn item(value: Value, end: Option<Resume>) -> Held {
        Held {
            before: Vec::new(),
            value,
            after: Vec::new(),
            end,
            text_field: false,
        }
    }
}

// === impl Sink ===

impl<'o> Sink<'o> {
    fn new(out: &'o mut Vec<u8>) -> Sink<'o> {
        Sink {
            out,
            previous: None,
            tail: Vec::new(),
            first: true,
            lift: false,
            lifted: None,
        }
    }

    /// Where the next item goes, after its separator.
    fn next_item(&mut self) -> &mut Vec<u8> {
        let first = std::mem::replace(&mut self.first, false);
        let into = match self.previous {
            Some(_) => &mut self.tail,
            None => &mut *self.out,
        };
        if !first {
            into.push(b',');
        }
        into
    }

    /// Where the next field's value goes, after its separator and key.
    fn next_field(&mut self, key: &str) -> Result<&mut Vec<u8>, serde_json::Error> {
        let into = self.next_item();
        write_key(into, key)?;
        Ok(into)
    }

    /// Holds a joinable item (its separator is written now: nothing comes
    /// between it and what was written before it).
    fn hold(&mut self, held: Held) {
        if !std::mem::replace(&mut self.first, false) {
            self.out.push(b',');
        }
        self.previous = Some(held);
    }

    /// Writes the held item (or lifts it out: a large text block's text),
    /// then what followed it.
    fn release(&mut self, held: Held) -> Result<(), serde_json::Error> {
        self.out.extend_from_slice(&held.before);
        if self.lift && held.text_field && self.lifted.is_none() {
            self.lifted = Some((self.out.len(), held.value));
        } else {
            write(self.out, &held.value)?;
        }
        self.out.extend_from_slice(&held.after);
        self.out.append(&mut self.tail);
        Ok(())
    }

    /// Writes what is held; the lifted text, if any.
    fn finish(mut self) -> Result<Option<(usize, Value)>, serde_json::Error> {
        if let Some(held) = self.previous.take() {
            self.release(held)?;
        }
        Ok(self.lifted)
    }
}

/// The text of an array's item that a client joins to its neighbours: a
/// non-empty string (`true`), or a text block's `text`.
fn array_text(value: &mut Value) -> Option<(&mut String, bool)> {
    match value {
        Value::String(s) if !s.is_empty() => Some((s, true)),
        Value::Object(block) if block.get("type").and_then(Value::as_str) == Some("text") => {
            match block.get_mut("text") {
                Some(Value::String(s)) if !s.is_empty() => Some((s, false)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The joinable text of a held item.
fn held_text(value: &mut Value) -> Option<&mut String> {
    array_text(value).map(|(text, _)| text)
}

/// Containers nested deeper than [`MAX_DEPTH`] are refused.
fn too_deep(depth: usize) -> Result<(), serde_json::Error> {
    match depth > MAX_DEPTH {
        true => Err(de::Error::custom("nested too deeply")),
        false => Ok(()),
    }
}

fn write(out: &mut Vec<u8>, value: &Value) -> Result<(), serde_json::Error> {
    serde_json::to_writer(out, value)
}

fn write_key(out: &mut Vec<u8>, key: &str) -> Result<(), serde_json::Error> {
    serde_json::to_writer(&mut *out, key)?;
    out.push(b':');
    Ok(())
}

/// Copies valid JSON text without its white space.
fn copy_compact(text: &str, out: &mut Vec<u8>) {
    let (mut in_string, mut escaped) = (false, false);
    for &b in text.as_bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            continue;
        }
        out.push(b);
    }
}

/// Whether the JSON text `raw` holds more than `limit` values (keys
/// counted). A text that is not JSON counts as over: the walk over it is
/// what reports the error.
pub fn text_values_over(raw: &str, limit: usize) -> bool {
    // Each value takes a byte at least: a short text needs no count.
    if raw.len() <= limit {
        return false;
    }
    let mut left = limit;
    let mut de = serde_json::Deserializer::from_str(raw);
    (Count(&mut left)).deserialize(&mut de).is_err()
}

/// Counts values down from the budget it holds, failing when it runs out.
struct Count<'c>(&'c mut usize);

impl Count<'_> {
    fn spend<E: de::Error>(&mut self) -> Result<(), E> {
        *self.0 = self.0.checked_sub(1).ok_or_else(|| E::custom("large"))?;
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E: de::Error>(mut self, _: bool) -> Result<(), E> {
        self.spend()
    }
    fn visit_i64<E: de::Error>(mut self, _: i64) -> Result<(), E> {
        self.spend()
    }
    fn visit_u64<E: de::Error>(mut self, _: u64) -> Result<(), E> {
        self.spend()
    }
    fn visit_f64<E: de::Error>(mut self, _: f64) -> Result<(), E> {
        self.spend()
    }
    fn visit_str<E: de::Error>(mut self, _: &str) -> Result<(), E> {
        self.spend()
    }
    fn visit_unit<E: de::Error>(mut self) -> Result<(), E> {
        self.spend()
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.spend()?;
        while seq.next_element_seed(Count(self.0))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.spend()?;
        while map.next_key::<IgnoredAny>()?.is_some() {
            self.spend()?;
            map.next_value_seed(Count(self.0))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
