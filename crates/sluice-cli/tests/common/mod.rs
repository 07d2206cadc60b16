//! Drives the real `sluice` binary, over stdio or HTTP, against
//! `sluice-fixture` upstreams.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The fixture's fixed tools, in list order (its generated ones follow).
pub const FIXED_TOOLS: [&str; 16] = [
    "echo",
    "lossless",
    "crash",
    "hang",
    "garbage",
    "progress",
    "sample",
    "add_tool",
    "big",
    "slow",
    "header_echo",
    "read_big",
    "reflect",
    "huge_read",
    "huge_write",
    "elicit",
];

/// The longest any single wait in these tests may take; a bug fails the
/// test instead of hanging it.
pub const WAIT: Duration = Duration::from_secs(30);

pub fn sluice_bin() -> &'static str {
    env!("CARGO_BIN_EXE_sluice")
}

/// The fixture server, built beside sluice by a workspace build.
pub fn fixture_bin() -> String {
    let path = PathBuf::from(sluice_bin()).with_file_name("sluice-fixture");
    assert!(
        path.exists(),
        "{} is missing: run the tests for the whole workspace (cargo nextest run --workspace)",
        path.display()
    );
    path.display().to_string()
}

/// A `[[upstream]]` block running the fixture with `args`.
pub fn fixture_upstream(name: &str, args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "[[upstream]]\nname = \"{name}\"\ncommand = \"{}\"\nargs = [{}]\n",
        fixture_bin(),
        args.join(", ")
    )
}

/// Writes the config into a fresh temporary directory.
pub fn write_config(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sluice.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// `_meta` of a 2026-07-28 request.
pub fn modern_meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "sluice-tests", "version": "0"},
    })
}

/// sluice serving one client on stdio.
pub struct StdioSluice {
    pub child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// Messages read while waiting for something else (notifications,
    /// server-to-client requests, other responses).
    pub seen: Vec<Value>,
    _dir: Option<tempfile::TempDir>,
}

impl StdioSluice {
    pub async fn start(config: &str) -> Self {
        let (dir, path) = write_config(config);
        let mut sluice = Self::start_at(&path).await;
        sluice._dir = Some(dir);
        sluice
    }

    /// Serves the config at `path`; its directory (lockfile, state) is the
    /// caller's, and outlives this sluice.
    pub async fn start_at(path: &std::path::Path) -> Self {
        Self::start_with(path, &[]).await
    }

    /// [`StdioSluice::start_at`] with more `serve` arguments (`--view`).
    pub async fn start_with(path: &std::path::Path, args: &[&str]) -> Self {
        let mut child = Command::new(sluice_bin())
            .args(["serve", "--stdio"])
            .args(args)
            .arg("--config")
            .arg(path)
            .env("SLUICE_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        StdioSluice {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            _dir: None,
        }
    }

    pub async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// One line, as it is (a message written by hand).
    pub async fn send_raw(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The next raw line.
    pub async fn recv_line(&mut self) -> String {
        tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("sluice answered in time")
            .unwrap()
            .expect("sluice's stdout is open")
    }

    pub async fn recv(&mut self) -> Value {
        serde_json::from_str(&self.recv_line().await).unwrap()
    }

    /// Waits for the response with `id`, keeping everything else in `seen`.
    pub async fn response(&mut self, id: i64) -> Value {
        let pos = self.seen.iter().position(|m| is_response(m, id));
        if let Some(pos) = pos {
            return self.seen.remove(pos);
        }
        loop {
            let m = self.recv().await;
            if is_response(&m, id) {
                return m;
            }
            self.seen.push(m);
        }
    }

    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.response(id).await
    }

    /// A legacy handshake declaring `capabilities`.
    pub async fn initialize(&mut self, capabilities: Value) -> Value {
        let r = self
            .request(
                0,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                       "clientInfo": {"name": "sluice-tests", "version": "0"}}),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        r
    }

    /// Calls a tool and returns the whole response.
    pub async fn call(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .await
    }

    /// Closes stdin and waits for sluice to exit.
    pub async fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin);
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("sluice exits")
            .unwrap()
    }
}

pub fn is_response(m: &Value, id: i64) -> bool {
    m.get("method").is_none() && m.get("id").and_then(Value::as_i64) == Some(id)
}

/// The text of a tool result's first content block.
pub fn first_text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// Names in a list result.
pub fn names(response: &Value, field: &str) -> Vec<String> {
    response["result"][field]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// sluice serving HTTP on a free loopback port.
pub struct HttpSluice {
    pub child: Child,
    pub url: String,
    pub base: String,
    pub client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl HttpSluice {
    pub async fn start(config: &str) -> Self {
        let (dir, path) = write_config(config);
        Self::start_at(dir, &path).await
    }

    /// Serves the config at `path`, which lives in `dir` (with its
    /// lockfile, if any).
    pub async fn start_at(dir: tempfile::TempDir, path: &std::path::Path) -> Self {
        Self::start_logged(dir, path, "warn", &Log::default()).await
    }

    /// Like [`HttpSluice::start_at`], logging at `level` into `log`.
    pub async fn start_logged(
        dir: tempfile::TempDir,
        path: &std::path::Path,
        level: &str,
        log: &Log,
    ) -> Self {
        let mut child = Command::new(sluice_bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(path)
            .env("SLUICE_LOG", level)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let url = logged_listening_url(&mut child, log).await;
        let base = url.trim_end_matches("/mcp").to_owned();
        HttpSluice {
            child,
            url,
            base,
            client: reqwest::Client::new(),
            _dir: dir,
        }
    }

    /// A modern POST with the headers a 2026-07-28 client sends.
    /// Keys already in `params._meta` (a progress token, ...) are kept.
    pub async fn modern(&self, id: i64, method: &str, mut params: Value) -> reqwest::Response {
        let mut meta = modern_meta(json!({}));
        if let (Some(meta), Some(extra)) = (meta.as_object_mut(), params["_meta"].as_object()) {
            meta.extend(extra.clone());
        }
        params["_meta"] = meta;
        let mut req = self
            .client
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
        {
            req = req.header("mcp-name", name);
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        req.header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap()
    }

    /// A modern `tools/call`; the whole JSON-RPC answer.
    pub async fn call(&self, id: i64, name: impl Into<String>, arguments: Value) -> Value {
        let params = json!({"name": name.into(), "arguments": arguments});
        let resp = self.modern(id, "tools/call", params).await;
        messages(resp).await.pop().expect("an answer")
    }

    pub async fn health(&self) -> Value {
        let resp = self
            .client
            .get(format!("{}/health", self.base))
            .send()
            .await
            .unwrap();
        serde_json::from_str(&resp.text().await.unwrap()).unwrap()
    }

    /// A POST with a JSON body and extra headers.
    pub async fn post(&self, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut req = self
            .client
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.body(body.to_string()).send().await.unwrap()
    }

    /// Opens the GET notification stream of a legacy session, with extra
    /// headers (a token).
    pub async fn open_stream(&self, session: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut req = self
            .client
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send().await.unwrap()
    }

    /// Polls `/health` until `check` holds (bounded).
    pub async fn wait_health(&self, check: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..150 {
            let h = self.health().await;
            if check(&h) {
                return h;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("health never satisfied the check: {}", self.health().await);
    }
}

/// `sluice-fixture --http 0 ARGS`: the child (killed when dropped) and
/// its MCP URL.
pub async fn http_fixture(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(fixture_bin())
        .args(["--http", "0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = listening_url(&mut child).await;
    (child, url)
}

/// Reads the `listening on URL` line a server prints to stderr, then keeps
/// draining stderr so the server never blocks on a full pipe.
pub async fn listening_url(child: &mut Child) -> String {
    logged_listening_url(child, &Log::default()).await
}

/// [`listening_url`], keeping every stderr line in `log`.
async fn logged_listening_url(child: &mut Child, log: &Log) -> String {
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(WAIT, async {
        loop {
            let line = stderr
                .next_line()
                .await
                .unwrap()
                .expect("the server printed its address");
            log.push(&line);
            if let Some(at) = line.find("listening on ") {
                return line[at + "listening on ".len()..].trim().to_owned();
            }
        }
    })
    .await
    .expect("the server listened in time");
    let log = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = stderr.next_line().await {
            log.push(&line);
        }
    });
    url
}

/// A server's stderr, as it comes.
#[derive(Clone, Default)]
pub struct Log(std::sync::Arc<std::sync::Mutex<String>>);

impl Log {
    fn push(&self, line: &str) {
        let mut text = self.0.lock().unwrap();
        text.push_str(line);
        text.push('\n');
    }

    pub fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }

    /// Waits (bounded) until `needle` has been logged `times` times.
    pub async fn wait_for(&self, needle: &str, times: usize) -> String {
        for _ in 0..300 {
            let text = self.text();
            if text.matches(needle).count() >= times {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "{needle:?} was not logged {times} time(s):\n{}",
            self.text()
        );
    }
}

/// Reads a response body that may be JSON or SSE into its JSON-RPC
/// messages, in order.
pub async fn messages(resp: reqwest::Response) -> Vec<Value> {
    let sse = resp
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
    let body = tokio::time::timeout(WAIT, resp.text())
        .await
        .expect("body in time")
        .unwrap();
    if !sse {
        return vec![serde_json::from_str(&body).unwrap()];
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

/// Reads JSON-RPC messages from an SSE response one event at a time.
pub struct SseReader {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    text: String,
}

impl SseReader {
    pub fn new(resp: reqwest::Response) -> Self {
        SseReader {
            stream: Box::pin(resp.bytes_stream()),
            text: String::new(),
        }
    }

    /// The next event's data, parsed (comments and empty events skipped).
    pub async fn next(&mut self) -> Value {
        use futures::StreamExt;
        loop {
            if let Some(end) = self.text.find("\n\n") {
                let event: String = self.text.drain(..end + 2).collect();
                if let Some(data) = event.lines().find_map(|l| l.strip_prefix("data:")) {
                    return serde_json::from_str(data.trim()).unwrap();
                }
                continue;
            }
            let chunk = tokio::time::timeout(WAIT, self.stream.next())
                .await
                .expect("an event in time")
                .expect("the stream is open")
                .unwrap();
            self.text.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

/// A field of `/proc/PID/status`, in KiB (`VmRSS:`, `VmHWM:`).
#[allow(clippy::disallowed_methods)] // /proc is read as text
pub fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}
