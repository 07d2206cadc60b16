//! The console's approvals: the hub's last complete reads approved into
//! `sluice.lock` by the same decision as `sluice lock`
//! ([`sluice_core::catalog::locking`]), written atomically, then put in
//! force by a reload.

use std::path::Path;

use sluice_core::catalog::drift::NotEstablished;
use sluice_core::catalog::lockfile::Lockfile;
use sluice_core::catalog::locking::{self, LockPlan, Read, UpstreamLock};
use sluice_core::catalog::poisoning;
use sluice_core::console::{Approval, HeldRead, Refusal};
use sluice_core::discovery::CatalogRead;

use super::{Gateway, Live};

/// Why an approval did not land.
#[derive(Debug, thiserror::Error)]
pub enum ApproveError {
    /// The console's rules refused it; nothing was written.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The lockfile could not be written; the old one is in place.
    #[error("cannot write the lockfile: {0}")]
    Write(#[from] std::io::Error),
}

/// Writes `lock` beside `path` and renames it over `path`, so that a
/// reader (the reload watcher, a reviewer) never sees half a lockfile.
pub fn write_lockfile(path: &Path, lock: &Lockfile) -> std::io::Result<()> {
    let tmp = path.with_extension("lock.tmp");
    std::fs::write(&tmp, lock.render())?;
    std::fs::rename(&tmp, path)
}

impl Live {
    /// The configured upstreams' names, in config order.
    pub(crate) fn upstream_names(&self) -> Vec<String> {
        self.config
            .upstreams
            .iter()
            .map(|u| u.name.clone())
            .collect()
    }
}

impl Gateway {
    /// Runs `with` over the last complete read of every upstream that has
    /// one, in config order, with what the lockfile made of each.
    pub(crate) fn with_reads<T>(&self, with: impl FnOnce(&[HeldRead<'_>]) -> T) -> T {
        let live = self.live();
        let approvals = self
            .hub
            .approvals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let reads: Vec<HeldRead<'_>> = live
            .config
            .upstreams
            .iter()
            .filter_map(|u| {
                approvals.get(&u.name).map(|a| HeldRead {
                    upstream: &u.name,
                    catalog: &a.catalog,
                    approval: &a.approval,
                })
            })
            .collect();
        with(&reads)
    }

    /// Approves what `approval` names into the lockfile at `path`, from
    /// the reads held now, and reloads with it. One approval at a time, so
    /// that two never start from the same lockfile.
    pub(crate) async fn approve(
        &self,
        approval: &Approval,
        path: &Path,
    ) -> Result<LockPlan, ApproveError> {
        let _one_at_a_time = self.approving.lock().await;
        let live = self.live();
        let configured = live.upstream_names();
        let names = if approval.upstreams.is_empty() {
            &configured
        } else {
            &approval.upstreams
        };
        let reads: Vec<Read> = {
            let approvals = self
                .hub
                .approvals
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            names
                .iter()
                .map(|name| {
                    let read = approvals
                        .get(name)
                        .map(|a| CatalogRead::Complete(a.catalog.clone()))
                        .ok_or(NotEstablished::Unreachable);
                    (name.clone(), read)
                })
                .collect()
        };
        let plan = locking::plan(
            &configured,
            live.lock.as_ref(),
            reads,
            &approval.scope,
            approval.accept_findings,
        );
        if !plan.writes() {
            return Err(Refusal::NotApproved(refused(&plan)).into());
        }
        write_lockfile(path, &plan.lock)?;
        tracing::info!(
            "the console approved into {}: {}",
            path.display(),
            approval_words(&plan)
        );
        self.reload(live.config.clone(), Some(plan.lock.clone()))
            .await;
        Ok(plan)
    }
}

/// Why nothing was approved, upstream by upstream.
fn refused(plan: &LockPlan) -> String {
    let words: Vec<String> = plan
        .upstreams
        .iter()
        .filter_map(|(name, outcome)| match outcome {
            UpstreamLock::Locked { .. } => None,
            UpstreamLock::Flagged(found) => Some(format!(
                "{name}: the poisoning scan found {} (tick \"accept findings\" to approve them)",
                poisoning::lines(found).replace('\n', "; ")
            )),
            UpstreamLock::NotLocked(reason) => Some(format!("{name}: {reason}")),
        })
        .collect();
    words.join("; ")
}

/// What was approved, for the log.
pub(crate) fn approval_words(plan: &LockPlan) -> String {
    let locked: Vec<&str> = plan
        .upstreams
        .iter()
        .filter(|(_, o)| matches!(o, UpstreamLock::Locked { .. }))
        .map(|(n, _)| n.as_str())
        .collect();
    let mut words = format!("locked {}", locked.join(", "));
    let rest = refused(plan);
    if !rest.is_empty() {
        words.push_str("; not locked: ");
        words.push_str(&rest);
    }
    words
}
