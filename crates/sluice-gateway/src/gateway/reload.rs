//! A reload: a new configuration and lockfile put in force without a
//! restart, as one swap.

use std::sync::Arc;

use sluice_core::catalog::lockfile::Lockfile;
use sluice_core::config::Config;
use sluice_core::config::reload::{self, UpstreamChanges};

use super::{Gateway, Live, redactor};
use crate::auth::Auth;
use crate::ratelimit::RateLimits;
use crate::upstream::Upstream;

/// What a reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadReport {
    /// Upstreams started, stopped, restarted and left alone.
    pub upstreams: UpstreamChanges,
    /// Keys whose new value waits for a restart (they keep the old one).
    pub deferred: Vec<&'static str>,
}

// === impl Gateway ===

impl Gateway {
    /// Puts a new configuration and lockfile in force without a restart:
    /// upstreams only in `config` start, those no longer in it stop (their
    /// calls in flight fail as a lost connection does), those whose
    /// `[[upstream]]` changed in any way restart, and the rest keep their
    /// connections. Every upstream's last complete read is judged again
    /// under `lock`, and clients hear `list_changed` for each list that
    /// changed. The keys of [`reload::RESTART_ONLY`] keep their running
    /// value. `config` must already be valid (as `serve` checks it).
    pub async fn reload(&self, config: Config, lock: Option<Lockfile>) -> ReloadReport {
        let mut supervisors = self.supervisors.lock().await;
        let running = self.hub.live();
        let plan = reload::plan(&running.config, config);
        for key in &plan.deferred {
            tracing::warn!(
                key,
                "{key} changed in the configuration: it takes effect at restart (the running value is kept)"
            );
        }
        let changes = plan.upstreams;
        let config = plan.config;
        let upstreams: Vec<Arc<Upstream>> = config
            .upstreams
            .iter()
            .map(|u| match running.upstream(&u.name) {
                Some(up) if changes.unchanged.contains(&u.name) => Arc::clone(up),
                _ => Arc::new(Upstream::new(u.clone(), self.shutdown.child_token())),
            })
            .collect();
        let starting: Vec<Arc<Upstream>> = upstreams
            .iter()
            .filter(|u| !changes.unchanged.iter().any(|name| name == u.name()))
            .cloned()
            .collect();
        let live = Live {
            redactor: Arc::new(redactor(&config)),
            naming: config.naming(),
            rate_limits: if plan.rates_changed {
                Arc::new(RateLimits::new(&config))
            } else {
                Arc::clone(&running.rate_limits)
            },
            auth: if plan.auth_changed {
                Arc::new(Auth::new(&config.auth))
            } else {
                Arc::clone(&running.auth)
            },
            upstreams,
            lock,
            config,
        };
        let ending: Vec<&String> = changes.removed.iter().chain(&changes.changed).collect();
        self.hub.replace(Arc::new(live), &ending);
        for name in &ending {
            if let Some(up) = running.upstream(name) {
                up.stop.cancel();
            }
        }
        // A restarted upstream's old child is gone before its new one
        // starts: two at once might fight over what they hold.
        for name in &ending {
            if let Some(task) = supervisors.remove(*name) {
                let _ = task.await;
            }
        }
        // A removed upstream drifts no more (its `up` gauge is already 0).
        for name in &changes.removed {
            crate::ops::metrics::drift(name, 0);
        }
        for up in starting {
            supervisors.insert(up.name().to_owned(), self.supervise(&up));
        }
        crate::ops::metrics::config_reload(true);
        let report = ReloadReport {
            upstreams: changes,
            deferred: plan.deferred,
        };
        tracing::info!("configuration reloaded: {report}");
        report
    }
}

// === impl ReloadReport ===

impl std::fmt::Display for ReloadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |list: &[String]| {
            if list.is_empty() {
                "none".to_owned()
            } else {
                list.join(", ")
            }
        };
        let u = &self.upstreams;
        write!(
            f,
            "upstreams added: {}; removed: {}; restarted: {}; unchanged: {}",
            names(&u.added),
            names(&u.removed),
            names(&u.changed),
            names(&u.unchanged)
        )?;
        if !self.deferred.is_empty() {
            write!(f, "; waiting for a restart: {}", self.deferred.join(", "))?;
        }
        Ok(())
    }
}
