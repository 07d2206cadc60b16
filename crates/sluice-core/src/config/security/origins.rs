//! `[server] allowed_origins`: the browser origins that may call sluice.
//! A browser page on any other origin could otherwise drive a local sluice
//! (DNS rebinding), so a present `Origin` outside the list is refused.

use toml::Spanned;

use crate::config::diagnostics::Diagnostics;

/// One `[server] allowed_origins` entry: `scheme://host[:port|:*]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedOrigin {
    /// `http` or `https`.
    pub scheme: String,
    /// Lowercase host (IPv6 without brackets).
    pub host: String,
    /// The port; `None` means any port.
    pub port: Option<u16>,
}

impl AllowedOrigin {
    /// Parses `scheme://host[:port|:*]` (no path).
    pub fn parse(s: &str) -> Option<AllowedOrigin> {
        let (scheme, rest) = s.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return None;
        }
        let (host, port) = split_host_port(rest)?;
        let port = match port {
            None => Some(if scheme == "https" { 443 } else { 80 }),
            Some("*") => None,
            Some(p) => Some(p.parse().ok()?),
        };
        Some(AllowedOrigin {
            scheme,
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// Whether an `Origin` header value is this origin.
    pub fn admits(&self, origin: &str) -> bool {
        let Some((scheme, rest)) = origin.split_once("://") else {
            return false;
        };
        let Some((host, port)) = split_host_port(rest) else {
            return false;
        };
        let port = match port {
            None if scheme.eq_ignore_ascii_case("https") => 443,
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(p) => p,
                Err(_) => return false,
            },
        };
        scheme.eq_ignore_ascii_case(&self.scheme)
            && host.eq_ignore_ascii_case(&self.host)
            && self.port.is_none_or(|p| p == port)
    }
}

/// `[server] allowed_origins`.
pub(in crate::config) fn validate_origins(
    raw: &Option<Vec<Spanned<String>>>,
    diags: &mut Diagnostics<'_>,
) -> Option<Vec<AllowedOrigin>> {
    let Some(raw) = raw else {
        return Some(default_origins());
    };
    let mut out = Vec::new();
    let mut ok = true;
    for s in raw {
        match AllowedOrigin::parse(s.get_ref()) {
            Some(o) => out.push(o),
            None => {
                diags.push(
                    Some(s.span()),
                    "server.allowed_origins",
                    format!(
                        "{:?} is not an origin: write scheme://host or scheme://host:port, port may be * (e.g. \"https://app.example.com\", \"http://localhost:*\")",
                        s.get_ref()
                    ),
                );
                ok = false;
            }
        }
    }
    ok.then_some(out)
}

/// Localhost on any port, over http and https.
pub(in crate::config) fn default_origins() -> Vec<AllowedOrigin> {
    ["http", "https"]
        .iter()
        .flat_map(|scheme| {
            ["localhost", "127.0.0.1", "::1"].map(|host| AllowedOrigin {
                scheme: (*scheme).to_owned(),
                host: host.to_owned(),
                port: None,
            })
        })
        .collect()
}

/// `host[:port]` or `[v6][:port]`, nothing after.
fn split_host_port(s: &str) -> Option<(&str, Option<&str>)> {
    if s.is_empty() || s.contains(['/', '?', '#', '@']) {
        return None;
    }
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            p => Some((host, Some(p.strip_prefix(':')?))),
        };
    }
    match s.split_once(':') {
        Some((host, port)) if !host.is_empty() => Some((host, Some(port))),
        Some(_) => None,
        None => Some((s, None)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::testing::secrets::{errors, parse};

    #[test]
    fn origins_are_parsed() {
        let o = AllowedOrigin::parse("HTTPS://App.Example.com").unwrap();
        assert!(o.admits("https://app.example.com"));
        assert!(o.admits("https://app.example.com:443"));
        assert!(!o.admits("https://app.example.com.evil.example"));
        assert!(!o.admits("http://app.example.com"));
        for bad in [
            "app.example.com",
            "ftp://x",
            "https://x/path",
            "https://",
            "https://x:port",
        ] {
            assert_eq!(AllowedOrigin::parse(bad), None, "{bad}");
        }
        let e = errors("[server]\nallowed_origins = [\"*\"]\n");
        assert!(
            e[0].contains("server.allowed_origins: \"*\" is not an origin"),
            "{e:?}"
        );
        let c = parse("[server]\nallowed_origins = [\"http://[::1]:*\"]\n").unwrap();
        assert!(c.server.allowed_origins[0].admits("http://[::1]:1234"));
    }
}
