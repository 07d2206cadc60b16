//! `[server]`: the listener clients reach, the names they see, the timeouts
//! of what they do there; and the rule that a listener beyond loopback
//! needs `[auth]`.

use std::net::SocketAddr;
use std::time::Duration;

use toml::Spanned;

use super::connections::validate_connections;
use super::diagnostics::Diagnostics;
use super::raw::RawServer;
use super::security::{AllowedOrigin, AuthConfig, AuthMode, default_origins, validate_origins};
use crate::connection::ConnectionLimits;
use crate::naming;

/// The default HTTP listen address (loopback only).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";
/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";
/// The default tool and prompt name separator.
pub const DEFAULT_SEPARATOR: &str = "__";

/// `[server]`: how sluice serves its clients.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// `listen`: the HTTP address; the endpoint is [`MCP_PATH`].
    pub listen: SocketAddr,
    /// `separator`: between an upstream's name and a tool or prompt name.
    pub separator: String,
    /// `request_timeout`: the hard ceiling on one forwarded request;
    /// progress notifications do not extend it.
    pub request_timeout: Duration,
    /// `session_idle_timeout`: a legacy HTTP session unused this long is
    /// closed, so a client that never sends DELETE leaks nothing.
    pub session_idle_timeout: Duration,
    /// `max_sessions`: the most legacy HTTP sessions open at once.
    pub max_sessions: usize,
    /// `session_max_age`: the oldest session id another replica still
    /// takes up (ids carry their session; this bounds how long one that
    /// leaked, or was ended on another replica, stays usable).
    pub session_max_age: Duration,
    /// `startup_timeout`: how long an upstream may take to start and answer
    /// its handshake.
    pub startup_timeout: Duration,
    /// `shutdown_grace`: how long a child gets after SIGTERM before SIGKILL.
    pub shutdown_grace: Duration,
    /// `allowed_origins`: the browser origins that may call sluice (a
    /// present `Origin` outside them gets 403). Default: localhost.
    pub allowed_origins: Vec<AllowedOrigin>,
    /// `[server.connections]`: the bounds on client connections.
    pub connections: ConnectionLimits,
    /// `public_url`: where browsers and clients reach sluice (the origin of
    /// its login pages and their redirect URI); default `http://<listen>`.
    pub public_url: Option<String>,
}

impl ServerConfig {
    /// `public_url`, or `http://<listen>` without it.
    pub fn public_url(&self) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{}", self.listen),
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8787)),
            separator: DEFAULT_SEPARATOR.to_owned(),
            request_timeout: Duration::from_secs(60),
            session_idle_timeout: Duration::from_secs(30 * 60),
            max_sessions: 1_000,
            session_max_age: Duration::from_secs(86_400),
            startup_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(5),
            allowed_origins: default_origins(),
            public_url: None,
            connections: ConnectionLimits::default(),
        }
    }
}

pub(super) fn validate_server(
    raw: &RawServer,
    diags: &mut Diagnostics<'_>,
) -> Option<ServerConfig> {
    let d = ServerConfig::default();
    let listen = match &raw.listen {
        None => Some(d.listen),
        Some(s) => diags.socket_addr(s, "server.listen"),
    };
    let separator = validate_separator(&raw.separator, &d, diags);
    let secs = Duration::from_secs;
    let request_timeout = diags.duration(
        &raw.request_timeout,
        "server.request_timeout",
        d.request_timeout,
        (secs(1), secs(3600)),
    );
    let session_idle_timeout = diags.duration(
        &raw.session_idle_timeout,
        "server.session_idle_timeout",
        d.session_idle_timeout,
        (secs(1), secs(86_400)),
    );
    let session_max_age = diags.duration(
        &raw.session_max_age,
        "server.session_max_age",
        d.session_max_age,
        (secs(60), secs(30 * 86_400)),
    );
    let startup_timeout = diags.duration(
        &raw.startup_timeout,
        "server.startup_timeout",
        d.startup_timeout,
        (secs(1), secs(600)),
    );
    let shutdown_grace = diags.duration(
        &raw.shutdown_grace,
        "server.shutdown_grace",
        d.shutdown_grace,
        (Duration::ZERO, secs(60)),
    );
    let max_sessions = diags.integer(
        &raw.max_sessions,
        "server.max_sessions",
        d.max_sessions,
        (1, 100_000),
    );
    let allowed_origins = validate_origins(&raw.allowed_origins, diags);
    let connections = validate_connections(&raw.connections, diags);
    let public_url = match &raw.public_url {
        None => Some(None),
        Some(url) => validate_public_url(url, diags).map(Some),
    };
    Some(ServerConfig {
        listen: listen?,
        separator: separator?,
        request_timeout: request_timeout?,
        session_idle_timeout: session_idle_timeout?,
        max_sessions: max_sessions?,
        session_max_age: session_max_age?,
        startup_timeout: startup_timeout?,
        shutdown_grace: shutdown_grace?,
        allowed_origins: allowed_origins?,
        connections: connections?,
        public_url: public_url?,
    })
}

/// `public_url`: an origin, `https` unless it is loopback (the redirect URI
/// of logins through sluice's pages is under it; MCP authorization, S-9).
fn validate_public_url(url: &Spanned<String>, diags: &mut Diagnostics<'_>) -> Option<String> {
    let value = url.get_ref().trim_end_matches('/');
    let (scheme, rest) = value.split_once("://").unwrap_or(("", value));
    let host = rest.rsplit_once(':').map_or(rest, |(h, _)| h);
    let loopback = matches!(host, "localhost" | "127.0.0.1" | "[::1]");
    let problem = if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        Some("must be an origin: scheme, host and optional port, no path")
    } else if scheme == "https" || (scheme == "http" && loopback) {
        None
    } else {
        Some("must be https:// (http:// only for localhost, 127.0.0.1 or [::1])")
    };
    match problem {
        None => Some(value.to_owned()),
        Some(why) => {
            diags.push(
                Some(url.span()),
                "server.public_url",
                format!("{:?}: {why}", url.get_ref()),
            );
            None
        }
    }
}

/// `separator`: exposed names are `<upstream><separator><name>`, so it must
/// keep them valid tool names.
fn validate_separator(
    raw: &Option<Spanned<String>>,
    d: &ServerConfig,
    diags: &mut Diagnostics<'_>,
) -> Option<String> {
    match raw {
        None => Some(d.separator.clone()),
        Some(s) if naming::is_valid_separator(s.get_ref()) => Some(s.get_ref().clone()),
        Some(s) => {
            diags.push(
                Some(s.span()),
                "server.separator",
                format!(
                    "{:?}: must be 1 to 8 characters from [A-Za-z0-9_.-], so that exposed names stay valid tool names",
                    s.get_ref()
                ),
            );
            None
        }
    }
}

/// Reports [`exposure_problem`] at `[server] listen`.
pub(super) fn check_exposure(
    server: &ServerConfig,
    auth: &AuthConfig,
    raw: &RawServer,
    diags: &mut Diagnostics<'_>,
) {
    if let Some(problem) = exposure_problem(server.listen, auth) {
        diags.push(
            raw.listen.as_ref().map(Spanned::span),
            "server.listen",
            problem,
        );
    }
}

/// A non-loopback listener serves whoever reaches it, so it needs auth
/// (S-5, S-16, S-22): what is wrong with listening on `listen`, if
/// anything. Also for a listen address given on the command line.
pub fn exposure_problem(listen: SocketAddr, auth: &AuthConfig) -> Option<String> {
    (!listen.ip().is_loopback() && auth.mode == AuthMode::None).then(|| {
        format!(
            "{listen} is not a loopback address, and [auth] mode is \"none\": anyone who can reach it could use every upstream. Set [auth] mode = \"bearer\" or \"oauth\", or listen on 127.0.0.1"
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::Duration;

    use crate::config::AuthMode;
    use crate::config::testing::{errors, parse, secrets};

    #[test]
    fn session_max_age_defaults_to_a_day_within_a_minute_and_thirty_days() {
        assert_eq!(
            parse("").expect("defaults").server.session_max_age,
            Duration::from_secs(86_400)
        );
        let c = parse("[server]\nsession_max_age = \"2h\"\n").expect("2h");
        assert_eq!(c.server.session_max_age, Duration::from_secs(7200));
        let c = parse("[server]\nsession_max_age = \"30d\"\n").expect("30d");
        assert_eq!(c.server.session_max_age, Duration::from_secs(2_592_000));
        let e = errors("[server]\nsession_max_age = \"31d\"\n");
        assert!(
            e[0].contains("server.session_max_age: \"31d\" is out of range (allowed: 60s to 30d"),
            "{e:?}"
        );
        let e = errors("[server]\nsession_max_age = \"30s\"\n");
        assert!(
            e[0].contains("server.session_max_age: \"30s\" is out of range (allowed: 60s to 30d"),
            "{e:?}"
        );
    }

    #[test]
    fn a_public_bind_needs_auth() {
        let e = secrets::errors("[server]\nlisten = \"0.0.0.0:8787\"\n");
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("sluice.toml:2:10: server.listen: 0.0.0.0:8787 is not a loopback address, and [auth] mode is \"none\""), "{e:?}");
        let ok = secrets::parse(
            "[server]\nlisten = \"0.0.0.0:8787\"\n[auth]\nmode = \"bearer\"\n[[auth.token]]\nprincipal = \"alice\"\nenv = \"ALICE_TOKEN\"\n",
        )
        .unwrap();
        let AuthMode::Bearer(tokens) = &ok.auth.mode else {
            panic!("bearer");
        };
        assert_eq!(tokens[0].secret(), Some("alice-0123456789abcdef"));
        // The token is a secret: redacted by value, never printed.
        assert!(
            ok.known_secrets()
                .contains(&"alice-0123456789abcdef".to_owned())
        );
        assert!(!format!("{:?}", ok.auth).contains("0123456789"));
    }
}
