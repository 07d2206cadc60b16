//! Redaction on the surfaces beyond results, through the real binary: a
//! secret in a tool's description is neither served nor written to
//! `sluice.lock` (and `sluice lock` names the entry); an upstream's stderr
//! reaches sluice's log redacted.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::*;
use serde_json::json;

// SAFETY of the values: all fake, generated in their providers' formats.
const GITHUB: &str = "ghp_Q7kN2m4p6r8t0v2x4z6b8d0f2h4j6l8n0p2r";
const AWS: &str = "AKIAQ7KN2M4P6R8T0V2X";

fn lock(config: &std::path::Path) -> std::process::Output {
    Command::new(sluice_bin())
        .args(["lock", "--config"])
        .arg(config)
        .env("SLUICE_LOG", "info")
        .output()
        .unwrap()
}

#[tokio::test]
async fn a_secret_in_a_description_is_neither_served_nor_locked() {
    let suffix = format!("Authenticate with {GITHUB} first.");
    let (dir, config) = write_config(&fixture_upstream(
        "fx",
        &["--description-suffix", suffix.as_str()],
    ));
    let out = lock(&config);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("tools/list \"echo\": 1 secret(s) redacted"),
        "the entry is named: {log}"
    );
    let locked = std::fs::read_to_string(dir.path().join("sluice.lock")).unwrap();
    assert!(!locked.contains(GITHUB), "{locked}");
    assert!(
        locked.contains("Authenticate with [redacted] first."),
        "{locked}"
    );
    // Served redacted, and the served definition is the locked one: no
    // drift, the tool is listed.
    let mut sluice = StdioSluice::start_at(&config).await;
    sluice.initialize(json!({})).await;
    let tools = sluice.request(1, "tools/list", json!({})).await;
    let text = tools.to_string();
    assert!(!text.contains(GITHUB), "{text}");
    let echo = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "fx__echo")
        .cloned()
        .unwrap_or_default();
    assert!(
        echo["description"]
            .as_str()
            .unwrap_or_default()
            .ends_with("Authenticate with [redacted] first."),
        "{text}"
    );
    drop(dir);
}

#[test]
fn an_upstream_stderr_line_is_logged_redacted() {
    let script = format!(
        "echo \"booting with GITHUB_TOKEN={GITHUB} and key {AWS}\" >&2; exec {}",
        fixture_bin()
    );
    let config = format!(
        "[[upstream]]\nname = \"fx\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nallow_dangerous = true\n"
    );
    let (dir, path) = write_config(&config);
    let out = lock(&path);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let log = String::from_utf8_lossy(&out.stderr);
    let all = format!("{log}{}", String::from_utf8_lossy(&out.stdout));
    for secret in [GITHUB, AWS] {
        assert!(!all.contains(secret), "{secret} in the log: {all}");
    }
    assert!(
        log.contains("booting with GITHUB_TOKEN=[redacted] and key [redacted]"),
        "{log}"
    );
    drop(dir);
}
