//! Every tool call passes a rate limiter (S-24): GCRA (`governor`), keyed
//! by principal and tool, so one client's burst never spends another's
//! allowance.
//!
//! Which rate applies is the most specific configured: the upstream's
//! `tool_rate_limit` for that tool, else its `rate_limit`, else
//! `[ratelimit] default`. A rate of `N/period` allows a burst of N and
//! then one call every period/N.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use sluice_core::config::{Config, Rate};

type Limiter = DefaultKeyedRateLimiter<(String, String)>;

/// The limiters of every configured rate.
pub(crate) struct RateLimits {
    default: Option<Limiter>,
    /// By upstream: its `rate_limit` (`None`: off).
    upstreams: HashMap<String, Option<Limiter>>,
    /// By (upstream, tool): its `tool_rate_limit` (`None`: off).
    tools: HashMap<(String, String), Option<Limiter>>,
    clock: DefaultClock,
}

impl RateLimits {
    pub(crate) fn new(config: &Config) -> RateLimits {
        let mut upstreams = HashMap::new();
        let mut tools = HashMap::new();
        for up in &config.upstreams {
            if let Some(rate) = up.rate_limit {
                upstreams.insert(up.name.clone(), rate.map(limiter));
            }
            for (tool, rate) in &up.tool_rate_limits {
                tools.insert((up.name.clone(), tool.clone()), rate.map(limiter));
            }
        }
        RateLimits {
            default: config.ratelimit.default.map(limiter),
            upstreams,
            tools,
            clock: DefaultClock::default(),
        }
    }

    /// Counts one call of `tool` (the upstream's name; `exposed` is the
    /// client's) by `principal`; over the limit, how long until the next
    /// call would pass.
    pub(crate) fn check(
        &self,
        principal: &str,
        upstream: &str,
        tool: &str,
        exposed: &str,
    ) -> Result<(), Duration> {
        let limiter = match self.tools.get(&(upstream.to_owned(), tool.to_owned())) {
            Some(specific) => specific.as_ref(),
            None => match self.upstreams.get(upstream) {
                Some(specific) => specific.as_ref(),
                None => self.default.as_ref(),
            },
        };
        let Some(limiter) = limiter else {
            return Ok(());
        };
        limiter
            .check_key(&(principal.to_owned(), exposed.to_owned()))
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// Forgets keys whose allowance is full again, so memory stays bounded
    /// by the keys active within one period.
    pub(crate) fn forget_idle(&self) {
        let all = self
            .default
            .iter()
            .chain(self.upstreams.values().flatten())
            .chain(self.tools.values().flatten());
        for limiter in all {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }
}

fn limiter(rate: Rate) -> Limiter {
    // `parse_rate` allows 1..=1,000,000 calls per 1 s..1 h, so the
    // replenish interval is at least a microsecond: never zero.
    let calls = NonZeroU32::new(rate.calls).unwrap_or(NonZeroU32::MIN);
    let interval = (rate.per / calls.get()).max(Duration::from_nanos(1));
    let quota = Quota::with_period(interval)
        .unwrap_or_else(|| Quota::per_second(calls))
        .allow_burst(calls);
    RateLimiter::keyed(quota)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use sluice_core::config::Source;

    fn limits(toml: &str) -> RateLimits {
        let config = Config::from_toml(
            Source {
                name: "t.toml",
                text: toml,
            },
            &|_| None,
        )
        .unwrap();
        RateLimits::new(&config)
    }

    #[test]
    fn the_most_specific_rate_applies_per_principal_and_tool() {
        let l = limits(
            "[ratelimit]\ndefault = \"3/h\"\n\
             [[upstream]]\nname = \"a\"\ncommand = \"x\"\nrate_limit = \"2/h\"\ntool_rate_limit = { t = \"1/h\", free = \"off\" }\n\
             [[upstream]]\nname = \"b\"\ncommand = \"x\"\n",
        );
        // a.t: 1 per hour.
        assert!(l.check("alice", "a", "t", "a__t").is_ok());
        let wait = l.check("alice", "a", "t", "a__t").unwrap_err();
        assert!(wait > Duration::from_secs(3000), "{wait:?}");
        // Another principal has its own allowance.
        assert!(l.check("bob", "a", "t", "a__t").is_ok());
        // a.u: the upstream's 2 per hour.
        assert!(l.check("alice", "a", "u", "a__u").is_ok());
        assert!(l.check("alice", "a", "u", "a__u").is_ok());
        assert!(l.check("alice", "a", "u", "a__u").is_err());
        // a.free: off.
        for _ in 0..100 {
            assert!(l.check("alice", "a", "free", "a__free").is_ok());
        }
        // b.v: the default 3 per hour.
        for _ in 0..3 {
            assert!(l.check("alice", "b", "v", "b__v").is_ok());
        }
        assert!(l.check("alice", "b", "v", "b__v").is_err());
    }

    #[test]
    fn off_by_default_setting() {
        let l = limits("[ratelimit]\ndefault = \"off\"\n");
        for _ in 0..1000 {
            assert!(l.check("p", "u", "t", "u__t").is_ok());
        }
    }
}
