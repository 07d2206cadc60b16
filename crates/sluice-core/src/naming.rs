//! How upstream names are namespaced for the client.
//!
//! Tool and prompt names are unique only per server, so sluice exposes them
//! as `<upstream><separator><name>`. The way back is a lookup in the
//! federated catalog's route table, never a split of the string:
//! `a_` + `__` + `b` and `a` + `__` + `_b` are the same string, and only the
//! table knows which upstream it came from.

/// The characters a separator may use: the tool-name alphabet, so that an
/// exposed name is still a valid MCP tool name.
pub fn is_valid_separator(sep: &str) -> bool {
    !sep.is_empty()
        && sep.len() <= 8
        && sep
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Whether `name` is a valid upstream name: `[a-z0-9_-]{1,64}`.
pub fn is_valid_upstream_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'))
}

/// How exposed names are made: the separator, and the upstreams whose
/// names are shown as they are (`prefix = false`: one upstream whose tool
/// names clients already know, e.g. a conformance fixture).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Naming {
    separator: String,
    unprefixed: Vec<String>,
}

impl Naming {
    /// Names `<upstream><separator><name>`, except for `unprefixed`
    /// upstreams.
    pub fn new(separator: impl Into<String>, unprefixed: Vec<String>) -> Self {
        Naming {
            separator: separator.into(),
            unprefixed,
        }
    }

    /// Whether `upstream`'s names carry its prefix.
    pub fn is_prefixed(&self, upstream: &str) -> bool {
        !self.unprefixed.iter().any(|u| u == upstream)
    }

    /// The prefix of `upstream`'s names (`""` when unprefixed).
    pub fn prefix(&self, upstream: &str) -> String {
        if self.is_prefixed(upstream) {
            format!("{upstream}{}", self.separator)
        } else {
            String::new()
        }
    }

    /// The name a client sees for `name` on `upstream`.
    pub fn exposed(&self, upstream: &str, name: &str) -> String {
        let mut out = self.prefix(upstream);
        out.push_str(name);
        out
    }
}

/// Turns a free-form server name (as `mcp.json` files have them) into a
/// valid upstream name: lowercase, and every other character outside
/// `[a-z0-9_-]` becomes `-`. Returns `None` when nothing usable is left.
pub fn normalize_upstream_name(raw: &str) -> Option<String> {
    let name: String = raw
        .trim()
        .chars()
        .take(64)
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = name.trim_matches('-');
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators() {
        assert!(is_valid_separator("__"));
        assert!(is_valid_separator("."));
        assert!(!is_valid_separator(""));
        assert!(!is_valid_separator("/"));
        assert!(!is_valid_separator("a very long one"));
    }

    #[test]
    fn upstream_names() {
        assert!(is_valid_upstream_name("git_2-x"));
        assert!(!is_valid_upstream_name("Git"));
        assert!(!is_valid_upstream_name(""));
        assert!(!is_valid_upstream_name("a.b"));
        assert!(!is_valid_upstream_name(&"a".repeat(65)));
    }

    #[test]
    fn normalizes_mcp_json_names() {
        assert_eq!(
            normalize_upstream_name("Brave Search").as_deref(),
            Some("brave-search")
        );
        assert_eq!(normalize_upstream_name("github").as_deref(), Some("github"));
        assert_eq!(
            normalize_upstream_name("@org/pkg").as_deref(),
            Some("org-pkg")
        );
        assert_eq!(normalize_upstream_name("!!!"), None);
    }

    #[test]
    fn exposes_with_the_separator_unless_unprefixed() {
        let naming = Naming::new("__", vec!["conf".into()]);
        assert_eq!(naming.exposed("git", "status"), "git__status");
        assert_eq!(
            naming.exposed("conf", "test_simple_text"),
            "test_simple_text"
        );
        assert_eq!(naming.prefix("git"), "git__");
        assert!(!naming.is_prefixed("conf"));
    }
}
