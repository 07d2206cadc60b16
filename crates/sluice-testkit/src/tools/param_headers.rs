//! SEP-2243 `x-mcp-header` arguments: the `header_echo` tool, and the check that a 2026 HTTP
//! request mirrors those arguments in its `Mcp-Param-*` headers.

use axum::http::HeaderMap;
use serde_json::Value;
use sluice_core::headers;

use super::{str_arg, text, tool_error};
use crate::jsonrpc::{RpcError, method};
use crate::peer::ReqCtx;

/// The `x-mcp-header` arguments of `header_echo`: (argument, header it is mirrored in).
const HEADER_ECHO_PARAMS: [(&str, &str); 2] =
    [("region", "Mcp-Param-Region"), ("count", "Mcp-Param-Count")];

/// `header_echo`: `region=<region> count=<count or -> params=<names>`, where `<names>` are the
/// lowercase names of all `Mcp-Param-*` headers received, sorted and comma-separated (empty on
/// stdio).
pub fn header_echo(args: &Value, ctx: &ReqCtx) -> Result<Value, Value> {
    let region = str_arg(args, "region")?;
    let count = match args.get("count") {
        None | Some(Value::Null) => "-".to_owned(),
        Some(v) => v
            .as_i64()
            .ok_or_else(|| tool_error("argument `count` must be an integer"))?
            .to_string(),
    };
    let params = ctx.param_headers.join(",");
    Ok(text(format!(
        "region={region} count={count} params={params}"
    )))
}

/// Checks the `Mcp-Param-*` headers of a 2026 HTTP request (SEP-2243) for the tools that
/// declare `x-mcp-header` arguments (only `header_echo`; other requests pass). Every such
/// argument present and not null in `arguments` needs exactly one header whose decoded value
/// equals it (integers compared numerically); a missing, repeated, undecodable or different
/// header is `-32020` (the caller answers HTTP 400).
pub fn check_param_headers(msg: &Value, http: &HeaderMap) -> Result<(), RpcError> {
    let params = msg.get("params");
    let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
    if method(msg) != "tools/call" || name != Some("header_echo") {
        return Ok(());
    }
    let args = params.and_then(|p| p.get("arguments"));
    let mismatch = |what: String| RpcError::new(-32020, format!("Header mismatch: {what}"));
    for (arg, header) in HEADER_ECHO_PARAMS {
        let Some(expected) = args.and_then(|a| a.get(arg)).filter(|v| !v.is_null()) else {
            continue;
        };
        let mut received = http.get_all(header.to_ascii_lowercase()).iter();
        let value = match (received.next(), received.next()) {
            (None, _) => return Err(mismatch(format!("{header} missing (argument `{arg}`)"))),
            (Some(_), Some(_)) => return Err(mismatch(format!("{header} repeated"))),
            (Some(v), None) => v
                .to_str()
                .map_err(|_| mismatch(format!("{header} has invalid characters")))?,
        };
        let same = match expected {
            Value::String(s) => headers::decode_value(value).is_some_and(|d| d == *s),
            Value::Number(n) => headers::matches_integer(value, &n.to_string()),
            Value::Bool(b) => headers::decode_value(value).is_some_and(|d| d == b.to_string()),
            _ => false,
        };
        if !same {
            return Err(mismatch(format!(
                "{header} does not match argument `{arg}`"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call_msg(name: &str, args: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": name, "arguments": args}})
    }

    fn http_headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, axum::http::HeaderValue::from_static(v));
        }
        h
    }

    fn check(args: Value, pairs: &[(&'static str, &'static str)]) -> Option<i64> {
        check_param_headers(&call_msg("header_echo", args), &http_headers(pairs))
            .err()
            .map(|e| e.code)
    }

    #[test]
    fn param_headers_compare_by_argument_type() {
        let args = json!({"region": "007", "count": 7});
        assert_eq!(
            check(
                args.clone(),
                &[("mcp-param-region", "007"), ("mcp-param-count", "07")]
            ),
            None
        );
        // A string argument is compared as a string, not as a number.
        assert_eq!(
            check(
                args.clone(),
                &[("mcp-param-region", "7"), ("mcp-param-count", "7")]
            ),
            Some(-32020)
        );
        assert_eq!(
            check(
                args,
                &[
                    ("mcp-param-region", "007"),
                    ("mcp-param-count", "7"),
                    ("mcp-param-count", "7")
                ]
            ),
            Some(-32020)
        );
        // Null or absent arguments need no header; other tools are not checked.
        assert_eq!(
            check(
                json!({"region": "x", "count": null}),
                &[("mcp-param-region", "x")]
            ),
            None
        );
        assert_eq!(check(json!({}), &[]), None);
        let echo = call_msg("echo", json!({"region": "x"}));
        assert!(check_param_headers(&echo, &HeaderMap::new()).is_ok());
        // Broken base64 never matches.
        assert_eq!(
            check(
                json!({"region": "x"}),
                &[("mcp-param-region", "=?base64?***?=")]
            ),
            Some(-32020)
        );
    }
}
