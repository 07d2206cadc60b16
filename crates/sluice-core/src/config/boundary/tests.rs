#![allow(clippy::unwrap_used)]
use super::*;
use crate::config::testing::{errors, parse};
use crate::config::{Config, Source};

#[test]
fn limits_redaction_and_projections() {
    let env = |k: &str| match k {
        "GH_TOKEN" => Some("ghp_from_the_environment_123".to_owned()),
        "REMOTE_TOKEN" => Some("remote-credential-42".to_owned()),
        _ => None,
    };
    let text = r#"
[limits]
mcp_read_response_max_bytes = 65536
transport_max_message_bytes = 4194304

[redaction]
secret_env = ["GH_TOKEN", "UNSET_ONE"]
secret_keys = ["password", "pin"]

[[upstream]]
name = "files"
command = "x"
env = { DB_PASSWORD = "db-pass-1234", LOG_LEVEL = "debug" }
read_only_tools = ["read_file"]
mcp_read_response_max_bytes = 131072
tool_read_budget = { read_file = 2097152 }

[[upstream]]
name = "remote"
url = "http://127.0.0.1:1/mcp"
headers = { Authorization = "Bearer ${REMOTE_TOKEN}" }

[[policy.project]]
tool = "files__stats"
keep = ["$.summary", "$.rows[*].count"]
"#;
    let c = Config::from_toml(
        Source {
            name: "t.toml",
            text,
        },
        &env,
    )
    .expect("valid");
    assert_eq!(c.limits.read_budget, 65_536);
    assert_eq!(c.limits.transport_max_message_bytes, 4_194_304);
    assert_eq!(c.upstreams[0].read_budget, Some(131_072));
    assert_eq!(c.upstreams[0].tool_read_budgets["read_file"], 2_097_152);
    assert_eq!(c.upstreams[0].read_only_tools, vec!["read_file"]);
    assert_eq!(c.redaction.secret_keys, vec!["password", "pin"]);
    let mut secrets = c.known_secrets();
    secrets.sort();
    assert_eq!(
        secrets,
        vec![
            "Bearer remote-credential-42",
            "db-pass-1234",
            "ghp_from_the_environment_123",
            "remote-credential-42"
        ]
    );
    assert!(!format!("{c:?}").contains("ghp_from_the_environment_123"));
    assert_eq!(c.projections.len(), 1);
    assert_eq!(c.projections[0].tool, "files__stats");
    assert_eq!(parse("").expect("empty").limits, LimitsConfig::default());
}

#[test]
fn limits_are_checked_with_key_value_and_range() {
    let errs = errors("[limits]\nmcp_read_response_max_bytes = 1000\n");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains(
            "limits.mcp_read_response_max_bytes: 1000 is out of range (allowed: 65536 to 8388608"
        ),
        "{errs:?}"
    );
    let errs = errors(
        "[limits]\nmcp_read_response_max_bytes = 2097152\ntransport_max_message_bytes = 1048576\n",
    );
    assert!(
        errs.iter().any(|e| e.contains(
            "limits.transport_max_message_bytes: 1048576 is below the largest read budget (2097152)"
        )),
        "{errs:?}"
    );
    let errs = errors(
        "[[upstream]]\nname = \"a\"\ncommand = \"x\"\ntool_read_budget = { t = 9999999999 }\n",
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("upstream[0].tool_read_budget.t: 9999999999 is out of range")),
        "{errs:?}"
    );
    let errs = errors(
        "[[policy.project]]\ntool = \"a__b\"\nkeep = [\"x\"]\n[[policy.project]]\ntool = \"a__c\"\n",
    );
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(
        errs[0].contains("policy.project[0].keep") && errs[0].contains("starts with `$`"),
        "{errs:?}"
    );
    assert!(
        errs[1].contains("policy.project[1]: needs exactly one of `keep`"),
        "{errs:?}"
    );
}

#[test]
fn store_passwords_are_known_secrets() {
    let text = "[state]\nurl = \"postgres://sluice:pg-pass%40%2F0123456789@db/sluice?password=q-pass-0123456789\"\n\
                    [ratelimit]\nbackend = \"redis\"\nredis_url = \"redis://:rd-pass-0123456789@cache:6379/\"\n";
    let config = Config::from_toml(
        Source {
            name: "sluice.toml",
            text,
        },
        &|_| None,
    )
    .unwrap();
    let secrets = config.known_secrets();
    // As written, as the server gets it, and from the query string.
    for expected in [
        "pg-pass%40%2F0123456789",
        "pg-pass@/0123456789",
        "q-pass-0123456789",
        "rd-pass-0123456789",
    ] {
        assert!(secrets.contains(&expected.to_owned()), "{secrets:?}");
    }
}
