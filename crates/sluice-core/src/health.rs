//! What `/health` shows of each upstream, and how what happens to the
//! upstream changes it.
//!
//! An [`UpstreamStatus`] is a value: the shell calls one transition per
//! event its supervisor reports (connected, failed, a complete read
//! published, ...), in the order they happened. Each state serializes to
//! the word `/health` and `sluice_list_servers` show.

use std::fmt;

use serde::Serialize;

use crate::boundary::redact::Redactor;
use crate::catalog::drift::{Diff, NotEstablished};
use crate::config::UpstreamTransport;
use crate::discovery::UpstreamCatalog;
use crate::protocol::Era;
use crate::sandbox::SandboxSummary;

/// Where an upstream's connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamState {
    /// Not connected yet.
    Starting,
    /// Connected and handshaken.
    Ready,
    /// The connection ended; a new one is on its way.
    Restarting,
    /// The last connection attempt failed; another follows its backoff.
    Failed,
    /// Stopped: sluice shuts down, or a reload removed or restarted it.
    Stopped,
}

/// How much of an upstream's catalog is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CatalogState {
    /// Never read completely.
    None,
    /// The last read was complete.
    Complete,
    /// The last complete read is served; a newer read did not finish.
    Stale,
}

/// The served catalog against `sluice.lock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalState {
    /// No complete read yet.
    Pending,
    /// No lockfile.
    Unpinned,
    /// The read is what the lockfile approves.
    Unchanged,
    /// The read differs from what the lockfile approves.
    Drifted,
}

/// How many entries drifted, by kind of drift.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct DriftCounts {
    /// Listed but not approved.
    pub added: usize,
    /// Approved but no longer listed.
    pub removed: usize,
    /// Listed with a definition other than the approved one.
    pub changed: usize,
}

/// How many entries of each list a catalog has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CatalogCounts {
    /// Tools.
    pub tools: usize,
    /// Resources.
    pub resources: usize,
    /// Resource templates.
    pub resource_templates: usize,
    /// Prompts.
    pub prompts: usize,
}

/// What `/health` shows of an upstream. Nothing secret, no address.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct UpstreamStatus {
    /// Where its connection stands.
    pub state: UpstreamState,
    /// The era it speaks, once connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub era: Option<Era>,
    /// The negotiated protocol version, once connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// How many times it was reconnected.
    pub restarts: u32,
    /// The last failure, in sluice's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// How much of its catalog is known.
    pub catalog: CatalogState,
    /// Entry counts of the served catalog.
    pub tools: usize,
    /// Resources served.
    pub resources: usize,
    /// Resource templates served.
    pub resource_templates: usize,
    /// Prompts served.
    pub prompts: usize,
    /// The served catalog against `sluice.lock`.
    pub approval: ApprovalState,
    /// What drifted, when `approval` is [`ApprovalState::Drifted`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftCounts>,
    /// How a stdio upstream's child is contained (S-21); none for HTTP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxSummary>,
}

// === impl UpstreamState ===

impl UpstreamState {
    /// The word `/health` shows.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamState::Starting => "starting",
            UpstreamState::Ready => "ready",
            UpstreamState::Restarting => "restarting",
            UpstreamState::Failed => "failed",
            UpstreamState::Stopped => "stopped",
        }
    }
}

impl fmt::Display for UpstreamState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// === impl ApprovalState ===

impl ApprovalState {
    /// The verdict on a complete read that drifted by `diff` (empty when
    /// unpinned), `pinned` when a lockfile is in force.
    pub fn of(diff: &Diff, pinned: bool) -> Self {
        match (pinned, diff.is_empty()) {
            (false, _) => ApprovalState::Unpinned,
            (true, true) => ApprovalState::Unchanged,
            (true, false) => ApprovalState::Drifted,
        }
    }
}

// === impl DriftCounts ===

impl DriftCounts {
    /// The counts of `diff`.
    pub fn of(diff: &Diff) -> Self {
        DriftCounts {
            added: diff.added.len(),
            removed: diff.removed.len(),
            changed: diff.changed.len(),
        }
    }
}

// === impl CatalogCounts ===

impl CatalogCounts {
    /// The counts of `catalog`.
    pub fn of(catalog: &UpstreamCatalog) -> Self {
        CatalogCounts {
            tools: catalog.tools.len(),
            resources: catalog.resources.len(),
            resource_templates: catalog.resource_templates.len(),
            prompts: catalog.prompts.len(),
        }
    }
}

// === impl UpstreamStatus ===

impl Default for UpstreamStatus {
    /// A configured upstream before its first connection.
    fn default() -> Self {
        UpstreamStatus {
            state: UpstreamState::Starting,
            era: None,
            protocol_version: None,
            restarts: 0,
            last_error: None,
            catalog: CatalogState::None,
            tools: 0,
            resources: 0,
            resource_templates: 0,
            prompts: 0,
            approval: ApprovalState::Pending,
            drift: None,
            sandbox: None,
        }
    }
}

impl UpstreamStatus {
    /// A configured upstream reached by `transport`, before its first
    /// connection.
    pub fn new(transport: &UpstreamTransport) -> Self {
        let sandbox = match transport {
            UpstreamTransport::Stdio { sandbox, .. } => Some(sandbox.summary()),
            UpstreamTransport::Http { .. } => None,
        };
        UpstreamStatus {
            sandbox,
            ..UpstreamStatus::default()
        }
    }

    /// Whether the upstream is connected.
    pub fn is_ready(&self) -> bool {
        self.state == UpstreamState::Ready
    }

    /// Connected and handshaken.
    pub fn connected(&mut self, era: Era, protocol_version: String) {
        self.state = UpstreamState::Ready;
        self.era = Some(era);
        self.protocol_version = Some(protocol_version);
    }

    /// A connection attempt failed.
    pub fn failed(&mut self, reason: String) {
        self.state = UpstreamState::Failed;
        self.last_error = Some(reason);
    }

    /// The connection ended and is being made again.
    pub fn restarting(&mut self, reason: String) {
        self.state = UpstreamState::Restarting;
        self.restarts += 1;
        self.last_error = Some(reason);
    }

    /// The upstream is stopped.
    pub fn stopped(&mut self) {
        self.state = UpstreamState::Stopped;
    }

    /// A complete read is served, with `counts` entries.
    pub fn served(&mut self, counts: CatalogCounts) {
        self.catalog = CatalogState::Complete;
        // What went wrong before is over: the upstream is serving.
        self.last_error = None;
        self.tools = counts.tools;
        self.resources = counts.resources;
        self.resource_templates = counts.resource_templates;
        self.prompts = counts.prompts;
    }

    /// A read did not finish: the last complete one, if any, stays served.
    pub fn not_established(&mut self, reason: &NotEstablished) {
        if self.catalog == CatalogState::Complete {
            self.catalog = CatalogState::Stale;
        }
        self.last_error = Some(reason.to_string());
    }

    /// The lockfile's verdict on the served read: drifted by `diff` (empty
    /// when unpinned), `pinned` when a lockfile is in force.
    pub fn judged(&mut self, diff: &Diff, pinned: bool) {
        self.approval = ApprovalState::of(diff, pinned);
        self.drift = (!diff.is_empty()).then(|| DriftCounts::of(diff));
    }
}

/// An upstream's status as `/health` and the progressive meta-tools show
/// it. The last error may quote the upstream, so it is redacted like any
/// upstream text.
pub fn shown(status: &UpstreamStatus, redactor: &Redactor) -> serde_json::Value {
    let mut value = serde_json::to_value(status).unwrap_or(serde_json::Value::Null);
    if let Some(error) = value.get_mut("last_error") {
        redactor.redact(error);
    }
    value
}

/// How much of `/health` a caller sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthDetail {
    /// `status` and `version`, and nothing else.
    Summary,
    /// Also every upstream's status: its name, state, protocol version,
    /// catalog and (redacted) last error.
    Upstreams,
}

/// With `[auth]` on, `/health` is still served without a credential (S-7:
/// the version must be readable before auth, "and nothing else"); the
/// upstreams, which describe the deployment (names, versions, errors that
/// may name an internal address), go only to a caller whose credential
/// verifies. Without `[auth]` sluice listens on loopback, open to every
/// local process anyway, and shows them.
pub fn health_detail(auth_on: bool, credential_verified: bool) -> HealthDetail {
    if auth_on && !credential_verified {
        HealthDetail::Summary
    } else {
        HealthDetail::Upstreams
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::catalog::drift::EntryId;
    use crate::discovery::{IncompleteReason, ListKind};
    use crate::sandbox::{SandboxPolicy, Sandboxing};

    fn word(value: impl Serialize) -> Value {
        serde_json::to_value(value).expect("serializes")
    }

    #[test]
    fn a_new_status_shows_what_health_always_showed() {
        let value = word(UpstreamStatus::default());
        assert_eq!(
            value,
            json!({
                "state": "starting", "restarts": 0, "catalog": "none",
                "tools": 0, "resources": 0, "resource_templates": 0, "prompts": 0,
                "approval": "pending",
            })
        );
    }

    #[test]
    fn a_stdio_upstream_shows_its_sandbox() {
        let stdio = |sandbox| UpstreamTransport::Stdio {
            command: "node".into(),
            args: vec![],
            env: Default::default(),
            cwd: None,
            rlimit: Default::default(),
            sandbox,
        };
        let value = word(UpstreamStatus::new(&stdio(Sandboxing::Bwrap(
            SandboxPolicy::default(),
        ))));
        assert_eq!(
            value["sandbox"],
            json!({"kind": "bwrap", "network": false, "read": 0, "write": 0})
        );
        let value = word(UpstreamStatus::new(&stdio(Sandboxing::None)));
        assert_eq!(value["sandbox"], json!({"kind": "none"}));
        let http = UpstreamTransport::Http {
            url: "https://h".into(),
            headers: Default::default(),
            allow_private: false,
            oauth: None,
        };
        assert_eq!(word(UpstreamStatus::new(&http)).get("sandbox"), None);
    }

    #[test]
    fn every_state_serializes_to_its_word() {
        for state in [
            UpstreamState::Starting,
            UpstreamState::Ready,
            UpstreamState::Restarting,
            UpstreamState::Failed,
            UpstreamState::Stopped,
        ] {
            assert_eq!(word(state), json!(state.as_str()));
            assert_eq!(state.to_string(), state.as_str());
        }
        assert_eq!(
            [
                CatalogState::None,
                CatalogState::Complete,
                CatalogState::Stale
            ]
            .map(word),
            [json!("none"), json!("complete"), json!("stale")]
        );
        assert_eq!(
            [
                ApprovalState::Pending,
                ApprovalState::Unpinned,
                ApprovalState::Unchanged,
                ApprovalState::Drifted,
            ]
            .map(word),
            [
                json!("pending"),
                json!("unpinned"),
                json!("unchanged"),
                json!("drifted")
            ]
        );
    }

    #[test]
    fn a_read_that_did_not_finish_leaves_a_complete_catalog_stale() {
        let mut status = UpstreamStatus::default();
        let reason = NotEstablished::Incomplete {
            list: ListKind::Tools,
            reason: IncompleteReason::MalformedPage,
        };
        status.not_established(&reason);
        assert_eq!(status.catalog, CatalogState::None);
        status.served(CatalogCounts {
            tools: 2,
            ..CatalogCounts::default()
        });
        assert_eq!((status.catalog, status.tools), (CatalogState::Complete, 2));
        assert_eq!(status.last_error, None);
        status.not_established(&reason);
        assert_eq!(status.catalog, CatalogState::Stale);
        assert_eq!(status.last_error, Some(reason.to_string()));
    }

    #[test]
    fn the_verdict_follows_the_lockfile_and_the_diff() {
        let mut status = UpstreamStatus::default();
        let drifted = Diff {
            added: vec![EntryId {
                kind: ListKind::Tools,
                key: "new".into(),
            }],
            ..Diff::default()
        };
        status.judged(&Diff::default(), false);
        assert_eq!(
            (status.approval, status.drift),
            (ApprovalState::Unpinned, None)
        );
        status.judged(&Diff::default(), true);
        assert_eq!(status.approval, ApprovalState::Unchanged);
        status.judged(&drifted, true);
        assert_eq!(status.approval, ApprovalState::Drifted);
        assert_eq!(
            status.drift,
            Some(DriftCounts {
                added: 1,
                removed: 0,
                changed: 0
            })
        );
    }

    #[test]
    fn a_lost_connection_counts_a_restart() {
        let mut status = UpstreamStatus::default();
        status.connected(Era::Legacy, "2025-11-25".into());
        assert!(status.is_ready());
        status.restarting("the connection was lost".into());
        assert_eq!(
            (status.state, status.restarts),
            (UpstreamState::Restarting, 1)
        );
        let value = word(&status);
        assert_eq!(value["era"], "legacy");
        assert_eq!(value["last_error"], "the connection was lost");
    }

    #[test]
    fn the_last_error_is_redacted() {
        use crate::boundary::redact::DEFAULT_SECRET_KEYS;
        let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        let redactor = Redactor::new(Vec::<String>::new(), DEFAULT_SECRET_KEYS);
        let status = UpstreamStatus {
            last_error: Some(format!("spawn failed: token {secret}")),
            ..UpstreamStatus::default()
        };
        let shown = shown(&status, &redactor);
        let error = shown["last_error"].as_str().unwrap_or_default();
        assert!(
            error.starts_with("spawn failed") && !error.contains(secret),
            "{error}"
        );
    }

    #[test]
    fn with_auth_on_only_a_verified_caller_sees_the_upstreams() {
        assert_eq!(health_detail(true, false), HealthDetail::Summary);
        assert_eq!(health_detail(true, true), HealthDetail::Upstreams);
        assert_eq!(health_detail(false, false), HealthDetail::Upstreams);
    }
}
