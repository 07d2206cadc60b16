//! Hot reload through the real binary: the config or the lockfile changes
//! under a running sluice with clients connected.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::{Value, json};

/// The fixture's tools as sluice lists them for each upstream, in order.
fn tools_of(upstreams: &[&str]) -> Vec<String> {
    upstreams
        .iter()
        .flat_map(|up| FIXED_TOOLS.iter().map(move |t| format!("{up}__{t}")))
        .collect()
}

/// Replaces a file the way editors do: a new file renamed over the old.
fn replace_file(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The live (not zombie) child processes of `parent`: (pid, command line).
fn children(parent: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may hold spaces, so split after it.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(1).and_then(|p| p.parse::<u32>().ok()) != Some(parent) || fields[0] == "Z" {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        out.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
    }
    out
}

/// The one child of `parent` whose command line contains `marker`.
fn child_with(parent: u32, marker: &str) -> u32 {
    let found: Vec<u32> = children(parent)
        .into_iter()
        .filter(|(_, cmd)| cmd.contains(marker))
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "children of {parent}: {:?}",
        children(parent)
    );
    found[0]
}

fn complete(health: &Value, upstream: &str) -> bool {
    health["upstreams"][upstream]["catalog"] == "complete"
}

/// Opens a legacy (2025-11-25) session: its id.
async fn open_session(s: &HttpSluice) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let resp = s.post(&init, &[]).await;
    let session = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = s.post(&note, &legacy_headers(&session)).await;
    assert_eq!(resp.status(), 202);
    session
}

fn legacy_headers(session: &str) -> [(&str, &str); 2] {
    [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ]
}

/// A request in a legacy session: the answer.
async fn legacy(s: &HttpSluice, session: &str, id: i64, method: &str, params: Value) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    messages(s.post(&message, &legacy_headers(session)).await)
        .await
        .pop()
        .unwrap()
}

/// Every tool name `tools/list` gives, all pages drained: in the legacy
/// session when given one, else as a 2026-07-28 client.
async fn all_tools(s: &HttpSluice, session: Option<&str>) -> Vec<String> {
    let mut all = Vec::new();
    let mut params = json!({});
    loop {
        let answer = match session {
            Some(session) => legacy(s, session, 1, "tools/list", params).await,
            None => messages(s.modern(1, "tools/list", params).await)
                .await
                .pop()
                .unwrap(),
        };
        all.extend(names(&answer, "tools"));
        match answer["result"]["nextCursor"].as_str() {
            Some(cursor) => params = json!({"cursor": cursor}),
            None => return all,
        }
    }
}

/// Reads a stream until a message with `method` comes.
async fn wait_method(events: &mut SseReader, method: &str) {
    while events.next().await["method"] != method {}
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edited_config_swaps_upstreams_under_live_clients_and_a_bad_edit_is_refused() {
    // The era flags tell the three fixture processes apart.
    let a = fixture_upstream("a", &["--era", "modern"]);
    let b = fixture_upstream("b", &["--era", "legacy"]);
    let c = fixture_upstream("c", &["--era", "dual"]);
    let (dir, path) = write_config(&format!("{a}{b}"));
    let log = Log::default();
    let s = HttpSluice::start_logged(dir, &path, "info", &log).await;
    s.wait_health(|h| complete(h, "a") && complete(h, "b"))
        .await;
    let sluice_pid = s.child.id().unwrap();
    let a_pid = child_with(sluice_pid, "modern");
    let b_pid = child_with(sluice_pid, "legacy");

    let session = open_session(&s).await;
    let get = s.open_stream(&session, &[]).await;
    assert_eq!(get.status(), 200);
    let mut stream = SseReader::new(get);
    assert_eq!(all_tools(&s, Some(&session)).await, tools_of(&["a", "b"]));

    // A call in flight on b: its first progress note says it reached b.
    let slow = s
        .modern(
            10,
            "tools/call",
            json!({"name": "b__progress", "arguments": {"steps": 1000, "delay_ms": 50},
                   "_meta": {"progressToken": "slow"}}),
        )
        .await;
    let mut slow = SseReader::new(slow);
    assert_eq!(slow.next().await["method"], "notifications/progress");

    replace_file(&path, &format!("{a}{c}"));

    // The call on the removed upstream fails as a lost connection does.
    let end = loop {
        let m = slow.next().await;
        if m.get("id").is_some() {
            break m;
        }
    };
    assert_eq!(end["error"]["code"], -32004, "{end}");
    assert_eq!(end["error"]["data"]["upstream"], "b", "{end}");
    wait_method(&mut stream, "notifications/tools/list_changed").await;
    let health = s
        .wait_health(|h| complete(h, "c") && h["upstreams"].get("b").is_none())
        .await;
    assert_eq!(health["upstreams"]["a"]["restarts"], 0, "{health}");
    log.wait_for(
        "configuration reloaded: upstreams added: c; removed: b; restarted: none; unchanged: a",
        1,
    )
    .await;

    // The same session goes on, and both kinds of client see a's and c's
    // tools, and only those.
    assert_eq!(all_tools(&s, Some(&session)).await, tools_of(&["a", "c"]));
    assert_eq!(all_tools(&s, None).await, tools_of(&["a", "c"]));
    let echo = legacy(
        &s,
        &session,
        2,
        "tools/call",
        json!({"name": "a__echo", "arguments": {"text": "still here"}}),
    )
    .await;
    assert_eq!(first_text(&echo), "still here");
    let echo = s.call(3, "c__echo", json!({"text": "new"})).await;
    assert_eq!(first_text(&echo), "new");
    let gone = s.call(4, "b__echo", json!({"text": "x"})).await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");

    // a kept its process; b's ended; c's is new.
    assert_eq!(child_with(sluice_pid, "modern"), a_pid);
    assert!(children(sluice_pid).iter().all(|(pid, _)| *pid != b_pid));
    child_with(sluice_pid, "dual");

    // An invalid edit (written in place) is refused with every problem
    // logged; the running configuration stays.
    std::fs::write(
        &path,
        format!(
            "[server]\nrequest_timeout = \"forever\"\n[limits]\nmcp_read_response_max_bytes = 10\n{a}{b}"
        ),
    )
    .unwrap();
    let text = log.wait_for("reload rejected: 2 problem(s)", 1).await;
    assert!(
        text.contains("sluice.toml:2:19: server.request_timeout: \"forever\" is not a duration"),
        "{text}"
    );
    assert!(
        text.contains("sluice.toml:4:31: limits.mcp_read_response_max_bytes: 10 is out of range"),
        "{text}"
    );
    // A typo'd key is refused, with the key it meant.
    std::fs::write(&path, format!("[server]\nrequest_timeuot = \"5s\"\n{a}{b}")).unwrap();
    let text = log.wait_for("reload rejected: 1 problem(s)", 1).await;
    assert!(
        text.contains("server.request_timeuot: unknown key; did you mean `request_timeout`?"),
        "{text}"
    );
    assert_eq!(all_tools(&s, Some(&session)).await, tools_of(&["a", "c"]));
    assert!(s.health().await["upstreams"].get("b").is_none());
    assert_eq!(child_with(sluice_pid, "modern"), a_pid);
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_applies_a_lockfile_edit_without_restarting_anything() {
    let (dir, path) = write_config(&fixture_upstream("a", &[]));
    let lock = |config: &Path, lockfile: &Path| {
        let out = Command::new(sluice_bin())
            .args(["lock", "--config"])
            .arg(config)
            .arg("--lockfile")
            .arg(lockfile)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    };
    // The served lockfile is a link into a directory sluice does not
    // watch: only SIGHUP can bring its change in.
    let elsewhere = tempfile::tempdir().unwrap();
    let current = elsewhere.path().join("current.lock");
    lock(&path, &current);
    std::os::unix::fs::symlink(&current, dir.path().join("sluice.lock")).unwrap();
    // A lockfile that approves another description of `echo`.
    let alt = elsewhere.path().join("alt.toml");
    std::fs::write(
        &alt,
        fixture_upstream("a", &["--description-suffix", "approved elsewhere"]),
    )
    .unwrap();
    let drifted = elsewhere.path().join("drifted.lock");
    lock(&alt, &drifted);

    let log = Log::default();
    let s = HttpSluice::start_logged(dir, &path, "info", &log).await;
    s.wait_health(|h| complete(h, "a") && h["upstreams"]["a"]["approval"] == "unchanged")
        .await;
    let a_pid = child_with(s.child.id().unwrap(), "sluice-fixture");
    assert_eq!(
        first_text(&s.call(1, "a__echo", json!({"text": "hi"})).await),
        "hi"
    );

    std::fs::copy(&drifted, &current).unwrap();
    let kill = Command::new("kill")
        .args(["-HUP", &s.child.id().unwrap().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let text = log
        .wait_for(
            "configuration reloaded: upstreams added: none; removed: none; restarted: none; unchanged: a",
            1,
        )
        .await;
    assert!(
        text.contains("SIGHUP: reloading the configuration"),
        "{text}"
    );

    let health = s.health().await;
    assert_eq!(health["upstreams"]["a"]["approval"], "drifted", "{health}");
    assert_eq!(
        health["upstreams"]["a"]["drift"],
        json!({"added": 0, "removed": 0, "changed": 1})
    );
    assert_eq!(health["upstreams"]["a"]["restarts"], 0);
    let listed = all_tools(&s, None).await;
    assert!(!listed.contains(&"a__echo".to_owned()), "{listed:?}");
    assert_eq!(listed.len(), FIXED_TOOLS.len() - 1);
    let refused = s.call(2, "a__echo", json!({"text": "hi"})).await;
    assert_eq!(refused["error"]["code"], -32010, "{refused}");
    assert_eq!(
        refused["error"]["data"],
        json!({"upstream": "a", "drift": "changed"})
    );
    assert_eq!(child_with(s.child.id().unwrap(), "sluice-fixture"), a_pid);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stdio_client_hears_list_changed_when_a_reload_adds_an_upstream() {
    let a = fixture_upstream("a", &[]);
    let (_dir, path) = write_config(&a);
    let mut s = StdioSluice::start_at(&path).await;
    s.initialize(json!({})).await;
    let listed = s.request(1, "tools/list", json!({})).await;
    assert_eq!(names(&listed, "tools"), tools_of(&["a"]));

    replace_file(&path, &format!("{a}{}", fixture_upstream("c", &[])));
    // The only change is c's catalog arriving: once told, the list has it.
    loop {
        let m = s.recv().await;
        if m["method"] == "notifications/tools/list_changed" {
            break;
        }
        s.seen.push(m);
    }
    let listed = s.request(2, "tools/list", json!({})).await;
    assert_eq!(names(&listed, "tools"), tools_of(&["a", "c"]));
    assert_eq!(
        first_text(&s.call(3, "c__echo", json!({"text": "hello"})).await),
        "hello"
    );
}
