//! Every tool call passes a rate limiter (S-24): GCRA, keyed by principal
//! and tool, so one client's burst never spends another's allowance.
//!
//! Which rate applies is decided by `sluice_core::policy::admit`: the most
//! specific configured. A rate of `N/period` allows a burst of N and then
//! one call every period/N.
//!
//! With `[ratelimit] backend = "memory"` the allowances live in this
//! process (`governor`). With `"redis"` they live in Redis, so every
//! replica spends the same allowance: one Lua script per check, atomic,
//! timed by the Redis server's clock so that replicas whose clocks disagree
//! still agree. A check Redis does not answer within [`REDIS_CHECK_TIMEOUT`]
//! falls back to this process's limiter for that call (limits are then per
//! replica until Redis is back), with a warning at most once a minute.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use sha2::{Digest, Sha256};
use sluice_core::config::{Config, Rate, RateLimitBackend, without_password};
use sluice_core::policy::admit::RateScope;
use tokio::time::Instant;

type Limiter = DefaultKeyedRateLimiter<(String, String)>;

/// The longest a Redis check may take before the call is judged locally.
pub(crate) const REDIS_CHECK_TIMEOUT: Duration = Duration::from_millis(250);
/// After a failed check, how long Redis is left alone: calls meanwhile are
/// judged locally at once instead of each waiting for a timeout.
const REDIS_RETRY_AFTER: Duration = Duration::from_secs(1);
/// The fewest seconds between two warnings that Redis is unreachable.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// GCRA over one key. `KEYS[1]`: the key; `ARGV[1]`: the emission interval in
/// µs; `ARGV[2]`: the burst. The key holds the theoretical arrival time (µs,
/// Redis's clock) and expires once the allowance is full again. Returns 0
/// when the call is allowed, else how many ms until it would be.
const GCRA_SCRIPT: &str = r"
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local window = interval * tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now) or now
if tat < now then tat = now end
local next_tat = tat + interval
local ahead = next_tat - now
if ahead > window then
  return math.ceil((ahead - window) / 1000)
end
redis.call('SET', KEYS[1], string.format('%d', next_tat), 'PX', math.ceil(ahead / 1000))
return 0
";

/// One configured rate and its in-process limiter.
struct Limit {
    rate: Rate,
    limiter: Limiter,
}

/// The limiters of every configured rate.
pub(crate) struct RateLimits {
    default: Option<Limit>,
    /// By upstream: its `rate_limit` (`None`: off).
    upstreams: HashMap<String, Option<Limit>>,
    /// By (upstream, tool): its `tool_rate_limit` (`None`: off).
    tools: HashMap<(String, String), Option<Limit>>,
    clock: DefaultClock,
    /// The allowances every replica shares (`backend = "redis"`).
    shared: Option<SharedLimits>,
}

impl RateLimits {
    /// The limiters of `config`. With the Redis backend this must run
    /// inside a Tokio runtime; it does not connect yet (the first check
    /// does), so sluice starts while Redis is down.
    pub(crate) fn new(config: &Config) -> RateLimits {
        let mut upstreams = HashMap::new();
        let mut tools = HashMap::new();
        for up in &config.upstreams {
            if let Some(rate) = up.rate_limit {
                upstreams.insert(up.name.clone(), rate.map(limit));
            }
            for (tool, rate) in &up.tool_rate_limits {
                tools.insert((up.name.clone(), tool.clone()), rate.map(limit));
            }
        }
        let shared = match &config.ratelimit.backend {
            RateLimitBackend::Memory => None,
            RateLimitBackend::Redis { url, key_prefix } => {
                match SharedLimits::new(url, key_prefix) {
                    Ok(shared) => Some(shared),
                    Err(e) => {
                        // The config check accepted the URL, so this is
                        // unexpected; serving on beats not serving.
                        tracing::error!(
                            "ratelimit.redis_url {}: {e}; rate limits are per replica",
                            without_password(url)
                        );
                        None
                    }
                }
            }
        };
        RateLimits {
            default: config.ratelimit.default.map(limit),
            upstreams,
            tools,
            clock: DefaultClock::default(),
            shared,
        }
    }

    /// Counts one call of `tool` (the upstream's name) under `key` (see
    /// `policy::admit::rate_key`) against the rate `scope` names; over the
    /// limit, how long until the next call would pass.
    pub(crate) async fn check(
        &self,
        scope: RateScope,
        upstream: &str,
        tool: &str,
        key: (String, String),
    ) -> Result<(), Duration> {
        // The limiters were built from the configuration `scope` was
        // decided on: the scope names one of them, or a rate set "off".
        let limit = match scope {
            RateScope::Tool => self
                .tools
                .get(&(upstream.to_owned(), tool.to_owned()))
                .and_then(Option::as_ref),
            RateScope::Upstream => self.upstreams.get(upstream).and_then(Option::as_ref),
            RateScope::Default => self.default.as_ref(),
        };
        let Some(limit) = limit else {
            return Ok(());
        };
        if let Some(shared) = &self.shared
            && let Some(verdict) = shared.check(&key.0, &key.1, limit.rate).await
        {
            return verdict;
        }
        limit
            .limiter
            .check_key(&key)
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
        for limit in all {
            limit.limiter.retain_recent();
            limit.limiter.shrink_to_fit();
        }
    }
}

fn limit(rate: Rate) -> Limit {
    // `parse_rate` allows 1..=1,000,000 calls per 1 s..1 h, so the
    // replenish interval is at least a microsecond: never zero.
    let calls = NonZeroU32::new(rate.calls).unwrap_or(NonZeroU32::MIN);
    let interval = (rate.per / calls.get()).max(Duration::from_nanos(1));
    let quota = Quota::with_period(interval)
        .unwrap_or_else(|| Quota::per_second(calls))
        .allow_burst(calls);
    Limit {
        rate,
        limiter: RateLimiter::keyed(quota),
    }
}

/// The allowances in Redis.
struct SharedLimits {
    redis: ConnectionManager,
    script: redis::Script,
    key_prefix: String,
    health: Mutex<RedisHealth>,
}

/// What the last checks said about Redis.
#[derive(Default)]
struct RedisHealth {
    /// Judge locally until then (Redis just failed).
    local_until: Option<Instant>,
    last_warning: Option<Instant>,
    /// Whether the last check failed, to say so when Redis is back.
    failing: bool,
}

impl SharedLimits {
    fn new(url: &str, key_prefix: &str) -> redis::RedisResult<SharedLimits> {
        let client = redis::Client::open(url)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(REDIS_CHECK_TIMEOUT))
            .set_response_timeout(Some(REDIS_CHECK_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(REDIS_RETRY_AFTER);
        Ok(SharedLimits {
            redis: ConnectionManager::new_lazy_with_config(client, config)?,
            script: redis::Script::new(GCRA_SCRIPT),
            key_prefix: key_prefix.to_owned(),
            health: Mutex::new(RedisHealth::default()),
        })
    }

    /// Redis's verdict, or `None` when Redis did not give one in time.
    async fn check(
        &self,
        principal: &str,
        exposed: &str,
        rate: Rate,
    ) -> Option<Result<(), Duration>> {
        if self
            .lock_health()
            .local_until
            .is_some_and(|until| Instant::now() < until)
        {
            return None;
        }
        let interval_us = (rate.per.as_micros() / u128::from(rate.calls.max(1))).max(1);
        let mut redis = self.redis.clone();
        let mut invocation = self.script.key(self.key(principal, exposed, rate));
        invocation
            .arg(u64::try_from(interval_us).unwrap_or(u64::MAX))
            .arg(rate.calls);
        let invocation = invocation.invoke_async::<u64>(&mut redis);
        let outcome = match tokio::time::timeout(REDIS_CHECK_TIMEOUT, invocation).await {
            Ok(Ok(wait_ms)) => Ok(wait_ms),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!(
                "no answer within {} ms",
                REDIS_CHECK_TIMEOUT.as_millis()
            )),
        };
        let mut health = self.lock_health();
        match outcome {
            Ok(wait_ms) => {
                if health.failing {
                    health.failing = false;
                    tracing::info!("Redis answers again: rate limits are global again");
                }
                Some(match wait_ms {
                    0 => Ok(()),
                    ms => Err(Duration::from_millis(ms)),
                })
            }
            Err(why) => {
                let now = Instant::now();
                health.failing = true;
                health.local_until = Some(now + REDIS_RETRY_AFTER);
                if health
                    .last_warning
                    .is_none_or(|at| now.duration_since(at) >= WARN_EVERY)
                {
                    health.last_warning = Some(now);
                    tracing::warn!(
                        "the Redis rate limit backend failed ({why}): rate limits are per replica until it is back"
                    );
                }
                None
            }
        }
    }

    /// The key of one allowance: a hash, so that principals and tool names
    /// never appear in Redis's key space. The rate is part of it: a rate
    /// changed by a reload starts a fresh allowance (as the in-memory
    /// limiters do) instead of inheriting a wait computed for the old one.
    fn key(&self, principal: &str, exposed: &str, rate: Rate) -> String {
        let mut hash = Sha256::new();
        hash.update(b"sluice rate limit v1\0");
        hash.update(principal.as_bytes());
        hash.update(b"\0");
        hash.update(exposed.as_bytes());
        hash.update(b"\0");
        hash.update(rate.calls.to_be_bytes());
        hash.update(rate.per.as_micros().to_be_bytes());
        let digest = hash.finalize();
        let mut key = self.key_prefix.clone();
        for b in &digest[..16] {
            key.push_str(&format!("{b:02x}"));
        }
        key
    }

    fn lock_health(&self) -> std::sync::MutexGuard<'_, RedisHealth> {
        self.health.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use sluice_core::config::Source;

    /// The limiters of a config, checked as the router checks them.
    struct Limits {
        limits: RateLimits,
        config: Config,
    }

    impl Limits {
        async fn check(
            &self,
            principal: &str,
            upstream: &str,
            tool: &str,
            exposed: &str,
        ) -> Result<(), Duration> {
            let scope = sluice_core::policy::admit::rate_scope(&self.config, upstream, tool);
            let key = (principal.to_owned(), exposed.to_owned());
            self.limits.check(scope, upstream, tool, key).await
        }
    }

    fn limits(toml: &str) -> Limits {
        let config = Config::from_toml(
            Source {
                name: "t.toml",
                text: toml,
            },
            &|_| None,
        )
        .unwrap();
        Limits {
            limits: RateLimits::new(&config),
            config,
        }
    }

    #[tokio::test]
    async fn the_most_specific_rate_applies_per_principal_and_tool() {
        let l = limits(
            "[ratelimit]\ndefault = \"3/h\"\n\
             [[upstream]]\nname = \"a\"\ncommand = \"x\"\nrate_limit = \"2/h\"\ntool_rate_limit = { t = \"1/h\", free = \"off\" }\n\
             [[upstream]]\nname = \"b\"\ncommand = \"x\"\n",
        );
        // a.t: 1 per hour.
        assert!(l.check("alice", "a", "t", "a__t").await.is_ok());
        let wait = l.check("alice", "a", "t", "a__t").await.unwrap_err();
        assert!(wait > Duration::from_secs(3000), "{wait:?}");
        // Another principal has its own allowance.
        assert!(l.check("bob", "a", "t", "a__t").await.is_ok());
        // a.u: the upstream's 2 per hour.
        assert!(l.check("alice", "a", "u", "a__u").await.is_ok());
        assert!(l.check("alice", "a", "u", "a__u").await.is_ok());
        assert!(l.check("alice", "a", "u", "a__u").await.is_err());
        // a.free: off.
        for _ in 0..100 {
            assert!(l.check("alice", "a", "free", "a__free").await.is_ok());
        }
        // b.v: the default 3 per hour.
        for _ in 0..3 {
            assert!(l.check("alice", "b", "v", "b__v").await.is_ok());
        }
        assert!(l.check("alice", "b", "v", "b__v").await.is_err());
    }

    #[tokio::test]
    async fn a_changed_rate_starts_a_fresh_allowance_in_redis() {
        let url = redis_url();
        let (slow, prefix) = redis_config(&url, "default = \"1/h\"\n");
        let slow = limits(&slow);
        assert!(slow.check("alice", "u", "t", "u__t").await.is_ok());
        assert!(slow.check("alice", "u", "t", "u__t").await.is_err());
        // A reload to a faster rate (same prefix): not locked out for the
        // hour the old rate computed.
        let fast = limits(&format!(
            "[ratelimit]\nbackend = \"redis\"\nredis_url = \"{url}\"\nkey_prefix = \"{prefix}\"\ndefault = \"100/s\"\n"
        ));
        assert!(fast.check("alice", "u", "t", "u__t").await.is_ok());
    }

    #[tokio::test]
    async fn off_by_default_setting() {
        let l = limits("[ratelimit]\ndefault = \"off\"\n");
        for _ in 0..1000 {
            assert!(l.check("p", "u", "t", "u__t").await.is_ok());
        }
    }

    /// The Redis of the test services (scripts/services.sh); its absence
    /// fails the test rather than skipping it.
    fn redis_url() -> String {
        std::env::var("SLUICE_TEST_REDIS_URL").unwrap_or_else(|_| {
            panic!(
                "SLUICE_TEST_REDIS_URL is not set: start the test services first, eval \"$(scripts/services.sh start)\""
            )
        })
    }

    /// A config whose keys no other test run shares.
    fn redis_config(url: &str, rates: &str) -> (String, String) {
        let prefix = format!(
            "sluice-test:{}:{}:",
            std::process::id(),
            rand::random::<u64>()
        );
        let toml = format!(
            "[ratelimit]\nbackend = \"redis\"\nredis_url = \"{url}\"\nkey_prefix = \"{prefix}\"\n{rates}"
        );
        (toml, prefix)
    }

    async fn redis_keys(prefix: &str) -> Vec<(String, i64)> {
        let client = redis::Client::open(redis_url()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{prefix}*"))
            .query_async(&mut conn)
            .await
            .unwrap();
        let mut out = Vec::new();
        for key in keys {
            let ttl: i64 = redis::cmd("PTTL")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap();
            out.push((key, ttl));
        }
        out
    }

    #[tokio::test]
    async fn replicas_on_one_redis_spend_one_allowance() {
        let (toml, prefix) = redis_config(&redis_url(), "default = \"5/min\"\n");
        let a = limits(&toml);
        let b = limits(&toml);
        let mut passed = 0;
        let mut refused = Vec::new();
        for i in 0..8 {
            let replica = if i % 2 == 0 { &a } else { &b };
            match replica.check("alice", "u", "t", "u__t").await {
                Ok(()) => passed += 1,
                Err(wait) => refused.push(wait),
            }
        }
        assert_eq!(passed, 5, "a burst of 5 across both replicas");
        assert_eq!(refused.len(), 3);
        // One call every 12 s after the burst, by Redis's clock.
        for wait in refused {
            assert!(
                wait > Duration::from_secs(10) && wait <= Duration::from_secs(12),
                "{wait:?}"
            );
        }
        // bob has his own allowance.
        assert!(b.check("bob", "u", "t", "u__t").await.is_ok());
        // Two keys, named by hashes only, expiring within the period.
        let keys = redis_keys(&prefix).await;
        assert_eq!(keys.len(), 2, "{keys:?}");
        for (key, ttl) in &keys {
            let tail = key.strip_prefix(&prefix).unwrap();
            assert!(
                tail.len() == 32 && tail.bytes().all(|c| c.is_ascii_hexdigit()),
                "{key}"
            );
            assert!(*ttl > 0 && *ttl <= 60_000, "{key}: {ttl}");
        }
    }

    #[tokio::test]
    async fn a_refused_call_passes_once_its_wait_is_over() {
        let (toml, _) = redis_config(&redis_url(), "default = \"2/s\"\n");
        let l = limits(&toml);
        assert!(l.check("p", "u", "t", "u__t").await.is_ok());
        assert!(l.check("p", "u", "t", "u__t").await.is_ok());
        let wait = l.check("p", "u", "t", "u__t").await.unwrap_err();
        assert!(wait <= Duration::from_millis(500), "{wait:?}");
        tokio::time::sleep(wait + Duration::from_millis(20)).await;
        assert!(l.check("p", "u", "t", "u__t").await.is_ok());
    }

    #[tokio::test]
    async fn without_redis_each_replica_limits_on_its_own() {
        // Nothing listens on port 1: every check falls back to the process.
        let (toml, _) = redis_config("redis://127.0.0.1:1/", "default = \"2/h\"\n");
        let a = limits(&toml);
        let b = limits(&toml);
        assert!(a.check("p", "u", "t", "u__t").await.is_ok());
        assert!(a.check("p", "u", "t", "u__t").await.is_ok());
        let wait = a.check("p", "u", "t", "u__t").await.unwrap_err();
        assert!(wait > Duration::from_secs(1700), "{wait:?}");
        // The other replica's own allowance is untouched.
        assert!(b.check("p", "u", "t", "u__t").await.is_ok());
    }
}
