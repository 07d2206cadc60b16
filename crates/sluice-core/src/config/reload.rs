//! What a reload of the configuration changes, decided from the running
//! config and the new one: which upstreams start, stop, restart or stay,
//! and which keys only a restart can change.

use super::Config;

/// The keys a running sluice cannot change: the listener is bound, the
/// session reaper's period is set, the cursor secret seals cursors clients
/// hold, the lockfile's path is what is watched, and the transport ceiling
/// sized the readers made at start, and the connection bounds are the
/// accept loop's.
pub const RESTART_ONLY: [&str; 15] = [
    "server.listen",
    "server.session_idle_timeout",
    "server.connections",
    "limits.transport_max_message_bytes",
    "catalog.lockfile",
    "state.dir",
    "state.cursor_secret",
    "state.url",
    "state.audit",
    "state.audit_retention",
    "metrics.enabled",
    "metrics.listen",
    "telemetry.otlp_endpoint",
    "telemetry.service_name",
    "telemetry.sample_ratio",
];

/// A reload, planned.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// What to run on: the new config, with every key of [`RESTART_ONLY`]
    /// at its running value.
    pub config: Config,
    /// What happens to each upstream.
    pub upstreams: UpstreamChanges,
    /// The keys of [`RESTART_ONLY`] whose new value waits for a restart.
    pub deferred: Vec<&'static str>,
    /// Whether a tool call's rate may differ (`[ratelimit]`, an upstream's
    /// `rate_limit` or `tool_rate_limit`): the limiters are rebuilt, and
    /// their counts start over, only then.
    pub rates_changed: bool,
    /// Whether `[auth]` differs: it is rebuilt only then, so fetched
    /// issuer keys survive other reloads.
    pub auth_changed: bool,
}

/// The upstreams of a reload, by name: each list in config order (the
/// removed ones in the running config's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamChanges {
    /// Only in the new config: started.
    pub added: Vec<String>,
    /// Only in the running config: stopped.
    pub removed: Vec<String>,
    /// In both, with any difference: restarted.
    pub changed: Vec<String>,
    /// In both, the same: left alone, connection and all.
    pub unchanged: Vec<String>,
}

/// Plans the move from `running` to `new`.
pub fn plan(running: &Config, mut new: Config) -> Plan {
    let mut deferred = Vec::new();
    let mut keep = |key: &'static str, differs: bool| {
        if differs {
            deferred.push(key);
        }
    };
    keep("server.listen", new.server.listen != running.server.listen);
    new.server.listen = running.server.listen;
    keep(
        "server.session_idle_timeout",
        new.server.session_idle_timeout != running.server.session_idle_timeout,
    );
    new.server.session_idle_timeout = running.server.session_idle_timeout;
    keep(
        "server.connections",
        new.server.connections != running.server.connections,
    );
    new.server.connections = running.server.connections;
    keep(
        "limits.transport_max_message_bytes",
        new.limits.transport_max_message_bytes != running.limits.transport_max_message_bytes,
    );
    new.limits.transport_max_message_bytes = running.limits.transport_max_message_bytes;
    keep(
        "catalog.lockfile",
        new.catalog.lockfile != running.catalog.lockfile,
    );
    new.catalog.lockfile.clone_from(&running.catalog.lockfile);
    keep("state.dir", new.state.dir != running.state.dir);
    keep(
        "state.cursor_secret",
        new.state.cursor_secret != running.state.cursor_secret,
    );
    keep("state.url", new.state.store != running.state.store);
    keep("state.audit", new.state.audit != running.state.audit);
    keep(
        "state.audit_retention",
        new.state.audit_retention != running.state.audit_retention,
    );
    new.state.clone_from(&running.state);
    // The metrics listener and the trace exporter are set up at start.
    keep(
        "metrics.enabled",
        new.metrics.enabled != running.metrics.enabled,
    );
    keep(
        "metrics.listen",
        new.metrics.listen != running.metrics.listen,
    );
    new.metrics = running.metrics;
    let (t, r) = (&new.telemetry, &running.telemetry);
    keep(
        "telemetry.otlp_endpoint",
        t.otlp_endpoint != r.otlp_endpoint,
    );
    keep("telemetry.service_name", t.service_name != r.service_name);
    keep("telemetry.sample_ratio", t.sample_ratio != r.sample_ratio);
    new.telemetry.clone_from(&running.telemetry);

    let mut upstreams = UpstreamChanges::default();
    for up in &new.upstreams {
        let list = match running.upstreams.iter().find(|u| u.name == up.name) {
            None => &mut upstreams.added,
            Some(old) if old != up => &mut upstreams.changed,
            Some(_) => &mut upstreams.unchanged,
        };
        list.push(up.name.clone());
    }
    upstreams.removed = running
        .upstreams
        .iter()
        .filter(|old| !new.upstreams.iter().any(|u| u.name == old.name))
        .map(|old| old.name.clone())
        .collect();

    // Only upstreams with rates of their own have limiters of their own:
    // adding or removing another changes no rate.
    let rates = |c: &Config| {
        c.upstreams
            .iter()
            .filter(|u| u.rate_limit.is_some() || !u.tool_rate_limits.is_empty())
            .map(|u| (u.name.clone(), u.rate_limit, u.tool_rate_limits.clone()))
            .collect::<Vec<_>>()
    };
    Plan {
        rates_changed: running.ratelimit != new.ratelimit || rates(running) != rates(&new),
        auth_changed: running.auth != new.auth,
        upstreams,
        deferred,
        config: new,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::Source;

    fn config(text: &str) -> Config {
        Config::from_toml(
            Source {
                name: "sluice.toml",
                text,
            },
            &|_| None,
        )
        .unwrap()
    }

    const A: &str = "[[upstream]]\nname = \"a\"\ncommand = \"srv-a\"\n";
    const B: &str = "[[upstream]]\nname = \"b\"\ncommand = \"srv-b\"\n";

    #[test]
    fn upstreams_are_added_removed_changed_or_left_alone() {
        let running = config(&format!(
            "{A}{B}[[upstream]]\nname = \"c\"\ncommand = \"srv-c\"\n"
        ));
        let new = config(&format!(
            "{A}[[upstream]]\nname = \"c\"\ncommand = \"srv-c\"\nargs = [\"-v\"]\n\
             [[upstream]]\nname = \"d\"\nurl = \"https://d.example/mcp\"\n"
        ));
        let plan = plan(&running, new.clone());
        assert_eq!(
            plan.upstreams,
            UpstreamChanges {
                added: vec!["d".into()],
                removed: vec!["b".into()],
                changed: vec!["c".into()],
                unchanged: vec!["a".into()],
            }
        );
        assert_eq!(plan.config, new);
        assert!(plan.deferred.is_empty());
        assert!(!plan.rates_changed);
        assert!(!plan.auth_changed);
    }

    #[test]
    fn a_policy_field_alone_changes_an_upstream() {
        let running = config(A);
        let plan = plan(&running, config(&format!("{A}trusted = true\n")));
        assert_eq!(plan.upstreams.changed, ["a"]);
        assert!(plan.upstreams.unchanged.is_empty());
    }

    #[test]
    fn restart_only_keys_keep_their_running_value_and_are_named() {
        let running = config(A);
        let new = config(&format!(
            "[server]\nlisten = \"127.0.0.1:9999\"\nrequest_timeout = \"7s\"\nsession_idle_timeout = \"5m\"\n\
             [server.connections]\nmax = 7\n\
             [limits]\ntransport_max_message_bytes = 33554432\n\
             [catalog]\nlockfile = \"other.lock\"\n\
             [state]\ndir = \"elsewhere\"\ncursor_secret = \"0123456789abcdef0123456789abcdef\"\n\
             url = \"postgres://db/sluice\"\naudit = false\naudit_retention = \"2d\"\n\
             [metrics]\nenabled = false\nlisten = \"127.0.0.1:9464\"\n\
             [telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\nservice_name = \"x\"\nsample_ratio = 0.5\n{A}"
        ));
        let plan = plan(&running, new);
        assert_eq!(plan.deferred, RESTART_ONLY);
        assert_eq!(plan.config.server.listen, running.server.listen);
        assert_eq!(
            plan.config.server.session_idle_timeout,
            running.server.session_idle_timeout
        );
        assert_eq!(plan.config.server.connections, running.server.connections);
        assert_eq!(
            plan.config.limits.transport_max_message_bytes,
            running.limits.transport_max_message_bytes
        );
        assert_eq!(plan.config.catalog.lockfile, running.catalog.lockfile);
        assert_eq!(plan.config.state, running.state);
        assert_eq!(plan.config.metrics, running.metrics);
        assert_eq!(plan.config.telemetry, running.telemetry);
        // Everything else takes the new value.
        assert_eq!(
            plan.config.server.request_timeout,
            std::time::Duration::from_secs(7)
        );
        assert_eq!(plan.upstreams.unchanged, ["a"]);
    }

    #[test]
    fn rate_and_auth_changes_are_flagged() {
        let running = config(A);
        let plan_rates = plan(&running, config(&format!("{A}rate_limit = \"5/s\"\n")));
        assert!(plan_rates.rates_changed);
        let plan_default = plan(
            &running,
            config(&format!("[ratelimit]\ndefault = \"5/s\"\n{A}")),
        );
        assert!(plan_default.rates_changed);
        assert!(!plan_default.auth_changed);
        let plan_auth = plan(
            &running,
            config(&format!(
                "[auth]\nmode = \"bearer\"\n[[auth.token]]\nprincipal = \"p\"\nfile = \"p.token\"\n{A}"
            )),
        );
        assert!(plan_auth.auth_changed);
        assert!(!plan_auth.rates_changed);
    }
}
