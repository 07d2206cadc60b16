//! `[[upstream]]`: the servers sluice fronts, how it reaches each (a stdio
//! child or a Streamable HTTP endpoint), and what is set per upstream:
//! trust, read budgets, call rates. Names are checked across upstreams too:
//! unique, and free of the separator.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use toml::Spanned;

use super::diagnostics::Diagnostics;
use super::raw::RawUpstream;
use super::sandbox::{SandboxConfig, check_dangerous, upstream_sandboxing};
use super::security::{Rate, Rlimits, rate, validate_rlimit};
use super::upstream_oauth::{UpstreamOAuth, validate_oauth};
use crate::boundary::budget::{DEFAULT_READ_BUDGET, MAX_READ_BUDGET, MIN_READ_BUDGET};
use crate::naming;
use crate::sandbox::Sandboxing;

/// One `[[upstream]]`.
#[derive(Clone, PartialEq)]
pub struct UpstreamConfig {
    /// `name`: unique, `[a-z0-9_-]`.
    pub name: String,
    /// How sluice reaches it.
    pub transport: UpstreamTransport,
    /// `trusted`: whether its tool annotations are believed (a
    /// `readOnlyHint` makes a tool's results reads only when it is).
    pub trusted: bool,
    /// `read_only_tools`: tools (by the upstream's names) whose results are
    /// reads, whatever their annotations say.
    pub read_only_tools: Vec<String>,
    /// `mcp_read_response_max_bytes`: this upstream's read budget, when it
    /// differs from `[limits]`.
    pub read_budget: Option<usize>,
    /// `tool_read_budget`: per-tool read budgets, by the upstream's names.
    pub tool_read_budgets: BTreeMap<String, usize>,
    /// `prefix`: whether its tool and prompt names are shown as
    /// `<name><separator><tool>` (default) or as they are.
    pub prefixed: bool,
    /// `rate_limit`: its tools' call rate, when it differs from
    /// `[ratelimit] default` (`Some(None)`: off).
    pub rate_limit: Option<Option<Rate>>,
    /// `tool_rate_limit`: per-tool rates, by the upstream's names.
    pub tool_rate_limits: BTreeMap<String, Option<Rate>>,
}

/// How sluice reaches an upstream.
#[derive(Clone, PartialEq)]
pub enum UpstreamTransport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// `command`.
        command: String,
        /// `args`.
        args: Vec<String>,
        /// `env`, with `${VAR}` expanded. The child gets only this plus
        /// `PATH` and `HOME`.
        env: BTreeMap<String, String>,
        /// `cwd`.
        cwd: Option<PathBuf>,
        /// `rlimit`: resource limits of the child.
        rlimit: Rlimits,
        /// `sandbox` over `[sandbox]`: how the child is contained.
        sandbox: Sandboxing,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// `url`.
        url: String,
        /// `headers`, with `${VAR}` expanded.
        headers: BTreeMap<String, String>,
        /// `allow_private`: the URL may resolve to a loopback, private or
        /// link-local address (S-10 refuses those by default). It holds for
        /// the upstream's OAuth URLs too.
        allow_private: bool,
        /// `auth = "oauth"`: how sluice logs in to it.
        oauth: Option<UpstreamOAuth>,
    },
}

impl fmt::Debug for UpstreamConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamConfig")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("trusted", &self.trusted)
            .field("read_only_tools", &self.read_only_tools)
            .field("read_budget", &self.read_budget)
            .field("tool_read_budgets", &self.tool_read_budgets)
            .field("prefixed", &self.prefixed)
            .field("rate_limit", &self.rate_limit)
            .field("tool_rate_limits", &self.tool_rate_limits)
            .finish()
    }
}

impl fmt::Debug for UpstreamTransport {
    /// Values of `env` and `headers` are credentials: only their keys show.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpstreamTransport::Stdio {
                command,
                args,
                env,
                cwd,
                rlimit,
                sandbox,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .field("rlimit", rlimit)
                .field("sandbox", sandbox)
                .finish(),
            UpstreamTransport::Http {
                url,
                headers,
                allow_private,
                oauth,
            } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .field("allow_private", allow_private)
                .field("oauth", oauth)
                .finish(),
        }
    }
}

/// `upstream[i]`. Every problem is reported, unless the transport cannot
/// be told (neither or both of `command` and `url`): then only that one.
pub(super) fn validate_upstream(
    i: usize,
    raw: &RawUpstream,
    sandbox: &SandboxConfig,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<UpstreamConfig> {
    let key = format!("upstream[{i}]");
    let name = validate_name(&key, &raw.name, diags);
    let transport = match (&raw.command, &raw.url) {
        (Some(command), None) => stdio_transport(&key, raw, command, sandbox, env, diags),
        (None, Some(url)) => http_transport(&key, raw, url, env, diags),
        (Some(_), Some(url)) => {
            diags.push(
                Some(url.span()),
                &key,
                "has both `command` and `url`: choose one (stdio child or Streamable HTTP)".into(),
            );
            return None;
        }
        (None, None) => {
            diags.push(
                Some(raw.name.span()),
                &key,
                "needs `command` (a stdio child) or `url` (a Streamable HTTP server)".into(),
            );
            return None;
        }
    };
    // From here on, `None` is a refused value (reported); an absent key is
    // `Some(None)` or an empty table.
    let read_budget = match &raw.mcp_read_response_max_bytes {
        None => Some(None),
        some => budget(some, &format!("{key}.mcp_read_response_max_bytes"), diags).map(Some),
    };
    let tool_read_budgets = checked_entries(
        &raw.tool_read_budget,
        &format!("{key}.tool_read_budget"),
        |b, key| budget(&Some(b.clone()), key, diags),
    );
    let rate_limit = match &raw.rate_limit {
        None => Some(None),
        Some(r) => rate(r, &format!("{key}.rate_limit"), diags).map(Some),
    };
    let tool_rate_limits = checked_entries(
        &raw.tool_rate_limit,
        &format!("{key}.tool_rate_limit"),
        |r, key| rate(r, key, diags),
    );
    Some(UpstreamConfig {
        name: name?,
        transport: transport?,
        trusted: raw.trusted.unwrap_or(false),
        read_only_tools: raw.read_only_tools.clone().unwrap_or_default(),
        read_budget: read_budget?,
        tool_read_budgets: tool_read_budgets?,
        prefixed: raw.prefix.unwrap_or(true),
        rate_limit: rate_limit?,
        tool_rate_limits: tool_rate_limits?,
    })
}

/// `name`, on its own (uniqueness is [`check_names`]'s).
fn validate_name(key: &str, name: &Spanned<String>, diags: &mut Diagnostics<'_>) -> Option<String> {
    if naming::is_valid_upstream_name(name.get_ref()) {
        return Some(name.get_ref().clone());
    }
    diags.push(
        Some(name.span()),
        &format!("{key}.name"),
        format!(
            "{:?}: must be 1 to 64 characters from [a-z0-9_-]",
            name.get_ref()
        ),
    );
    None
}

/// An upstream with `command`: a child, which takes no HTTP keys.
fn stdio_transport(
    key: &str,
    raw: &RawUpstream,
    command: &Spanned<String>,
    sandbox: &SandboxConfig,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<UpstreamTransport> {
    let env_map = expanded(&raw.env, &format!("{key}.env"), env, diags);
    let mut ok = true;
    if raw.headers.is_some() {
        diags.push(
            Some(raw.name.span()),
            &format!("{key}.headers"),
            "only an upstream with `url` takes headers; a stdio upstream takes `env`".into(),
        );
        ok = false;
    }
    if command.get_ref().trim().is_empty() {
        diags.push(
            Some(command.span()),
            &format!("{key}.command"),
            "must not be empty".into(),
        );
        ok = false;
    }
    for (field, set) in [
        ("allow_private", raw.allow_private.is_some()),
        ("auth", raw.auth.is_some()),
        ("oauth", raw.oauth.is_some()),
    ] {
        if set {
            diags.push(
                Some(raw.name.span()),
                &format!("{key}.{field}"),
                format!("only an upstream with `url` takes {field}"),
            );
            ok = false;
        }
    }
    let rlimit = match &raw.rlimit {
        None => Some(Rlimits::default()),
        Some(r) => validate_rlimit(r, key, diags),
    };
    let args = raw.args.clone().unwrap_or_default();
    let allow_dangerous = raw.allow_dangerous.unwrap_or(false);
    ok &= check_dangerous(key, command, &args, allow_dangerous, diags);
    let sandbox = upstream_sandboxing(key, sandbox, raw.sandbox.as_ref(), env, diags);
    let transport = UpstreamTransport::Stdio {
        command: command.get_ref().clone(),
        args,
        env: env_map?,
        cwd: raw.cwd.as_ref().map(PathBuf::from),
        rlimit: rlimit?,
        sandbox: sandbox?,
    };
    ok.then_some(transport)
}

/// An upstream with `url`: Streamable HTTP, which takes no child keys.
fn http_transport(
    key: &str,
    raw: &RawUpstream,
    url: &Spanned<String>,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<UpstreamTransport> {
    let headers = expanded(&raw.headers, &format!("{key}.headers"), env, diags);
    let mut ok = true;
    if let Err(msg) = check_url(url.get_ref()) {
        diags.push(
            Some(url.span()),
            &format!("{key}.url"),
            format!("{:?}: {msg}", url.get_ref()),
        );
        ok = false;
    }
    for field in [
        ("args", raw.args.is_some()),
        ("env", raw.env.is_some()),
        ("cwd", raw.cwd.is_some()),
        ("rlimit", raw.rlimit.is_some()),
        ("sandbox", raw.sandbox.is_some()),
        ("allow_dangerous", raw.allow_dangerous.is_some()),
    ]
    .iter()
    .filter(|f| f.1)
    {
        diags.push(
            Some(url.span()),
            &format!("{key}.{}", field.0),
            "only an upstream with `command` takes args, env, cwd, rlimit, sandbox and allow_dangerous".into(),
        );
        ok = false;
    }
    let oauth = validate_oauth(key, raw, env, diags);
    let transport = UpstreamTransport::Http {
        url: url.get_ref().clone(),
        headers: headers?,
        allow_private: raw.allow_private.unwrap_or(false),
        oauth: oauth?,
    };
    ok.then_some(transport)
}

/// A read budget of this upstream or of one of its tools, in the range
/// `[limits]` allows.
fn budget(field: &Option<Spanned<i64>>, key: &str, diags: &mut Diagnostics<'_>) -> Option<usize> {
    diags.integer(
        field,
        key,
        DEFAULT_READ_BUDGET,
        (MIN_READ_BUDGET, MAX_READ_BUDGET),
    )
}

/// `env` or `headers`, with every `${VAR}` expanded.
fn expanded(
    table: &Option<BTreeMap<String, Spanned<String>>>,
    key: &str,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<BTreeMap<String, String>> {
    checked_entries(table, key, |value, key| {
        diags.expand(Some(value.span()), key, value.get_ref(), env)
    })
}

/// Every entry of a table (`env`, `headers`, `tool_*`), each checked by
/// `check` with its key path `<key>.<name>`: `None` when any fails (each
/// failure is reported by `check`, so all are).
fn checked_entries<V, T>(
    table: &Option<BTreeMap<String, V>>,
    key: &str,
    mut check: impl FnMut(&V, &str) -> Option<T>,
) -> Option<BTreeMap<String, T>> {
    let mut out = BTreeMap::new();
    let mut ok = true;
    for (name, value) in table.iter().flatten() {
        match check(value, &format!("{key}.{name}")) {
            Some(checked) => {
                out.insert(name.clone(), checked);
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// Upstream names are unique, and none contains the separator (which would
/// make exposed names harder to read back).
pub(super) fn check_names(
    raw: &[RawUpstream],
    separator: Option<&str>,
    diags: &mut Diagnostics<'_>,
) {
    for (i, up) in raw.iter().enumerate() {
        let name = up.name.get_ref();
        if let Some(first) = raw[..i].iter().position(|u| u.name.get_ref() == name) {
            diags.push(
                Some(up.name.span()),
                &format!("upstream[{i}].name"),
                format!("{name:?} is already the name of upstream[{first}]; names must be unique"),
            );
        }
        if let Some(separator) = separator
            && name.contains(separator)
        {
            diags.push(
                Some(up.name.span()),
                &format!("upstream[{i}].name"),
                format!(
                    "{name:?} contains the separator {separator:?}; choose another name or separator"
                ),
            );
        }
    }
}

/// An upstream URL: http(s), with a host.
pub(super) fn check_url(url: &str) -> Result<(), &'static str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or("must start with http:// or https://")?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() {
        return Err("has no host");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::Duration;

    use super::*;
    use crate::config::testing::{errors, secrets};
    use crate::config::{Rate, parse_rate};

    #[test]
    fn names_must_not_contain_the_separator() {
        let e = errors("[[upstream]]\nname = \"a__b\"\ncommand = \"x\"\n");
        assert!(e[0].contains("contains the separator \"__\""), "{}", e[0]);
    }

    #[test]
    fn transports_take_only_their_own_keys() {
        let e = errors("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h\"\n");
        assert!(e[0].contains("has both `command` and `url`"), "{}", e[0]);
        let e = errors("[[upstream]]\nname = \"a\"\nurl = \"http://h\"\nargs = [\"x\"]\n");
        assert!(e[0].contains("upstream[0].args"), "{}", e[0]);
        let e = errors("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nheaders = {A = \"b\"}\n");
        assert!(e[0].contains("upstream[0].headers"), "{}", e[0]);
    }

    #[test]
    fn rates_and_rlimits() {
        assert_eq!(
            parse_rate("10/min"),
            Some(Rate {
                calls: 10,
                per: Duration::from_secs(60)
            })
        );
        assert_eq!(parse_rate("0/s"), None);
        assert_eq!(parse_rate("10/day"), None);
        let c = secrets::parse(
            "[ratelimit]\ndefault = \"off\"\n[[upstream]]\nname = \"a\"\ncommand = \"x\"\nrate_limit = \"5/s\"\ntool_rate_limit = { t = \"1/h\" }\nrlimit = { memory_bytes = 536870912, open_files = 64 }\n",
        )
        .unwrap();
        assert_eq!(c.ratelimit.default, None);
        let up = &c.upstreams[0];
        assert_eq!(up.rate_limit, Some(parse_rate("5/s")));
        assert_eq!(up.tool_rate_limits["t"], parse_rate("1/h"));
        let UpstreamTransport::Stdio { rlimit, .. } = &up.transport else {
            panic!("stdio");
        };
        assert_eq!(rlimit.memory_bytes, Some(536_870_912));
        assert_eq!(rlimit.cpu_seconds, None);
        let e = secrets::errors(
            "[ratelimit]\ndefault = \"lots\"\n[[upstream]]\nname = \"a\"\ncommand = \"x\"\nrlimit = { open_files = 1 }\nallow_private = true\n",
        );
        let joined = e.join("\n");
        assert!(
            joined.contains("ratelimit.default: \"lots\": write calls per period"),
            "{joined}"
        );
        assert!(
            joined.contains("upstream[0].rlimit.open_files: 1 is out of range (allowed: 16 to"),
            "{joined}"
        );
        assert!(
            joined.contains("upstream[0].allow_private: only an upstream with `url`"),
            "{joined}"
        );
    }
}
