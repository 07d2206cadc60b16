//! Call rates: the `"N/s"` syntax, `[ratelimit]` (the default rate and
//! where allowances are kept: in this process, or in Redis shared by every
//! replica), and the per-upstream `rate_limit` and `tool_rate_limit` keys
//! that read the same syntax.

use std::fmt;
use std::time::Duration;

use toml::Spanned;

use crate::config::diagnostics::Diagnostics;
use crate::config::raw::RawRateLimit;

/// The default tool-call rate, per principal and tool.
pub const DEFAULT_RATE: Rate = Rate {
    calls: 600,
    per: Duration::from_secs(60),
};

/// A call rate: `calls` per `per`, with a burst of `calls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Calls allowed in one period (and the burst).
    pub calls: u32,
    /// The period.
    pub per: Duration,
}

/// The default `[ratelimit] key_prefix`.
pub const DEFAULT_RATELIMIT_KEY_PREFIX: &str = "sluice:rl:";

/// `[ratelimit]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitConfig {
    /// `default`: every tool's rate, per principal and tool (`None`: off).
    pub default: Option<Rate>,
    /// `backend`: where the allowances are kept.
    pub backend: RateLimitBackend,
}

/// `[ratelimit] backend`.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum RateLimitBackend {
    /// In this process: each replica has its own allowance.
    #[default]
    Memory,
    /// In Redis, shared by every replica that names it.
    Redis {
        /// `redis_url`, `${VAR}` expanded: `redis://`, `rediss://` or
        /// `unix://`. May hold a password.
        url: String,
        /// `key_prefix`: what every key sluice writes starts with.
        key_prefix: String,
    },
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            default: Some(DEFAULT_RATE),
            backend: RateLimitBackend::Memory,
        }
    }
}

/// The URL may hold a password: it is shown without.
impl fmt::Debug for RateLimitBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateLimitBackend::Memory => f.write_str("Memory"),
            RateLimitBackend::Redis { url, key_prefix } => f
                .debug_struct("Redis")
                .field("url", &without_password(url))
                .field("key_prefix", key_prefix)
                .finish(),
        }
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.per.as_secs() {
            1 => "s",
            60 => "min",
            _ => "h",
        };
        write!(f, "{}/{unit}", self.calls)
    }
}

pub(in crate::config) fn validate_ratelimit(
    raw: &RawRateLimit,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<RateLimitConfig> {
    let default = match &raw.default {
        None => Some(Some(DEFAULT_RATE)),
        Some(s) => rate(s, "ratelimit.default", diags),
    };
    let redis = diags.choice(
        &raw.backend,
        "ratelimit.backend",
        false,
        &[("memory", false), ("redis", true)],
    );
    let backend = match redis {
        Some(true) => redis_backend(raw, env, diags),
        Some(false) => {
            for (key, set) in [
                ("redis_url", raw.redis_url.is_some()),
                ("key_prefix", raw.key_prefix.is_some()),
            ] {
                if set {
                    diags.push(
                        None,
                        &format!("ratelimit.{key}"),
                        "applies only with backend = \"redis\"".into(),
                    );
                }
            }
            Some(RateLimitBackend::Memory)
        }
        None => None,
    };
    Some(RateLimitConfig {
        default: default?,
        backend: backend?,
    })
}

/// `backend = "redis"`: where the server is, and the prefix of sluice's keys.
fn redis_backend(
    raw: &RawRateLimit,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<RateLimitBackend> {
    let url = redis_url(raw, env, diags);
    let key_prefix = match &raw.key_prefix {
        None => Some(DEFAULT_RATELIMIT_KEY_PREFIX.to_owned()),
        Some(s) => {
            let p = s.get_ref();
            if (1..=64).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_graphic()) {
                Some(p.clone())
            } else {
                diags.push(
                    Some(s.span()),
                    "ratelimit.key_prefix",
                    format!("{p:?}: must be 1 to 64 visible ASCII characters, no spaces"),
                );
                None
            }
        }
    };
    Some(RateLimitBackend::Redis {
        url: url?,
        key_prefix: key_prefix?,
    })
}

/// `redis_url`, expanded; it may hold a password, so a diagnostic shows it
/// without.
fn redis_url(
    raw: &RawRateLimit,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<String> {
    let Some(s) = &raw.redis_url else {
        diags.push(
            raw.backend.as_ref().map(Spanned::span),
            "ratelimit.redis_url",
            "backend = \"redis\" needs redis_url: \"redis://host:6379\", \"rediss://...\" (TLS) or \"unix:///path/to/redis.sock\"; write a password as ${VAR}".into(),
        );
        return None;
    };
    let url = diags.expand(Some(s.span()), "ratelimit.redis_url", s.get_ref(), env)?;
    match check_redis_url(&url) {
        Ok(()) => Some(url),
        Err(why) => {
            diags.push(
                Some(s.span()),
                "ratelimit.redis_url",
                format!(
                    "{:?} {why}: write \"redis://[user:password@]host[:port][/db]\", \"rediss://...\" (TLS) or \"unix:///path/to/redis.sock\"",
                    without_password(&url)
                ),
            );
            None
        }
    }
}

/// A Redis URL the client can connect with: a known scheme, and a host
/// (or, for `unix://`, a socket path).
fn check_redis_url(text: &str) -> Result<(), &'static str> {
    let url = url::Url::parse(text).map_err(|_| "is not a URL")?;
    match url.scheme() {
        "redis" | "rediss" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        "redis" | "rediss" => Err("has no host"),
        "unix" if url.path().len() > 1 => Ok(()),
        "unix" => Err("has no socket path"),
        _ => Err("is not a redis://, rediss:// or unix:// URL"),
    }
}

/// `url` with its password (if any) masked, for diagnostics and logs.
pub fn without_password(text: &str) -> String {
    match url::Url::parse(text) {
        Ok(mut url) if url.password().is_some() => {
            // Only fails for URLs that cannot have a password at all.
            let _ = url.set_password(Some("***"));
            url.to_string()
        }
        Ok(_) => text.to_owned(),
        // Unparsed: anything after a scheme may be a password.
        Err(_) => match text.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://***"),
            None => "***".to_owned(),
        },
    }
}

/// `"N/s"`, `"N/min"`, `"N/h"`, or `"off"` (`None`).
pub(in crate::config) fn rate(
    s: &Spanned<String>,
    key: &str,
    diags: &mut Diagnostics<'_>,
) -> Option<Option<Rate>> {
    if s.get_ref() == "off" {
        return Some(None);
    }
    match parse_rate(s.get_ref()) {
        Some(r) => Some(Some(r)),
        None => {
            diags.push(
                Some(s.span()),
                key,
                format!(
                    "{:?}: write calls per period, \"N/s\", \"N/min\" or \"N/h\" with N from 1 to 1000000, or \"off\"",
                    s.get_ref()
                ),
            );
            None
        }
    }
}

/// Parses `"N/s"`, `"N/min"`, `"N/h"` (1 ≤ N ≤ 1,000,000).
pub fn parse_rate(s: &str) -> Option<Rate> {
    let (n, unit) = s.split_once('/')?;
    let calls: u32 = n.trim().parse().ok()?;
    let per = match unit.trim() {
        "s" | "sec" | "second" => Duration::from_secs(1),
        "m" | "min" | "minute" => Duration::from_secs(60),
        "h" | "hour" => Duration::from_secs(3600),
        _ => return None,
    };
    (1..=1_000_000)
        .contains(&calls)
        .then_some(Rate { calls, per })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::testing::secrets::{errors, parse};

    #[test]
    fn the_redis_backend_needs_a_url_and_keeps_its_password_out_of_diagnostics() {
        let c = parse("").unwrap();
        assert_eq!(c.ratelimit.backend, RateLimitBackend::Memory);
        let c = parse(
            "[ratelimit]\nbackend = \"redis\"\nredis_url = \"redis://:${REDIS_PASSWORD}@10.0.0.5:6380/2\"\n",
        )
        .unwrap();
        assert_eq!(
            c.ratelimit.backend,
            RateLimitBackend::Redis {
                url: "redis://:s3cret-redis-pw@10.0.0.5:6380/2".into(),
                key_prefix: DEFAULT_RATELIMIT_KEY_PREFIX.into(),
            }
        );
        assert!(!format!("{c:?}").contains("s3cret-redis-pw"), "{c:?}");
        for url in ["rediss://cache.internal", "unix:///run/redis/redis.sock"] {
            let c = parse(&format!(
                "[ratelimit]\nbackend = \"redis\"\nredis_url = \"{url}\"\nkey_prefix = \"prod:rl:\"\n"
            ))
            .unwrap();
            assert_eq!(
                c.ratelimit.backend,
                RateLimitBackend::Redis {
                    url: url.into(),
                    key_prefix: "prod:rl:".into()
                }
            );
        }

        let e = errors("[ratelimit]\nbackend = \"redis\"\n");
        assert!(
            e[0].contains("ratelimit.redis_url: backend = \"redis\" needs redis_url"),
            "{e:?}"
        );
        let e = errors("[ratelimit]\nbackend = \"memcached\"\n");
        assert!(
            e[0].contains("ratelimit.backend: \"memcached\" is not one of the choices (allowed: \"memory\", \"redis\")"),
            "{e:?}"
        );
        let e = errors(
            "[ratelimit]\nbackend = \"redis\"\nredis_url = \"http://u:${REDIS_PASSWORD}@host\"\n",
        );
        assert!(
            e[0].contains("ratelimit.redis_url: \"http://u:***@host/\" is not a redis://, rediss:// or unix:// URL"),
            "{e:?}"
        );
        assert!(!e.join("").contains("s3cret-redis-pw"), "{e:?}");
        let e = errors(
            "[ratelimit]\nbackend = \"redis\"\nredis_url = \"redis://:${UNSET}@h\"\nkey_prefix = \"has space\"\n",
        );
        assert!(
            e[0].contains("ratelimit.redis_url: refers to ${UNSET}, which is not set"),
            "{e:?}"
        );
        assert!(
            e[1].contains("ratelimit.key_prefix: \"has space\": must be 1 to 64 visible ASCII"),
            "{e:?}"
        );
        let e = errors("[ratelimit]\nredis_url = \"redis://h\"\n");
        assert!(
            e[0].contains("ratelimit.redis_url: applies only with backend = \"redis\""),
            "{e:?}"
        );
        assert_eq!(
            without_password("redis//:pw@host"),
            "***",
            "an unparsable URL shows nothing after its scheme"
        );
    }
}
