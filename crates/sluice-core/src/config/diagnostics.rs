//! What a problem in a configuration looks like ([`Diagnostic`]), and the
//! collector every validator reports to.
//!
//! The collector places each problem at `file:line:col` from the span of the
//! value at fault, and reads the kinds of value every section shares
//! (durations, integers, one-of-a-few words, addresses, `${VAR}` templates),
//! so each is refused with the same words wherever it appears.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::values::{expand_env, format_duration, parse_duration};

/// One problem found in a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// `file:line:col` when known, else the file name.
    pub location: String,
    /// The dotted key path, e.g. `upstream[2].name`.
    pub key: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

/// Where a configuration comes from, for diagnostics.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The file name shown in diagnostics.
    pub name: &'a str,
    /// The file's text.
    pub text: &'a str,
}

/// Collects diagnostics with locations resolved against one source.
pub(super) struct Diagnostics<'a> {
    source: Source<'a>,
    /// Every problem so far, in the order found.
    pub(super) list: Vec<Diagnostic>,
}

impl<'a> Diagnostics<'a> {
    /// No problem yet, in `source`.
    pub(super) fn new(source: Source<'a>) -> Self {
        Diagnostics {
            source,
            list: Vec::new(),
        }
    }
}

impl Diagnostics<'_> {
    /// The source's text as JSON (`mcp.json`, `server.json`), or `None`
    /// with the parse error reported at its line and column.
    pub(super) fn json(&mut self) -> Option<serde_json::Value> {
        match serde_json::from_str(self.source.text) {
            Ok(doc) => Some(doc),
            Err(e) => {
                self.list.push(Diagnostic {
                    location: format!("{}:{}:{}", self.source.name, e.line(), e.column()),
                    key: String::new(),
                    message: format!("not valid JSON: {e}"),
                });
                None
            }
        }
    }

    /// A duration key within `range`, or `default` when absent.
    pub(super) fn duration(
        &mut self,
        field: &Option<Spanned<String>>,
        key: &str,
        default: Duration,
        range: (Duration, Duration),
    ) -> Option<Duration> {
        let Some(s) = field else {
            return Some(default);
        };
        match parse_duration(s.get_ref()) {
            Some(v) if v >= range.0 && v <= range.1 => Some(v),
            Some(_) => {
                self.push(
                    Some(s.span()),
                    key,
                    format!(
                        "{:?} is out of range (allowed: {} to {})",
                        s.get_ref(),
                        format_duration(range.0),
                        format_duration(range.1)
                    ),
                );
                None
            }
            None => {
                self.push(
                    Some(s.span()),
                    key,
                    format!(
                        "{:?} is not a duration: write a number with a unit, ms, s, m, h or d (e.g. \"60s\")",
                        s.get_ref()
                    ),
                );
                None
            }
        }
    }

    /// An `IP:port` key.
    pub(super) fn socket_addr(&mut self, s: &Spanned<String>, key: &str) -> Option<SocketAddr> {
        let text = s.get_ref();
        let addr = text.parse::<SocketAddr>().ok();
        if addr.is_some() {
            return addr;
        }
        // An IP with a number too large for a port: say which part is wrong.
        let port = text
            .rsplit_once(':')
            .filter(|(ip, _)| ip.trim_matches(['[', ']']).parse::<IpAddr>().is_ok())
            .and_then(|(_, port)| port.parse::<u64>().ok());
        let message = match port {
            Some(port) => format!("{text:?}: port {port} is out of range (allowed: 0 to 65535)"),
            None => format!("{text:?} is not an IP:port address (e.g. \"127.0.0.1:8787\")"),
        };
        self.push(Some(s.span()), key, message);
        None
    }

    /// A key that takes one of a few words, or `default` when absent.
    pub(super) fn choice<T: Copy>(
        &mut self,
        field: &Option<Spanned<String>>,
        key: &str,
        default: T,
        options: &[(&str, T)],
    ) -> Option<T> {
        let Some(s) = field else {
            return Some(default);
        };
        if let Some((_, value)) = options.iter().find(|(word, _)| *word == s.get_ref()) {
            return Some(*value);
        }
        let words: Vec<String> = options.iter().map(|(w, _)| format!("{w:?}")).collect();
        self.push(
            Some(s.span()),
            key,
            format!(
                "{:?} is not one of the choices (allowed: {})",
                s.get_ref(),
                words.join(", ")
            ),
        );
        None
    }

    /// An integer key within `range` (inclusive), or `default` when absent.
    pub(super) fn integer(
        &mut self,
        field: &Option<Spanned<i64>>,
        key: &str,
        default: usize,
        range: (usize, usize),
    ) -> Option<usize> {
        let Some(n) = field else {
            return Some(default);
        };
        match usize::try_from(*n.get_ref()) {
            Ok(v) if (range.0..=range.1).contains(&v) => Some(v),
            _ => {
                self.push(
                    Some(n.span()),
                    key,
                    format!(
                        "{} is out of range (allowed: {} to {})",
                        n.get_ref(),
                        range.0,
                        range.1
                    ),
                );
                None
            }
        }
    }

    /// `template` with its `${VAR}` references expanded, or `None` when a
    /// variable is not set (reported at `span`).
    pub(super) fn expand(
        &mut self,
        span: Option<Range<usize>>,
        key: &str,
        template: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<String> {
        match expand_env(template, env) {
            Ok(value) => Some(value),
            Err(var) => {
                self.push(
                    span,
                    key,
                    format!("refers to ${{{var}}}, which is not set in the environment"),
                );
                None
            }
        }
    }

    /// Records a problem with `key`, at `span` of the source when known.
    pub(super) fn push(&mut self, span: Option<Range<usize>>, key: &str, message: String) {
        let location = match span {
            Some(span) => {
                let (line, col) = line_col(self.source.text, span.start);
                format!("{}:{line}:{col}", self.source.name)
            }
            None => self.source.name.to_owned(),
        };
        self.list.push(Diagnostic {
            location,
            key: key.to_owned(),
            message,
        });
    }
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..text.floor_char_boundary(offset.min(text.len()))];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.location, self.message)
        } else {
            write!(f, "{}: {}: {}", self.location, self.key, self.message)
        }
    }
}
