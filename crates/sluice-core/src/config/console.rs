//! `[console]`: the web console under `/ui/` (off by default).
//!
//! ```toml
//! [console]
//! enabled = true
//! listener = "main"            # or "metrics": on [metrics] listen instead
//! admin_scope = "sluice:admin" # the scope a principal needs to approve drift
//! allow_changes_without_auth = false
//! ```
//!
//! Wherever it is served, the console passes the same admission as `/mcp`
//! (Host and Origin, then `[auth]`). With `[auth]` on, a change (approving
//! drift into `sluice.lock`) needs `admin_scope`. Without `[auth]` the
//! console is read-only, unless `allow_changes_without_auth = true` and the
//! console's listener is a loopback address: then every local process may
//! approve, as every local process may already call every upstream.

use serde::Deserialize;
use toml::Spanned;

use super::MetricsConfig;
use super::diagnostics::Diagnostics;

/// The admin scope when `admin_scope` is not set.
pub const DEFAULT_ADMIN_SCOPE: &str = "sluice:admin";

/// Which listener serves `/ui/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConsoleListener {
    /// `[server] listen`, beside `/mcp`.
    #[default]
    Main,
    /// `[metrics] listen`, beside `/metrics`.
    Metrics,
}

/// `[console]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleConfig {
    /// `enabled` (default false).
    pub enabled: bool,
    /// `listener` (default `main`).
    pub listener: ConsoleListener,
    /// `admin_scope` (default [`DEFAULT_ADMIN_SCOPE`]).
    pub admin_scope: String,
    /// `allow_changes_without_auth` (default false; only on loopback).
    pub allow_changes_without_auth: bool,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig {
            enabled: false,
            listener: ConsoleListener::Main,
            admin_scope: DEFAULT_ADMIN_SCOPE.to_owned(),
            allow_changes_without_auth: false,
        }
    }
}

/// `[console]` as serde reads it.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConsole {
    pub(super) enabled: Option<bool>,
    pub(super) listener: Option<Spanned<String>>,
    pub(super) admin_scope: Option<Spanned<String>>,
    pub(super) allow_changes_without_auth: Option<Spanned<bool>>,
}

/// Checks `[console]` against `[metrics]` (whose listener it may share).
pub(super) fn validate_console(
    raw: &RawConsole,
    metrics: Option<&MetricsConfig>,
    diags: &mut Diagnostics<'_>,
) -> Option<ConsoleConfig> {
    let mut out = ConsoleConfig {
        enabled: raw.enabled.unwrap_or(false),
        ..ConsoleConfig::default()
    };
    let mut ok = true;
    if let Some(listener) = &raw.listener {
        match listener.get_ref().as_str() {
            "main" => out.listener = ConsoleListener::Main,
            "metrics" => {
                out.listener = ConsoleListener::Metrics;
                let has_own = metrics.is_some_and(|m| m.enabled && m.listen.is_some());
                if metrics.is_some() && !has_own && out.enabled {
                    diags.push(
                        Some(listener.span()),
                        "console.listener",
                        "\"metrics\" needs [metrics] enabled with a listen address of its own"
                            .to_owned(),
                    );
                    ok = false;
                }
            }
            other => {
                diags.push(
                    Some(listener.span()),
                    "console.listener",
                    format!("{other:?} is not a listener (allowed: main, metrics)"),
                );
                ok = false;
            }
        }
    }
    if let Some(scope) = &raw.admin_scope {
        let text = scope.get_ref();
        // A scope token (RFC 6749 section 3.3): visible ASCII but `"` and `\`.
        let valid = !text.is_empty()
            && text
                .chars()
                .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\');
        if valid {
            out.admin_scope.clone_from(text);
        } else {
            diags.push(
                Some(scope.span()),
                "console.admin_scope",
                format!(
                    "{text:?} is not a scope (visible ASCII, no spaces, quotes or backslashes)"
                ),
            );
            ok = false;
        }
    }
    if let Some(allow) = &raw.allow_changes_without_auth {
        out.allow_changes_without_auth = *allow.get_ref();
        let public_metrics = metrics
            .and_then(|m| m.listen)
            .is_some_and(|listen| !listen.ip().is_loopback());
        if out.allow_changes_without_auth
            && out.listener == ConsoleListener::Metrics
            && public_metrics
        {
            diags.push(
                Some(allow.span()),
                "console.allow_changes_without_auth",
                "the console is on [metrics] listen, which is not a loopback address: changes without [auth] are allowed on loopback only".to_owned(),
            );
            ok = false;
        }
    }
    ok.then_some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::testing::{errors, parse};

    #[test]
    fn the_console_is_off_read_only_and_on_the_main_listener_by_default() {
        let c = parse("").unwrap();
        assert_eq!(c.console, ConsoleConfig::default());
        assert!(!c.console.enabled);
        assert_eq!(c.console.admin_scope, "sluice:admin");
        assert!(!c.console.allow_changes_without_auth);
    }

    #[test]
    fn every_key_is_read() {
        let c = parse(
            "[metrics]\nlisten = \"127.0.0.1:9100\"\n[console]\nenabled = true\nlistener = \"metrics\"\nadmin_scope = \"ops:approve\"\nallow_changes_without_auth = true\n",
        )
        .unwrap();
        assert_eq!(
            c.console,
            ConsoleConfig {
                enabled: true,
                listener: ConsoleListener::Metrics,
                admin_scope: "ops:approve".into(),
                allow_changes_without_auth: true,
            }
        );
    }

    #[test]
    fn wrong_values_are_refused_where_they_are() {
        let e = errors("[console]\nenabled = true\nlistener = \"side\"\n");
        assert_eq!(
            e,
            [
                "sluice.toml:3:12: console.listener: \"side\" is not a listener (allowed: main, metrics)"
            ]
        );
        let e = errors("[console]\nenabled = true\nlistener = \"metrics\"\n");
        assert_eq!(
            e,
            [
                "sluice.toml:3:12: console.listener: \"metrics\" needs [metrics] enabled with a listen address of its own"
            ]
        );
        let e = errors("[console]\nadmin_scope = \"two words\"\n");
        assert!(
            e[0].contains("console.admin_scope: \"two words\" is not a scope"),
            "{e:?}"
        );
    }

    #[test]
    fn changes_without_auth_are_refused_on_a_public_metrics_listener() {
        let e = errors(
            "[metrics]\nlisten = \"0.0.0.0:9100\"\n[console]\nenabled = true\nlistener = \"metrics\"\nallow_changes_without_auth = true\n",
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].contains("console.allow_changes_without_auth: the console is on [metrics] listen, which is not a loopback address"),
            "{e:?}"
        );
        // On the main listener the exposure rule of [server] listen already
        // refuses a public address without [auth].
        assert!(parse("[console]\nenabled = true\nallow_changes_without_auth = true\n").is_ok());
    }
}
