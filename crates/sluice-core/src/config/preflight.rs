//! What `sluice config check` refuses beyond what a load refuses: a
//! configuration that would start but not work. A config with no upstream
//! serves nothing; an HTTP upstream whose URL is on loopback, a private
//! network or a metadata service, without `allow_private`, would be refused
//! by the outbound guard (S-10) on every connection.
//!
//! A load accepts both (tests and fixtures start sluice with no upstream;
//! a name may resolve elsewhere where sluice runs), so they are checked here,
//! from the validated [`Config`], with the name lookup passed in.

use std::net::IpAddr;

use super::{Config, Diagnostic, UpstreamTransport};
use crate::outbound::{self, OutboundError};

/// Every problem of `config` (read from the file `source_name`) that would
/// leave it serving nothing, or an upstream unreachable. `resolve` looks up
/// a host name's addresses (empty when it cannot: then only the name rules
/// apply).
pub fn preflight(
    config: &Config,
    source_name: &str,
    resolve: &dyn Fn(&str, u16) -> Vec<IpAddr>,
) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    let problem = |key: String, message: String| Diagnostic {
        location: source_name.to_owned(),
        key,
        message,
    };
    if config.upstreams.is_empty() {
        problems.push(problem(
            "upstream".to_owned(),
            "no upstream is configured, so sluice would serve nothing: add an [[upstream]] with `command` (a stdio server) or `url` (a Streamable HTTP server), as in examples/sluice.toml".to_owned(),
        ));
    }
    for (i, up) in config.upstreams.iter().enumerate() {
        let UpstreamTransport::Http {
            url,
            allow_private: false,
            ..
        } = &up.transport
        else {
            continue;
        };
        if let Some(refusal) = private_refusal(url, resolve) {
            problems.push(problem(
                format!("upstream[{i}].url"),
                format!("({:?}) {refusal}", up.name),
            ));
        }
    }
    problems
}

/// The outbound guard's refusal of `url` for its address or name, if any
/// (a name that does not resolve here is not this check's business).
fn private_refusal(url: &str, resolve: &dyn Fn(&str, u16) -> Vec<IpAddr>) -> Option<String> {
    let target = outbound::parse_target(url).ok()?;
    let resolved = match &target.host {
        outbound::TargetHost::Name(name) => resolve(name, target.port),
        outbound::TargetHost::Ip(_) => Vec::new(),
    };
    match outbound::check(&target, &resolved, false) {
        Err(e @ (OutboundError::BlockedAddress { .. } | OutboundError::BlockedName { .. })) => {
            Some(e.to_string())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::config::testing::parse;

    fn problems(text: &str) -> Vec<String> {
        let config = parse(text).expect("valid");
        let resolve = |host: &str, _port: u16| match host {
            "localhost" => vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
            "mcp.example.com" => vec![IpAddr::V4(Ipv4Addr::new(93, 184, 215, 14))],
            _ => Vec::new(),
        };
        preflight(&config, "sluice.toml", &resolve)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn an_empty_config_serves_nothing() {
        assert_eq!(
            problems(""),
            [
                "sluice.toml: upstream: no upstream is configured, so sluice would serve nothing: add an [[upstream]] with `command` (a stdio server) or `url` (a Streamable HTTP server), as in examples/sluice.toml"
            ]
        );
    }

    #[test]
    fn a_private_upstream_url_needs_allow_private() {
        let text = "\
[[upstream]]
name = \"local\"
url = \"http://localhost:3000/mcp\"

[[upstream]]
name = \"lan\"
url = \"http://10.0.0.7/mcp\"

[[upstream]]
name = \"meant\"
url = \"http://127.0.0.1:3001/mcp\"
allow_private = true

[[upstream]]
name = \"public\"
url = \"https://mcp.example.com/mcp\"

[[upstream]]
name = \"unknown\"
url = \"https://nowhere.invalid/mcp\"
";
        assert_eq!(
            problems(text),
            [
                "sluice.toml: upstream[0].url: (\"local\") outbound request to localhost refused: address 127.0.0.1 is in 127.0.0.0/8 (loopback); set allow_private = true on this upstream (or issuer) if it is meant to be private",
                "sluice.toml: upstream[1].url: (\"lan\") outbound request to 10.0.0.7 refused: address 10.0.0.7 is in 10.0.0.0/8 (private (RFC 1918)); set allow_private = true on this upstream (or issuer) if it is meant to be private",
            ]
        );
    }
}
