//! Helpers shared by the integration tests: driving the `sluice-fixture` binary over stdio, and
//! a tiny blocking HTTP/1.1 client (enough for JSON bodies and chunked SSE streams).
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_sluice-fixture");
pub const MODERN: &str = "2026-07-28";
/// `_meta` key carrying a `subscriptions/listen` id on its notifications.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// Generous upper bound for anything that should happen "now".
pub const WAIT: Duration = Duration::from_secs(10);

/// The `_meta` a modern request carries (plus any extra keys).
pub fn modern_meta(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "sluice-testkit-tests", "version": "0"}
    });
    if let (Some(m), Some(e)) = (meta.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            m.insert(k.clone(), v.clone());
        }
    }
    meta
}

/// Adds the modern `_meta` to `params`.
pub fn modern(mut params: Value) -> Value {
    params["_meta"] = modern_meta(json!({}));
    params
}

/// A running fixture speaking stdio.
pub struct StdioFixture {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl StdioFixture {
    /// Starts the fixture with `args`; stdout lines arrive through a reader thread.
    pub fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn sluice-fixture");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines: rx,
            next_id: 1,
        }
    }

    /// Writes one raw line.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write to fixture");
        stdin.flush().expect("flush");
    }

    pub fn send(&mut self, msg: &Value) {
        self.send_line(&msg.to_string());
    }

    /// Sends a request with a fresh numeric id; returns the id.
    pub fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next stdout line, or `None` if none arrives within `timeout` (or stdout closed).
    pub fn line(&self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// The next stdout line parsed as JSON (panics on timeout or non-JSON).
    pub fn recv(&self) -> Value {
        let line = self.line(WAIT).expect("a line from the fixture");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Reads until the response with `id`; returns it and every other message seen meanwhile.
    pub fn response_with_others(&self, id: u64) -> (Value, Vec<Value>) {
        let mut others = Vec::new();
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .line(left)
                .unwrap_or_else(|| panic!("no response to id {id}"));
            let msg: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if msg.get("method").is_none() && msg["id"] == json!(id) {
                return (msg, others);
            }
            others.push(msg);
        }
    }

    pub fn response(&self, id: u64) -> Value {
        self.response_with_others(id).0
    }

    /// Request + response; returns the whole response message.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(id)
    }

    /// Request + response; returns `result` (panics on an error response).
    pub fn result(&mut self, method: &str, params: Value) -> Value {
        let resp = self.call(method, params);
        assert!(resp.get("error").is_none(), "unexpected error: {resp}");
        resp["result"].clone()
    }

    /// Request + response; returns the error code (panics on success).
    pub fn error_code(&mut self, method: &str, params: Value) -> i64 {
        let resp = self.call(method, params);
        resp["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("expected an error: {resp}"))
    }

    /// Legacy handshake.
    pub fn initialize(&mut self, version: &str) -> Value {
        let result = self.result(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {"sampling": {}},
                   "clientInfo": {"name": "t", "version": "0"}}),
        );
        self.notify("notifications/initialized", json!({}));
        result
    }

    /// The fixture's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes stdin (EOF for the fixture).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

impl Drop for StdioFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Drains a paginated list (`tools/list`, ...) and returns (pages, items), giving up after
/// `max_pages`. `params` is called for each page with the cursor to send.
pub fn drain(
    fx: &mut StdioFixture,
    method: &str,
    key: &str,
    max_pages: usize,
    mut params: impl FnMut(Option<&Value>) -> Value,
) -> (usize, Vec<Value>) {
    let mut cursor: Option<Value> = None;
    let mut items = Vec::new();
    for page in 1..=max_pages {
        let result = fx.result(method, params(cursor.as_ref()));
        items.extend(result[key].as_array().expect("list array").iter().cloned());
        match result.get("nextCursor") {
            None => return (page, items),
            Some(c) => cursor = Some(c.clone()),
        }
    }
    (max_pages, items)
}

// ---------------------------------------------------------------------------------------------
// HTTP

/// A running fixture speaking HTTP.
pub struct HttpFixture {
    child: Child,
    pub port: u16,
}

impl HttpFixture {
    pub fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .args(["--http", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sluice-fixture --http");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("listening on http://127.0.0.1:") {
                    let port = rest.trim_end_matches("/mcp").parse::<u16>().ok();
                    let _ = tx.send(port);
                }
            }
        });
        let port = rx
            .recv_timeout(WAIT)
            .ok()
            .flatten()
            .expect("fixture printed its port");
        Self { child, port }
    }

    /// The fixture's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a request without reading anything back (for requests that are never answered).
    pub fn send(&self, method: &str, headers: &[(&str, &str)], body: Option<&str>) -> TcpStream {
        self.send_to(method, "/mcp", headers, body)
    }

    /// [`Self::send`] to another path than `/mcp`.
    pub fn send_to(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> TcpStream {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream.set_read_timeout(Some(WAIT)).expect("timeout");
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n",
            self.port
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(body) = body {
            req.push_str("Content-Type: application/json\r\n");
            req.push_str("Accept: application/json, text/event-stream\r\n");
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        if let Some(body) = body {
            req.push_str(body);
        }
        stream.write_all(req.as_bytes()).expect("send request");
        stream
    }

    /// Opens a request and reads the status line and headers; the body is read from the result.
    pub fn open(&self, method: &str, headers: &[(&str, &str)], body: Option<&str>) -> HttpStream {
        self.open_at(method, "/mcp", headers, body)
    }

    /// [`Self::open`] at another path than `/mcp`.
    pub fn open_at(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> HttpStream {
        let mut reader = BufReader::new(self.send_to(method, path, headers, body));
        let mut status_line = String::new();
        reader.read_line(&mut status_line).expect("status line");
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("header line");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        let chunked = headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
        HttpStream {
            reader,
            status,
            headers,
            chunked,
            pending: Vec::new(),
            finished: false,
        }
    }

    /// A complete request/response.
    pub fn request(&self, method: &str, headers: &[(&str, &str)], body: Option<&str>) -> HttpResp {
        self.request_at(method, "/mcp", headers, body)
    }

    /// [`Self::request`] at another path than `/mcp`.
    pub fn request_at(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> HttpResp {
        let mut s = self.open_at(method, path, headers, body);
        let body = s.read_to_end();
        HttpResp {
            status: s.status,
            headers: s.headers.clone(),
            body,
        }
    }

    /// POSTs a JSON-RPC message.
    pub fn post(&self, headers: &[(&str, &str)], msg: &Value) -> HttpResp {
        self.request("POST", headers, Some(&msg.to_string()))
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct HttpResp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResp {
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The events of an SSE body, with their ids.
    pub fn sse_events(&self) -> Vec<SseEvent> {
        sse_events(&self.body)
    }

    /// The `data:` payloads of an SSE body.
    pub fn sse_data(&self) -> Vec<String> {
        self.body
            .split("\n\n")
            .filter_map(|event| {
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:").map(str::trim_start))
                    .collect();
                (!data.is_empty()).then(|| data.join("\n"))
            })
            .collect()
    }
}

/// One SSE event: its `id`, `retry` and `data` (several `data` lines joined with `\n`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub retry: Option<u64>,
    pub data: Option<String>,
}

impl SseEvent {
    /// The data parsed as JSON (panics if absent or not JSON).
    pub fn json(&self) -> Value {
        let data = self.data.as_deref().expect("event data");
        serde_json::from_str(data).unwrap_or_else(|e| panic!("not JSON ({e}): {data}"))
    }
}

/// The events of an SSE body (comment lines skipped; one leading space of a value removed).
pub fn sse_events(body: &str) -> Vec<SseEvent> {
    body.split("\n\n")
        .filter_map(|block| {
            let mut event = SseEvent::default();
            let mut any = false;
            for line in block
                .lines()
                .filter(|l| !l.is_empty() && !l.starts_with(':'))
            {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
                any = true;
                match field {
                    "id" => event.id = Some(value),
                    "retry" => event.retry = value.parse().ok(),
                    "data" => {
                        event.data = Some(match event.data.take() {
                            Some(prev) => format!("{prev}\n{value}"),
                            None => value,
                        });
                    }
                    _ => {}
                }
            }
            any.then_some(event)
        })
        .collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// An HTTP response whose body is read incrementally (for SSE).
pub struct HttpStream {
    reader: BufReader<TcpStream>,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    chunked: bool,
    pending: Vec<u8>,
    finished: bool,
}

impl HttpStream {
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// Reads the next piece of body into `pending`; false at the end of the body.
    fn fill(&mut self) -> bool {
        if self.finished {
            return false;
        }
        if !self.chunked {
            let mut buf = [0u8; 8192];
            let n = self.reader.read(&mut buf).expect("read body");
            if n == 0 {
                self.finished = true;
                return false;
            }
            self.pending.extend_from_slice(&buf[..n]);
            return true;
        }
        let mut size_line = String::new();
        if self.reader.read_line(&mut size_line).expect("chunk size") == 0 {
            self.finished = true;
            return false;
        }
        let size_hex = size_line.trim().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size_hex, 16)
            .unwrap_or_else(|_| panic!("bad chunk size {size_line:?}"));
        if size == 0 {
            self.finished = true;
            return false;
        }
        let mut chunk = vec![0u8; size + 2];
        self.reader.read_exact(&mut chunk).expect("chunk");
        self.pending.extend_from_slice(&chunk[..size]);
        true
    }

    /// The next SSE event's `data:` payload (events without data are skipped).
    pub fn next_data(&mut self) -> Option<String> {
        loop {
            if let Some(pos) = self.pending.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.pending.drain(..pos + 2).collect();
                let event = String::from_utf8(event).expect("utf-8 event");
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:").map(str::trim_start))
                    .collect();
                if !data.is_empty() {
                    return Some(data.join("\n"));
                }
                continue;
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// True if nothing more of the body (no data, no end) arrives within `quiet`. Only peeks,
    /// so the stream can be read normally afterwards.
    pub fn idle_for(&mut self, quiet: Duration) -> bool {
        if !self.pending.is_empty() {
            return false;
        }
        self.reader
            .get_ref()
            .set_read_timeout(Some(quiet))
            .expect("timeout");
        let peeked = self.reader.fill_buf().map(<[u8]>::len);
        self.reader
            .get_ref()
            .set_read_timeout(Some(WAIT))
            .expect("timeout");
        match peeked {
            Err(e) => {
                assert!(
                    matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ),
                    "read error: {e}"
                );
                true
            }
            // Data, or the end of the body.
            Ok(_) => false,
        }
    }

    /// The next SSE event parsed as JSON.
    pub fn next_json(&mut self) -> Value {
        let data = self.next_data().expect("another SSE event");
        serde_json::from_str(&data).unwrap_or_else(|e| panic!("not JSON ({e}): {data}"))
    }

    /// Reads the rest of the body piece by piece without keeping it: its length, its first
    /// `keep` bytes and its last `keep` bytes (overlapping if the body is short), and how many
    /// bytes are 'x'.
    pub fn skim_to_end(&mut self, keep: usize) -> Skim {
        let mut skim = Skim::default();
        loop {
            let piece = std::mem::take(&mut self.pending);
            skim.add(&piece, keep);
            if !self.fill() {
                return skim;
            }
        }
    }

    pub fn read_to_end(&mut self) -> String {
        while self.fill() {}
        String::from_utf8(std::mem::take(&mut self.pending)).expect("utf-8 body")
    }
}

/// A summary of a long body or line: see [`HttpStream::skim_to_end`].
#[derive(Debug, Default)]
pub struct Skim {
    pub len: usize,
    pub xs: usize,
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
}

impl Skim {
    pub fn add(&mut self, piece: &[u8], keep: usize) {
        self.len += piece.len();
        self.xs += piece.iter().filter(|b| **b == b'x').count();
        let room = keep.saturating_sub(self.head.len());
        self.head.extend_from_slice(&piece[..room.min(piece.len())]);
        self.tail
            .extend_from_slice(&piece[piece.len().saturating_sub(keep)..]);
        let extra = self.tail.len().saturating_sub(keep);
        self.tail.drain(..extra);
    }

    pub fn head_str(&self) -> &str {
        std::str::from_utf8(&self.head).expect("utf-8 head")
    }

    pub fn tail_str(&self) -> &str {
        std::str::from_utf8(&self.tail).expect("utf-8 tail")
    }
}

/// The peak resident set size of process `pid` (`VmHWM` in /proc/<pid>/status), in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"))
}

/// Decodes standard base64 (with padding); panics on anything else.
pub fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c:?}"),
        }
    };
    let bytes = text.as_bytes();
    assert_eq!(bytes.len() % 4, 0, "base64 length");
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for quad in bytes.chunks(4) {
        let pad = quad.iter().rev().take_while(|b| **b == b'=').count();
        assert!(pad <= 2, "bad padding");
        let n = quad[..4 - pad]
            .iter()
            .fold(0u32, |acc, c| (acc << 6) | value(*c))
            << (6 * pad);
        let group = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&group[..3 - pad]);
    }
    out
}
