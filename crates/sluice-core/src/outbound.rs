//! The outbound guard (S-10): which URLs sluice may fetch on its own
//! initiative (upstream URLs, an issuer's metadata, a JWKS), so that a
//! configured or discovered URL cannot point sluice at its own machine, the
//! private network or a cloud metadata service (SSRF).
//!
//! # Why it is built this way
//!
//! - **The parser's output, never the input text.** A URL is parsed once,
//!   by the `url` crate (WHATWG rules, the same rules the HTTP client
//!   uses), and the guard looks only at the host it produced. So
//!   `2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1` and
//!   `[::ffff:127.0.0.1]` are all judged as the loopback addresses they are,
//!   and no textual pattern can be dodged by another spelling.
//! - **One union blocklist.** Loopback, RFC 1918, link-local (where the cloud
//!   metadata services live), carrier-grade NAT, multicast, reserved,
//!   unspecified, unique-local: one table ([`blocked_address`]), each range
//!   with a human name that the error repeats. IPv6 forms that carry an IPv4
//!   address (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are judged by the
//!   IPv4 address inside, so `::ffff:169.254.169.254` is as blocked as
//!   `169.254.169.254`. The well-known metadata host names are refused by
//!   name as well ([`blocked_name`]).
//! - **Every record.** A name is checked against *all* the addresses it
//!   resolved to ([`check`]): one blocked address refuses the whole target,
//!   since the client could connect to any of them.
//! - **Redirects off, connection pinned.** This module is pure: it judges a
//!   target and a list of addresses. The gateway (`sluice-gateway`'s
//!   `outbound` module) resolves the name, runs [`check`] on the result,
//!   then builds an HTTP client that follows no redirect and connects to
//!   exactly the checked addresses, so neither a `302` nor a DNS answer that
//!   changes between the check and the connection (rebinding) can route
//!   around the guard.
//!
//! An upstream or issuer configured with `allow_private = true` skips the
//! address and name rules (it is meant to be local); the scheme rule
//! (http/https only) and the refusal of credentials in the URL still apply.
//!
//! A URL sluice only hands to a user's browser (a URL-mode elicitation)
//! has rules of its own, in [`browser`].
//!
//! The errors name the host, the address and the range, and say how to
//! allow a private target on purpose. They never repeat the URL's userinfo,
//! path or query string.

pub mod browser;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use url::Host;
pub use url::Url;

/// A URL sluice may try to reach, as the `url` crate parsed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The parsed URL (normalised: `http://2130706433/` is `http://127.0.0.1/`).
    pub url: Url,
    /// The host, as the parser produced it.
    pub host: TargetHost,
    /// The port: explicit, or the scheme's default.
    pub port: u16,
}

/// The host of a [`Target`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetHost {
    /// An IP address literal (whatever its spelling in the input).
    Ip(IpAddr),
    /// A domain name: lowercased, IDNA-mapped and percent-decoded by the
    /// parser. It may end with a dot.
    Name(String),
}

impl fmt::Display for TargetHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetHost::Ip(IpAddr::V4(v4)) => write!(f, "{v4}"),
            TargetHost::Ip(IpAddr::V6(v6)) => write!(f, "[{v6}]"),
            TargetHost::Name(name) => f.write_str(name),
        }
    }
}

/// The range a blocked address fell in, with its human name; for an IPv6
/// address that embeds an IPv4 one, the IPv4 range and the embedding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockedRange {
    net: IpNet,
    name: &'static str,
    embedding: Option<(Ipv6Net, &'static str)>,
}

impl BlockedRange {
    /// The blocked range (for an embedded IPv4 address, the IPv4 range).
    pub fn net(&self) -> IpNet {
        self.net
    }

    /// The range's human name, e.g. `"loopback"`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// For an IPv6 address judged by the IPv4 address inside it: the IPv6
    /// prefix that carries it and that prefix's name (e.g.
    /// `::ffff:0.0.0.0/96`, `"IPv4-mapped"`).
    pub fn embedding(&self) -> Option<(Ipv6Net, &'static str)> {
        self.embedding
    }
}

impl fmt::Display for BlockedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.net, self.name)?;
        if let Some((prefix, name)) = self.embedding {
            write!(f, ", embedded in an {name} IPv6 address ({prefix})")?;
        }
        Ok(())
    }
}

/// Why an outbound URL was refused. The texts name the host (never the
/// userinfo, path or query string of the URL).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutboundError {
    /// The URL does not parse.
    #[error("invalid outbound URL: {0}")]
    InvalidUrl(url::ParseError),
    /// Not an http or https URL. `scheme` is `None` when the URL has no
    /// `scheme://` form (then what precedes the colon may be a user name, and
    /// is not repeated).
    #[error("outbound URL refused: {}only http:// and https:// URLs are allowed", scheme_prefix(.scheme))]
    UnsupportedScheme {
        /// The scheme, when it is certainly one.
        scheme: Option<String>,
    },
    /// An http(s) URL without a host.
    #[error("outbound URL refused: it has no host")]
    MissingHost,
    /// The URL carries `user:password@`.
    #[error(
        "outbound URL for {host} refused: it has credentials in it (user:password@); \
         put them in the configured headers instead"
    )]
    Userinfo {
        /// The URL's host.
        host: String,
    },
    /// The host is a cloud metadata service's name.
    #[error(
        "outbound request to {host} refused: {host} is a cloud metadata service name; \
         set allow_private = true on this upstream (or issuer) if it is meant to be private"
    )]
    BlockedName {
        /// The URL's host.
        host: String,
    },
    /// The host is, or resolved to, a blocked address.
    #[error(
        "outbound request to {host} refused: address {addr} is in {range}; \
         set allow_private = true on this upstream (or issuer) if it is meant to be private"
    )]
    BlockedAddress {
        /// The URL's host.
        host: String,
        /// The blocked address.
        addr: IpAddr,
        /// The range it is in.
        range: BlockedRange,
    },
    /// The name resolved to no address at all.
    #[error("outbound request to {host} refused: it resolved to no address")]
    NoAddress {
        /// The URL's host.
        host: String,
    },
    /// Resolving the name failed (reported by the gateway, which does the
    /// lookup).
    #[error("outbound request to {host} failed: cannot resolve the name: {reason}")]
    Resolve {
        /// The URL's host.
        host: String,
        /// The resolver's error.
        reason: String,
    },
}

fn scheme_prefix(scheme: &Option<String>) -> String {
    match scheme {
        Some(scheme) => format!("scheme {scheme:?} is not allowed, "),
        None => String::new(),
    }
}

/// Parses an outbound URL: http or https, with a host, without userinfo.
///
/// The host is the `url` crate's parse of it, so any spelling of an IP
/// address comes out as that address.
pub fn parse_target(url: &str) -> Result<Target, OutboundError> {
    let url = Url::parse(url).map_err(OutboundError::InvalidUrl)?;
    check_scheme(&url)?;
    let host = match url.host() {
        Some(Host::Ipv4(v4)) => TargetHost::Ip(IpAddr::V4(v4)),
        Some(Host::Ipv6(v6)) => TargetHost::Ip(IpAddr::V6(v6)),
        Some(Host::Domain(name)) if !name.is_empty() => TargetHost::Name(name.to_owned()),
        _ => return Err(OutboundError::MissingHost),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err(OutboundError::Userinfo {
            host: host.to_string(),
        });
    }
    let port = url
        .port_or_known_default()
        .ok_or(OutboundError::MissingHost)?;
    Ok(Target { url, host, port })
}

fn check_scheme(url: &Url) -> Result<(), OutboundError> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(OutboundError::UnsupportedScheme {
            // `alice:secret@host` parses with the scheme `alice`: only a
            // `scheme://` URL is known to start with a scheme.
            scheme: (!url.cannot_be_a_base()).then(|| other.to_owned()),
        }),
    }
}

/// One blocked range.
struct Rule {
    net: IpNet,
    name: &'static str,
}

const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8, name: &'static str) -> Rule {
    Rule {
        net: IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), prefix)),
        name,
    }
}

const fn v6(addr: Ipv6Addr, prefix: u8, name: &'static str) -> Rule {
    Rule {
        net: IpNet::V6(Ipv6Net::new_assert(addr, prefix)),
        name,
    }
}

const PRIVATE: &str = "private (RFC 1918)";

/// The union blocklist. The first match names the range, so a narrow range
/// comes before a wider one that contains it.
const BLOCKLIST: &[Rule] = &[
    v4(0, 0, 0, 0, 8, "unspecified (this network)"),
    v4(127, 0, 0, 0, 8, "loopback"),
    v4(10, 0, 0, 0, 8, PRIVATE),
    v4(172, 16, 0, 0, 12, PRIVATE),
    v4(192, 168, 0, 0, 16, PRIVATE),
    v4(169, 254, 0, 0, 16, "link-local (cloud metadata)"),
    v4(100, 64, 0, 0, 10, "carrier-grade NAT"),
    v4(192, 0, 0, 0, 24, "IETF protocol assignments"),
    v4(198, 18, 0, 0, 15, "benchmarking"),
    v4(224, 0, 0, 0, 4, "multicast"),
    v4(255, 255, 255, 255, 32, "broadcast"),
    v4(240, 0, 0, 0, 4, "reserved"),
    v6(Ipv6Addr::UNSPECIFIED, 128, "unspecified"),
    v6(Ipv6Addr::LOCALHOST, 128, "loopback"),
    v6(
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "unique-local",
    ),
    v6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link-local"),
    v6(
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        "site-local (deprecated)",
    ),
    // Local-use NAT64 (RFC 8215): a site's own translator, into its own
    // network, whatever IPv4 address it carries.
    v6(
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        "local-use NAT64",
    ),
    v6(Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "multicast"),
];

/// An IPv6 prefix whose addresses carry an IPv4 address, and where.
struct Embedding {
    prefix: Ipv6Net,
    name: &'static str,
    /// The IPv4 address is bits `shift..shift + 32` counted from the right.
    shift: u32,
}

const fn embedding(addr: Ipv6Addr, prefix: u8, name: &'static str, shift: u32) -> Embedding {
    Embedding {
        prefix: Ipv6Net::new_assert(addr, prefix),
        name,
        shift,
    }
}

/// IPv6 forms judged by the IPv4 address inside them.
const EMBEDDINGS: &[Embedding] = &[
    embedding(
        Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0),
        96,
        "IPv4-mapped",
        0,
    ),
    embedding(Ipv6Addr::UNSPECIFIED, 96, "IPv4-compatible", 0),
    embedding(
        Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0),
        96,
        "NAT64",
        0,
    ),
    // 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
    embedding(Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, "6to4", 80),
];

fn lookup(ip: IpAddr) -> Option<&'static Rule> {
    BLOCKLIST.iter().find(|rule| rule.net.contains(&ip))
}

/// The blocked range `ip` is in, if any: the union blocklist, with IPv6
/// forms that embed an IPv4 address (IPv4-mapped `::ffff:0:0/96`,
/// IPv4-compatible `::/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) judged
/// by the IPv4 address inside.
pub fn blocked_address(ip: IpAddr) -> Option<BlockedRange> {
    if let Some(rule) = lookup(ip) {
        return Some(BlockedRange {
            net: rule.net,
            name: rule.name,
            embedding: None,
        });
    }
    let IpAddr::V6(v6) = ip else {
        return None;
    };
    let bits = u128::from(v6);
    EMBEDDINGS
        .iter()
        .filter(|e| e.prefix.contains(&v6))
        .find_map(|e| {
            // Truncation keeps exactly the 32 bits of the embedded address.
            let inner = Ipv4Addr::from((bits >> e.shift) as u32);
            lookup(IpAddr::V4(inner)).map(|rule| BlockedRange {
                net: rule.net,
                name: rule.name,
                embedding: Some((e.prefix, e.name)),
            })
        })
}

/// The names of cloud metadata services, refused whatever they resolve to.
const METADATA_NAMES: &[&str] = &[
    "metadata.google.internal",
    "metadata.amazonaws.com",
    "metadata",
    "instance-data",
];

/// Whether `host` is a cloud metadata service's name (any case, a trailing
/// dot ignored).
pub fn blocked_name(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    METADATA_NAMES
        .iter()
        .any(|name| name.eq_ignore_ascii_case(host))
}

/// The checks that need no address: the scheme, and (without
/// `allow_private`) the metadata names. [`check`] runs them first; the
/// gateway also runs them before resolving a name, so a metadata name is
/// never even looked up.
pub fn check_name(target: &Target, allow_private: bool) -> Result<(), OutboundError> {
    check_scheme(&target.url)?;
    if !allow_private
        && let TargetHost::Name(name) = &target.host
        && blocked_name(name)
    {
        return Err(OutboundError::BlockedName {
            host: target.host.to_string(),
        });
    }
    Ok(())
}

/// Judges a target and the addresses its host resolved to.
///
/// With `allow_private`, every address passes (the scheme must still be
/// http or https). Otherwise a metadata name fails, and every address must
/// pass: one blocked address fails the whole target. An IP-literal host is
/// checked as its own address (together with any in `resolved`, which the
/// caller normally leaves empty for a literal). A target with no address at
/// all fails, `allow_private` or not: there is nothing to connect to, and an
/// empty list must never be mistaken for "nothing blocked".
pub fn check(
    target: &Target,
    resolved: &[IpAddr],
    allow_private: bool,
) -> Result<(), OutboundError> {
    check_name(target, allow_private)?;
    let literal = match target.host {
        TargetHost::Ip(ip) => Some(ip),
        TargetHost::Name(_) => None,
    };
    let mut addrs = literal
        .into_iter()
        .chain(resolved.iter().copied())
        .peekable();
    if addrs.peek().is_none() {
        return Err(OutboundError::NoAddress {
            host: target.host.to_string(),
        });
    }
    if allow_private {
        return Ok(());
    }
    for addr in addrs {
        if let Some(range) = blocked_address(addr) {
            return Err(OutboundError::BlockedAddress {
                host: target.host.to_string(),
                addr,
                range,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn literal(url: &str) -> IpAddr {
        match parse_target(url).unwrap().host {
            TargetHost::Ip(ip) => ip,
            TargetHost::Name(name) => panic!("{url}: parsed as the name {name:?}"),
        }
    }

    fn refused(url: &str) -> OutboundError {
        let target = parse_target(url).unwrap();
        check(&target, &[], false).unwrap_err()
    }

    fn range_name(url: &str) -> &'static str {
        match refused(url) {
            OutboundError::BlockedAddress { range, .. } => range.name(),
            other => panic!("{url}: expected a blocked address, got {other:?}"),
        }
    }

    #[test]
    fn every_spelling_of_loopback_is_parsed_to_127_0_0_1_and_refused() {
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0X7F000001/",
            "http://0177.0.0.1/",
            "http://0x7f.0.0.1/",
            "http://0x7f.1/",
            "http://127.1/",
            "http://127.0.1/",
            "http://127.000.000.001/",
            "http://%31%32%37.0.0.1/",
            "http://127.0.0.1./",
            "HTTP://127.0.0.1:8080/mcp",
        ] {
            assert_eq!(literal(url), ip("127.0.0.1"), "{url}");
            assert_eq!(range_name(url), "loopback", "{url}");
            // The parser's output, not the input, is what the client uses.
            let target = parse_target(url).unwrap();
            assert_eq!(target.url.host_str(), Some("127.0.0.1"), "{url}");
        }
        for url in ["http://127.255.255.254/", "http://127.2.3.4/"] {
            assert_eq!(range_name(url), "loopback", "{url}");
        }
    }

    #[test]
    fn ipv6_loopback_and_mapped_loopback_are_refused() {
        assert_eq!(literal("http://[::1]/"), ip("::1"));
        assert_eq!(range_name("http://[::1]:8080/"), "loopback");
        for url in [
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[0:0:0:0:0:ffff:127.0.0.1]/",
        ] {
            assert_eq!(literal(url), ip("::ffff:127.0.0.1"), "{url}");
            match refused(url) {
                OutboundError::BlockedAddress { range, .. } => {
                    assert_eq!(range.name(), "loopback");
                    assert_eq!(range.net().to_string(), "127.0.0.0/8");
                    assert_eq!(range.embedding().unwrap().1, "IPv4-mapped");
                }
                other => panic!("{url}: {other:?}"),
            }
        }
    }

    #[test]
    fn private_link_local_and_special_ranges_are_refused() {
        for (url, name) in [
            (
                "http://169.254.169.254/latest/meta-data/",
                "link-local (cloud metadata)",
            ),
            ("http://2852039166/", "link-local (cloud metadata)"),
            (
                "http://[::ffff:169.254.169.254]/",
                "link-local (cloud metadata)",
            ),
            ("http://10.0.0.1/", PRIVATE),
            ("http://10.255.255.255/", PRIVATE),
            ("http://172.16.0.1/", PRIVATE),
            ("http://172.31.255.1/", PRIVATE),
            ("http://192.168.1.1/", PRIVATE),
            ("http://100.64.0.1/", "carrier-grade NAT"),
            ("http://100.127.255.255/", "carrier-grade NAT"),
            ("http://0.0.0.0/", "unspecified (this network)"),
            ("http://0/", "unspecified (this network)"),
            ("http://224.0.0.1/", "multicast"),
            ("http://239.255.255.250/", "multicast"),
            ("http://240.0.0.1/", "reserved"),
            ("http://255.255.255.255/", "broadcast"),
            ("http://[::]/", "unspecified"),
            ("http://[fc00::1]/", "unique-local"),
            ("http://[fd12:3456::1]/", "unique-local"),
            ("http://[fe80::1]/", "link-local"),
            ("http://[febf::1]/", "link-local"),
            ("http://[ff02::1]/", "multicast"),
            ("http://[::127.0.0.1]/", "loopback"),
            ("http://192.0.0.8/", "IETF protocol assignments"),
            ("http://198.19.1.1/", "benchmarking"),
            ("http://[fec0::1]/", "site-local (deprecated)"),
            ("http://[64:ff9b:1::8.8.8.8]/", "local-use NAT64"),
            (
                "http://[64:ff9b::a9fe:a9fe]/",
                "link-local (cloud metadata)",
            ),
            ("http://[64:ff9b::10.0.0.1]/", PRIVATE),
            ("http://[2002:7f00:1::]/", "loopback"),
            (
                "http://[2002:a9fe:a9fe:1::1]/",
                "link-local (cloud metadata)",
            ),
        ] {
            assert_eq!(range_name(url), name, "{url}");
        }
    }

    #[test]
    fn range_edges_are_exact() {
        for addr in [
            "172.15.255.255",
            "172.32.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "11.0.0.0",
            "9.255.255.255",
            "126.255.255.255",
            "128.0.0.0",
            "1.0.0.0",
            "223.255.255.255",
            "fbff:ffff::1",
            "fe00::1",
            "fe7f::1",
            "::2:0:0:1",
        ] {
            assert_eq!(blocked_address(ip(addr)), None, "{addr}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for url in [
            "http://8.8.8.8/",
            "https://1.1.1.1/dns-query",
            "https://[2606:4700::1111]/",
            "http://[::ffff:8.8.8.8]/",
            "http://[64:ff9b::8.8.8.8]/",
            "http://[2002:808:808::1]/",
            "https://134744072/",
        ] {
            let target = parse_target(url).unwrap();
            check(&target, &[], false).unwrap();
        }
        let target = parse_target("https://mcp.example.com/mcp").unwrap();
        assert_eq!(target.host, TargetHost::Name("mcp.example.com".into()));
        assert_eq!(target.port, 443);
        check(
            &target,
            &[
                ip("93.184.215.14"),
                ip("2606:2800:21f:cb07:6820:80da:af6b:8b2c"),
            ],
            false,
        )
        .unwrap();
    }

    #[test]
    fn one_blocked_record_refuses_the_whole_name() {
        let target = parse_target("https://rebind.example.com/").unwrap();
        let err = check(&target, &[ip("8.8.8.8"), ip("127.0.0.1")], false).unwrap_err();
        assert_eq!(
            err,
            OutboundError::BlockedAddress {
                host: "rebind.example.com".into(),
                addr: ip("127.0.0.1"),
                range: blocked_address(ip("127.0.0.1")).unwrap(),
            }
        );
        let err = check(&target, &[ip("2606:4700::1111"), ip("fe80::1")], false).unwrap_err();
        assert!(matches!(err, OutboundError::BlockedAddress { .. }));
    }

    #[test]
    fn a_name_with_no_address_is_refused() {
        let target = parse_target("https://empty.example.com/").unwrap();
        for allow_private in [false, true] {
            assert_eq!(
                check(&target, &[], allow_private),
                Err(OutboundError::NoAddress {
                    host: "empty.example.com".into()
                })
            );
        }
    }

    #[test]
    fn allow_private_lets_every_address_through() {
        for url in [
            "http://127.0.0.1:8080/mcp",
            "http://[::1]/",
            "http://169.254.169.254/",
            "http://10.1.2.3/",
        ] {
            let target = parse_target(url).unwrap();
            check(&target, &[], true).unwrap();
        }
        let target = parse_target("http://localhost:3000/mcp").unwrap();
        check(&target, &[ip("127.0.0.1"), ip("::1")], true).unwrap();
        assert!(check(&target, &[ip("127.0.0.1"), ip("::1")], false).is_err());
        let target = parse_target("http://metadata.google.internal/").unwrap();
        check(&target, &[ip("169.254.169.254")], true).unwrap();
    }

    #[test]
    fn metadata_names_are_refused_whatever_they_resolve_to() {
        for name in [
            "metadata.google.internal",
            "METADATA.Google.Internal",
            "metadata.google.internal.",
            "metadata.amazonaws.com",
            "metadata",
            "Metadata.",
            "instance-data",
            "INSTANCE-DATA.",
        ] {
            assert!(blocked_name(name), "{name}");
        }
        for name in [
            "metadata.example.com",
            "google.internal",
            "my-metadata",
            "instance",
        ] {
            assert!(!blocked_name(name), "{name}");
        }
        for url in [
            "http://metadata.google.internal/computeMetadata/v1/",
            "http://METADATA.GOOGLE.INTERNAL./",
            "http://metadata%2Egoogle%2Einternal/",
            "http://metadata/",
            "http://instance-data/latest/",
            "https://metadata.amazonaws.com/",
        ] {
            let target = parse_target(url).unwrap();
            let err = check(&target, &[ip("8.8.8.8")], false).unwrap_err();
            assert!(
                matches!(err, OutboundError::BlockedName { .. }),
                "{url}: {err:?}"
            );
            assert!(matches!(
                check_name(&target, false),
                Err(OutboundError::BlockedName { .. })
            ));
        }
    }

    #[test]
    fn only_http_and_https_are_allowed() {
        for (url, scheme) in [
            ("file:///etc/passwd", Some("file")),
            ("ftp://ftp.example.com/x", Some("ftp")),
            ("gopher://127.0.0.1:6379/_INFO", Some("gopher")),
            ("ws://example.com/", Some("ws")),
            ("data:text/plain,hi", None),
            ("alice:s3cret@example.com/mcp", None),
        ] {
            let err = parse_target(url).unwrap_err();
            assert_eq!(
                err,
                OutboundError::UnsupportedScheme {
                    scheme: scheme.map(str::to_owned)
                },
                "{url}"
            );
            assert!(!err.to_string().contains("s3cret"));
            assert!(!err.to_string().contains("alice"));
        }
        assert!(matches!(
            parse_target("/relative"),
            Err(OutboundError::InvalidUrl(_))
        ));
        assert!(matches!(
            parse_target("http://"),
            Err(OutboundError::InvalidUrl(_))
        ));
    }

    #[test]
    fn userinfo_is_refused_and_never_repeated() {
        for url in [
            "https://alice:s3cret@mcp.example.com/mcp?key=k3y",
            "https://alice@mcp.example.com/",
            "https://:s3cret@mcp.example.com/",
        ] {
            let err = parse_target(url).unwrap_err();
            assert_eq!(
                err,
                OutboundError::Userinfo {
                    host: "mcp.example.com".into()
                },
                "{url}"
            );
            let text = err.to_string();
            assert!(
                !text.contains("s3cret") && !text.contains("alice"),
                "{text}"
            );
        }
    }

    #[test]
    fn errors_name_the_host_address_range_and_the_fix() {
        let text = refused("http://2130706433:9000/secret?token=k3y").to_string();
        assert_eq!(
            text,
            "outbound request to 127.0.0.1 refused: address 127.0.0.1 is in 127.0.0.0/8 (loopback); \
             set allow_private = true on this upstream (or issuer) if it is meant to be private"
        );
        let target = parse_target("https://api.example.com/path?token=k3y").unwrap();
        let text = check(&target, &[ip("::ffff:169.254.169.254")], false)
            .unwrap_err()
            .to_string();
        assert!(text.contains("api.example.com"), "{text}");
        assert!(text.contains("::ffff:169.254.169.254"), "{text}");
        assert!(text.contains("169.254.0.0/16 (link-local (cloud metadata)), embedded in an IPv4-mapped IPv6 address (::ffff:0.0.0.0/96)"), "{text}");
        assert!(!text.contains("k3y") && !text.contains("path"), "{text}");
        let text = refused("http://[fe80::1]/").to_string();
        assert!(
            text.starts_with("outbound request to [fe80::1] refused"),
            "{text}"
        );
        assert_eq!(
            blocked_address(ip("10.1.2.3")).unwrap().to_string(),
            "10.0.0.0/8 (private (RFC 1918))"
        );
    }

    /// Any address in one of the blocklist's ranges.
    fn blocked_ip() -> impl Strategy<Value = IpAddr> {
        (0..BLOCKLIST.len(), any::<u128>()).prop_map(|(i, bits)| match BLOCKLIST[i].net {
            IpNet::V4(net) => {
                let host = (bits as u32) & u32::from(net.hostmask());
                IpAddr::V4(Ipv4Addr::from(u32::from(net.network()) | host))
            }
            IpNet::V6(net) => {
                let host = bits & u128::from(net.hostmask());
                IpAddr::V6(Ipv6Addr::from(u128::from(net.network()) | host))
            }
        })
    }

    fn any_ip() -> impl Strategy<Value = IpAddr> {
        prop_oneof![
            any::<u32>().prop_map(|v| IpAddr::V4(Ipv4Addr::from(v))),
            any::<u128>().prop_map(|v| IpAddr::V6(Ipv6Addr::from(v))),
            any::<u32>().prop_map(|v| IpAddr::V6(Ipv4Addr::from(v).to_ipv6_mapped())),
            blocked_ip(),
        ]
    }

    proptest! {
        #[test]
        fn mapped_v6_is_blocked_iff_its_v4_is(v in any::<u32>()) {
            let v4 = Ipv4Addr::from(v);
            let mapped = IpAddr::V6(v4.to_ipv6_mapped());
            let direct = blocked_address(IpAddr::V4(v4));
            let via = blocked_address(mapped);
            prop_assert_eq!(direct.is_some(), via.is_some());
            if let (Some(direct), Some(via)) = (direct, via) {
                prop_assert_eq!(direct.net(), via.net());
                prop_assert_eq!(direct.name(), via.name());
            }
        }

        #[test]
        fn blocked_ranges_contain_what_they_block(addr in any_ip()) {
            if let Some(range) = blocked_address(addr) {
                let inner = match (addr, range.embedding()) {
                    (IpAddr::V6(v6), Some((prefix, _))) => {
                        prop_assert!(prefix.contains(&v6));
                        // 6to4 (the only /16) carries the IPv4 address in bits 80..112.
                        let shift = if prefix.prefix_len() == 16 { 80 } else { 0 };
                        IpAddr::V4(Ipv4Addr::from((u128::from(v6) >> shift) as u32))
                    }
                    _ => addr,
                };
                prop_assert!(range.net().contains(&inner), "{} not in {}", inner, range);
            }
        }

        #[test]
        fn check_fails_whenever_any_address_is_blocked(
            mut addrs in proptest::collection::vec(any_ip(), 0..6),
            bad in blocked_ip(),
            at in any::<prop::sample::Index>(),
        ) {
            let target = parse_target("https://mcp.example.com/mcp").unwrap();
            // Without a planted address: ok iff non-empty and all pass.
            let expected = !addrs.is_empty() && addrs.iter().all(|a| blocked_address(*a).is_none());
            prop_assert_eq!(check(&target, &addrs, false).is_ok(), expected);
            prop_assert_eq!(check(&target, &addrs, true).is_ok(), !addrs.is_empty());
            // One blocked address anywhere in the list refuses the target.
            let at = at.index(addrs.len() + 1);
            addrs.insert(at, bad);
            let refused = matches!(
                check(&target, &addrs, false),
                Err(OutboundError::BlockedAddress { .. })
            );
            prop_assert!(refused);
            prop_assert!(check(&target, &addrs, true).is_ok());
        }
    }
}
