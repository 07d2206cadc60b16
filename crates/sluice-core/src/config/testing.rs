//! What the config tests share: a `sluice.toml` text parsed in a given
//! environment, its problems as `sluice config check` prints them.

use super::{Config, Source};

/// An environment in which no variable is set.
pub(super) fn no_env(_: &str) -> Option<String> {
    None
}

/// Parses `text` as `sluice.toml`, with `env` as the environment.
pub(super) fn parse_with(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, Vec<String>> {
    Config::from_toml(
        Source {
            name: "sluice.toml",
            text,
        },
        env,
    )
    .map_err(|ds| ds.iter().map(ToString::to_string).collect())
}

/// Parses `text` with no variable set.
pub(crate) fn parse(text: &str) -> Result<Config, Vec<String>> {
    parse_with(text, &no_env)
}

/// The problems of `text`, which must have some, with no variable set.
pub(super) fn errors(text: &str) -> Vec<String> {
    parse(text).expect_err("expected errors")
}

/// The environment of the security tests: a token long enough, one too
/// short to be a token, and a Redis password.
pub(super) mod secrets {
    use crate::config::Config;

    fn env(key: &str) -> Option<String> {
        match key {
            "ALICE_TOKEN" => Some("alice-0123456789abcdef".into()),
            "SHORT" => Some("short".into()),
            "REDIS_PASSWORD" => Some("s3cret-redis-pw".into()),
            _ => None,
        }
    }

    /// Parses `text` in this environment.
    pub(in crate::config) fn parse(text: &str) -> Result<Config, Vec<String>> {
        super::parse_with(text, &env)
    }

    /// The problems of `text`, which must have some, in this environment.
    pub(in crate::config) fn errors(text: &str) -> Vec<String> {
        parse(text).expect_err("should be refused")
    }
}
