//! One entry of one list, by its name or URI, and how to print such a key
//! so that what it holds shows.

use std::fmt;

use crate::method::ListKind;

/// One entry of one list, by its name or URI.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryId {
    /// Which list.
    pub kind: ListKind,
    /// Its name (tools, prompts), URI (resources) or URI template.
    pub key: String,
}

// === impl EntryId ===

impl EntryId {
    /// `tool`, `resource`, `resource template` or `prompt`.
    pub fn noun(&self) -> &'static str {
        match self.kind {
            ListKind::Tools => "tool",
            ListKind::Resources => "resource",
            ListKind::ResourceTemplates => "resource template",
            ListKind::Prompts => "prompt",
        }
    }
}

/// `tool read_file`, `resource file:///a`; invisible characters of the
/// key spelled as code points ([`printable`]).
impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.noun(), printable(&self.key))
    }
}

/// Whether a character is invisible to a reader but read by a model:
/// zero-width characters, bidirectional controls, tag characters, fillers,
/// and control characters other than tab and line breaks.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206F}' | '\u{3164}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF9}'..='\u{FFFB}'
        | '\u{E0000}'..='\u{E007F}')
        || (c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
}

/// `text` with invisible characters and line breaks spelled as code points
/// (`<U+202E>`), so that printing it shows what it holds.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_invisible(c) || c == '\n' || c == '\r' || c == '\t' {
            out.push_str(&format!("<U+{:04X}>", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}
