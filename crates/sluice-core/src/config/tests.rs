#![allow(clippy::unwrap_used)]
use std::time::Duration;

use super::*;
use crate::config::testing::{errors, parse};

#[test]
fn defaults() {
    let c = parse("").expect("empty config is valid");
    assert_eq!(c.server, ServerConfig::default());
    assert_eq!(c.server.listen.to_string(), DEFAULT_LISTEN);
    assert!(c.upstreams.is_empty());
}

#[test]
fn full_config() {
    let text = r#"
[server]
listen = "127.0.0.1:9000"
separator = "."
request_timeout = "5s"

[[upstream]]
name = "files"
command = "node"
args = ["server.js", "/tmp"]
env = { TOKEN = "${MY_TOKEN}", PLAIN = "x" }
cwd = "/tmp"
trusted = true

[[upstream]]
name = "remote"
url = "http://127.0.0.1:3101/mcp"
headers = { Authorization = "Bearer ${MY_TOKEN}" }
"#;
    let env = |k: &str| (k == "MY_TOKEN").then(|| "s3cret".to_owned());
    let c = Config::from_toml(Source { name: "f", text }, &env).expect("valid");
    assert_eq!(c.server.separator, ".");
    assert_eq!(c.server.request_timeout, Duration::from_secs(5));
    assert_eq!(c.upstreams.len(), 2);
    let UpstreamTransport::Stdio { env, args, .. } = &c.upstreams[0].transport else {
        panic!("stdio expected")
    };
    assert_eq!(env.get("TOKEN").map(String::as_str), Some("s3cret"));
    assert_eq!(args, &["server.js", "/tmp"]);
    assert!(c.upstreams[0].trusted);
    let UpstreamTransport::Http { headers, .. } = &c.upstreams[1].transport else {
        panic!("http expected")
    };
    assert_eq!(headers["Authorization"], "Bearer s3cret");
    // Credentials never show in Debug output.
    assert!(!format!("{c:?}").contains("s3cret"));
}

#[test]
fn unknown_keys_are_errors_with_position() {
    let e = errors("[server]\nlisten = \"127.0.0.1:1\"\nlistn = \"x\"\n");
    assert_eq!(
        e,
        [
            "sluice.toml:3:1: server.listn: unknown key; did you mean `listen`? (allowed: listen, separator, request_timeout, session_idle_timeout, max_sessions, session_max_age, startup_timeout, shutdown_grace, allowed_origins, public_url, connections)"
        ]
    );
    let e = errors("[[upstream]]\nname = \"a\"\ncommand = \"x\"\ncomand = \"y\"\n");
    assert!(
        e[0].starts_with(
            "sluice.toml:4:1: upstream[0].comand: unknown key; did you mean `command`?"
        ),
        "{}",
        e[0]
    );
}

#[test]
fn a_port_too_large_is_refused_with_its_range() {
    assert_eq!(
        errors("[server]\nlisten = \"127.0.0.1:99999\"\n[metrics]\nlisten = \"[::1]:70000\"\n"),
        [
            "sluice.toml:2:10: server.listen: \"127.0.0.1:99999\": port 99999 is out of range (allowed: 0 to 65535)",
            "sluice.toml:4:10: metrics.listen: \"[::1]:70000\": port 70000 is out of range (allowed: 0 to 65535)",
        ]
    );
}

#[test]
fn every_problem_is_reported_with_key_value_and_range() {
    let text = r#"
[server]
listen = "localhost"
separator = "/"
request_timeout = "0s"
session_idle_timeout = "soon"

[[upstream]]
name = "Bad Name"
command = "x"

[[upstream]]
name = "dup"
url = "ftp://x"

[[upstream]]
name = "dup"
command = "y"
env = { K = "${NOPE}" }

[[upstream]]
name = "neither"
"#;
    let e = errors(text);
    let expected = [
        "sluice.toml:3:10: server.listen: \"localhost\" is not an IP:port address",
        "sluice.toml:4:13: server.separator: \"/\": must be 1 to 8 characters",
        "sluice.toml:5:19: server.request_timeout: \"0s\" is out of range (allowed: 1s to 3600s",
        "sluice.toml:6:24: server.session_idle_timeout: \"soon\" is not a duration",
        "sluice.toml:9:8: upstream[0].name: \"Bad Name\": must be 1 to 64 characters from [a-z0-9_-]",
        "sluice.toml:14:7: upstream[1].url: \"ftp://x\": must start with http:// or https://",
        "sluice.toml:19:13: upstream[2].env.K: refers to ${NOPE}, which is not set",
        "sluice.toml:22:8: upstream[3]: needs `command` (a stdio child) or `url`",
        "sluice.toml:17:8: upstream[2].name: \"dup\" is already the name of upstream[1]",
    ];
    assert_eq!(e.len(), expected.len(), "{e:#?}");
    for want in expected {
        assert!(
            e.iter().any(|got| got.starts_with(want)),
            "missing {want:?} in {e:#?}"
        );
    }
}

#[test]
fn prefix_can_be_turned_off_per_upstream() {
    let c = parse("[[upstream]]\nname = \"conf\"\ncommand = \"x\"\nprefix = false\n\n[[upstream]]\nname = \"git\"\ncommand = \"y\"\n").expect("valid");
    let naming = c.naming();
    assert_eq!(
        naming.exposed("conf", "test_simple_text"),
        "test_simple_text"
    );
    assert_eq!(naming.exposed("git", "log"), "git__log");
}
