//! The web console's decisions (served under `/ui/` by the gateway): who
//! may change anything, the CSRF token of every form, which approval a
//! form asks for, and what each page shows, as values built from the
//! gateway's state. The shell renders them and carries out approvals with
//! [`crate::catalog::locking`], as `sluice lock` does.
//!
//! - [`access`]: with `[auth]` on, changes need the console's admin scope;
//!   without it the console is read-only unless the operator allowed
//!   changes and the console listens on loopback.
//! - `csrf`: each form's token, sealed for one principal, for a while;
//!   [`check_transport`]: `/mcp`'s Host and Origin rules, with the
//!   console's own origin admitted (its forms post to it).
//! - `approval`: a submitted approval form, as a [`LockScope`].
//! - `pages`: the upstreams, catalog and drift pages' rows; `compare`:
//!   an approved definition beside the current one, field by field;
//!   `rates`: calls per second, errors and latency quantiles per upstream
//!   from recent call samples.

mod approval;
mod compare;
mod csrf;
mod origin;
mod pages;
mod rates;

pub use approval::{ApprovalForm, ApprovalTarget};
pub use compare::{FieldRow, compare};
pub use csrf::{CSRF_TTL_MS, CsrfError, CsrfKey};
pub use origin::check_transport;
pub use pages::{
    CatalogQuery, CatalogRow, DriftEntry, EntryState, HeldRead, catalog_rows, drift_entries,
};
pub use rates::{CallSample, RATE_WINDOWS_MS, UpstreamRates, rates};

use crate::access::Principal;
use crate::catalog::locking::LockScope;
use crate::config::ConsoleConfig;

/// Why the console is read-only for a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadOnly {
    /// `[auth]` is on and the principal lacks the admin scope.
    #[error("approving needs the scope {0}, which this credential does not hold")]
    NoAdminScope(String),
    /// No `[auth]`, and changes without it were not allowed.
    #[error(
        "the console is read-only without [auth] (set [console] allow_changes_without_auth = true to approve from this machine)"
    )]
    NoAuth,
    /// No `[auth]`, changes allowed, but not on loopback.
    #[error("changes without [auth] are allowed on a loopback listener only")]
    NotLoopback,
}

/// Whether `principal` may change anything through the console.
/// `loopback`: the console's listener is a loopback address.
pub fn access(
    config: &ConsoleConfig,
    auth_on: bool,
    principal: &Principal,
    loopback: bool,
) -> Result<(), ReadOnly> {
    if auth_on {
        return if principal.scopes.contains(&config.admin_scope) {
            Ok(())
        } else {
            Err(ReadOnly::NoAdminScope(config.admin_scope.clone()))
        };
    }
    match (config.allow_changes_without_auth, loopback) {
        (false, _) => Err(ReadOnly::NoAuth),
        (true, false) => Err(ReadOnly::NotLoopback),
        (true, true) => Ok(()),
    }
}

/// Why a console change was refused; each knows its HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The console is read-only for this request.
    #[error("{0}")]
    ReadOnly(#[from] ReadOnly),
    /// The form's CSRF token is missing or does not verify.
    #[error("the form's token {0}: reload the page and try again")]
    Csrf(#[from] CsrfError),
    /// The form does not say what to approve.
    #[error("{0}")]
    BadForm(String),
    /// No complete read of the upstream is held, or the scan flagged it:
    /// nothing was written.
    #[error("nothing was approved: {0}")]
    NotApproved(String),
}

impl Refusal {
    /// 403 for who may not (or a forged form), 400 for a form that makes
    /// no sense, 409 when the state does not allow it now.
    pub fn http_status(&self) -> u16 {
        match self {
            Refusal::ReadOnly(_) | Refusal::Csrf(_) => 403,
            Refusal::BadForm(_) => 400,
            Refusal::NotApproved(_) => 409,
        }
    }
}

/// What a checked approval form asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// Which entries.
    pub scope: LockScope,
    /// The upstreams whose reads it needs (empty: every configured one).
    pub upstreams: Vec<String>,
    /// Approve entries with findings, recording them.
    pub accept_findings: bool,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn principal(scopes: &[&str]) -> Principal {
        Principal {
            issuer: None,
            name: "alice".into(),
            scopes: scopes
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<BTreeSet<_>>(),
        }
    }

    #[test]
    fn with_auth_only_the_admin_scope_may_change() {
        let config = ConsoleConfig::default();
        assert_eq!(
            access(&config, true, &principal(&["sluice:admin"]), false),
            Ok(())
        );
        let refused = access(&config, true, &principal(&["mcp"]), true);
        assert_eq!(refused, Err(ReadOnly::NoAdminScope("sluice:admin".into())));
        // Allowing changes without auth does not lower the bar with auth.
        let lax = ConsoleConfig {
            allow_changes_without_auth: true,
            ..ConsoleConfig::default()
        };
        assert!(access(&lax, true, &principal(&[]), true).is_err());
    }

    #[test]
    fn without_auth_changes_need_the_opt_in_and_loopback() {
        let anonymous = Principal::named(crate::access::ANONYMOUS);
        let config = ConsoleConfig::default();
        assert_eq!(
            access(&config, false, &anonymous, true),
            Err(ReadOnly::NoAuth)
        );
        let lax = ConsoleConfig {
            allow_changes_without_auth: true,
            ..ConsoleConfig::default()
        };
        assert_eq!(access(&lax, false, &anonymous, true), Ok(()));
        assert_eq!(
            access(&lax, false, &anonymous, false),
            Err(ReadOnly::NotLoopback)
        );
    }

    #[test]
    fn refusals_have_their_statuses() {
        assert_eq!(Refusal::ReadOnly(ReadOnly::NoAuth).http_status(), 403);
        assert_eq!(Refusal::Csrf(CsrfError::Missing).http_status(), 403);
        assert_eq!(Refusal::BadForm("x".into()).http_status(), 400);
        assert_eq!(Refusal::NotApproved("x".into()).http_status(), 409);
    }
}
