//! `rlimit` of a stdio upstream: the resource limits of its child, so a
//! runaway server exhausts its own allowance rather than the host's.

use toml::Spanned;

use crate::config::diagnostics::Diagnostics;
use crate::config::raw::RawRlimit;

/// `rlimit` of a stdio upstream: resource limits applied to the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rlimits {
    /// `memory_bytes`: address space (RLIMIT_AS).
    pub memory_bytes: Option<u64>,
    /// `cpu_seconds`: CPU time (RLIMIT_CPU).
    pub cpu_seconds: Option<u64>,
    /// `open_files`: file descriptors (RLIMIT_NOFILE).
    pub open_files: Option<u64>,
}

pub(in crate::config) fn validate_rlimit(
    raw: &RawRlimit,
    key: &str,
    diags: &mut Diagnostics<'_>,
) -> Option<Rlimits> {
    let mut field = |v: &Option<Spanned<i64>>, name: &str, range: (usize, usize)| match v {
        None => Some(None),
        some => diags
            .integer(some, &format!("{key}.rlimit.{name}"), range.0, range)
            .map(|n| Some(n as u64)),
    };
    let memory_bytes = field(&raw.memory_bytes, "memory_bytes", (16 << 20, 1 << 40));
    let cpu_seconds = field(&raw.cpu_seconds, "cpu_seconds", (1, 1 << 31));
    let open_files = field(&raw.open_files, "open_files", (16, 1 << 20));
    Some(Rlimits {
        memory_bytes: memory_bytes?,
        cpu_seconds: cpu_seconds?,
        open_files: open_files?,
    })
}
