//! Admission of a Streamable HTTP request: the rules its header fields
//! must pass before the router sees it, as pure functions of a
//! [`Headers`] view.
//!
//! In the order the shell applies them:
//!
//! - Before the body is read ([`check_transport`]): the header caps (431),
//!   one `Host` that the request target does not contradict (400, 421),
//!   then `Origin` against `[server] allowed_origins` and, bound to
//!   loopback, a local `Host` (403: DNS rebinding; MCP 2025-11-25,
//!   Transports §Streamable HTTP, Security Warning); one credential at
//!   most ([`credential`], 400); a POST's body declared as JSON
//!   ([`check_content_type`], 415).
//! - Once the body is read, which era the request speaks ([`post_era`]);
//!   then for 2026-07-28 ([`admit_modern`]) the headers that mirror the
//!   body, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the
//!   `Mcp-Param-*` a tool declares (MCP 2026-07-28, Transports §Streamable
//!   HTTP, standard headers), and its `_meta`; for 2025-x
//!   ([`check_legacy_version`]) a supported `MCP-Protocol-Version`.
//!
//! Sessions, auth and the encoding of a refusal stay in the shell: they
//! need state (the session table, the token's issuer keys) this crate does
//! not hold.

use serde_json::Value;

use super::Denied;
use crate::carried::{self, Carried};
use crate::config::AllowedOrigin;
use crate::headers;
use crate::jsonrpc;
use crate::method::Method;
use crate::protocol::{self, Era, ModernRequestMeta};

/// The most request header fields taken (hyper stops at 100 on its own).
pub const MAX_HEADERS: usize = 64;
/// The most bytes of request header fields taken, names and values
/// together.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// The header fields the rules read, by their lowercase names.
pub mod field {
    /// The page's origin, sent by browsers.
    pub const ORIGIN: &str = "origin";
    /// The authority the client addressed.
    pub const HOST: &str = "host";
    /// The protocol version (both eras).
    pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
    /// A 2026-07-28 request's method, mirrored from the body.
    pub const METHOD: &str = "mcp-method";
    /// A 2026-07-28 request's target (`params.name` or `params.uri`).
    pub const NAME: &str = "mcp-name";
    /// A legacy session's id.
    pub const SESSION_ID: &str = "mcp-session-id";
    /// The client's credential.
    pub const AUTHORIZATION: &str = "authorization";
    /// The media type of a request's body.
    pub const CONTENT_TYPE: &str = "content-type";
}

/// The media type a POSTed JSON-RPC message must declare (MCP 2025-11-25,
/// Transports §Streamable HTTP).
pub const JSON_MEDIA_TYPE: &str = "application/json";

/// A request's header fields, as the rules read them. The shell implements
/// it over its HTTP library's map; names are matched as HTTP does,
/// ignoring case.
pub trait Headers {
    /// Every value of the field `name`, in order: `None` for a value that
    /// is not visible ASCII text.
    fn get_all(&self, name: &str) -> Vec<Option<&str>>;

    /// How many fields there are (a repeated name counts each time).
    fn count(&self) -> usize;

    /// The bytes of every name and value together.
    fn bytes(&self) -> usize;

    /// The first value of `name`; `Some(None)` when it is there but not
    /// text.
    fn get(&self, name: &str) -> Option<Option<&str>> {
        self.get_all(name).into_iter().next()
    }

    /// The first value of `name`, one that is not text read as U+FFFD so
    /// that it equals nothing a client can mean.
    fn lossy(&self, name: &str) -> Option<&str> {
        self.get(name).map(|v| v.unwrap_or("\u{fffd}"))
    }
}

/// Everything a request must pass before its body is read, but auth: the
/// header caps, [`check_host`], then [`check_origin`]. `target_authority`
/// is the authority of an absolute-form request target
/// (`POST http://host/mcp`), `None` for the usual `POST /mcp`.
pub fn check_transport(
    headers: &impl Headers,
    target_authority: Option<&str>,
    loopback: bool,
    allowed: &[AllowedOrigin],
) -> Result<(), Denied> {
    check_header_size(headers)?;
    check_host(headers, target_authority)?;
    check_origin(headers, loopback, allowed)
}

/// One `Host` field at most (RFC 9112 §3.2: two are a 400), and an
/// absolute-form target that names the same authority: sluice is not a
/// proxy, and a request for another host must not be served as if it were
/// for this one (421, RFC 9110 §15.5.20), whatever its `Host` says.
pub fn check_host(headers: &impl Headers, target_authority: Option<&str>) -> Result<(), Denied> {
    let hosts = headers.get_all(field::HOST);
    if hosts.len() > 1 {
        return Err(Denied::MalformedRequest("more than one Host header"));
    }
    if let Some(target) = target_authority {
        let host = hosts.first().copied().flatten();
        if !host.is_some_and(|h| h.eq_ignore_ascii_case(target)) {
            return Err(Denied::Misdirected);
        }
    }
    Ok(())
}

/// The request's credential, its `Authorization` field: two are refused
/// whichever comes first (RFC 6750 §3.1, `invalid_request`: a request
/// must not carry more than one), so that no order of a good and a bad
/// one is served. A value that is not text is kept as U+FFFD, which
/// verifies as nothing.
pub fn credential(headers: &impl Headers) -> Result<Option<&str>, Denied> {
    match headers.get_all(field::AUTHORIZATION).as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.unwrap_or("\u{fffd}"))),
        _ => Err(Denied::MalformedRequest(
            "more than one Authorization header; send one credential",
        )),
    }
}

/// A POSTed message must be declared `application/json` (parameters such
/// as `charset` aside): a form or `text/plain` body is what a browser
/// sends cross-origin without a preflight, and sluice does not guess.
pub fn check_content_type(headers: &impl Headers) -> Result<(), Denied> {
    let types = headers.get_all(field::CONTENT_TYPE);
    let media_type = match types.as_slice() {
        [Some(value)] => value.split(';').next().unwrap_or_default().trim(),
        _ => "",
    };
    if media_type.eq_ignore_ascii_case(JSON_MEDIA_TYPE) {
        Ok(())
    } else {
        Err(Denied::UnsupportedMediaType)
    }
}

/// At most [`MAX_HEADERS`] fields and [`MAX_HEADER_BYTES`] bytes: what
/// sluice reads of a request is bounded before any of it is parsed.
pub fn check_header_size(headers: &impl Headers) -> Result<(), Denied> {
    if headers.count() > MAX_HEADERS || headers.bytes() > MAX_HEADER_BYTES {
        return Err(Denied::HeadersTooLarge {
            max_headers: MAX_HEADERS,
            max_bytes: MAX_HEADER_BYTES,
        });
    }
    Ok(())
}

/// The DNS-rebinding guard: a present `Origin` must be one allowed origin,
/// and when bound to loopback the `Host` must be a local name (a page on a
/// rebound name would otherwise reach sluice through the user's browser).
pub fn check_origin(
    headers: &impl Headers,
    loopback: bool,
    allowed: &[AllowedOrigin],
) -> Result<(), Denied> {
    let origins = headers.get_all(field::ORIGIN);
    if let Some(origin) = origins.first() {
        let origin = origin.unwrap_or_default();
        // A browser sends one; two leave it unclear which one counts.
        if origins.len() > 1 || !allowed.iter().any(|a| a.admits(origin)) {
            return Err(Denied::Forbidden("this Origin"));
        }
    }
    if loopback {
        let host = headers.get(field::HOST).flatten().map(strip_port);
        if !host.is_some_and(is_local_host) {
            return Err(Denied::Forbidden("this Host"));
        }
    }
    Ok(())
}

/// The host of an authority (`host:port`, `[v6]:port`, or a bare host).
pub fn strip_port(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host)
}

/// Whether a host (without its port) names this machine.
pub fn is_local_host(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// The era of a POSTed request: 2026-07-28 when its `MCP-Protocol-Version`
/// header or its `_meta` says so. The header counts even when `_meta` is
/// missing, which is then refused as invalid params rather than taken as
/// legacy.
pub fn post_era(headers: &impl Headers, params: &Value) -> Era {
    let modern_header =
        headers.get(field::PROTOCOL_VERSION) == Some(Some(protocol::MODERN_VERSION));
    if modern_header || protocol::request_era(params) == Era::Modern {
        Era::Modern
    } else {
        Era::Legacy
    }
}

/// A 2026-07-28 request's headers and `_meta`, in the order their errors
/// take precedence: a header that contradicts the body is a mismatch
/// whatever else is wrong with the body; then `_meta`
/// ([`protocol::check_modern_meta`]); then the `Mcp-Param-*` headers of the
/// tool `tool` finds by its exposed name.
pub fn admit_modern<'t>(
    headers: &impl Headers,
    name: &str,
    method: Method,
    params: &Value,
    carried: Option<&Carried>,
    tool: impl FnOnce(&str) -> Option<&'t Value>,
) -> Result<ModernRequestMeta, Denied> {
    check_modern_headers(headers, name, method, params)?;
    let meta = protocol::check_modern_meta(params).map_err(Denied::Protocol)?;
    let tool = match method {
        Method::CallTool => params.get("name").and_then(Value::as_str).and_then(tool),
        _ => None,
    };
    check_param_headers(headers, method, params, carried, tool)?;
    Ok(meta)
}

/// The headers of a 2026-07-28 request must mirror its body:
/// `MCP-Protocol-Version` (the body's version, when it has one),
/// `Mcp-Method` (`name`, the method as sent) and, for a method with a
/// target, `Mcp-Name` ([`Method::name_field`], possibly base64-encoded).
pub fn check_modern_headers(
    headers: &impl Headers,
    name: &str,
    method: Method,
    params: &Value,
) -> Result<(), Denied> {
    let mismatch = |what: String| Err(Denied::HeaderMismatch(what));
    let body_version = jsonrpc::meta(params)
        .and_then(|m| m.get(protocol::META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    match (headers.lossy(field::PROTOCOL_VERSION), body_version) {
        (Some(h), Some(b)) if h != b => {
            return mismatch(format!(
                "MCP-Protocol-Version header {} does not match the body's {}",
                jsonrpc::quoted(h),
                jsonrpc::quoted(b)
            ));
        }
        (Some(_), _) => {}
        (None, _) => return mismatch("missing MCP-Protocol-Version header".into()),
    }
    match headers.lossy(field::METHOD) {
        Some(m) if m == name => {}
        Some(m) => {
            return mismatch(format!(
                "Mcp-Method header {} does not match the body's {}",
                jsonrpc::quoted(m),
                jsonrpc::quoted(name)
            ));
        }
        None => return mismatch("missing Mcp-Method header".into()),
    }
    if let Some(target) = method.name_field() {
        let body = params.get(target).and_then(Value::as_str);
        match headers.lossy(field::NAME).map(headers::decode_value) {
            Some(Some(h)) if Some(h.as_str()) == body => {}
            Some(_) => return mismatch(format!("Mcp-Name header does not match params.{target}")),
            None => return mismatch("missing Mcp-Name header".into()),
        }
    }
    Ok(())
}

/// Each argument of a `tools/call` that `tool` (its definition, if the
/// federation has it) mirrors in an `Mcp-Param-*` header must come with
/// that header, equal to the argument: a server that processes the body
/// must check them (MCP 2026-07-28, Transports §Streamable HTTP).
pub fn check_param_headers(
    headers: &impl Headers,
    method: Method,
    params: &Value,
    carried: Option<&Carried>,
    tool: Option<&Value>,
) -> Result<(), Denied> {
    if method != Method::CallTool {
        return Ok(());
    }
    let schema = tool
        .and_then(|t| t.get("inputSchema"))
        .unwrap_or(&Value::Null);
    // A tool whose declarations are invalid is unusable by clients anyway;
    // the call goes on and the upstream decides.
    let Ok(declared) = headers::declared(schema) else {
        return Ok(());
    };
    let argument = |path: &[String]| carried::argument(params, carried, path);
    for expected in headers::values(&declared, argument) {
        let name = &expected.header;
        match headers.get(name).flatten() {
            Some(got) if headers::matches(got, &expected) => {}
            Some(_) => {
                return Err(Denied::HeaderMismatch(format!(
                    "header {name} does not match its argument"
                )));
            }
            None => return Err(Denied::HeaderMismatch(format!("missing header {name}"))),
        }
    }
    Ok(())
}

/// A 2025-x request's `MCP-Protocol-Version`, when it sends one, must be a
/// version of that era ([`protocol::is_legacy_header_version`]).
pub fn check_legacy_version(headers: &impl Headers) -> Result<(), Denied> {
    match headers.get(field::PROTOCOL_VERSION) {
        Some(version) => {
            let version = version.unwrap_or_default();
            if protocol::is_legacy_header_version(version) {
                Ok(())
            } else {
                Err(Denied::UnsupportedVersionHeader(version.to_owned()))
            }
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
