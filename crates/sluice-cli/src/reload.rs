//! Hot reload for `sluice serve`: on SIGHUP, or when the config file or
//! the lockfile changes on disk, read both again; put them in force if
//! `serve` would start with them, else log every problem and keep serving
//! on the running ones.
//!
//! Files are watched with `notify` (inotify on Linux) on their parent
//! directories, because editors and `sluice lock` replace a file by
//! renaming a new one over it, which a watch on the file itself would not
//! survive. Any change in those directories counts (a Kubernetes ConfigMap
//! swaps a `..data` link, not the file); the files' contents then decide
//! whether anything changed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use sluice_core::catalog::lockfile::Lockfile;
use sluice_core::config::{self, Config};
use sluice_gateway::Gateway;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Notify;

use crate::pinning;

/// Editors write a file in several steps (truncate, write, rename): act
/// once they have been quiet this long.
const DEBOUNCE: Duration = Duration::from_millis(250);

/// Where the running configuration came from, to read it again.
pub struct Sources {
    /// The config file (`--config` or `--mcp-json`).
    pub config: PathBuf,
    /// Whether it is an `mcp.json`.
    pub is_json: bool,
    /// The lockfile, as found at start (`catalog.lockfile` takes effect at
    /// restart).
    pub lockfile: PathBuf,
    /// `--listen`, which overrides the file's `server.listen`.
    pub listen_flag: Option<SocketAddr>,
    /// The address served, when serving HTTP: a new `[auth]` must still
    /// be allowed on it.
    pub bound: Option<SocketAddr>,
}

impl Sources {
    /// The config and lockfile as `serve` would start with them, or every
    /// reason it would refuse to.
    fn load(&self) -> Result<(Config, Option<Lockfile>), Vec<String>> {
        let mut config = crate::read_config(&self.config, self.is_json)?;
        if let Some(listen) = self.listen_flag {
            config.server.listen = listen;
        }
        if let Some(bound) = self.bound
            && let Some(problem) = config::exposure_problem(bound, &config.auth)
        {
            return Err(vec![format!("server.listen (serving {bound}): {problem}")]);
        }
        let lock = pinning::parse_lockfile(&self.lockfile).map_err(|p| vec![p])?;
        if lock.is_none() && config.catalog.require_lock {
            return Err(vec![pinning::missing_lock(&self.lockfile)]);
        }
        Ok((config, lock))
    }

    /// The files whose changes trigger a reload.
    fn watched(&self) -> [&Path; 2] {
        [&self.config, &self.lockfile]
    }
}

/// Reloads on SIGHUP and on changes to the watched files, until the
/// process ends. SIGHUP is taken over before this returns: its default
/// action ends the process, so a reload sent just after start must find
/// the handler in place (call it before serving, within the runtime).
pub fn run(gateway: Arc<Gateway>, sources: Sources) -> impl Future<Output = ()> {
    let mut hangup = match signal(SignalKind::hangup()) {
        Ok(hangup) => Some(hangup),
        Err(e) => {
            tracing::warn!("cannot handle SIGHUP ({e}); reloads follow file changes only");
            None
        }
    };
    async move {
        let changed = Arc::new(Notify::new());
        // Dropping the watcher ends the watch: it lives as long as this task.
        let _watcher = watch(&sources, Arc::clone(&changed));
        let mut last = fingerprint(&sources);
        loop {
            let hangup_received = async {
                match hangup.as_mut() {
                    Some(h) => h.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = hangup_received => tracing::info!("SIGHUP: reloading the configuration"),
                () = settle(&changed) => {
                    // A write that changed nothing (or a file beside them)
                    // is no reason to reload.
                    let now = fingerprint(&sources);
                    if now == last {
                        continue;
                    }
                    tracing::info!("the configuration or lockfile changed on disk: reloading");
                }
            }
            last = fingerprint(&sources);
            match sources.load() {
                Ok((config, lock)) => {
                    gateway.reload(config, lock).await;
                }
                Err(problems) => {
                    for p in &problems {
                        tracing::error!("{p}");
                    }
                    tracing::error!(
                        "reload rejected: {} problem(s); still serving the running configuration",
                        problems.len()
                    );
                    sluice_gateway::ops::metrics::config_reload(false);
                }
            }
        }
    }
}

/// Resolves once a change was seen and no other followed for [`DEBOUNCE`].
async fn settle(changed: &Notify) {
    changed.notified().await;
    loop {
        tokio::select! {
            () = changed.notified() => {}
            () = tokio::time::sleep(DEBOUNCE) => return,
        }
    }
}

/// Watches the directories of the watched files; `None` (logged) when the
/// system will not watch them.
fn watch(sources: &Sources, changed: Arc<Notify>) -> Option<notify::RecommendedWatcher> {
    let handler = move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|e| !e.kind.is_access()) {
            changed.notify_one();
        }
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(watcher) => watcher,
        Err(e) => {
            tracing::warn!("cannot watch the configuration ({e}); reload with SIGHUP");
            return None;
        }
    };
    // Made absolute: a bare file name's parent is "", which cannot be watched.
    let files = sources
        .watched()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_owned()));
    let mut dirs: Vec<&Path> = files.iter().filter_map(|f| f.parent()).collect();
    dirs.dedup();
    for dir in dirs {
        if let Err(e) = watcher.watch(dir, RecursiveMode::NonRecursive) {
            tracing::warn!("cannot watch {} ({e}); reload with SIGHUP", dir.display());
        }
    }
    Some(watcher)
}

/// The watched files' contents (`None` for one that cannot be read).
fn fingerprint(sources: &Sources) -> [Option<Vec<u8>>; 2] {
    sources.watched().map(|p| std::fs::read(p).ok())
}
