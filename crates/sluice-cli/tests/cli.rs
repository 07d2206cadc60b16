//! The command line: configuration errors, usage errors, mcp.json, and
//! shutdown.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::json;

fn sluice(args: &[&str]) -> std::process::Output {
    Command::new(sluice_bin()).args(args).output().unwrap()
}

#[test]
fn config_check_accepts_a_valid_config() {
    let (_dir, path) = write_config(&fixture_upstream("fx", &[]));
    let out = sluice(&["config", "check", "--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ok: 1 upstream(s): fx\n"
    );
}

#[test]
fn config_check_lists_every_problem_and_exits_78() {
    let (_dir, path) = write_config(
        "[server]\nrequest_timeout = \"0s\"\nlisten = \"nowhere\"\n\n[[upstream]]\nname = \"Bad\"\ncommand = \"x\"\n\n[[upstream]]\nname = \"h\"\nurl = \"http://127.0.0.1:1/mcp\"\nheaders = { A = \"${SLUICE_TEST_SURELY_UNSET}\" }\n",
    );
    let p = path.to_str().unwrap();
    let out = sluice(&["config", "check", "--config", p]);
    assert_eq!(out.status.code(), Some(78));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 5, "{err}");
    let expected = [
        format!("{p}:3:10: server.listen: \"nowhere\" is not an IP:port address"),
        format!("{p}:2:19: server.request_timeout: \"0s\" is out of range (allowed: 1s to 3600s"),
        format!("{p}:6:8: upstream[0].name: \"Bad\": must be 1 to 64 characters from [a-z0-9_-]"),
        format!(
            "{p}:12:17: upstream[1].headers.A: refers to ${{SLUICE_TEST_SURELY_UNSET}}, which is not set"
        ),
        "sluice: 4 configuration problem(s); nothing was started".to_owned(),
    ];
    for want in &expected {
        assert!(
            lines.iter().any(|l| l.starts_with(want.as_str())),
            "missing {want:?} in:\n{err}"
        );
    }
    // `serve` refuses to start on the same errors.
    let out = sluice(&["serve", "--config", p]);
    assert_eq!(out.status.code(), Some(78));
}

#[test]
fn config_check_refuses_a_config_that_would_serve_nothing_or_reach_nothing() {
    let (_dir, path) = write_config("[server]\nrequest_timeout = \"5s\"\n");
    let p = path.to_str().unwrap();
    let out = sluice(&["config", "check", "--config", p]);
    assert_eq!(out.status.code(), Some(78));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "{p}: upstream: no upstream is configured, so sluice would serve nothing: add an [[upstream]] with `command` (a stdio server) or `url` (a Streamable HTTP server), as in examples/sluice.toml\nsluice: 1 configuration problem(s)\n"
        )
    );
    let (_dir, path) =
        write_config("[[upstream]]\nname = \"local\"\nurl = \"http://127.0.0.1:3000/mcp\"\n");
    let p = path.to_str().unwrap();
    let out = sluice(&["config", "check", "--config", p]);
    assert_eq!(out.status.code(), Some(78));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "{p}: upstream[0].url: (\"local\") outbound request to 127.0.0.1 refused: address 127.0.0.1 is in 127.0.0.0/8 (loopback); set allow_private = true on this upstream (or issuer) if it is meant to be private\nsluice: 1 configuration problem(s)\n"
        )
    );
}

#[test]
fn unknown_keys_and_missing_files_are_configuration_errors() {
    let (_dir, path) = write_config("[server]\nlisen = \"127.0.0.1:1\"\n");
    let out = sluice(&["config", "check", "--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(78));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(
            "{}:2:1: server.lisen: unknown key; did you mean `listen`? (allowed: listen,",
            path.display()
        )),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = sluice(&["config", "check", "--config", "/nonexistent/sluice.toml"]);
    assert_eq!(out.status.code(), Some(78));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the configuration"));
}

#[test]
fn usage_errors_exit_64_and_help_exits_0() {
    assert_eq!(sluice(&["serve", "--no-such-flag"]).status.code(), Some(64));
    assert_eq!(sluice(&["frobnicate"]).status.code(), Some(64));
    assert_eq!(sluice(&["--help"]).status.code(), Some(0));
    let v = sluice(&["--version"]);
    assert_eq!(v.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&v.stdout).trim(),
        format!("sluice {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn mcp_json_files_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    let doc = json!({"mcpServers": {
        "My Fixture": {"command": fixture_bin(), "args": ["--era", "legacy"]},
        "remote": {"url": "http://127.0.0.1:9/mcp", "allowPrivate": true},
        "off": {"command": "nothing", "disabled": true}
    }});
    std::fs::write(&path, doc.to_string()).unwrap();
    let out = sluice(&["config", "check", "--mcp-json", path.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ok: 2 upstream(s): my-fixture, remote\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_ends_every_child_even_one_that_ignores_eof() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("child.pid");
    // A child that records its pid, and that stays alive after its stdin
    // closes (like server-everything 2025.12.18): only a signal ends it.
    let script = format!(
        "echo $$ > {}; exec {} --start hang",
        pidfile.display(),
        fixture_bin()
    );
    let config = format!(
        "[server]\nshutdown_grace = \"1s\"\nstartup_timeout = \"2s\"\n[[upstream]]\nname = \"stubborn\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nallow_dangerous = true\n"
    );
    let s = HttpSluice::start(&config).await;
    let mut pid = String::new();
    for _ in 0..100 {
        pid = std::fs::read_to_string(&pidfile)
            .unwrap_or_default()
            .trim()
            .to_owned();
        if !pid.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!pid.is_empty(), "the child started");
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    assert!(proc_dir.exists());
    let sluice_pid = s.child.id().unwrap().to_string();
    let status = Command::new("kill")
        .args(["-TERM", &sluice_pid])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let mut child = s.child;
    let exit = tokio::time::timeout(WAIT, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(exit.code(), Some(0));
    // A zombie counts as gone: its /proc entry says state Z.
    let alive = std::fs::read_to_string(proc_dir.join("stat")).is_ok_and(|s| !s.contains(") Z "));
    assert!(!alive, "the child {pid} outlived sluice");
}

#[tokio::test(flavor = "multi_thread")]
async fn children_get_only_the_configured_environment_and_limits_and_their_stderr_is_logged_by_name()
 {
    let dir = tempfile::tempdir().unwrap();
    let envfile = dir.path().join("env.txt");
    let script = format!(
        "env > {}; echo stderr-marker-42 >&2; exec {}",
        envfile.display(),
        fixture_bin()
    );
    let config = format!(
        "[[upstream]]\nname = \"envy\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nallow_dangerous = true\nenv = {{ GRANTED = \"granted-value-7\" }}\nrlimit = {{ open_files = 77, cpu_seconds = 3600 }}\n"
    );
    let (_cfg_dir, path) = write_config(&config);
    let mut child = tokio::process::Command::new(sluice_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .env("SLUICE_TEST_PARENT_SECRET", "must-not-leak")
        .env("SLUICE_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let (spawned, logged) = tokio::time::timeout(WAIT, async {
        let mut spawned = None;
        loop {
            let line = lines.next_line().await.unwrap().unwrap();
            if line.contains("spawned upstream") {
                spawned = Some(line);
            } else if line.contains("stderr-marker-42") {
                return (spawned, line);
            }
        }
    })
    .await
    .expect("the child's stderr reached sluice's log");
    assert!(logged.contains("upstream=envy"), "{logged}");
    // The spawn is on record with its pid and the names of its
    // environment, never the values.
    let spawned = spawned.expect("the spawn was logged before the child spoke");
    assert!(
        spawned.contains("envy") && spawned.contains("GRANTED"),
        "{spawned}"
    );
    assert!(!spawned.contains("granted-value-7"), "{spawned}");
    let pid: u32 = spawned
        .split("pid=Some(")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {spawned}"));
    // The limits were set before the spawn was logged; `sh` exec'd the
    // fixture, which keeps the pid.
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let row = |name: &str| {
        limits
            .lines()
            .find(|l| l.starts_with(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    assert!(
        row("Max open files").starts_with("Max open files 77 77"),
        "{limits}"
    );
    assert!(
        row("Max cpu time").starts_with("Max cpu time 3600 3600"),
        "{limits}"
    );
    let env = std::fs::read_to_string(&envfile).unwrap();
    let names: std::collections::BTreeSet<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    assert!(
        names.contains("GRANTED") && names.contains("PATH") && names.contains("HOME"),
        "{names:?}"
    );
    assert!(
        !env.contains("must-not-leak"),
        "the parent's environment leaked:\n{env}"
    );
    // sh itself adds PWD and SHLVL; nothing else may be there.
    let allowed = ["GRANTED", "PATH", "HOME", "PWD", "SHLVL", "_", "OLDPWD"];
    assert!(names.iter().all(|n| allowed.contains(n)), "{names:?}");
    child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_that_never_finishes_its_handshake_is_ended_before_the_next_try() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let script = format!(
        "echo $$ >> {}; exec {} --start hang",
        pids.display(),
        fixture_bin()
    );
    let config = format!(
        "[server]\nstartup_timeout = \"1s\"\nshutdown_grace = \"1s\"\n[[upstream]]\nname = \"stuck\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nallow_dangerous = true\n"
    );
    let s = HttpSluice::start(&config).await;
    // Several attempts (1 s each, backoff 250 ms, 500 ms, 1 s, ...).
    tokio::time::sleep(Duration::from_millis(4500)).await;
    let started: Vec<String> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert!(started.len() >= 2, "expected retries, got {started:?}");
    let alive: Vec<&String> = started
        .iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
        })
        .collect();
    assert!(
        alive.len() <= 1,
        "failed attempts left children running: {alive:?} of {started:?}"
    );
    drop(s);
}

#[test]
fn the_shipped_manifest_names_this_version_and_the_floor() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../mcp.json");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(manifest["name"], "sluice");
    assert_eq!(manifest["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(manifest["minProtocolVersion"], "2025-06-18");
    let types: Vec<&str> = manifest["transport"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["type"].as_str())
        .collect();
    assert_eq!(types, ["stdio", "http"]);
}

#[test]
fn a_taken_port_fails_before_any_upstream_is_spawned() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("spawned");
    let path = dir.path().join("sluice.toml");
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[[upstream]]\nname = \"marker\"\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"touch '{}'; sleep 30\"]\nallow_dangerous = true\n",
            marker.display()
        ),
    )
    .unwrap();
    let out = sluice(&["serve", "--config", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(70));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "sluice: cannot listen on 127.0.0.1:{port}: Address already in use"
        )) && err.contains("nothing was started"),
        "{err}"
    );
    assert!(!marker.exists(), "an upstream was spawned: {err}");
}

#[test]
fn color_always_colours_the_log_and_never_does_not() {
    let (_dir, path) = write_config(&fixture_upstream("fx", &[]));
    let p = path.to_str().unwrap();
    let log_of = |color: &str| {
        let out = Command::new(sluice_bin())
            .args(["--color", color, "serve", "--stdio", "--config", p])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let coloured = log_of("always");
    assert!(coloured.contains("stdin closed"), "{coloured}");
    assert!(coloured.contains('\u{1b}'), "{coloured}");
    let plain = log_of("never");
    assert!(plain.contains("stdin closed"), "{plain}");
    assert!(!plain.contains('\u{1b}'), "{plain}");
}

#[test]
fn completions_and_the_man_page_name_every_command() {
    let commands = [
        "serve",
        "lock",
        "check",
        "doctor",
        "audit",
        "config",
        "completions",
        "man",
    ];
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = sluice(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        for command in commands {
            assert!(
                script.contains(command),
                "{shell} lacks {command}:\n{script}"
            );
        }
    }
    // The bash script is bash.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("sluice.bash");
    std::fs::write(&script, sluice(&["completions", "bash"]).stdout).unwrap();
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        syntax.status.success(),
        "{}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    let out = sluice(&["man"]);
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH sluice 1"), "{page}");
    for command in commands {
        assert!(page.contains(command), "the man page lacks {command}");
    }
    let out = sluice(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for command in commands {
        assert!(
            help.contains(&format!("\n  {command} ")),
            "--help lacks {command}:\n{help}"
        );
    }
    let out = sluice(&["audit", "--help"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("--lockfile"));
}

#[test]
fn client_config_prints_each_clients_entry_and_merges_with_a_backup() {
    let out = sluice(&["client-config", "cursor"]);
    assert_eq!(out.status.code(), Some(0));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        printed,
        json!({"mcpServers": {"sluice": {"url": "http://127.0.0.1:8787/mcp"}}})
    );
    let out = sluice(&[
        "client-config",
        "claude-desktop",
        "--url",
        "http://127.0.0.1:9/mcp",
    ]);
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("takes stdio servers only"));

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mcp.json");
    let before = json!({"inputs": [], "servers": {"git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"]}}});
    std::fs::write(&file, before.to_string()).unwrap();
    let config = dir.path().join("sluice.toml");
    let out = sluice(&[
        "client-config",
        "vscode",
        "--stdio",
        "--config",
        config.to_str().unwrap(),
        "--write",
        "--file",
        file.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let exe = std::fs::canonicalize(sluice_bin()).unwrap();
    assert_eq!(
        after,
        json!({"inputs": [], "servers": {
            "git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"]},
            "sluice": {"type": "stdio", "command": exe.to_str().unwrap(),
                       "args": ["serve", "--stdio", "--config", config.to_str().unwrap()]}
        }})
    );
    let backup: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("mcp.json.bak")).unwrap())
            .unwrap();
    assert_eq!(backup, before);
    // A file that is not JSON is left alone.
    std::fs::write(&file, "{not json").unwrap();
    let out = sluice(&[
        "client-config",
        "vscode",
        "--write",
        "--file",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(78));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{not json");
}

#[test]
fn import_appends_an_upstream_that_loads_and_refuses_a_taken_name() {
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("server.json");
    std::fs::write(
        &server,
        json!({"name": "io.github.example/notes", "version": "0.3.0", "packages": [
            {"registryType": "npm", "identifier": "@example/notes-mcp", "version": "0.3.0",
             "environmentVariables": [{"name": "NOTES_TOKEN", "isRequired": true, "isSecret": true}]}]})
        .to_string(),
    )
    .unwrap();
    let config = dir.path().join("sluice.toml");
    std::fs::write(&config, "[server]\nrequest_timeout = \"30s\"\n").unwrap();
    let (s, c) = (server.to_str().unwrap(), config.to_str().unwrap());
    let out = sluice(&["import", s, "--config", c]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "added [[upstream]] \"notes\" to {c}\nset NOTES_TOKEN in the environment sluice runs in (see the comments above the entry)\n"
        )
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        format!(
            "[server]\nrequest_timeout = \"30s\"\n\n# io.github.example/notes 0.3.0\n# Imported from {s} by `sluice import`.\n# NOTES_TOKEN (required, secret)\n[[upstream]]\nname = \"notes\"\ncommand = \"npx\"\nargs = [\"-y\", \"@example/notes-mcp@0.3.0\"]\nenv = {{ NOTES_TOKEN = \"${{NOTES_TOKEN}}\" }}\n"
        )
    );
    // sluice reads it, once the variable is set.
    let check = Command::new(sluice_bin())
        .args(["config", "check", "--config", c])
        .env("NOTES_TOKEN", "t")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&check.stdout),
        "ok: 1 upstream(s): notes\n"
    );
    // A second import of the same server would take the same name.
    let before = std::fs::read_to_string(&config).unwrap();
    let out = sluice(&["import", s, "--config", c]);
    assert_eq!(out.status.code(), Some(78));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("upstream[1].name: \"notes\" is already the name of upstream[0]"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
}

#[test]
fn lock_shows_its_progress_on_a_terminal_only() {
    let (dir, path) = write_config(&fixture_upstream("fx", &[]));
    let p = path.to_str().unwrap();
    let out = sluice(&["lock", "--config", p]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("reading catalogs"), "{err}");
    // Under a pseudo-terminal (util-linux `script`), the line shows.
    let command = format!("{} lock --config {p}", sluice_bin());
    let tty = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(tty.status.success());
    let screen = String::from_utf8_lossy(&tty.stdout);
    assert!(
        screen.contains("reading catalogs 0/1")
            && screen.contains("still reading fx (0 pages, 0 entries)"),
        "{screen}"
    );
    assert!(screen.contains("fx: locked"), "{screen}");
}

#[test]
fn doctor_shows_its_read_progress_on_a_terminal_only() {
    let fixture = fixture_bin();
    let piped = sluice(&["doctor", "--", &fixture]);
    let err = String::from_utf8_lossy(&piped.stderr);
    assert!(!err.contains("reading catalogs"), "{err}");
    let command = format!("{} doctor -- {fixture}", sluice_bin());
    let tty = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&tty.stdout);
    assert!(
        screen.contains("reading catalogs 0/1")
            && screen.contains(&format!("still reading {fixture} (")),
        "{screen}"
    );
    // The line is cleared before the report.
    assert!(screen.contains("S-1/stdio-declared"), "{screen}");
}
