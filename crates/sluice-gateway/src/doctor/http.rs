//! The doctor's raw HTTP probes: requests the upstream connector would
//! never send (a foreign `Origin`, a bad `MCP-Protocol-Version`, no
//! credentials, a second principal), the unauthenticated documents
//! (`/health`, the protected resource metadata, the authorization servers'
//! metadata), a few sessions' ids, and the one-line cause of an
//! unreachable endpoint. Every request follows no redirect, uses no proxy
//! and is bounded in time; credentials ride only where a probe needs them.

use std::time::Duration;

use serde_json::{Value, json};
use sluice_core::doctor::observe::{HttpProbes, Outcome};
use sluice_core::protocol::{self, Era};

use crate::gateway::{NAME, VERSION};

/// The largest answer a raw probe reads.
pub(super) const RAW_MAX_BYTES: usize = 16 * 1024 * 1024;
/// A protocol version no one speaks.
pub(super) const UNKNOWN_VERSION: &str = "1999-01-01";
/// How many sessions are opened to judge their ids (S-18).
const SESSIONS: usize = 5;

/// Where the raw probes go, and with what credentials.
pub(super) struct Endpoint<'a> {
    /// The MCP URL.
    pub url: &'a str,
    /// Each request's bound.
    pub timeout: Duration,
    /// The credentials' headers (`--header`, `--bearer-env`).
    pub auth: &'a [(String, String)],
    /// The second principal's, if any.
    pub second: Option<&'a [(String, String)]>,
}

fn client_info() -> Value {
    json!({"name": format!("{NAME}-doctor"), "version": VERSION})
}

pub(super) fn initialize_message(version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": client_info()}})
}

pub(super) fn modern_message(method: &str, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": {
        protocol::META_PROTOCOL_VERSION: version,
        protocol::META_CLIENT_CAPABILITIES: {},
        protocol::META_CLIENT_INFO: client_info()}}})
}

/// A JSON-RPC answer, or `Failed` for a body that is not one (an auth
/// server's `{"error": "invalid_token"}` is no JSON-RPC error).
pub(super) fn answer_outcome(answer: &Value) -> Outcome {
    if answer.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Outcome::Failed("the answer is not JSON-RPC 2.0".into());
    }
    match (answer.get("result"), answer.get("error")) {
        (Some(r), _) => Outcome::Result(r.clone()),
        (_, Some(e)) => Outcome::Error(e.clone()),
        _ => Outcome::Failed("an answer with neither result nor error".into()),
    }
}

/// A client for raw probes: no redirect, no proxy, bounded in time.
fn raw_client(timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .map_err(|e| e.without_url().to_string())
}

/// What a raw POST got back.
pub(super) struct RawAnswer {
    pub status: u16,
    pub outcome: Outcome,
    /// The `Mcp-Session-Id` it opened, if any.
    pub session: Option<String>,
    /// Its `WWW-Authenticate` header, if any.
    pub challenge: Option<String>,
}

/// Which credentials a raw request carries.
#[derive(Clone, Copy)]
pub(super) enum As {
    /// None.
    Nobody,
    /// `--header` / `--bearer-env`.
    First,
    /// `--second-bearer-env`.
    Second,
}

impl Endpoint<'_> {
    fn credentials(&self, who: As) -> &[(String, String)] {
        match who {
            As::Nobody => &[],
            As::First => self.auth,
            As::Second => self.second.unwrap_or_default(),
        }
    }

    /// POSTs one message; the status and the JSON-RPC answer (from a JSON
    /// body or the SSE stream), read up to [`RAW_MAX_BYTES`].
    pub(super) async fn post(
        &self,
        who: As,
        message: &Value,
        headers: &[(&str, &str)],
    ) -> Result<RawAnswer, String> {
        let client = raw_client(self.timeout)?;
        let mut req = client
            .post(self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        for (k, v) in self.credentials(who) {
            req = req.header(k.as_str(), v.as_str());
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let mut resp = req
            .body(message.to_string())
            .send()
            .await
            .map_err(|e| format!("the POST failed: {}", cause(e)))?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let session = header("mcp-session-id");
        let challenge = header("www-authenticate");
        let sse = header("content-type").is_some_and(|v| v.starts_with("text/event-stream"));
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            if body.len() + chunk.len() > RAW_MAX_BYTES {
                break;
            }
            body.extend_from_slice(&chunk);
            // An SSE answer ends with the response; stop at the first one.
            if sse && String::from_utf8_lossy(&body).contains("\"id\"") && body.ends_with(b"\n\n") {
                break;
            }
        }
        let text = String::from_utf8_lossy(&body);
        let answer = if sse {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m.get("id") == message.get("id"))
        } else {
            serde_json::from_str::<Value>(&text).ok()
        };
        let outcome = match answer {
            Some(a) => answer_outcome(&a),
            None => Outcome::Failed(format!("HTTP {status} without a JSON-RPC answer")),
        };
        Ok(RawAnswer {
            status,
            outcome,
            session,
            challenge,
        })
    }

    /// Ends a legacy session a probe opened (best effort).
    pub(super) async fn end_session(&self, who: As, session: Option<&str>) {
        let (Some(session), Ok(client)) = (session, raw_client(self.timeout)) else {
            return;
        };
        let mut req = client.delete(self.url).header("mcp-session-id", session);
        for (k, v) in self.credentials(who) {
            req = req.header(k.as_str(), v.as_str());
        }
        let _ = req.send().await;
    }

    /// The scheme and authority of the URL (`http://host:port`).
    fn origin(&self) -> &str {
        let url = self.url;
        url.find("://")
            .and_then(|i| url[i + 3..].find('/').map(|j| &url[..i + 3 + j]))
            .unwrap_or(url)
    }
}

/// Why a request failed, in a few words: connection refused, DNS, TLS, a
/// timeout; never the URL.
fn cause(e: reqwest::Error) -> String {
    let mut chain = String::new();
    let mut source: Option<&dyn std::error::Error> = Some(&e);
    while let Some(s) = source {
        chain.push_str(&s.to_string().to_ascii_lowercase());
        chain.push(' ');
        source = s.source();
    }
    if e.is_timeout() {
        "timeout: no answer in time".into()
    } else if chain.contains("dns") || chain.contains("failed to lookup") {
        "DNS: the host name does not resolve".into()
    } else if chain.contains("certificate") || chain.contains("tls") || chain.contains("ssl") {
        "TLS: the secure connection could not be set up".into()
    } else if chain.contains("connection refused") {
        "connection refused: nothing listens at that address".into()
    } else {
        e.without_url().to_string()
    }
}

/// Why the endpoint could not be reached, in one line, with the real cause
/// (connection refused, DNS, TLS, timeout, 401): a raw `initialize` tells
/// what the connector's error may not. `None` when it answers 2xx: the
/// connector's own error then stands.
pub(super) async fn unreachable_cause(endpoint: &Endpoint<'_>) -> Option<String> {
    let init = initialize_message(protocol::LEGACY_VERSIONS[0]);
    match endpoint.post(As::First, &init, &[]).await {
        Err(e) => Some(e.trim_start_matches("the POST failed: ").to_owned()),
        Ok(a) => {
            endpoint.end_session(As::First, a.session.as_deref()).await;
            match a.status {
                200..=299 => None,
                401 if endpoint.auth.is_empty() => Some(
                    "HTTP 401: the server wants credentials (pass --bearer-env VAR or --header NAME:VALUE)"
                        .into(),
                ),
                401 => Some("HTTP 401: the server refused the credentials given".into()),
                status => Some(format!("HTTP {status} to an initialize request")),
            }
        }
    }
}

/// GETs `url` without credentials: the status and the JSON body, if any.
async fn get_json(url: &str, timeout: Duration) -> Option<(u16, Option<Value>)> {
    let client = raw_client(timeout).ok()?;
    let mut resp = client.get(url).send().await.ok()?;
    let status = resp.status().as_u16();
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        if body.len() + chunk.len() > RAW_MAX_BYTES {
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Some((status, serde_json::from_slice::<Value>(&body).ok()))
}

/// The `resource_metadata` URL a `WWW-Authenticate` challenge names.
fn named_metadata(challenge: &str) -> Option<&str> {
    let rest = &challenge[challenge.find("resource_metadata=")? + "resource_metadata=".len()..];
    let rest = rest.strip_prefix('"').unwrap_or(rest);
    rest.split(['"', ',']).next().filter(|u| !u.is_empty())
}

/// `https://host/path` with `well_known` inserted after the host
/// (RFC 8414 §3.1, RFC 9728 §3.1): `https://host/.well-known/x/path`.
fn well_known(url: &str, well_known: &str) -> Option<String> {
    let parsed = sluice_core::outbound::Url::parse(url).ok()?;
    let path = parsed.path().trim_end_matches('/');
    let mut base = parsed.clone();
    base.set_path("");
    base.set_query(None);
    Some(format!(
        "{}/.well-known/{well_known}{path}",
        base.as_str().trim_end_matches('/')
    ))
}

/// The protected resource metadata (the challenge's, else the well-known
/// one) and each named authorization server's metadata (RFC 8414, else
/// OpenID discovery).
async fn authorization_documents(endpoint: &Endpoint<'_>, probes: &mut HttpProbes) {
    let named = probes.challenge.as_deref().and_then(named_metadata);
    let candidates: Vec<String> = match named {
        Some(url) => vec![url.to_owned()],
        None => [
            well_known(endpoint.url, "oauth-protected-resource"),
            Some(format!(
                "{}/.well-known/oauth-protected-resource",
                endpoint.origin()
            )),
        ]
        .into_iter()
        .flatten()
        .collect(),
    };
    for url in candidates {
        if let Some((status, body)) = get_json(&url, endpoint.timeout).await {
            let found = status == 200;
            probes.resource_metadata = Some((url, status, body));
            if found {
                break;
            }
        }
    }
    let servers: Vec<String> = probes
        .resource_metadata
        .as_ref()
        .and_then(|(_, _, body)| body.as_ref())
        .and_then(|b| b.get("authorization_servers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    for issuer in servers {
        let urls = [
            well_known(&issuer, "oauth-authorization-server"),
            Some(format!(
                "{}/.well-known/openid-configuration",
                issuer.trim_end_matches('/')
            )),
        ];
        let mut last = None;
        for url in urls.into_iter().flatten() {
            last = get_json(&url, endpoint.timeout).await;
            if matches!(last, Some((200, Some(_)))) {
                break;
            }
        }
        if let Some((status, body)) = last {
            probes.issuer_metadata.push((issuer, status, body));
        }
    }
}

/// The HTTP-only probes: `/health`, whether the endpoint wants
/// credentials (and then its authorization documents), a foreign
/// `Origin`, a bad version header, and a legacy server's session ids and
/// their binding to a principal. The `Origin` rides on a request the
/// server would otherwise serve (`initialize` for a legacy server,
/// `server/discover` for a modern one), so that a refusal can only be
/// about the `Origin`.
pub(super) async fn http_probes(endpoint: &Endpoint<'_>, era: Era) -> HttpProbes {
    let mut probes = HttpProbes {
        health: get_json(&format!("{}/health", endpoint.origin()), endpoint.timeout).await,
        ..HttpProbes::default()
    };
    let init = initialize_message(protocol::LEGACY_VERSIONS[0]);
    let discover = modern_message("server/discover", protocol::MODERN_VERSION);
    let modern_headers = [
        ("mcp-protocol-version", protocol::MODERN_VERSION),
        ("mcp-method", "server/discover"),
    ];
    let (message, headers): (&Value, &[(&str, &str)]) = match era {
        Era::Modern => (&discover, &modern_headers),
        Era::Legacy => (&init, &[]),
    };
    if let Ok(a) = endpoint.post(As::Nobody, message, headers).await {
        endpoint.end_session(As::Nobody, a.session.as_deref()).await;
        if a.status == 401 {
            probes.unauthenticated = Some(401);
            probes.challenge = a.challenge;
            authorization_documents(endpoint, &mut probes).await;
        }
    }
    let foreign = ("origin", "http://evil.example");
    let with_origin: Vec<(&str, &str)> = headers.iter().copied().chain([foreign]).collect();
    if let Ok(a) = endpoint.post(As::First, message, &with_origin).await {
        endpoint.end_session(As::First, a.session.as_deref()).await;
        probes.foreign_origin = Some(a.status);
    }
    probes.bad_version_header = bad_version_header(endpoint, era).await;
    if era == Era::Legacy {
        sessions(endpoint, &mut probes).await;
    }
    probes
}

/// Opens a few legacy sessions for their ids; with a second principal,
/// sends a request in the first one's session with the second's
/// credentials.
async fn sessions(endpoint: &Endpoint<'_>, probes: &mut HttpProbes) {
    let init = initialize_message(protocol::LEGACY_VERSIONS[0]);
    for _ in 0..SESSIONS {
        let Ok(opened) = endpoint.post(As::First, &init, &[]).await else {
            return;
        };
        let Some(session) = opened.session else {
            return;
        };
        if probes.session_ids.is_empty() && endpoint.second.is_some() {
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let headers = [
                ("mcp-session-id", session.as_str()),
                ("mcp-protocol-version", protocol::LEGACY_VERSIONS[0]),
            ];
            let _ = endpoint.post(As::First, &initialized, &headers).await;
            let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
            probes.cross_principal = endpoint
                .post(As::Second, &list, &headers)
                .await
                .ok()
                .map(|a| a.status);
        }
        endpoint.end_session(As::First, Some(&session)).await;
        probes.session_ids.push(session);
    }
}

/// The second principal's first `tools/list` page (2026-07-28: one
/// stateless request).
pub(super) async fn second_tools_list(endpoint: &Endpoint<'_>) -> Outcome {
    let list = modern_message("tools/list", protocol::MODERN_VERSION);
    let headers = [
        ("mcp-protocol-version", protocol::MODERN_VERSION),
        ("mcp-method", "tools/list"),
    ];
    match endpoint.post(As::Second, &list, &headers).await {
        Ok(a) => a.outcome,
        Err(e) => Outcome::Failed(e),
    }
}

/// A `tools/call` sent raw: its status and `WWW-Authenticate` header,
/// which the connector does not keep. 2026-07-28: one stateless request;
/// 2025: in a session of its own, opened and closed around it.
pub(super) async fn raw_call(
    endpoint: &Endpoint<'_>,
    era: Era,
    name: &str,
    arguments: &Value,
) -> Option<(u16, Option<String>)> {
    match era {
        Era::Modern => {
            let mut call = modern_message("tools/call", protocol::MODERN_VERSION);
            call["params"]["name"] = json!(name);
            call["params"]["arguments"] = arguments.clone();
            let headers = [
                ("mcp-protocol-version", protocol::MODERN_VERSION),
                ("mcp-method", "tools/call"),
                ("mcp-name", name),
            ];
            let answer = endpoint.post(As::First, &call, &headers).await.ok()?;
            Some((answer.status, answer.challenge))
        }
        Era::Legacy => {
            let init = initialize_message(protocol::LEGACY_VERSIONS[0]);
            let opened = endpoint.post(As::First, &init, &[]).await.ok()?;
            let session = opened.session;
            let mut headers = vec![("mcp-protocol-version", protocol::LEGACY_VERSIONS[0])];
            if let Some(s) = session.as_deref() {
                headers.push(("mcp-session-id", s));
            }
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let _ = endpoint.post(As::First, &initialized, &headers).await;
            let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}});
            let answer = endpoint.post(As::First, &call, &headers).await.ok();
            endpoint.end_session(As::First, session.as_deref()).await;
            answer.map(|a| (a.status, a.challenge))
        }
    }
}

/// A request that is right in every way but its `MCP-Protocol-Version`
/// header (1999-01-01): a modern `tools/list` whose `_meta` names 2026-07-28,
/// or a legacy `tools/list` in a freshly opened session.
async fn bad_version_header(endpoint: &Endpoint<'_>, era: Era) -> Option<u16> {
    match era {
        Era::Modern => {
            let list = modern_message("tools/list", protocol::MODERN_VERSION);
            let headers = [
                ("mcp-protocol-version", UNKNOWN_VERSION),
                ("mcp-method", "tools/list"),
            ];
            endpoint
                .post(As::First, &list, &headers)
                .await
                .ok()
                .map(|a| a.status)
        }
        Era::Legacy => {
            let init = initialize_message(protocol::LEGACY_VERSIONS[0]);
            let opened = endpoint.post(As::First, &init, &[]).await.ok()?;
            let session = opened.session?;
            let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
            let headers = [
                ("mcp-session-id", session.as_str()),
                ("mcp-protocol-version", UNKNOWN_VERSION),
            ];
            let status = endpoint
                .post(As::First, &list, &headers)
                .await
                .ok()
                .map(|a| a.status);
            endpoint.end_session(As::First, Some(&session)).await;
            status
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls() {
        let c = r#"Bearer realm="mcp", resource_metadata="http://h:1/.well-known/oauth-protected-resource/mcp""#;
        assert_eq!(
            named_metadata(c),
            Some("http://h:1/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(named_metadata("Bearer realm=\"mcp\""), None);
        assert_eq!(
            well_known("http://h:1/mcp", "oauth-protected-resource").as_deref(),
            Some("http://h:1/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            well_known("https://as.example", "oauth-authorization-server").as_deref(),
            Some("https://as.example/.well-known/oauth-authorization-server")
        );
    }
}
