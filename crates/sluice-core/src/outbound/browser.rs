//! The guard on a URL that sluice does not fetch but hands to a user's
//! browser: the `url` of a URL-mode elicitation (MCP 2025-11-25, Client
//! Features, Elicitation § URL mode), which an upstream asks the client to
//! open for a consent, sign-in or payment page.
//!
//! sluice never dereferences it, so no address is resolved; the rules are
//! about where a click may land:
//!
//! - `https` only, except to the user's own machine (a loopback address or
//!   `localhost`), where `http` is how local servers serve their pages;
//! - a host, and no `user:password@` (which is also how
//!   `https://bank.example@evil.example/` shows a false host first);
//! - no private, link-local or other non-public address literal and no
//!   cloud metadata name: a page an upstream picks must not make the
//!   user's browser reach into the user's own network.
//!
//! The errors name the host, never the URL's path or query string (which
//! may carry a one-time code).

use std::net::IpAddr;

use super::{OutboundError, TargetHost, blocked_address, blocked_name, parse_target};

/// Why a URL may not be handed to a user's browser.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrowserUrlError {
    /// It does not parse as an http(s) URL with a host.
    #[error("the URL is not an http(s) URL with a host")]
    Malformed,
    /// It carries `user:password@`.
    #[error("the URL for {host} has credentials in it (user:password@)")]
    Userinfo {
        /// The URL's host.
        host: String,
    },
    /// Plain `http` to a host other than the user's own machine.
    #[error("the URL for {host} is not https (only a loopback host may use http)")]
    NotHttps {
        /// The URL's host.
        host: String,
    },
    /// An address literal or a name that points into a private network.
    #[error("the URL for {host} points into a private network ({what})")]
    Private {
        /// The URL's host.
        host: String,
        /// The range or name it is in.
        what: String,
    },
}

/// Judges a URL a user's browser is asked to open.
pub fn check(url: &str) -> Result<(), BrowserUrlError> {
    let target = parse_target(url).map_err(|e| match e {
        OutboundError::Userinfo { host } => BrowserUrlError::Userinfo { host },
        _ => BrowserUrlError::Malformed,
    })?;
    let host = target.host.to_string();
    let loopback = match &target.host {
        TargetHost::Ip(ip) => is_loopback(*ip),
        TargetHost::Name(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    };
    if loopback {
        return Ok(());
    }
    if target.url.scheme() != "https" {
        return Err(BrowserUrlError::NotHttps { host });
    }
    match &target.host {
        TargetHost::Ip(ip) => match blocked_address(*ip) {
            Some(range) => Err(BrowserUrlError::Private {
                host,
                what: range.to_string(),
            }),
            None => Ok(()),
        },
        TargetHost::Name(name) if blocked_name(name) => Err(BrowserUrlError::Private {
            host,
            what: "a cloud metadata service name".into(),
        }),
        TargetHost::Name(_) => Ok(()),
    }
}

/// Loopback, IPv4-mapped loopback included.
fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_to_a_public_host_and_anything_to_loopback_pass() {
        for url in [
            "https://github.com/login/oauth/authorize?client_id=x&state=y",
            "https://pay.example.com:8443/checkout",
            "https://93.184.216.34/consent",
            "http://127.0.0.1:3000/callback",
            "http://[::1]:8080/",
            "http://[::ffff:127.0.0.1]/",
            "http://localhost:5173/auth",
            "http://app.localhost/",
            "https://localhost./",
        ] {
            assert_eq!(check(url), Ok(()), "{url}");
        }
    }

    #[test]
    fn what_a_click_must_not_reach_is_refused_naming_only_the_host() {
        let cases = [
            ("http://example.com/login?code=s3cret", "not https"),
            ("javascript:alert(1)", "not an http(s) URL"),
            ("file:///etc/passwd", "not an http(s) URL"),
            ("data:text/html,<h1>hi</h1>", "not an http(s) URL"),
            ("https://", "not an http(s) URL"),
            ("not a url", "not an http(s) URL"),
            ("https://bank.example@evil.example/", "credentials"),
            ("https://user:pw@example.com/", "credentials"),
            (
                "https://192.168.1.1/admin",
                "private network (192.168.0.0/16",
            ),
            ("https://169.254.169.254/latest/meta-data", "link-local"),
            ("https://[::ffff:10.0.0.1]/", "embedded in an IPv4-mapped"),
            ("https://0x0a000001/", "10.0.0.0/8"),
            ("https://metadata.google.internal/", "cloud metadata"),
        ];
        for (url, says) in cases {
            let err = check(url).expect_err(url).to_string();
            assert!(err.contains(says), "{url}: {err}");
            assert!(
                !err.contains("s3cret") && !err.contains("meta-data"),
                "{err}"
            );
        }
    }
}
