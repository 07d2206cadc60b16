//! The era matrix: every pairing of a client era (2026-07-28, or 2025-11-25
//! with `initialize`), an upstream era (`sluice-fixture --era modern` or
//! `--era legacy`) and a downstream transport (stdio or Streamable HTTP),
//! eight combinations, one test each. Every test checks, on real traffic:
//!
//! 1. `tools/list` lists the fixture's tools, shaped for the client's era;
//! 2. progress reaches the client with its own token, then the result;
//! 3. a cancelled `hang` is cancelled upstream and sluice keeps serving;
//! 4. sampling and elicitation round trips (asked directly of a legacy
//!    client, bridged as MRTR `input_required` for a modern one);
//! 5. `add_tool` reaches the client as `notifications/tools/list_changed`
//!    (stdio or the session's GET stream for a legacy client, a
//!    `subscriptions/listen` stream for a modern one), and a fresh
//!    `tools/list` shows the new tool.
//!
//! The upstream runs behind `tee`, so the test reads exactly what sluice
//! wrote to it: that is how it sees the upstream receive a cancellation.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// The upstream's name in the config: its tools are `up__<tool>`.
const UPSTREAM: &str = "up";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientEra {
    /// 2026-07-28: `_meta` on every request, no handshake.
    Modern,
    /// 2025-11-25 with `initialize`.
    Legacy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UpstreamEra {
    Modern,
    Legacy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Downstream {
    Stdio,
    Http,
}

/// What every client of the matrix declares: both kinds of question an
/// upstream can ask.
fn client_caps() -> Value {
    json!({"sampling": {}, "elicitation": {}})
}

fn tool(name: &str) -> String {
    format!("{UPSTREAM}__{name}")
}

/// Everything sluice wrote to the upstream's stdin, as the upstream read it.
struct Wire {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Wire {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("upstream-stdin.jsonl");
        Wire { _dir: dir, path }
    }

    /// The messages read so far (a line still being written is skipped).
    fn messages(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Polls the log until `find` sees what it looks for (bounded by WAIT).
    async fn wait_for<T>(&self, what: &str, find: impl Fn(&[Value]) -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            let messages = self.messages();
            if let Some(found) = find(&messages) {
                return found;
            }
            assert!(
                start.elapsed() < WAIT,
                "the upstream never received {what}; it received: {messages:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The id sluice gave its `tools/call` of `name` upstream (the first one).
    async fn call_id(&self, name: &str) -> Value {
        self.wait_for(&format!("a tools/call of {name}"), |messages| {
            messages
                .iter()
                .find(|m| m["method"] == "tools/call" && m["params"]["name"] == name)
                .map(|m| m["id"].clone())
        })
        .await
    }

    /// Waits for `notifications/cancelled` naming the upstream request `id`.
    async fn cancelled(&self, id: &Value) {
        self.wait_for(
            &format!("notifications/cancelled for request {id}"),
            |messages| {
                messages
                    .iter()
                    .any(|m| {
                        m["method"] == "notifications/cancelled" && m["params"]["requestId"] == *id
                    })
                    .then_some(())
            },
        )
        .await;
    }
}

/// One fixture upstream of `era`, behind `tee` into `wire`. The request
/// timeout is far above WAIT, so a cancellation seen upstream within WAIT
/// is the client's, not a timeout's.
fn config(era: UpstreamEra, wire: &Wire) -> String {
    let era = match era {
        UpstreamEra::Modern => "modern",
        UpstreamEra::Legacy => "legacy",
    };
    let script = r#"tee -a "$0" | exec "$1" --era "$2""#;
    let args = [
        "-c".to_owned(),
        script.to_owned(),
        wire.path.display().to_string(),
        fixture_bin(),
        era.to_owned(),
    ];
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "[server]\nrequest_timeout = \"120s\"\n\n[[upstream]]\nname = \"{UPSTREAM}\"\ncommand = \"sh\"\nargs = [{}]\nallow_dangerous = true\n",
        args.join(", ")
    )
}

enum Conn {
    Stdio(StdioSluice),
    /// The server, and the legacy client's session.
    Http(HttpSluice, Option<String>),
}

/// A client of one era on one transport, in front of one upstream.
struct Client {
    era: ClientEra,
    upstream: UpstreamEra,
    conn: Conn,
    /// The combination, for assertion messages.
    name: String,
}

impl Client {
    async fn start(
        era: ClientEra,
        upstream: UpstreamEra,
        downstream: Downstream,
        config: &str,
    ) -> Self {
        let name = format!("{era:?} client, {upstream:?} upstream, {downstream:?}");
        let conn = match downstream {
            Downstream::Stdio => {
                let mut s = StdioSluice::start(config).await;
                if era == ClientEra::Legacy {
                    let r = s.initialize(client_caps()).await;
                    assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
                }
                Conn::Stdio(s)
            }
            Downstream::Http => {
                let s = HttpSluice::start(config).await;
                let session = match era {
                    ClientEra::Legacy => Some(http_initialize(&s).await),
                    ClientEra::Modern => None,
                };
                Conn::Http(s, session)
            }
        };
        Client {
            era,
            upstream,
            conn,
            name,
        }
    }

    /// `params` as this client sends them: a modern client adds its `_meta`
    /// (keeping keys already there, such as a progress token).
    fn shaped(&self, mut params: Value) -> Value {
        if self.era == ClientEra::Modern {
            let mut meta = modern_meta(client_caps());
            if let (Some(meta), Some(extra)) = (meta.as_object_mut(), params["_meta"].as_object()) {
                meta.extend(extra.clone());
            }
            params["_meta"] = meta;
        }
        params
    }

    /// Sends a request; its answer, and the messages that reached the client
    /// while it was being answered (stdio: everything on stdout; HTTP: the
    /// events of the answer's SSE stream before the answer).
    async fn request(&mut self, id: i64, method: &str, params: Value) -> (Value, Vec<Value>) {
        let params = self.shaped(params);
        match &mut self.conn {
            Conn::Stdio(s) => {
                let before = s.seen.len();
                let answer = s.request(id, method, params).await;
                (answer, s.seen[before..].to_vec())
            }
            Conn::Http(s, session) => {
                let resp = http_post(s, session.as_deref(), id, method, params).await;
                assert_eq!(resp.status(), 200, "{}: {method}", self.name);
                let mut all = messages(resp).await;
                let answer = all.pop().expect("an answer");
                assert!(is_response(&answer, id), "{}: {answer}", self.name);
                (answer, all)
            }
        }
    }

    async fn call(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        let params = json!({"name": tool(name), "arguments": arguments});
        self.request(id, "tools/call", params).await.0
    }

    /// Asserts the result is shaped for the client's era.
    fn assert_shaped(&self, answer: &Value) {
        let result = &answer["result"];
        match self.era {
            ClientEra::Modern => {
                assert_eq!(result["resultType"], "complete", "{}: {answer}", self.name)
            }
            ClientEra::Legacy => assert!(
                result.get("resultType").is_none(),
                "{}: {answer}",
                self.name
            ),
        }
    }

    async fn tool_names(&mut self, id: i64) -> Vec<String> {
        let (answer, _) = self.request(id, "tools/list", json!({})).await;
        self.assert_shaped(&answer);
        assert!(answer["result"].get("nextCursor").is_none(), "{answer}");
        names(&answer, "tools")
    }

    /// Step 1: the exact tool list of the fixture.
    async fn lists_the_fixtures_tools(&mut self) {
        let want: Vec<String> = FIXED_TOOLS.iter().map(|t| tool(t)).collect();
        assert_eq!(self.tool_names(10).await, want, "{}", self.name);
    }

    /// Step 2: progress with the client's own token, then the result. (The
    /// upstream sees a token of sluice's: README, "Progress tokens are
    /// rewritten per upstream and restored".)
    async fn relays_progress_with_the_clients_token(&mut self, wire: &Wire) {
        let token = json!(format!("client-token ({})", self.name));
        let params = json!({"name": tool("progress"), "arguments": {"steps": 3, "delay_ms": 20},
            "_meta": {"progressToken": token}});
        let (answer, before) = self.request(20, "tools/call", params).await;
        assert_eq!(first_text(&answer), "done", "{}: {answer}", self.name);
        self.assert_shaped(&answer);
        let progress: Vec<&Value> = before
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), 3, "{}: {before:?}", self.name);
        for (i, p) in progress.iter().enumerate() {
            assert_eq!(p["params"]["progressToken"], token, "{}: {p}", self.name);
            assert_eq!(p["params"]["progress"], json!(i + 1), "{}: {p}", self.name);
            assert_eq!(p["params"]["total"], json!(3), "{}: {p}", self.name);
        }
        let upstream_token = wire
            .wait_for("a tools/call of progress", |messages| {
                messages
                    .iter()
                    .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "progress")
                    .map(|m| m["params"]["_meta"]["progressToken"].clone())
            })
            .await;
        assert!(
            !upstream_token.is_null(),
            "{}: no token upstream",
            self.name
        );
        assert_ne!(
            upstream_token, token,
            "{}: the token was not rewritten",
            self.name
        );
    }

    /// Step 3: a hung call cancelled by the client is cancelled upstream; no
    /// answer is due, and the next call is served.
    async fn cancels_a_hung_call(&mut self, wire: &Wire) {
        let id = 30;
        let params = self.shaped(json!({"name": tool("hang"), "arguments": {}}));
        match &mut self.conn {
            // Both eras cancel with `notifications/cancelled` on stdio.
            Conn::Stdio(s) => {
                s.send(
                    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
                )
                .await;
                let upstream_id = wire.call_id("hang").await;
                s.send(
                    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": id, "reason": "era matrix"}}),
                )
                .await;
                wire.cancelled(&upstream_id).await;
            }
            // Legacy HTTP: `notifications/cancelled` in the session; the
            // POST of the cancelled call ends with 202 and no answer.
            Conn::Http(s, Some(session)) => {
                let body =
                    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
                let hung = tokio::spawn(
                    s.client
                        .post(&s.url)
                        .header("accept", "application/json, text/event-stream")
                        .header("content-type", "application/json")
                        .header("mcp-session-id", session.as_str())
                        .header("mcp-protocol-version", "2025-11-25")
                        .body(body.to_string())
                        .send(),
                );
                let upstream_id = wire.call_id("hang").await;
                let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": id, "reason": "era matrix"}});
                let resp = s.post(&note, &legacy_headers(session)).await;
                assert_eq!(resp.status(), 202, "{}", self.name);
                wire.cancelled(&upstream_id).await;
                let resp = tokio::time::timeout(WAIT, hung)
                    .await
                    .expect("the cancelled call's POST ends")
                    .unwrap()
                    .unwrap();
                assert_eq!(resp.status(), 202, "{}: no answer is due", self.name);
                assert_eq!(resp.text().await.unwrap(), "", "{}", self.name);
            }
            // Modern HTTP: the client closes the response stream (drops
            // the request).
            Conn::Http(s, None) => {
                let body =
                    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
                let hung = tokio::spawn(
                    s.client
                        .post(&s.url)
                        .header("accept", "application/json, text/event-stream")
                        .header("content-type", "application/json")
                        .header("mcp-protocol-version", "2026-07-28")
                        .header("mcp-method", "tools/call")
                        .header("mcp-name", tool("hang"))
                        .body(body.to_string())
                        .send(),
                );
                let upstream_id = wire.call_id("hang").await;
                assert!(!hung.is_finished(), "{}: hang was answered", self.name);
                hung.abort();
                assert!(hung.await.unwrap_err().is_cancelled());
                wire.cancelled(&upstream_id).await;
            }
        }
        // Still healthy: the next call is served, by the same upstream
        // process (a restarted one would be probed again on the same wire).
        let answer = self.call(31, "echo", json!({"text": "still here"})).await;
        assert_eq!(first_text(&answer), "still here", "{}: {answer}", self.name);
        self.assert_shaped(&answer);
        let probes = wire
            .messages()
            .iter()
            .filter(|m| m["method"] == "server/discover")
            .count();
        assert_eq!(probes, 1, "{}: the upstream was restarted", self.name);
        match &self.conn {
            Conn::Stdio(s) => assert!(
                s.seen.iter().all(|m| !is_response(m, id)),
                "{}: the cancelled call was answered: {:?}",
                self.name,
                s.seen
            ),
            Conn::Http(s, _) => {
                let h = s.health().await;
                assert_eq!(h["upstreams"][UPSTREAM]["state"], "ready", "{h}");
                assert_eq!(h["upstreams"][UPSTREAM]["restarts"], 0, "{h}");
            }
        }
    }

    /// Step 4: a server-to-client request made by `question.tool` during the call
    /// `id` (and, for a modern client, its retry `id + 1`), answered with
    /// `answer`; the final answer.
    async fn round_trip(&mut self, id: i64, question: &Question, answer: Value) -> Value {
        let arguments = question.arguments.clone();
        let call = json!({"name": tool(question.tool), "arguments": arguments});
        let final_answer = match (self.era, &mut self.conn) {
            (ClientEra::Modern, _) => self.bridged_round_trip(id, question, call, answer).await,
            (ClientEra::Legacy, Conn::Stdio(s)) => {
                s.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": call}))
                    .await;
                let asked = tokio::time::timeout(WAIT, async {
                    loop {
                        let m = s.recv().await;
                        if m.get("id").is_some() && m.get("method").is_some() {
                            return m;
                        }
                        s.seen.push(m);
                    }
                })
                .await
                .expect("a question in time");
                assert_eq!(asked["method"], question.method, "{}: {asked}", self.name);
                (question.check)(&asked["params"]);
                s.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer}))
                    .await;
                s.response(id).await
            }
            (ClientEra::Legacy, Conn::Http(s, session)) => {
                let session = session
                    .as_deref()
                    .expect("a legacy HTTP client has a session");
                let body =
                    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": call});
                let resp = s.post(&body, &legacy_headers(session)).await;
                let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
                assert!(
                    content_type.starts_with("text/event-stream"),
                    "{content_type}"
                );
                let mut events = SseReader::new(resp);
                let asked = events.next().await;
                assert_eq!(asked["method"], question.method, "{}: {asked}", self.name);
                (question.check)(&asked["params"]);
                let reply = json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer});
                let resp = s.post(&reply, &legacy_headers(session)).await;
                assert_eq!(resp.status(), 202, "{}", self.name);
                events.next().await
            }
        };
        assert!(is_response(&final_answer, id) || is_response(&final_answer, id + 1));
        self.assert_shaped(&final_answer);
        final_answer
    }

    /// The modern side of [`Client::round_trip`]: `input_required`, then the
    /// retry with `inputResponses` (and the `requestState`, if any).
    async fn bridged_round_trip(
        &mut self,
        id: i64,
        question: &Question,
        call: Value,
        answer: Value,
    ) -> Value {
        let (first, _) = self.request(id, "tools/call", call.clone()).await;
        let result = &first["result"];
        assert_eq!(
            result["resultType"], "input_required",
            "{}: {first}",
            self.name
        );
        let asked = result["inputRequests"].as_object().unwrap();
        assert_eq!(asked.len(), 1, "{}: {first}", self.name);
        let (key, q) = asked.iter().next().unwrap();
        assert_eq!(q["method"], question.method, "{}: {first}", self.name);
        (question.check)(&q["params"]);
        match self.upstream {
            // The upstream's own input_required passes through untouched
            // (README: "A modern upstream's own `input_required` results and
            // `requestState` pass through untouched to a modern client"):
            // its own key, and no state of sluice's (the fixture sends none).
            UpstreamEra::Modern => {
                assert_eq!(key, question.tool, "{}: {first}", self.name);
                assert!(
                    result.get("requestState").is_none(),
                    "{}: {first}",
                    self.name
                );
            }
            // Bridged by sluice: the upstream call is parked under a sealed
            // requestState.
            UpstreamEra::Legacy => {
                let state = result["requestState"].as_str().unwrap_or_default();
                assert!(state.starts_with("sluice1."), "{}: {first}", self.name);
            }
        }
        let mut responses = serde_json::Map::new();
        responses.insert(key.clone(), answer);
        let mut retry = call;
        retry["inputResponses"] = Value::Object(responses);
        if let Some(state) = result.get("requestState") {
            retry["requestState"] = state.clone();
        }
        self.request(id + 1, "tools/call", retry).await.0
    }

    /// Step 4a: sampling.
    async fn round_trips_sampling(&mut self) {
        let prompt = format!("sample for {}", self.name);
        let expected = prompt.clone();
        let question = Question {
            tool: "sample",
            method: "sampling/createMessage",
            arguments: json!({"prompt": prompt}),
            check: Box::new(move |params| {
                assert_eq!(
                    params["messages"][0]["content"]["text"],
                    expected.as_str(),
                    "{params}"
                );
            }),
        };
        let said = format!("the client says hello ({})", self.name);
        let answer = json!({"role": "assistant", "content": {"type": "text", "text": said},
            "model": "era-matrix", "stopReason": "endTurn"});
        let final_answer = self.round_trip(40, &question, answer).await;
        assert_eq!(
            first_text(&final_answer),
            said,
            "{}: {final_answer}",
            self.name
        );
    }

    /// Step 4b: elicitation.
    async fn round_trips_elicitation(&mut self) {
        let message = format!("elicit for {}", self.name);
        let expected = message.clone();
        let question = Question {
            tool: "elicit",
            method: "elicitation/create",
            arguments: json!({"message": message}),
            check: Box::new(move |params| {
                assert_eq!(params["message"], expected.as_str(), "{params}");
                assert_eq!(
                    params["requestedSchema"]["required"],
                    json!(["answer"]),
                    "{params}"
                );
            }),
        };
        let said = format!("forty-two ({})", self.name);
        let answer = json!({"action": "accept", "content": {"answer": said}});
        let final_answer = self.round_trip(50, &question, answer).await;
        assert_eq!(
            first_text(&final_answer),
            format!("action=accept content={}", json!({"answer": said})),
            "{}: {final_answer}",
            self.name
        );
    }

    /// Step 4c: a form that asks for a password never reaches the client
    /// (S-27). A legacy upstream's question is answered with an error; a
    /// modern upstream's round is declined by sluice itself.
    async fn refuses_a_sensitive_elicitation(&mut self) {
        let params = json!({"name": tool("elicit"),
            "arguments": {"message": "Enter your GitHub password"}});
        let (answer, seen) = self.request(55, "tools/call", params).await;
        assert!(
            seen.iter().all(|m| m["method"] != "elicitation/create"),
            "{}: the question reached the client: {seen:?}",
            self.name
        );
        self.assert_shaped(&answer);
        match self.upstream {
            UpstreamEra::Legacy => {
                assert_eq!(answer["result"]["isError"], true, "{}: {answer}", self.name);
                assert!(
                    first_text(&answer)
                        .contains("sluice refused an elicitation that asks for sensitive data"),
                    "{}: {answer}",
                    self.name
                );
            }
            UpstreamEra::Modern => assert_eq!(
                first_text(&answer),
                "action=decline content=null",
                "{}: {answer}",
                self.name
            ),
        }
    }

    /// Step 5: `add_tool` reaches the client as `list_changed`, after which the
    /// new tool is listed and callable.
    async fn delivers_list_changed(&mut self) {
        const CHANGED: &str = "notifications/tools/list_changed";
        const ACK: &str = "notifications/subscriptions/acknowledged";
        const SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";
        let listen_id = 60;
        let listen = self.shaped(json!({"notifications": {"toolsListChanged": true}}));
        let (name, era) = (self.name.clone(), self.era);
        let check_ack = |ack: &Value| {
            assert_eq!(ack["method"], ACK, "{name}: {ack}");
            assert_eq!(
                ack["params"]["notifications"],
                json!({"toolsListChanged": true}),
                "{name}: {ack}"
            );
            assert_eq!(
                ack["params"]["_meta"][SUBSCRIPTION], listen_id,
                "{name}: {ack}"
            );
        };
        // Where the notification will come: None is stdout.
        let stream = match &mut self.conn {
            Conn::Stdio(s) => {
                // Earlier list_changed (the first catalog read) do not count.
                s.seen.retain(|m| m["method"] != CHANGED);
                if era == ClientEra::Modern {
                    s.send(json!({"jsonrpc": "2.0", "id": listen_id,
                        "method": "subscriptions/listen", "params": listen}))
                        .await;
                    check_ack(&stdio_wait(s, ACK).await);
                }
                None
            }
            Conn::Http(s, Some(session)) => {
                let get = s
                    .client
                    .get(&s.url)
                    .header("accept", "text/event-stream")
                    .header("mcp-session-id", session.as_str())
                    .send()
                    .await
                    .unwrap();
                assert_eq!(get.status(), 200, "{name}");
                Some(SseReader::new(get))
            }
            Conn::Http(s, None) => {
                let resp = s.modern(listen_id, "subscriptions/listen", listen).await;
                assert_eq!(resp.status(), 200, "{name}");
                let mut events = SseReader::new(resp);
                check_ack(&events.next().await);
                Some(events)
            }
        };
        let answer = self.call(61, "add_tool", json!({})).await;
        assert_eq!(first_text(&answer), "ok", "{name}: {answer}");
        let note = match (stream, &mut self.conn) {
            (Some(mut events), _) => sse_wait(&mut events, CHANGED).await,
            (None, Conn::Stdio(s)) => stdio_wait(s, CHANGED).await,
            (None, Conn::Http(..)) => unreachable!("HTTP clients listen on a stream"),
        };
        if era == ClientEra::Modern {
            assert_eq!(
                note["params"]["_meta"][SUBSCRIPTION], listen_id,
                "{name}: {note}"
            );
        }
        // The next list, asked for after the notification, has the tool.
        let mut want: Vec<String> = FIXED_TOOLS.iter().map(|t| tool(t)).collect();
        want.push(tool("added_0"));
        assert_eq!(self.tool_names(62).await, want, "{name}");
        let answer = self.call(63, "added_0", json!({})).await;
        assert_eq!(first_text(&answer), "added_0", "{name}: {answer}");
    }
}

/// A question an upstream tool asks its client.
struct Question {
    tool: &'static str,
    method: &'static str,
    arguments: Value,
    /// Checks the question's params.
    check: Box<dyn Fn(&Value)>,
}

fn legacy_headers(session: &str) -> [(&str, &str); 2] {
    [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ]
}

/// A legacy HTTP handshake; the session id.
async fn http_initialize(s: &HttpSluice) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": client_caps(),
        "clientInfo": {"name": "era-matrix", "version": "0"}}});
    let resp = s.post(&init, &[]).await;
    assert_eq!(resp.status(), 200);
    let session = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let r = messages(resp).await.pop().unwrap();
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = s.post(&note, &legacy_headers(&session)).await;
    assert_eq!(resp.status(), 202);
    session
}

/// A POST as a client of the era `session` says (legacy with a session,
/// modern without).
async fn http_post(
    s: &HttpSluice,
    session: Option<&str>,
    id: i64,
    method: &str,
    params: Value,
) -> reqwest::Response {
    match session {
        None => s.modern(id, method, params).await,
        Some(session) => {
            let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            s.post(&body, &legacy_headers(session)).await
        }
    }
}

/// The first message with `method` on stdout, already seen or still to come
/// (bounded); others are kept in `seen`.
async fn stdio_wait(s: &mut StdioSluice, method: &str) -> Value {
    if let Some(pos) = s.seen.iter().position(|m| m["method"] == method) {
        return s.seen.remove(pos);
    }
    tokio::time::timeout(WAIT, async {
        loop {
            let m = s.recv().await;
            if m["method"] == method {
                return m;
            }
            s.seen.push(m);
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {method} in time"))
}

/// The first event with `method` on an SSE stream (bounded).
async fn sse_wait(events: &mut SseReader, method: &str) -> Value {
    tokio::time::timeout(WAIT, async {
        loop {
            let m = events.next().await;
            if m["method"] == method {
                return m;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {method} in time"))
}

/// Runs the five checks for one combination.
async fn era_matrix(client: ClientEra, upstream: UpstreamEra, downstream: Downstream) {
    let wire = Wire::new();
    let config = config(upstream, &wire);
    let mut c = Client::start(client, upstream, downstream, &config).await;
    c.lists_the_fixtures_tools().await;
    c.relays_progress_with_the_clients_token(&wire).await;
    c.cancels_a_hung_call(&wire).await;
    c.round_trips_sampling().await;
    c.round_trips_elicitation().await;
    c.refuses_a_sensitive_elicitation().await;
    c.delivers_list_changed().await;
}

macro_rules! combination {
    ($name:ident, $client:ident, $upstream:ident, $downstream:ident) => {
        #[tokio::test(flavor = "multi_thread")]
        async fn $name() {
            era_matrix(
                ClientEra::$client,
                UpstreamEra::$upstream,
                Downstream::$downstream,
            )
            .await;
        }
    };
}

combination!(modern_client_modern_upstream_stdio, Modern, Modern, Stdio);
combination!(modern_client_modern_upstream_http, Modern, Modern, Http);
combination!(modern_client_legacy_upstream_stdio, Modern, Legacy, Stdio);
combination!(modern_client_legacy_upstream_http, Modern, Legacy, Http);
combination!(legacy_client_modern_upstream_stdio, Legacy, Modern, Stdio);
combination!(legacy_client_modern_upstream_http, Legacy, Modern, Http);
combination!(legacy_client_legacy_upstream_stdio, Legacy, Legacy, Stdio);
combination!(legacy_client_legacy_upstream_http, Legacy, Legacy, Http);
