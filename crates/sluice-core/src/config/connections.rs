//! `[server.connections]`: the bounds on client connections to the HTTP
//! listener ([`ConnectionLimits`]). Read once at start: a reload that
//! changes them says it needs a restart.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::diagnostics::Diagnostics;
use crate::connection::ConnectionLimits;

/// `[server.connections]` as written.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConnections {
    header_read_timeout: Option<Spanned<String>>,
    idle_timeout: Option<Spanned<String>>,
    body_read_timeout: Option<Spanned<String>>,
    max: Option<Spanned<i64>>,
    max_per_client: Option<Spanned<i64>>,
    fd_reserve: Option<Spanned<i64>>,
}

pub(super) fn validate_connections(
    raw: &RawConnections,
    diags: &mut Diagnostics<'_>,
) -> Option<ConnectionLimits> {
    let d = ConnectionLimits::default();
    let secs = Duration::from_secs;
    let header_read_timeout = diags.duration(
        &raw.header_read_timeout,
        "server.connections.header_read_timeout",
        d.header_read_timeout,
        (secs(1), secs(300)),
    );
    let idle_timeout = diags.duration(
        &raw.idle_timeout,
        "server.connections.idle_timeout",
        d.idle_timeout,
        (secs(1), secs(3600)),
    );
    let body_read_timeout = diags.duration(
        &raw.body_read_timeout,
        "server.connections.body_read_timeout",
        d.body_read_timeout,
        (secs(1), secs(3600)),
    );
    let max_connections = diags.integer(
        &raw.max,
        "server.connections.max",
        d.max_connections,
        (1, 1_000_000),
    );
    let max_per_client = diags.integer(
        &raw.max_per_client,
        "server.connections.max_per_client",
        d.max_per_client,
        (1, 1_000_000),
    );
    let fd_reserve = diags.integer(
        &raw.fd_reserve,
        "server.connections.fd_reserve",
        d.fd_reserve,
        (16, 1_000_000),
    );
    Some(ConnectionLimits {
        header_read_timeout: header_read_timeout?,
        idle_timeout: idle_timeout?,
        body_read_timeout: body_read_timeout?,
        max_connections: max_connections?,
        max_per_client: max_per_client?,
        fd_reserve: fd_reserve?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::Duration;

    use crate::config::testing::{errors, parse};
    use crate::connection::ConnectionLimits;

    #[test]
    fn defaults_and_every_key() {
        let c = parse("").unwrap();
        assert_eq!(c.server.connections, ConnectionLimits::default());
        let c = parse(
            "[server.connections]\nheader_read_timeout = \"2s\"\nidle_timeout = \"5m\"\n\
             body_read_timeout = \"3s\"\nmax = 10\nmax_per_client = 4\nfd_reserve = 64\n",
        )
        .unwrap();
        assert_eq!(
            c.server.connections,
            ConnectionLimits {
                header_read_timeout: Duration::from_secs(2),
                idle_timeout: Duration::from_secs(300),
                body_read_timeout: Duration::from_secs(3),
                max_connections: 10,
                max_per_client: 4,
                fd_reserve: 64,
            }
        );
    }

    #[test]
    fn out_of_range_and_unknown_keys_are_named() {
        let e = errors("[server.connections]\nmax = 0\nheader_read_timeout = \"0s\"\n");
        assert!(
            e.iter()
                .any(|m| m
                    .contains("server.connections.max: 0 is out of range (allowed: 1 to 1000000)")),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|m| m
                    .contains("server.connections.header_read_timeout: \"0s\" is out of range")),
            "{e:?}"
        );
        let e = errors("[server.connections]\nmax_per_ip = 3\n");
        assert!(e.iter().any(|m| m.contains("max_per_ip")), "{e:?}");
    }
}
