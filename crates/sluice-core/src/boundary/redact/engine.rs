//! The scanner: one case-insensitive Aho-Corasick pass over a text finds
//! every trigger (a rule's anchor, a secret key word, a known secret or one
//! of its encoded forms, an encoded anchor, an invisible character); each
//! trigger then runs its own check in a bounded window around itself. Text
//! with no trigger costs that one pass ([`super::pass`]), whatever the
//! number of rules.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

use super::context;
use super::encodings::{self, Encoding};
use super::pass::{Pass, Resume};
use super::rules::{RULES, Rule};

/// How deep decoded text is decoded again (base64 of hex of a token).
const MAX_DEPTH: u8 = 2;

/// Secret key words shorter than this are no trigger in text (`x` of
/// `x-auth`); the object-key rule still compares them.
const MIN_WORD: usize = 3;

/// `RULES`' expressions, compiled on first use, once per process: most
/// texts trigger few rules, and compiling all of them would cost more than
/// building the pass.
static COMPILED: [OnceLock<Option<Regex>>; RULES.len()] = [const { OnceLock::new() }; RULES.len()];

fn compiled(rule: usize) -> Option<&'static Regex> {
    let (slot, r) = (COMPILED.get(rule)?, RULES.get(rule)?);
    // The rules are constants, checked by their tests.
    slot.get_or_init(|| Regex::new(r.pattern).ok()).as_ref()
}

/// What a literal of the pass stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// An anchor of `RULES[rule]`, spelt `anchor`.
    Rule { rule: usize, anchor: &'static str },
    /// A word of a secret key name, possibly followed by a value.
    Word,
    /// A known secret, or one of its forms; an encoded form found inside
    /// a longer run of its encoding takes the run.
    Exact(Option<Encoding>),
    /// A character stripped before matching.
    Invisible,
    /// A mark of an encoded run worth decoding.
    Encoded(Encoding),
}

/// The literals of the pass, each with its triggers (one literal may be
/// an anchor and a key word both).
#[derive(Default)]
struct Literals(BTreeMap<Vec<u8>, Vec<Trigger>>);

impl Literals {
    fn add(&mut self, literal: &[u8], trigger: Trigger) {
        let triggers = self.0.entry(literal.to_ascii_lowercase()).or_default();
        if !triggers.contains(&trigger) {
            triggers.push(trigger);
        }
    }

    /// The base64 and hex forms of a literal, in the spellings a config
    /// file uses (as written, lowercase, uppercase).
    fn add_encoded(&mut self, literal: &str) {
        for spelling in [
            literal.to_owned(),
            literal.to_ascii_lowercase(),
            literal.to_ascii_uppercase(),
        ] {
            for form in encodings::base64_forms(spelling.as_bytes()) {
                self.add(form.as_bytes(), Trigger::Encoded(Encoding::Base64));
            }
            if spelling.len() >= 4 {
                let hex = encodings::hex_form(spelling.as_bytes());
                self.add(hex.as_bytes(), Trigger::Encoded(Encoding::Hex));
            }
        }
    }
}

/// Which rule kind a found secret is counted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Exact,
    Pattern,
}

/// One secret found in a text.
#[derive(Debug, Clone)]
pub(super) struct Found {
    pub range: Range<usize>,
    pub kind: Kind,
}

/// What a scan saw besides its secrets.
#[derive(Debug, Default)]
pub(super) struct Scanned {
    /// The text holds an invisible character (the caller scans it again,
    /// stripped).
    pub invisible: bool,
    /// The text holds no trigger at all: the pass's state at its end.
    pub clean_end: Option<Resume>,
}

/// The compiled triggers.
#[derive(Debug, Clone)]
pub(super) struct Scanner {
    pass: Option<Pass>,
    /// Each literal's triggers.
    triggers: Vec<Vec<Trigger>>,
    /// Each secret key name, as lowercase words.
    keys: Vec<Vec<String>>,
}

impl Scanner {
    pub fn new(exact: &[String], keys: Vec<Vec<String>>) -> Scanner {
        let mut literals = Literals::default();
        for (rule, r) in RULES.iter().enumerate() {
            for &anchor in r.anchors {
                literals.add(anchor.as_bytes(), Trigger::Rule { rule, anchor });
                literals.add_encoded(anchor);
            }
        }
        let mut words: Vec<&str> = keys
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|w| w.len() >= MIN_WORD)
            .collect();
        words.sort_unstable();
        words.dedup();
        for word in words {
            literals.add(word.as_bytes(), Trigger::Word);
            literals.add_encoded(word);
        }
        for secret in exact {
            literals.add(secret.as_bytes(), Trigger::Exact(None));
            for (form, extend) in encodings::known_forms(secret) {
                literals.add(form.as_bytes(), Trigger::Exact(extend));
            }
        }
        for c in encodings::INVISIBLE {
            literals.add(c.to_string().as_bytes(), Trigger::Invisible);
        }
        for mark in encodings::PERCENT_MARKS {
            literals.add(mark.as_bytes(), Trigger::Encoded(Encoding::Percent));
        }
        for mark in encodings::JSON_ESCAPE_MARKS {
            literals.add(mark.as_bytes(), Trigger::Encoded(Encoding::JsonEscape));
        }
        let (literals, triggers): (Vec<Vec<u8>>, Vec<Vec<Trigger>>) =
            literals.0.into_iter().unzip();
        Scanner {
            pass: Pass::new(&literals),
            triggers,
            keys,
        }
    }

    /// Whether any trigger occurs in `text`.
    pub fn any(&self, text: &str) -> bool {
        self.pass.as_ref().is_some_and(|p| p.any(text.as_bytes()))
    }

    /// Whether any trigger occurs in `left` followed by `right`.
    pub fn any_across(&self, left: &str, right: &str) -> bool {
        self.pass
            .as_ref()
            .is_some_and(|p| p.any_across(left.as_bytes(), right.as_bytes()))
    }

    /// Whether any trigger ends in `right`, after a text with none that
    /// ended in `from` (see [`Scanned::clean_end`]).
    pub fn any_after(&self, from: Resume, right: &str) -> bool {
        self.pass
            .as_ref()
            .is_some_and(|p| p.any_after(from, right.as_bytes()))
    }

    /// The secrets in `text` (unsorted, possibly overlapping), into `found`.
    pub fn scan(&self, text: &str, depth: u8, found: &mut Vec<Found>) -> Scanned {
        let Some(pass) = &self.pass else {
            return Scanned::default();
        };
        let mut invisible = false;
        // Where the last decoded run of each encoding ended: a run holds
        // many marks, and is decoded once.
        let mut decoded_until = [0usize; 4];
        let clean_end = pass.each(text.as_bytes(), |literal, hit| {
            let Some(triggers) = self.triggers.get(literal) else {
                return;
            };
            for trigger in triggers {
                match *trigger {
                    Trigger::Rule { rule, anchor } => {
                        self.rule(text, rule, anchor, hit.clone(), found);
                    }
                    Trigger::Word => self.assignment(text, hit.clone(), found),
                    Trigger::Exact(extend) => found.push(Found {
                        range: match extend {
                            Some(e) => encodings::run(text, hit.clone(), e),
                            None => hit.clone(),
                        },
                        kind: Kind::Exact,
                    }),
                    Trigger::Invisible => invisible = true,
                    Trigger::Encoded(encoding) if depth < MAX_DEPTH => {
                        let run = encodings::run(text, hit.clone(), encoding);
                        let until = &mut decoded_until[encoding as usize];
                        if run.start < *until {
                            continue;
                        }
                        *until = run.end;
                        if let Some(kind) = self.decoded(&text[run.clone()], encoding, depth) {
                            found.push(Found { range: run, kind });
                        }
                    }
                    Trigger::Encoded(_) => {}
                }
            }
        });
        Scanned {
            invisible,
            clean_end,
        }
    }

    /// Runs `RULES[rule]` in its window around an anchor found at `hit`.
    fn rule(
        &self,
        text: &str,
        rule: usize,
        anchor: &str,
        hit: Range<usize>,
        found: &mut Vec<Found>,
    ) {
        let (Some(r), Some(re)) = (RULES.get(rule), compiled(rule)) else {
            return;
        };
        if r.case_sensitive && text.get(hit.clone()) != Some(anchor) {
            return;
        }
        let window = window(text, r, hit);
        let Some(slice) = text.get(window.clone()) else {
            return;
        };
        for caps in re.captures_iter(slice) {
            let Some(part) = caps.name("s").or_else(|| caps.get(0)) else {
                continue;
            };
            if r.check.passes(part.as_str()) {
                found.push(Found {
                    range: window.start + part.start()..window.start + part.end(),
                    kind: Kind::Pattern,
                });
            }
        }
    }

    /// A value after a secret key name in text (`DB_PASS=...`).
    fn assignment(&self, text: &str, hit: Range<usize>, found: &mut Vec<Found>) {
        let Some((key, value)) = context::assignment(text, hit) else {
            return;
        };
        let names_secret = text
            .get(key)
            .is_some_and(|k| context::key_names_secret(&context::words(k), &self.keys));
        if names_secret && text.get(value.clone()).is_some_and(context::looks_secret) {
            found.push(Found {
                range: value,
                kind: Kind::Pattern,
            });
        }
    }

    /// How a decoded run's secrets are counted, when it holds any.
    fn decoded(&self, run: &str, encoding: Encoding, depth: u8) -> Option<Kind> {
        let decoded = encodings::decode(run, encoding)?;
        let mut inner = Vec::new();
        if self.scan(&decoded, depth + 1, &mut inner).invisible && inner.is_empty() {
            self.scan(&encodings::strip_invisible(&decoded), depth + 1, &mut inner);
        }
        let first = inner.first()?;
        Some(first.kind)
    }
}

/// The part of `text` a rule reads around an anchor at `hit`, on
/// character boundaries.
fn window(text: &str, rule: &Rule, hit: Range<usize>) -> Range<usize> {
    let mut start = hit.start.saturating_sub(rule.before);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = match rule.after {
        Some(after) => hit.end.saturating_add(after).min(text.len()),
        None => text.len(),
    };
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    start..end
}
