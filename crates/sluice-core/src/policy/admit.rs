//! Whether a routed request may go on: the scopes `[[auth.require]]` asks
//! of its caller (S-20). The rate limit's allowance is counted by the
//! shell's limiter, under the key [`rate_key`] names.

use crate::access::{self, Principal};
use crate::config::{Config, ScopeRequirement};

use super::Denied;

/// Checks the caller's scopes for a use of `upstream` (for a tool call,
/// of its `tool`, by the upstream's name); `target` is what the client
/// called it. `scoped` is whether scopes apply at all: over HTTP with
/// `[auth]` on (the stdio client is the local user who started sluice).
pub fn scopes(
    scoped: bool,
    require: &[ScopeRequirement],
    principal: &Principal,
    upstream: &str,
    tool: Option<&str>,
    target: &str,
) -> Result<(), Denied> {
    if !scoped {
        return Ok(());
    }
    let required = access::required_scopes(require, upstream, tool);
    if principal.missing(&required).is_empty() {
        return Ok(());
    }
    Err(Denied::InsufficientScope {
        target: target.to_owned(),
        required,
    })
}

/// Whether `[[auth.require]]` scopes apply to a request: over HTTP with
/// `[auth]` on. The stdio client is the local user who started sluice, and
/// HTTP without `[auth]` has no principal that could hold a scope.
pub fn scopes_apply(over_http: bool, auth_on: bool) -> bool {
    over_http && auth_on
}

/// Whether a tool call counts against the rate limit: a retry that
/// answers a round sluice itself parked is the same call, counted once;
/// any other retry cannot be told from a new call and is counted again.
pub fn counts_against_rate(resumes_parked_call: bool) -> bool {
    !resumes_parked_call
}

/// The key one caller's calls of one tool are counted under: the
/// principal and the tool as exposed (the same tool reached through two
/// names is two allowances, as the client sees two tools).
pub fn rate_key(principal: &Principal, exposed: &str) -> (String, String) {
    (principal.key(), exposed.to_owned())
}

/// Which configured rate a tool call is counted against: the most
/// specific one. A scope whose rate is `"off"` lets the call through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateScope {
    /// The upstream's `tool_rate_limit` for this tool.
    Tool,
    /// The upstream's `rate_limit`.
    Upstream,
    /// `[ratelimit] default`.
    Default,
}

/// The rate that applies to a call of `tool` (the upstream's name) on
/// `upstream`: its `tool_rate_limit`, else its `rate_limit`, else the
/// default.
pub fn rate_scope(config: &Config, upstream: &str, tool: &str) -> RateScope {
    let up = config.upstreams.iter().find(|u| u.name == upstream);
    match up {
        Some(up) if up.tool_rate_limits.contains_key(tool) => RateScope::Tool,
        Some(up) if up.rate_limit.is_some() => RateScope::Upstream,
        _ => RateScope::Default,
    }
}

/// What a request to an upstream other than a tool call
/// (`completion/complete`, `prompts/get`, `resources/read`,
/// `resources/subscribe`) counts against: the upstream's `rate_limit`,
/// else the default, with an allowance of its own per principal, upstream
/// and method. A flood of completions is limited like a flood of calls
/// (S-15, S-24) and spends no tool's allowance: the key's second part
/// (`"git prompts/get"`) is no exposed tool name.
pub fn method_rate(
    config: &Config,
    principal: &Principal,
    upstream: &str,
    method: &str,
) -> (RateScope, (String, String)) {
    let up = config.upstreams.iter().find(|u| u.name == upstream);
    let scope = match up {
        Some(up) if up.rate_limit.is_some() => RateScope::Upstream,
        _ => RateScope::Default,
    };
    (scope, (principal.key(), format!("{upstream} {method}")))
}

/// What a page of a list sluice serves from its catalog counts against
/// (`tools/list` and the other MCP lists, and the listing meta-tools of
/// progressive mode): the default rate, with an allowance per principal
/// and list. A page costs sluice what the page holds, but a flood of them
/// is still a flood, limited like calls (S-24).
pub fn list_rate(principal: &Principal, list: &str) -> (RateScope, (String, String)) {
    (RateScope::Default, (principal.key(), list.to_owned()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn principal(scopes: &[&str]) -> Principal {
        Principal {
            issuer: Some("https://issuer".into()),
            name: "alice".into(),
            scopes: scopes
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<BTreeSet<_>>(),
        }
    }

    fn require() -> Vec<ScopeRequirement> {
        vec![
            ScopeRequirement {
                upstream: "git".into(),
                tool: Some("push".into()),
                scopes: vec!["repo:write".into()],
            },
            ScopeRequirement {
                upstream: "git".into(),
                tool: None,
                scopes: vec!["repo:read".into()],
            },
        ]
    }

    #[test]
    fn a_call_needs_every_scope_its_tool_and_upstream_name() {
        let reader = principal(&["repo:read"]);
        assert_eq!(
            scopes(true, &require(), &reader, "git", Some("push"), "git__push"),
            Err(Denied::InsufficientScope {
                target: "git__push".into(),
                required: vec!["repo:write".into(), "repo:read".into()],
            })
        );
        assert!(scopes(true, &require(), &reader, "git", Some("log"), "git__log").is_ok());
        assert!(scopes(true, &require(), &reader, "git", None, "git").is_ok());
        let nobody = principal(&[]);
        assert!(scopes(true, &require(), &nobody, "git", None, "git").is_err());
        assert!(scopes(true, &require(), &nobody, "time", None, "time").is_ok());
        // Scopes do not apply to the local stdio client.
        assert!(scopes(false, &require(), &nobody, "git", Some("push"), "git__push").is_ok());
    }

    #[test]
    fn scopes_apply_over_http_with_auth_only() {
        assert!(scopes_apply(true, true));
        assert!(!scopes_apply(true, false));
        assert!(!scopes_apply(false, true));
    }

    #[test]
    fn the_most_specific_rate_applies() {
        let toml = r#"
            [[upstream]]
            name = "git"
            command = "git-mcp"
            rate_limit = "10/min"
            tool_rate_limit = { push = "1/min", log = "off" }

            [[upstream]]
            name = "time"
            command = "time-mcp"
        "#;
        let source = crate::config::Source {
            name: "sluice.toml",
            text: toml,
        };
        let config = Config::from_toml(source, &|_| None).expect("valid");
        assert_eq!(rate_scope(&config, "git", "push"), RateScope::Tool);
        assert_eq!(rate_scope(&config, "git", "log"), RateScope::Tool);
        assert_eq!(rate_scope(&config, "git", "status"), RateScope::Upstream);
        assert_eq!(rate_scope(&config, "time", "now"), RateScope::Default);
        assert_eq!(rate_scope(&config, "gone", "x"), RateScope::Default);
        // Other methods: the upstream's rate, never a tool's.
        let alice = principal(&[]);
        let (scope, key) = method_rate(&config, &alice, "git", "completion/complete");
        assert_eq!(scope, RateScope::Upstream);
        assert_eq!(key.1, "git completion/complete");
        assert_ne!(key, rate_key(&alice, "git__push"));
        let (scope, _) = method_rate(&config, &alice, "time", "prompts/get");
        assert_eq!(scope, RateScope::Default);
        // Lists: the default rate, an allowance per list apart from calls'.
        let (scope, key) = list_rate(&alice, "tools/list");
        assert_eq!(scope, RateScope::Default);
        assert_eq!(key, (alice.key(), "tools/list".to_owned()));
        assert_ne!(list_rate(&alice, "prompts/list").1, key);
        let bob = Principal {
            name: "bob".into(),
            ..principal(&[])
        };
        assert_ne!(list_rate(&bob, "tools/list").1, key);
    }

    #[test]
    fn rates_are_counted_per_principal_and_exposed_tool() {
        let alice = principal(&[]);
        assert_eq!(
            rate_key(&alice, "git__push"),
            ("https://issuer alice".to_owned(), "git__push".to_owned())
        );
        assert!(counts_against_rate(false));
        assert!(!counts_against_rate(true));
    }
}
