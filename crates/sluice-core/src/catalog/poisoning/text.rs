//! The text rules: what in one string reads as an instruction aimed at the
//! model, a hidden character, a URL.
//!
//! Each rule is a phrase shape, not a word list: "ignore previous
//! instructions", "do not tell the user", "read ~/.ssh/id_rsa", "send it to
//! https://…". An honest description says what a tool does and when not to
//! use it ("Do not use for forecasts beyond 7 days"); it does not tell the
//! model to hide what it does, to read secrets, or to send them elsewhere.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use super::Rule;
use crate::catalog::entry::{is_invisible, printable};

/// The phrase rules, in the order of [`PHRASES`]'s patterns.
const PHRASE_RULES: [Rule; 8] = [
    Rule::OverrideInstructions,
    Rule::OverrideInstructions,
    Rule::InstructionMarkup,
    Rule::ConcealFromUser,
    Rule::SensitiveRead,
    Rule::SensitiveRead,
    Rule::SendData,
    Rule::OtherToolDirective,
];

/// The patterns of [`PHRASE_RULES`], case-insensitive.
const PHRASE_PATTERNS: [&str; 8] = [
    // "ignore all previous instructions", "disregard the above rules"
    r"\b(ignore|disregard|forget|override|overrule|bypass)\b[^.\n]{0,30}\b(previous|prior|above|earlier|preceding|other|original|system|user'?s?|all)\b[^.\n]{0,20}\b(instructions?|rules|directions|guidelines|prompts?|constraints)\b",
    // "you are now", "your new instructions", "from now on you"
    r"\b(you are now\b|your new (instructions|task|role)|new system prompt|from now on,? you)",
    // pseudo-system markup set off for the model
    r"</?\s*(important|system|instructions?|secret|hidden|admin|sys)\s*>|\[/?(inst|system)\]|<\|im_start\|>",
    // "do not tell the user", "without informing the user", "keep this secret"
    r"\b(do not|don't|never|must not|should not|without)\s+(ever\s+)?(tell(ing)?|mention(ing)?|inform(ing)?|notify(ing)?|alert(ing)?|reveal(ing)?|show(ing)?|let(ting)?|ask(ing)?|disclos(e|ing)|explain(ing)?)\b[^.\n]{0,40}\b(user|human|operator)\b|\b(do not|don't|never)\s+(mention|reveal|disclose)\s+(that|this|it|these|any of this)\b|\bkeep (this|it|that) (a )?(secret|hidden|confidential|between us)\b|\b(secretly|covertly|surreptitiously)\b|\bthe user (must|should) (not|never) (know|see|notice)",
    // secret files and keys, named as paths
    r"(~|\$home|%userprofile%)?/?\.ssh\b|\bid_(rsa|dsa|ecdsa|ed25519)\b|/etc/(passwd|shadow|sudoers)\b|\.aws/credentials|\.git-credentials|\.netrc\b|\.pgpass\b|\.npmrc\b|\.docker/config\.json|\.kube/config|\bmcp\.json\b|(^|[\s'`/~])\.env\b",
    // reading or passing secrets: "read the user's API keys", "include the environment variables"
    r"\b(read|cat|include|send|copy|extract|collect|attach|upload|exfiltrate|leak|dump|harvest|pass)\b[^.\n]{0,40}\b(private[ _-]?keys?|ssh[ _-]?keys?|secrets|credentials|passwords|api[ _-]?keys|access[ _-]?tokens|environment variables|env vars|conversation history|chat history|system prompt)\b",
    // "send it to https://…", "forward all emails to a@b.c", "post the data to this url"
    r"\b(send|sends|post|forward|upload|transmit|exfiltrate|leak|bcc|redirect|relay)\b[^.\n]{0,80}\bto\s+(https?://|[\w.+-]+@[\w-]+\.[\w.-]+|(the|this) (following )?(url|endpoint|address|server|webhook))",
    // "the send_email tool must", "a side effect on the other tool", "otherwise the tool will not work"
    r"\b(side[ -]?effects?|effect) on (the|another|any)\b[^.\n]{0,40}\btool\b|\bthe\s+`?[\w.-]+`?\s+tool\s+(must|should|will now|shall)\b|\botherwise,? (the|this) tool (will not|won't|cannot|can't|does not|doesn't) work|\b(before|prior to) (using|calling|invoking) this tool,?\s*(you\s+)?(must|need to|have to|should|always|first)?\s*(read|call|pass|send|include|fetch|open|run|invoke|provide)\b",
];

static PHRASES: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(PHRASE_PATTERNS.iter().map(|p| format!("(?i){p}")))
        .unwrap_or_else(|e| unreachable!("the phrase patterns are constants: {e}"))
});

static PHRASE_REGEXES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    PHRASE_PATTERNS
        .iter()
        .map(|p| {
            Regex::new(&format!("(?i){p}"))
                .unwrap_or_else(|e| unreachable!("the phrase patterns are constants: {e}"))
        })
        .collect()
});

static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(https?|ftp|wss?)://[^\s<>`'\x22)]+|\bwww\.[a-z0-9-]+\.[a-z]{2,}")
        .unwrap_or_else(|e| unreachable!("the URL pattern is a constant: {e}"))
});

/// The longest evidence quoted in a finding, in characters.
const MAX_EVIDENCE: usize = 60;

/// One rule a string breaks, with the text that broke it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hit {
    pub rule: Rule,
    pub evidence: String,
}

/// What the phrase rules, the invisible-character rule and the URL rule
/// find in one string. One hit per rule.
pub(super) fn scan(text: &str) -> Vec<Hit> {
    let mut hits: Vec<Hit> = Vec::new();
    for i in PHRASES.matches(text).iter() {
        let rule = PHRASE_RULES[i];
        if hits.iter().any(|h| h.rule == rule) {
            continue;
        }
        // "Do not include secrets in commit messages" forbids what the
        // rule looks for; only the conceal rule is itself a negation.
        let affirmed = PHRASE_REGEXES[i]
            .find_iter(text)
            .find(|m| rule == Rule::ConcealFromUser || !negated(&text[..m.start()]));
        if let Some(m) = affirmed {
            hits.push(Hit {
                rule,
                evidence: quote(m.as_str()),
            });
        }
    }
    if let Some(evidence) = invisible(text) {
        hits.push(Hit {
            rule: Rule::InvisibleCharacters,
            evidence,
        });
    }
    if let Some(m) = URL.find(text) {
        hits.push(Hit {
            rule: Rule::Url,
            evidence: quote(m.as_str()),
        });
    }
    hits
}

/// Whether the words just before a match negate it ("do not", "never").
fn negated(before: &str) -> bool {
    let tail: String = before
        .chars()
        .rev()
        .take(12)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<String>()
        .to_lowercase();
    let tail = tail.trim_end();
    ["not", "never", "don't", "dont", "no"].iter().any(|w| {
        tail.ends_with(w) && !tail[..tail.len() - w.len()].ends_with(char::is_alphanumeric)
    })
}

/// The invisible characters of `text`, as code points (the first few).
fn invisible(text: &str) -> Option<String> {
    const SHOWN: usize = 5;
    let found: Vec<char> = text.chars().filter(|&c| is_invisible(c)).collect();
    if found.is_empty() {
        return None;
    }
    let mut shown: Vec<String> = Vec::new();
    for c in &found {
        let code = format!("U+{:04X}", u32::from(*c));
        if !shown.contains(&code) && shown.len() < SHOWN {
            shown.push(code);
        }
    }
    Some(format!("{} ({} in all)", shown.join(" "), found.len()))
}

/// A short, printable quote of matched text ([`printable`]), cut at
/// [`MAX_EVIDENCE`] characters.
pub(super) fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_EVIDENCE) {
        Some((cut, _)) => format!("{}…", printable(&text[..cut])),
        None => printable(text),
    }
}
