//! The console's transport rules: those of `/mcp`
//! ([`admission::check_transport`]), except that the console's own origin
//! is admitted. A browser sends `Origin` with every form it posts, and the
//! console's forms post to the page's own origin, which `[server]
//! allowed_origins` (the web apps allowed to call `/mcp`) need not list.
//! Only a page served from this very host and port has that origin, and
//! the Host rules (one Host, a local name on loopback) still apply.

use crate::config::AllowedOrigin;
use crate::policy::Denied;
use crate::policy::admission::{self, Headers, field};

/// [`admission::check_transport`], with an `Origin` that is the
/// request's own (`http://` or `https://` and its `Host`) admitted.
pub fn check_transport(
    headers: &impl Headers,
    target_authority: Option<&str>,
    loopback: bool,
    allowed: &[AllowedOrigin],
) -> Result<(), Denied> {
    if is_same_origin(headers) {
        return admission::check_transport(
            &WithoutOrigin(headers),
            target_authority,
            loopback,
            allowed,
        );
    }
    admission::check_transport(headers, target_authority, loopback, allowed)
}

/// One `Origin`, naming the scheme and exactly the `Host` of the request.
fn is_same_origin(headers: &impl Headers) -> bool {
    let (origins, hosts) = (headers.get_all(field::ORIGIN), headers.get_all(field::HOST));
    let ([Some(origin)], [Some(host)]) = (origins.as_slice(), hosts.as_slice()) else {
        return false;
    };
    ["http://", "https://"].iter().any(|scheme| {
        origin
            .strip_prefix(scheme)
            .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
    })
}

/// The request's headers but `Origin` (which was found to be its own).
struct WithoutOrigin<'a, H>(&'a H);

impl<H: Headers> Headers for WithoutOrigin<'_, H> {
    fn get_all(&self, name: &str) -> Vec<Option<&str>> {
        if name.eq_ignore_ascii_case(field::ORIGIN) {
            Vec::new()
        } else {
            self.0.get_all(name)
        }
    }

    fn count(&self) -> usize {
        self.0.count()
    }

    fn bytes(&self) -> usize {
        self.0.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Header fields as (name, value) pairs.
    struct Fields(Vec<(&'static str, &'static str)>);

    impl Headers for Fields {
        fn get_all(&self, name: &str) -> Vec<Option<&str>> {
            self.0
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| Some(*v))
                .collect()
        }
        fn count(&self) -> usize {
            self.0.len()
        }
        fn bytes(&self) -> usize {
            self.0.iter().map(|(n, v)| n.len() + v.len()).sum()
        }
    }

    #[test]
    fn the_console_admits_its_own_origin_and_no_other() {
        let own = Fields(vec![
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert_eq!(check_transport(&own, None, true, &[]), Ok(()));
        // `/mcp` refuses the same request: its allowed origins are empty.
        assert_eq!(
            admission::check_transport(&own, None, true, &[]),
            Err(Denied::Forbidden("this Origin"))
        );
        for origin in ["http://127.0.0.1:9090", "http://evil.example", "null"] {
            let other = Fields(vec![("host", "127.0.0.1:8080"), ("origin", origin)]);
            assert_eq!(
                check_transport(&other, None, true, &[]),
                Err(Denied::Forbidden("this Origin")),
                "{origin}"
            );
        }
        // DNS rebinding: the page's origin is the attacker's name, which
        // is also its Host: refused as a Host that is not local.
        let rebound = Fields(vec![
            ("host", "evil.example:8080"),
            ("origin", "http://evil.example:8080"),
        ]);
        assert_eq!(
            check_transport(&rebound, None, true, &[]),
            Err(Denied::Forbidden("this Host"))
        );
        // Two Origins are never the request's own.
        let two = Fields(vec![
            ("host", "localhost:1"),
            ("origin", "http://localhost:1"),
            ("origin", "http://localhost:1"),
        ]);
        assert!(check_transport(&two, None, true, &[]).is_err());
    }
}
