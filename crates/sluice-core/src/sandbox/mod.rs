//! How a stdio upstream is contained (S-21): the sandbox policy, its
//! translation to a `bwrap` command line, and the commands refused unless
//! an upstream allows them.
//!
//! The policy is decided here from the configuration ([`Sandboxing`], made
//! by `config`); the shell resolves the paths it names on disk (the
//! command through `PATH`, the declared paths, which system directories
//! exist), and [`bwrap::command_line`] turns policy and paths into the
//! arguments of `bwrap` (Debian's `bubblewrap`). Nothing is contained by
//! hand: the namespaces, mounts and `no_new_privs` are bubblewrap's.
//!
//! - [`bwrap`]: what the sandbox shows the child, as bwrap arguments.
//! - [`dangerous`]: commands that run arbitrary code or gain privileges.

use std::path::PathBuf;

use serde::Serialize;

pub mod bwrap;
pub mod dangerous;

/// How one stdio upstream runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Sandboxing {
    /// As sluice's own child, with sluice's rights (the environment is
    /// still cleared).
    #[default]
    None,
    /// In a bubblewrap sandbox.
    Bwrap(SandboxPolicy),
}

/// What a sandboxed child may reach beyond the defaults: the system
/// read-only, its own files readable, a private `/tmp`, `/dev` and `/proc`,
/// its own PID, IPC and user namespaces, no new privileges.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxPolicy {
    /// `network`: the host's network; without it, a network namespace of
    /// its own (a loopback that reaches nothing of the host's).
    pub network: bool,
    /// `read`: paths readable beyond the defaults, as configured (relative
    /// ones are relative to the child's working directory).
    pub read: Vec<PathBuf>,
    /// `write`: paths readable and writable.
    pub write: Vec<PathBuf>,
}

/// What `/health` and the spawn log show of an upstream's sandbox: its
/// kind and the size of what it opens, never the paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SandboxSummary {
    /// Not sandboxed.
    None,
    /// A bubblewrap sandbox.
    Bwrap {
        /// Whether it shares the host's network.
        network: bool,
        /// How many paths it may read beyond the defaults.
        read: usize,
        /// How many paths it may write.
        write: usize,
    },
}

impl Sandboxing {
    /// What `/health` and the spawn log show.
    pub fn summary(&self) -> SandboxSummary {
        match self {
            Sandboxing::None => SandboxSummary::None,
            Sandboxing::Bwrap(policy) => SandboxSummary::Bwrap {
                network: policy.network,
                read: policy.read.len(),
                write: policy.write.len(),
            },
        }
    }
}

impl std::fmt::Display for SandboxSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SandboxSummary::None => f.write_str("none"),
            SandboxSummary::Bwrap {
                network,
                read,
                write,
            } => write!(
                f,
                "bwrap (network {}, {read} read path(s), {write} write path(s))",
                if *network { "shared" } else { "off" }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_summary_counts_paths_and_names_none() {
        let sandboxed = Sandboxing::Bwrap(SandboxPolicy {
            network: false,
            read: vec!["/srv/data".into()],
            write: vec!["/srv/out".into(), "/srv/cache".into()],
        });
        assert_eq!(
            serde_json::to_value(sandboxed.summary()).ok(),
            Some(json!({"kind": "bwrap", "network": false, "read": 1, "write": 2}))
        );
        assert_eq!(
            sandboxed.summary().to_string(),
            "bwrap (network off, 1 read path(s), 2 write path(s))"
        );
        assert_eq!(
            serde_json::to_value(Sandboxing::None.summary()).ok(),
            Some(json!({"kind": "none"}))
        );
    }
}
