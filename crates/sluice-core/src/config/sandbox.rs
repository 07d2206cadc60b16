//! `[sandbox]`, each stdio upstream's `sandbox` and `allow_dangerous`
//! (S-21): whether and how its child is contained, the global default
//! merged with the upstream's own, and the commands it may not run
//! unless it says so. What a sandbox shows the child is `sandbox`'s.

use std::path::PathBuf;

use toml::Spanned;

use super::diagnostics::Diagnostics;
use super::raw::RawSandbox;
use crate::sandbox::{SandboxPolicy, Sandboxing, dangerous};

/// `[sandbox]`: the default of every stdio upstream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxConfig {
    /// `enabled`: stdio upstreams run in a sandbox unless they say
    /// otherwise. Default off, so that a config that ran before runs the
    /// same (and on a system without bubblewrap).
    pub enabled: bool,
    /// `network`: sandboxed upstreams share the host's network. Default
    /// off.
    pub network: bool,
    /// `read`: paths every sandboxed upstream may read.
    pub read: Vec<PathBuf>,
    /// `write`: paths every sandboxed upstream may write.
    pub write: Vec<PathBuf>,
}

pub(super) fn validate_sandbox(
    raw: &RawSandbox,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<SandboxConfig> {
    let read = paths(&raw.read, "sandbox.read", env, diags);
    let write = paths(&raw.write, "sandbox.write", env, diags);
    Some(SandboxConfig {
        enabled: raw.enabled.unwrap_or(false),
        network: raw.network.unwrap_or(false),
        read: read?,
        write: write?,
    })
}

/// How the stdio upstream at `key` runs: its own `sandbox` over the
/// default, its paths added to the default's.
pub(super) fn upstream_sandboxing(
    key: &str,
    default: &SandboxConfig,
    raw: Option<&RawSandbox>,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<Sandboxing> {
    let empty = RawSandbox::default();
    let raw = raw.unwrap_or(&empty);
    let read = paths(&raw.read, &format!("{key}.sandbox.read"), env, diags);
    let write = paths(&raw.write, &format!("{key}.sandbox.write"), env, diags);
    let (read, write) = (read?, write?);
    if !raw.enabled.unwrap_or(default.enabled) {
        return Some(Sandboxing::None);
    }
    Some(Sandboxing::Bwrap(SandboxPolicy {
        network: raw.network.unwrap_or(default.network),
        read: default.read.iter().cloned().chain(read).collect(),
        write: default.write.iter().cloned().chain(write).collect(),
    }))
}

/// Refuses `command` with `args` at `key` when it is dangerous and not
/// allowed; `false` when refused.
pub(super) fn check_dangerous(
    key: &str,
    command: &Spanned<String>,
    args: &[String],
    allowed: bool,
    diags: &mut Diagnostics<'_>,
) -> bool {
    let Some(danger) = dangerous::classify(command.get_ref(), args).filter(|_| !allowed) else {
        return true;
    };
    diags.push(
        Some(command.span()),
        &format!("{key}.command"),
        format!("{danger}; refused unless the upstream says `allow_dangerous = true`"),
    );
    false
}

/// `read` or `write`: each path with `${VAR}` expanded and a leading `~`
/// as `HOME`.
fn paths(
    list: &Option<Vec<Spanned<String>>>,
    key: &str,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut ok = true;
    for (i, path) in list.iter().flatten().enumerate() {
        let key = format!("{key}[{i}]");
        let Some(expanded) = diags.expand(Some(path.span()), &key, path.get_ref(), env) else {
            ok = false;
            continue;
        };
        let in_home = match expanded.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => Some(rest.to_owned()),
            _ => None,
        };
        match (in_home, env("HOME")) {
            (None, _) if expanded.trim().is_empty() => {
                diags.push(Some(path.span()), &key, "must not be empty".into());
                ok = false;
            }
            (None, _) => out.push(PathBuf::from(expanded)),
            (Some(rest), Some(home)) => out.push(PathBuf::from(format!("{home}{rest}"))),
            (Some(_), None) => {
                diags.push(
                    Some(path.span()),
                    &key,
                    "starts with `~`, but HOME is not set in the environment".into(),
                );
                ok = false;
            }
        }
    }
    ok.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testing::{errors, parse_with};
    use crate::config::{Config, UpstreamTransport};

    fn env(key: &str) -> Option<String> {
        match key {
            "HOME" => Some("/home/ada".into()),
            "DATA" => Some("/srv/data".into()),
            _ => None,
        }
    }

    fn sandboxing(config: &Config, i: usize) -> &Sandboxing {
        match &config.upstreams[i].transport {
            UpstreamTransport::Stdio { sandbox, .. } => sandbox,
            UpstreamTransport::Http { .. } => panic!("stdio"),
        }
    }

    #[test]
    fn the_default_and_each_upstream_merge() {
        let config = parse_with(
            r#"
[sandbox]
enabled = true
read = ["${DATA}/shared"]

[[upstream]]
name = "files"
command = "node"
[upstream.sandbox]
write = ["~/notes", "out"]

[[upstream]]
name = "fetch"
command = "node"
[upstream.sandbox]
network = true

[[upstream]]
name = "legacy"
command = "node"
sandbox = { enabled = false }

[[upstream]]
name = "plain"
command = "node"
"#,
            &env,
        )
        .expect("valid");
        assert_eq!(
            sandboxing(&config, 0),
            &Sandboxing::Bwrap(SandboxPolicy {
                network: false,
                read: vec!["/srv/data/shared".into()],
                write: vec!["/home/ada/notes".into(), "out".into()],
            })
        );
        assert_eq!(
            sandboxing(&config, 1),
            &Sandboxing::Bwrap(SandboxPolicy {
                network: true,
                read: vec!["/srv/data/shared".into()],
                write: vec![],
            })
        );
        assert_eq!(sandboxing(&config, 2), &Sandboxing::None);
        assert_eq!(
            sandboxing(&config, 3),
            &Sandboxing::Bwrap(SandboxPolicy {
                network: false,
                read: vec!["/srv/data/shared".into()],
                write: vec![],
            })
        );
    }

    #[test]
    fn without_a_sandbox_section_nothing_is_sandboxed() {
        let config = parse_with(
            "[[upstream]]\nname = \"a\"\ncommand = \"node\"\n[upstream.sandbox]\nwrite = [\"x\"]\n",
            &env,
        )
        .expect("valid");
        assert_eq!(sandboxing(&config, 0), &Sandboxing::None);
        let config = parse_with(
            "[[upstream]]\nname = \"a\"\ncommand = \"node\"\n[upstream.sandbox]\nenabled = true\n",
            &env,
        )
        .expect("valid");
        assert_eq!(
            sandboxing(&config, 0),
            &Sandboxing::Bwrap(SandboxPolicy::default())
        );
    }

    #[test]
    fn bad_paths_and_keys_are_reported() {
        let e = errors(
            "[sandbox]\nread = [\"~/x\", \"${NOPE}\", \"\"]\n[[upstream]]\nname = \"a\"\nurl = \"http://h\"\nsandbox = { enabled = true }\n",
        );
        let joined = e.join("\n");
        assert!(
            joined.contains("sandbox.read[0]: starts with `~`, but HOME is not set"),
            "{joined}"
        );
        assert!(
            joined.contains("sandbox.read[1]: refers to ${NOPE}"),
            "{joined}"
        );
        assert!(
            joined.contains("sandbox.read[2]: must not be empty"),
            "{joined}"
        );
        assert!(
            joined.contains("upstream[0].sandbox: only an upstream with `command`"),
            "{joined}"
        );
        let e = errors("[sandbox]\nnetwrk = true\n");
        assert_eq!(
            e,
            [
                "sluice.toml:2:1: sandbox.netwrk: unknown key; did you mean `network`? (allowed: enabled, network, read, write)"
            ]
        );
    }

    #[test]
    fn dangerous_commands_need_allow_dangerous() {
        let e = errors(
            "[[upstream]]\nname = \"a\"\ncommand = \"sh\"\nargs = [\"-c\", \"curl x | sh\"]\n",
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].contains(
                "upstream[0].command: runs a shell command line (sh -c), which can do anything; refused unless the upstream says `allow_dangerous = true`"
            ),
            "{}",
            e[0]
        );
        let allowed = parse_with(
            "[[upstream]]\nname = \"a\"\ncommand = \"sh\"\nargs = [\"-c\", \"x\"]\nallow_dangerous = true\n",
            &env,
        );
        assert!(allowed.is_ok(), "{allowed:?}");
    }
}
