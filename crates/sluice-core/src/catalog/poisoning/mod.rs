//! The poisoning scan: what in an entry's definition is aimed at the model
//! rather than at describing the entry, and entry names the specification
//! does not allow.
//!
//! It reads every text of an entry's definition ([`super::definition`]):
//! the name, title and description, the schemas' property names,
//! descriptions, titles, defaults and enumerations, and a prompt's
//! arguments. Each [`Finding`] names its [`Rule`], where in the definition
//! it is (`description`, `inputSchema.properties.note.description`) and the
//! text that broke the rule; [`Rule::explanation`] says why it matters.
//!
//! The scan is run on every complete catalog read: [`scan_entry`] on each
//! entry (what [`super::drift::approve`] compares with the findings the
//! lockfile accepted) and [`scan`] over the whole federation, which adds
//! the findings that need two upstreams (a name confusable with another
//! upstream's, a description that names another upstream's tool). `sluice
//! lock` refuses an entry with findings unless they are accepted.
//!
//! Names: MCP 2025-11-25 (Tools, "Tool names") says a tool name SHOULD be 1
//! to 128 characters of `A-Z a-z 0-9 _ - .`; sluice holds prompt names to
//! the same rule, because both become part of an exposed name. An entry
//! whose name breaks it is never served ([`valid_name`]).

mod text;

#[cfg(test)]
mod corpus;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::UpstreamCatalog;
use super::entry::EntryId;
use crate::discovery::ListKind;

/// The longest tool or prompt name (MCP 2025-11-25, Tools).
pub const MAX_NAME: usize = 128;

/// The longest description, title or schema text before it is a finding,
/// in characters.
pub const MAX_TEXT: usize = 2048;

/// A rule of the scan. Its [`Rule::as_str`] is what the lockfile records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// The name is not 1..128 characters of `A-Za-z0-9_.-`.
    InvalidName,
    /// Text telling the model to ignore or replace its instructions.
    OverrideInstructions,
    /// Pseudo-system markup (`<IMPORTANT>`, `<system>`, `[INST]`).
    InstructionMarkup,
    /// Text telling the model to hide what it does from the user.
    ConcealFromUser,
    /// Text naming secret files, keys or the environment to read.
    SensitiveRead,
    /// Text telling the model to send data to a URL or an address.
    SendData,
    /// Text telling the model how to use, or not use, another tool.
    OtherToolDirective,
    /// Zero-width, bidirectional, tag or control characters.
    InvisibleCharacters,
    /// A URL.
    Url,
    /// A text longer than [`MAX_TEXT`].
    OversizedText,
    /// A schema property named to carry the model's context or secrets.
    ExfiltrationParameter,
    /// A name that reads the same as another upstream's entry.
    ConfusableName,
    /// A description that names another upstream's tool.
    NamesOtherUpstreamTool,
}

/// One thing the scan found in one entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// The rule broken.
    pub rule: Rule,
    /// Where in the definition: `name`, `description`,
    /// `inputSchema.properties.path.description`, `arguments.0.name`.
    pub at: String,
    /// The text that broke it, quoted printably and cut short.
    pub evidence: String,
}

/// The findings of one upstream's catalog, by entry (entries without
/// findings are absent).
pub type CatalogFindings = BTreeMap<EntryId, Vec<Finding>>;

// === impl Rule ===

impl Rule {
    /// The rule's name, as `sluice lock` prints it and the lockfile
    /// records it.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::InvalidName => "invalid-name",
            Rule::OverrideInstructions => "override-instructions",
            Rule::InstructionMarkup => "instruction-markup",
            Rule::ConcealFromUser => "conceal-from-user",
            Rule::SensitiveRead => "sensitive-read",
            Rule::SendData => "send-data",
            Rule::OtherToolDirective => "other-tool-directive",
            Rule::InvisibleCharacters => "invisible-characters",
            Rule::Url => "url",
            Rule::OversizedText => "oversized-text",
            Rule::ExfiltrationParameter => "exfiltration-parameter",
            Rule::ConfusableName => "confusable-name",
            Rule::NamesOtherUpstreamTool => "names-other-upstream-tool",
        }
    }

    /// Why the rule matters, in one sentence.
    pub fn explanation(self) -> &'static str {
        match self {
            Rule::InvalidName => {
                "the name is not 1 to 128 characters of A-Z a-z 0-9 _ - . (MCP 2025-11-25); it is never served"
            }
            Rule::OverrideInstructions => {
                "the text tells the model to ignore or replace the instructions it was given"
            }
            Rule::InstructionMarkup => {
                "the text uses pseudo-system markup to address the model rather than describe the entry"
            }
            Rule::ConcealFromUser => "the text tells the model to hide what it does from the user",
            Rule::SensitiveRead => {
                "the text points the model at secret files, keys, credentials or its own context"
            }
            Rule::SendData => "the text tells the model to send data to a URL or an address",
            Rule::OtherToolDirective => {
                "the text tells the model how to use another tool, or what to do before this one (tool shadowing)"
            }
            Rule::InvisibleCharacters => {
                "the text holds characters a reviewer cannot see but the model reads (zero-width, bidi controls, tags)"
            }
            Rule::Url => "the text carries a URL the model may be led to fetch or send data to",
            Rule::OversizedText => {
                "the text is over 2048 characters: room to hide instructions, and a cost in every client's context"
            }
            Rule::ExfiltrationParameter => {
                "a parameter is named to carry the model's context or secrets (sidenote, conversation history, system prompt, keys)"
            }
            Rule::ConfusableName => {
                "the name reads the same as another upstream's entry, so the model may call one for the other"
            }
            Rule::NamesOtherUpstreamTool => {
                "the description names another upstream's tool, the shape of cross-server tool shadowing"
            }
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// === impl Finding ===

impl Finding {
    /// What the lockfile records of an accepted finding: `rule at path`.
    /// The evidence is left out, so the record changes only when the rule
    /// or the place does.
    pub fn key(&self) -> String {
        format!("{} at {}", self.rule, self.at)
    }
}

/// `conceal-from-user at description: "Do not tell the user" (the text
/// tells the model to hide what it does from the user)`.
impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}", self.rule, self.at)?;
        if !self.evidence.is_empty() {
            write!(f, ": {:?}", self.evidence)?;
        }
        write!(f, " ({})", self.rule.explanation())
    }
}

/// One line per finding: `tool add: conceal-from-user at description: …`.
pub fn lines(findings: &CatalogFindings) -> String {
    let mut out = Vec::new();
    for (id, found) in findings {
        for f in found {
            out.push(format!("{id}: {f}"));
        }
    }
    out.join("\n")
}

/// Whether a tool or prompt name is served: 1 to [`MAX_NAME`] characters
/// of `A-Za-z0-9_.-`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The findings of one entry on its own, sorted. An entry without its key
/// field has none (it is not served either).
pub fn scan_entry(kind: ListKind, entry: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(name) = entry.get("name").and_then(Value::as_str)
        && matches!(kind, ListKind::Tools | ListKind::Prompts)
        && !valid_name(name)
    {
        out.push(Finding {
            rule: Rule::InvalidName,
            at: "name".into(),
            evidence: text::quote(name),
        });
    }
    for (at, text) in texts(kind, entry) {
        check_text(&at, text, &mut out);
    }
    for (at, param) in parameters(kind, entry) {
        if exfiltration_shaped(param) {
            out.push(Finding {
                rule: Rule::ExfiltrationParameter,
                at,
                evidence: text::quote(param),
            });
        }
    }
    out.sort();
    out.dedup_by(|a, b| a.rule == b.rule && a.at == b.at);
    out
}

/// The findings of one upstream's catalog on its own.
pub fn scan_catalog(catalog: &UpstreamCatalog) -> CatalogFindings {
    let mut out = CatalogFindings::new();
    for kind in ListKind::ALL {
        for entry in catalog.list(kind) {
            let Some(key) = entry.get(kind.key()).and_then(Value::as_str) else {
                continue;
            };
            let found = scan_entry(kind, entry);
            if !found.is_empty() {
                let id = EntryId {
                    kind,
                    key: key.to_owned(),
                };
                out.entry(id).or_default().extend(found);
            }
        }
    }
    out
}

/// The findings of every upstream's catalog (given in config order), with
/// those that need two upstreams: confusable names and descriptions that
/// name another upstream's tool.
pub fn scan<'a>(
    upstreams: impl IntoIterator<Item = (&'a str, &'a UpstreamCatalog)>,
) -> BTreeMap<String, CatalogFindings> {
    let upstreams: Vec<(&str, &UpstreamCatalog)> = upstreams.into_iter().collect();
    let mut out: BTreeMap<String, CatalogFindings> = BTreeMap::new();
    for (name, catalog) in &upstreams {
        out.insert((*name).to_owned(), scan_catalog(catalog));
    }
    let named = |kind: ListKind, catalog: &'a UpstreamCatalog| {
        catalog
            .list(kind)
            .iter()
            .filter_map(move |e| e.get("name").and_then(Value::as_str).map(|n| (n, e)))
    };
    for (upstream, catalog) in &upstreams {
        let others: Vec<(&str, &str)> = upstreams
            .iter()
            .filter(|(other, _)| other != upstream)
            .flat_map(|(other, c)| {
                [ListKind::Tools, ListKind::Prompts]
                    .into_iter()
                    .flat_map(move |kind| named(kind, c).map(move |(n, _)| (*other, n)))
            })
            .collect();
        // Naming one's own tool is documentation, even when another
        // upstream (a second instance of the same server) has it too.
        let own: Vec<&str> = [ListKind::Tools, ListKind::Prompts]
            .into_iter()
            .flat_map(|kind| named(kind, catalog).map(|(n, _)| n))
            .collect();
        for kind in [ListKind::Tools, ListKind::Prompts] {
            for (name, entry) in named(kind, catalog) {
                let mut found = Vec::new();
                if let Some((other, like)) = others
                    .iter()
                    .find(|(_, o)| *o != name && skeleton(o) == skeleton(name))
                {
                    found.push(Finding {
                        rule: Rule::ConfusableName,
                        at: "name".into(),
                        evidence: text::quote(&format!("{name} ~ {other}: {like}")),
                    });
                }
                let described = entry.get("description").and_then(Value::as_str);
                if let Some((other, tool)) = described.and_then(|d| {
                    others
                        .iter()
                        .find(|(_, o)| distinctive(o) && !own.contains(o) && mentions(d, o))
                }) {
                    found.push(Finding {
                        rule: Rule::NamesOtherUpstreamTool,
                        at: "description".into(),
                        evidence: text::quote(&format!("{other}: {tool}")),
                    });
                }
                if !found.is_empty() {
                    let id = EntryId {
                        kind,
                        key: name.to_owned(),
                    };
                    let list = out
                        .entry((*upstream).to_owned())
                        .or_default()
                        .entry(id)
                        .or_default();
                    list.extend(found);
                    list.sort();
                }
            }
        }
    }
    out
}

/// Every text of an entry's definition the model reads, with where it is.
fn texts(kind: ListKind, entry: &Value) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    for field in ["title", "description"] {
        if let Some(s) = entry.get(field).and_then(Value::as_str) {
            out.push((field.to_owned(), s));
        }
    }
    match kind {
        ListKind::Tools => {
            if let Some(s) = entry.pointer("/annotations/title").and_then(Value::as_str) {
                out.push(("annotations.title".into(), s));
            }
            for schema in ["inputSchema", "outputSchema"] {
                if let Some(v) = entry.get(schema) {
                    schema_texts(schema.to_owned(), v, &mut out);
                }
            }
        }
        ListKind::Prompts => {
            for (i, arg) in arguments(entry) {
                for field in ["name", "title", "description"] {
                    if let Some(s) = arg.get(field).and_then(Value::as_str) {
                        out.push((format!("arguments.{i}.{field}"), s));
                    }
                }
            }
        }
        ListKind::Resources | ListKind::ResourceTemplates => {
            if let Some(s) = entry.get("name").and_then(Value::as_str) {
                out.push(("name".into(), s));
            }
        }
    }
    out
}

/// The strings of a schema a model reads: every string value except those
/// that are machinery (`pattern`, `format`, `$ref`, ...), and every
/// property name.
fn schema_texts<'a>(at: String, value: &'a Value, out: &mut Vec<(String, &'a str)>) {
    const MACHINERY: [&str; 8] = [
        "pattern",
        "format",
        "type",
        "$ref",
        "$schema",
        "$id",
        "$anchor",
        "contentEncoding",
    ];
    match value {
        Value::String(s) => out.push((at, s)),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                schema_texts(format!("{at}.{i}"), item, out);
            }
        }
        Value::Object(map) => {
            for (key, v) in map {
                if MACHINERY.contains(&key.as_str()) {
                    continue;
                }
                if key == "properties"
                    && let Some(props) = v.as_object()
                {
                    for name in props.keys() {
                        out.push((format!("{at}.properties.{name}"), name));
                    }
                }
                schema_texts(format!("{at}.{key}"), v, out);
            }
        }
        _ => {}
    }
}

fn arguments(entry: &Value) -> impl Iterator<Item = (usize, &Value)> {
    entry
        .get("arguments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// The parameter names of an entry: schema property names (at any depth)
/// and prompt argument names.
fn parameters(kind: ListKind, entry: &Value) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    match kind {
        ListKind::Tools => {
            if let Some(schema) = entry.get("inputSchema") {
                property_names("inputSchema".into(), schema, &mut out);
            }
        }
        ListKind::Prompts => {
            for (i, arg) in arguments(entry) {
                if let Some(name) = arg.get("name").and_then(Value::as_str) {
                    out.push((format!("arguments.{i}.name"), name));
                }
            }
        }
        ListKind::Resources | ListKind::ResourceTemplates => {}
    }
    out
}

fn property_names<'a>(at: String, schema: &'a Value, out: &mut Vec<(String, &'a str)>) {
    let Some(map) = schema.as_object() else {
        return;
    };
    for (key, v) in map {
        if key == "properties"
            && let Some(props) = v.as_object()
        {
            for (name, sub) in props {
                let here = format!("{at}.properties.{name}");
                out.push((here.clone(), name));
                property_names(here, sub, out);
            }
        } else if v.is_object() {
            property_names(format!("{at}.{key}"), v, out);
        }
    }
}

/// Checks one text against the text rules and its length.
fn check_text(at: &str, text: &str, out: &mut Vec<Finding>) {
    for hit in text::scan(text) {
        out.push(Finding {
            rule: hit.rule,
            at: at.to_owned(),
            evidence: hit.evidence,
        });
    }
    let chars = text.chars().count();
    if chars > MAX_TEXT {
        out.push(Finding {
            rule: Rule::OversizedText,
            at: at.to_owned(),
            evidence: format!("{chars} characters"),
        });
    }
}

/// Whether a parameter name asks the model for its context or secrets.
fn exfiltration_shaped(name: &str) -> bool {
    const SHAPES: [&str; 20] = [
        "sidenote",
        "conversationhistory",
        "fullconversation",
        "chathistory",
        "messagehistory",
        "previousmessages",
        "allmessages",
        "transcript",
        "systemprompt",
        "systeminstructions",
        "previousinstructions",
        "contextwindow",
        "fullcontext",
        "modelcontext",
        "privatekey",
        "sshkey",
        "idrsa",
        "envvars",
        "environmentvariables",
        "mcpconfig",
    ];
    let squashed: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    SHAPES.iter().any(|s| squashed.contains(s))
}

/// A name as it reads: lowercase, separators dropped, look-alike digits
/// as the letters they resemble (`read_fi1e`, `Read-File` and `readfile`
/// read the same).
fn skeleton(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.' | ' '))
        .map(|c| match c.to_ascii_lowercase() {
            '0' => 'o',
            '1' | 'i' => 'l',
            '3' => 'e',
            '5' => 's',
            '7' => 't',
            '@' => 'a',
            c => c,
        })
        .collect()
}

/// Whether a name is specific enough that a description naming it means
/// the tool, not the word (`send_email`, `read_graph`, not `add`).
fn distinctive(name: &str) -> bool {
    name.len() >= 6 && name.contains(['_', '-', '.'])
}

/// Whether `text` names `name` as a whole word.
fn mentions(text: &str, name: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}
