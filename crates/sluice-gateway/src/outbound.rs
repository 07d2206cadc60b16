//! The outbound guard's IO half (S-10): resolve a URL's host, judge every
//! address with `sluice_core::outbound::check`, and build an HTTP client that
//! connects to exactly those addresses and follows no redirect.
//!
//! The rules live in `sluice-core` (see its `outbound` module); this module
//! only closes the two gaps a check alone leaves open:
//!
//! - **DNS rebinding.** A name checked now could resolve elsewhere when the
//!   client connects. [`pinned_client`] hands the client the checked
//!   addresses for that name, so it never asks DNS again.
//! - **Redirects.** A public server could answer `302 Location:
//!   http://169.254.169.254/`. The pinned client follows no redirect: a 3xx
//!   comes back to the caller as the response.
//!
//! Use a pinned client only for the checked URL's host: any other host it is
//! pointed at is resolved normally, unchecked.

use std::net::{IpAddr, SocketAddr};

use sluice_core::outbound::{self as rules, OutboundError, TargetHost, Url};

/// A URL that passed the outbound guard, with the addresses it was judged
/// on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The parsed URL (normalised by the parser: use it, not the input
    /// text).
    pub url: Url,
    /// The host name to pin to `addrs`; `None` for an IP literal, which is
    /// connected to as it is.
    pub host: Option<String>,
    /// Every address the host resolved to, all checked, with the URL's port.
    pub addrs: Vec<SocketAddr>,
}

/// Parses `url`, resolves its host (an IP literal is not looked up) and
/// checks every resolved address against the outbound rules.
///
/// A metadata name is refused before any lookup. A lookup failure is
/// [`OutboundError::Resolve`]; a blocked address anywhere in the answer
/// refuses the URL. Without `allow_private`, only public addresses pass.
pub async fn resolve_checked(url: &str, allow_private: bool) -> Result<Checked, OutboundError> {
    let target = rules::parse_target(url)?;
    rules::check_name(&target, allow_private)?;
    let (host, ips) = match &target.host {
        TargetHost::Ip(_) => (None, Vec::new()),
        TargetHost::Name(name) => {
            let found = tokio::net::lookup_host((name.as_str(), target.port))
                .await
                .map_err(|e| OutboundError::Resolve {
                    host: target.host.to_string(),
                    reason: e.to_string(),
                })?;
            let mut ips: Vec<IpAddr> = Vec::new();
            for addr in found {
                if !ips.contains(&addr.ip()) {
                    ips.push(addr.ip());
                }
            }
            (Some(name.clone()), ips)
        }
    };
    rules::check(&target, &ips, allow_private)?;
    let addrs = match target.host {
        TargetHost::Ip(ip) => vec![SocketAddr::new(ip, target.port)],
        TargetHost::Name(_) => ips
            .into_iter()
            .map(|ip| SocketAddr::new(ip, target.port))
            .collect(),
    };
    Ok(Checked {
        url: target.url,
        host,
        addrs,
    })
}

/// Builds a client for `checked.url`: redirects are never followed, and a
/// host name is resolved to exactly `checked.addrs` (no second DNS lookup,
/// so the answer cannot change between the check and the connection).
pub fn pinned_client(
    builder: reqwest::ClientBuilder,
    checked: &Checked,
) -> reqwest::Result<reqwest::Client> {
    // No proxy either: a proxy would resolve the name itself, unchecked.
    let builder = builder
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy();
    let builder = match &checked.host {
        Some(name) => builder.resolve_to_addrs(name, &checked.addrs),
        None => builder,
    };
    builder.build()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::http::{StatusCode, header};
    use axum::routing::get;
    use tokio::net::TcpListener;

    /// Serves `app` on a loopback port; returns the port.
    async fn serve(app: Router) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        port
    }

    fn client(checked: &Checked) -> reqwest::Client {
        // No proxy from the environment in the way of a loopback test.
        pinned_client(reqwest::Client::builder().no_proxy(), checked).unwrap()
    }

    #[tokio::test]
    async fn localhost_is_refused_unless_allow_private() {
        let err = resolve_checked("http://localhost:8080/mcp", false)
            .await
            .unwrap_err();
        match &err {
            OutboundError::BlockedAddress { host, addr, range } => {
                assert_eq!(host, "localhost");
                assert!(addr.is_loopback(), "{addr}");
                assert_eq!(range.name(), "loopback");
            }
            other => panic!("expected a blocked address, got {other:?}"),
        }
        assert!(err.to_string().contains("allow_private = true"), "{err}");

        let checked = resolve_checked("http://localhost:8080/mcp", true)
            .await
            .unwrap();
        assert_eq!(checked.host.as_deref(), Some("localhost"));
        assert!(!checked.addrs.is_empty());
        for addr in &checked.addrs {
            assert!(addr.ip().is_loopback(), "{addr}");
            assert_eq!(addr.port(), 8080);
        }
        assert_eq!(checked.url.as_str(), "http://localhost:8080/mcp");
    }

    #[tokio::test]
    async fn literals_are_checked_without_a_lookup() {
        for url in [
            "http://2130706433:9/",
            "http://[::ffff:127.0.0.1]:9/",
            "http://169.254.169.254/",
        ] {
            let err = resolve_checked(url, false).await.unwrap_err();
            assert!(
                matches!(err, OutboundError::BlockedAddress { .. }),
                "{url}: {err:?}"
            );
        }
        let checked = resolve_checked("http://0x7f000001:9/x", true)
            .await
            .unwrap();
        assert_eq!(checked.host, None);
        assert_eq!(checked.addrs, vec!["127.0.0.1:9".parse().unwrap()]);
        assert_eq!(checked.url.as_str(), "http://127.0.0.1:9/x");
        let checked = resolve_checked("https://1.1.1.1/", false).await.unwrap();
        assert_eq!(checked.addrs, vec!["1.1.1.1:443".parse().unwrap()]);
    }

    #[tokio::test]
    async fn metadata_names_are_refused_before_any_lookup() {
        let err = resolve_checked("http://metadata.google.internal/computeMetadata/v1/", false)
            .await
            .unwrap_err();
        assert_eq!(
            err,
            OutboundError::BlockedName {
                host: "metadata.google.internal".into()
            }
        );
    }

    #[tokio::test]
    async fn bad_urls_and_unresolvable_names_are_errors() {
        let err = resolve_checked("file:///etc/passwd", true)
            .await
            .unwrap_err();
        assert!(matches!(err, OutboundError::UnsupportedScheme { .. }));
        let err = resolve_checked("https://u:p@example.com/", true)
            .await
            .unwrap_err();
        assert!(matches!(err, OutboundError::Userinfo { .. }));
        // `.invalid` never resolves (RFC 2606).
        let err = resolve_checked("http://sluice-outbound-test.invalid/", false)
            .await
            .unwrap_err();
        match err {
            OutboundError::Resolve { host, .. } => assert_eq!(host, "sluice-outbound-test.invalid"),
            // Some resolvers answer an empty list instead of an error.
            OutboundError::NoAddress { host } => assert_eq!(host, "sluice-outbound-test.invalid"),
            other => panic!("expected a resolution failure, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn the_pinned_client_follows_no_redirect() {
        let target = serve(Router::new().route("/", get(|| async { "followed" }))).await;
        let location = format!("http://127.0.0.1:{target}/");
        let redirector = serve(Router::new().route(
            "/",
            get(move || async move { (StatusCode::FOUND, [(header::LOCATION, location)], "") }),
        ))
        .await;

        let checked = resolve_checked(&format!("http://127.0.0.1:{redirector}/"), true)
            .await
            .unwrap();
        let response = client(&checked)
            .get(checked.url.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::FOUND);
        assert_eq!(
            response.headers()[header::LOCATION],
            format!("http://127.0.0.1:{target}/").as_str()
        );
        assert_eq!(response.text().await.unwrap(), "");

        // The same through a pinned name.
        let checked = Checked {
            url: Url::parse(&format!("http://sluice-pinned.invalid:{redirector}/")).unwrap(),
            host: Some("sluice-pinned.invalid".into()),
            addrs: vec![SocketAddr::from(([127, 0, 0, 1], redirector))],
        };
        let response = client(&checked)
            .get(checked.url.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::FOUND);
    }

    #[tokio::test]
    async fn the_pinned_client_connects_only_to_the_checked_addresses() {
        let port = serve(Router::new().route("/", get(|| async { "pinned" }))).await;
        // A name no DNS server knows: only the pin can make it connect.
        let checked = Checked {
            url: Url::parse(&format!("http://sluice-pinned.invalid:{port}/")).unwrap(),
            host: Some("sluice-pinned.invalid".into()),
            addrs: vec![SocketAddr::from(([127, 0, 0, 1], port))],
        };
        let response = client(&checked)
            .get(checked.url.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.text().await.unwrap(), "pinned");
    }
}
