//! `[state]`: what sluice keeps across a restart: its directory, the secret
//! that seals list cursors, and the audit log (where, whether, how long).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use super::diagnostics::Diagnostics;
use super::raw::RawState;

/// `[state]`: where sluice keeps what must outlive a restart.
#[derive(Clone, PartialEq, Eq)]
pub struct StateConfig {
    /// `dir`: relative to the config file's directory. Default `.sluice`.
    pub dir: PathBuf,
    /// `cursor_secret`: seals list cursors (at least 32 characters); when
    /// absent, a random key is made at first start and kept in `dir`.
    pub cursor_secret: Option<String>,
    /// `vault_key`: encrypts the OAuth logins kept in the store (at least
    /// 32 characters); when absent, a random key is made at the first login
    /// and kept in `dir`.
    pub vault_key: Option<String>,
    /// `vault_previous_key`: the key before a rotation; logins sealed with
    /// it still open, and are sealed again with `vault_key` when written.
    pub vault_previous_key: Option<String>,
    /// `url`: where the audit log is kept.
    pub store: StateStore,
    /// `audit`: whether every decision is written to the audit log
    /// (default true).
    pub audit: bool,
    /// `audit_retention`: audit rows older than this are deleted (1h to
    /// 3650d, default 30d).
    pub audit_retention: Duration,
}

/// `[state] url`: the database of the audit log.
#[derive(Clone, PartialEq, Eq)]
pub enum StateStore {
    /// No `url`: an SQLite file in `[state] dir`.
    Sqlite,
    /// A `postgres://` or `postgresql://` URL (after `${VAR}` expansion).
    Postgres {
        /// The URL; it may hold a password, so it is never shown.
        url: String,
    },
}

/// The default `[state] audit_retention` (30 days).
pub const DEFAULT_AUDIT_RETENTION: Duration = Duration::from_secs(30 * 86_400);
/// The range of `[state] audit_retention`: 1 hour to 3650 days.
pub const AUDIT_RETENTION_RANGE: (Duration, Duration) = (
    Duration::from_secs(3_600),
    Duration::from_secs(3_650 * 86_400),
);

impl Default for StateConfig {
    fn default() -> Self {
        StateConfig {
            dir: PathBuf::from(".sluice"),
            cursor_secret: None,
            vault_key: None,
            vault_previous_key: None,
            store: StateStore::Sqlite,
            audit: true,
            audit_retention: DEFAULT_AUDIT_RETENTION,
        }
    }
}

/// The secret is not shown.
impl fmt::Debug for StateConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateConfig")
            .field("dir", &self.dir)
            .field(
                "cursor_secret",
                &self.cursor_secret.as_ref().map(|_| "(set)"),
            )
            .field("vault_key", &self.vault_key.as_ref().map(|_| "(set)"))
            .field(
                "vault_previous_key",
                &self.vault_previous_key.as_ref().map(|_| "(set)"),
            )
            .field("store", &self.store)
            .field("audit", &self.audit)
            .field("audit_retention", &self.audit_retention)
            .finish()
    }
}

/// The URL is not shown (it may hold a password).
impl fmt::Debug for StateStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateStore::Sqlite => f.write_str("Sqlite"),
            StateStore::Postgres { .. } => f.write_str("Postgres(url set)"),
        }
    }
}

/// `[state]`; a key with a problem keeps its default (the problem is
/// reported, so the config is refused anyway).
pub(super) fn validate_state(
    raw: &RawState,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> StateConfig {
    let mut out = StateConfig::default();
    if let Some(dir) = &raw.dir {
        if dir.get_ref().trim().is_empty() {
            diags.push(
                Some(dir.span()),
                "state.dir",
                "must be a directory path, not empty".into(),
            );
        } else {
            out.dir = PathBuf::from(dir.get_ref());
        }
    }
    let secret = |field: &Option<Spanned<String>>, key: &str, diags: &mut Diagnostics<'_>| {
        field
            .as_ref()
            .and_then(|s| validate_secret(s, key, env, diags))
    };
    out.cursor_secret = secret(&raw.cursor_secret, "state.cursor_secret", diags);
    out.vault_key = secret(&raw.vault_key, "state.vault_key", diags);
    out.vault_previous_key = secret(&raw.vault_previous_key, "state.vault_previous_key", diags);
    if let (Some(previous), None) = (&raw.vault_previous_key, &raw.vault_key) {
        diags.push(
            Some(previous.span()),
            "state.vault_previous_key",
            "needs `vault_key`: it is the key before the one a rotation set".into(),
        );
    }
    if let Some(url) = &raw.url
        && let Some(store) = validate_store_url(url, env, diags)
    {
        out.store = store;
    }
    out.audit = raw.audit.unwrap_or(out.audit);
    if let Some(retention) = diags.duration(
        &raw.audit_retention,
        "state.audit_retention",
        DEFAULT_AUDIT_RETENTION,
        AUDIT_RETENTION_RANGE,
    ) {
        out.audit_retention = retention;
    }
    out
}

/// `cursor_secret`, `vault_key`: long enough that what they seal cannot be
/// forged or read.
fn validate_secret(
    secret: &Spanned<String>,
    key: &str,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<String> {
    let value = diags.expand(Some(secret.span()), key, secret.get_ref(), env)?;
    if value.len() >= 32 {
        return Some(value);
    }
    diags.push(
        Some(secret.span()),
        key,
        format!(
            "is {} characters long: must be at least 32 (e.g. 64 hex digits from a random source)",
            value.len()
        ),
    );
    None
}

/// `url`: PostgreSQL, the only store besides the default SQLite file.
fn validate_store_url(
    url: &Spanned<String>,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<StateStore> {
    let value = diags.expand(Some(url.span()), "state.url", url.get_ref(), env)?;
    if value.starts_with("postgres://") || value.starts_with("postgresql://") {
        return Some(StateStore::Postgres { url: value });
    }
    // Only the scheme is shown: the rest may hold a password.
    diags.push(
        Some(url.span()),
        "state.url",
        format!(
            "{}: must be a postgres:// or postgresql:// URL (PostgreSQL), or absent for the SQLite file in [state] dir",
            match value.split_once("://") {
                Some((scheme, _)) => format!("the scheme {scheme:?} is not supported"),
                None => "is not a URL".to_owned(),
            }
        ),
    );
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testing::{errors, parse};
    use crate::config::{Config, Source};

    #[test]
    fn the_audit_log_defaults_to_sqlite_in_the_state_dir_for_30_days() {
        let c = parse("").expect("valid");
        assert_eq!(c.state.store, StateStore::Sqlite);
        assert!(c.state.audit);
        assert_eq!(c.state.audit_retention, Duration::from_secs(30 * 86_400));
        let c = parse(
            "[state]
audit = false
audit_retention = \"90d\"\n",
        )
        .expect("valid");
        assert!(!c.state.audit);
        assert_eq!(c.state.audit_retention, Duration::from_secs(90 * 86_400));
    }

    #[test]
    fn a_postgres_url_is_expanded_and_never_shown() {
        let env = |k: &str| (k == "PG_PASSWORD").then(|| "hunter2-pg".to_owned());
        let c = Config::from_toml(
            Source {
                name: "sluice.toml",
                text: "[state]\nurl = \"postgresql://sluice:${PG_PASSWORD}@db:5432/audit\"\n",
            },
            &env,
        )
        .expect("valid");
        assert_eq!(
            c.state.store,
            StateStore::Postgres {
                url: "postgresql://sluice:hunter2-pg@db:5432/audit".into()
            }
        );
        assert!(!format!("{c:?}").contains("hunter2-pg"));
        let errs = errors("[state]\nurl = \"postgres://u:${NOT_SET}@db/a\"\n");
        assert_eq!(
            errs,
            [
                "sluice.toml:2:7: state.url: refers to ${NOT_SET}, which is not set in the environment"
            ]
        );
    }

    #[test]
    fn state_keys_are_checked_with_key_value_and_range() {
        let errs =
            errors("[state]\nurl = \"mysql://root:pw-secret@db/x\"\naudit_retention = \"10m\"\n");
        assert_eq!(
            errs,
            [
                "sluice.toml:2:7: state.url: the scheme \"mysql\" is not supported: must be a postgres:// or postgresql:// URL (PostgreSQL), or absent for the SQLite file in [state] dir",
                "sluice.toml:3:19: state.audit_retention: \"10m\" is out of range (allowed: 3600s to 3650d)",
            ]
        );
        let errs = errors("[state]\nurl = \"audit.db\"\naudit_retention = \"3651d\"\n");
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(
            errs[0].contains("state.url: is not a URL: must be"),
            "{errs:?}"
        );
        assert!(
            errs[1].contains("\"3651d\" is out of range (allowed: 3600s to 3650d"),
            "{errs:?}"
        );
        let errs = errors("[state]\naudit_retention = \"forever\"\n");
        assert!(
            errs[0].contains("state.audit_retention: \"forever\" is not a duration"),
            "{errs:?}"
        );
    }
}
