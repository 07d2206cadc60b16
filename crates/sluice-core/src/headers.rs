//! SEP-2243 request headers of 2026-07-28 Streamable HTTP (MCP 2026-07-28,
//! `basic/transports/streamable-http` § Request Metadata): the value
//! encoding of `Mcp-Name` and `Mcp-Param-*`, and the `Mcp-Param-{Name}`
//! headers a tool's `inputSchema` asks for with `"x-mcp-header": "{Name}"`.
//!
//! sluice both checks these headers (as the server its clients call) and
//! computes them (as the client of a modern HTTP upstream), from the same
//! tool definition.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// The prefix of per-argument headers.
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// The largest integer a header may carry (±(2^53−1)).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// One argument a tool wants mirrored in a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The `{Name}` of `Mcp-Param-{Name}`, as declared.
    pub name: String,
    /// The chain of `properties` keys from the schema root to the argument.
    pub path: Vec<String>,
}

/// Why a tool's `x-mcp-header` declarations are unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidParamHeaders {
    /// Not a non-empty RFC 9110 token.
    #[error("an x-mcp-header name is not an HTTP token")]
    NotAToken,
    /// Two declarations equal ignoring case.
    #[error("two x-mcp-header names are equal ignoring case")]
    Duplicate,
    /// On a property that is not a string, integer or boolean.
    #[error("x-mcp-header is on a property that is not a string, integer or boolean")]
    WrongType,
}

/// Encodes a header value: plain when it is safe visible ASCII, else
/// `=?base64?{base64(utf8)}?=`.
pub fn encode_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !value.starts_with("=?base64?");
    if plain {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", STANDARD.encode(value))
    }
}

/// Decodes a header value; `None` when the base64 form is broken.
pub fn decode_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(value.to_owned()),
    }
}

/// The `x-mcp-header` declarations of a tool's `inputSchema`, found through
/// chains of `properties` only (not `items`, `*Of`, `$ref`, ...).
pub fn declared(input_schema: &Value) -> Result<Vec<ParamHeader>, InvalidParamHeaders> {
    let mut found = Vec::new();
    collect(input_schema, &mut Vec::new(), &mut found)?;
    for (i, a) in found.iter().enumerate() {
        if found[..i]
            .iter()
            .any(|b| b.name.eq_ignore_ascii_case(&a.name))
        {
            return Err(InvalidParamHeaders::Duplicate);
        }
    }
    Ok(found)
}

fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    found: &mut Vec<ParamHeader>,
) -> Result<(), InvalidParamHeaders> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, property) in properties {
        path.push(key.clone());
        if let Some(name) = property.get("x-mcp-header") {
            let name = name
                .as_str()
                .filter(|n| is_token(n))
                .ok_or(InvalidParamHeaders::NotAToken)?;
            let typ = property.get("type").and_then(Value::as_str);
            if !matches!(typ, Some("string" | "integer" | "boolean")) {
                return Err(InvalidParamHeaders::WrongType);
            }
            found.push(ParamHeader {
                name: name.to_owned(),
                path: path.clone(),
            });
        }
        collect(property, path, found)?;
        path.pop();
    }
    Ok(())
}

/// A `NAME:VALUE` argument (`sluice doctor --header`) as a header: a
/// `token` name and a value without control characters, both trimmed.
pub fn name_value(arg: &str) -> Option<(String, String)> {
    let (name, value) = arg.split_once(':')?;
    let (name, value) = (name.trim(), value.trim());
    let printable = value
        .bytes()
        .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f));
    (is_token(name) && printable).then(|| (name.to_owned(), value.to_owned()))
}

/// RFC 9110 `token`: one or more `tchar`.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// One header a call carries, and how to compare a received value with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    /// The header name, lowercase (`mcp-param-region`).
    pub header: String,
    /// The encoded value.
    pub value: String,
    /// The argument is an integer: compare numerically.
    pub integer: bool,
}

/// The headers a call carries: one per declared argument present and not
/// null. `argument` gives the value at a path in the call's arguments
/// ([`argument_at`] of a tree; `crate::carried::argument` of arguments that
/// may have stayed text).
pub fn values(
    declared: &[ParamHeader],
    argument: impl Fn(&[String]) -> Option<Value>,
) -> Vec<Mirror> {
    declared
        .iter()
        .filter_map(|h| {
            let v = argument(&h.path)?;
            let (value, integer) = match v {
                Value::String(s) => (encode_value(&s), false),
                Value::Bool(b) => (b.to_string(), false),
                Value::Number(n) => (
                    n.as_i64()
                        .filter(|i| i.abs() <= MAX_SAFE_INTEGER)
                        .map(|i| i.to_string())?,
                    true,
                ),
                _ => return None,
            };
            Some(Mirror {
                header: format!("{PARAM_HEADER_PREFIX}{}", h.name.to_ascii_lowercase()),
                value,
                integer,
            })
        })
        .collect()
}

/// The value at `path` in `arguments`, when it is one a header can carry
/// (not an object or an array).
pub fn argument_at(arguments: &Value, path: &[String]) -> Option<Value> {
    let mut v = arguments;
    for key in path {
        v = v.get(key)?;
    }
    (!v.is_object() && !v.is_array()).then(|| v.clone())
}

/// Whether a received header value matches what the argument says (after
/// decoding; numerically only for an integer argument, so `"0042"` and
/// `"+42"` differ as strings).
pub fn matches(received: &str, expected: &Mirror) -> bool {
    match (decode_value(received), decode_value(&expected.value)) {
        (Some(received), Some(_)) if expected.integer => {
            matches_integer(&received, &expected.value)
        }
        (Some(received), Some(expected)) => received == expected,
        _ => false,
    }
}

/// Whether a received value is the integer `expected` (`"042"` is 42).
pub fn matches_integer(received: &str, expected: &str) -> bool {
    match (received.parse::<i64>(), expected.parse::<i64>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn header_arguments() {
        assert_eq!(
            name_value("X-Api-Key: k:1"),
            Some(("X-Api-Key".into(), "k:1".into()))
        );
        assert_eq!(name_value("no colon"), None);
        assert_eq!(name_value("bad name: v"), None);
        assert_eq!(name_value("X: a\r\nInjected: b"), None);
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_plain_or_base64() {
        assert_eq!(encode_value("get_weather"), "get_weather");
        assert_eq!(encode_value("file:///a b.txt"), "file:///a b.txt");
        assert_eq!(encode_value(" x"), "=?base64?IHg=?=");
        assert_eq!(encode_value("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(encode_value("=?base64?x"), "=?base64?PT9iYXNlNjQ/eA==?=");
        for v in ["plain", " x", "héllo", "=?base64?x", ""] {
            assert_eq!(decode_value(&encode_value(v)).as_deref(), Some(v));
        }
        assert_eq!(decode_value("=?base64?***?="), None);
    }

    #[test]
    fn declarations_follow_properties_only() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "Hidden"}}}},
            "plain": {"type": "string"}
        }});
        let d = declared(&schema).expect("valid");
        assert_eq!(
            d,
            vec![
                ParamHeader {
                    name: "Region".into(),
                    path: vec!["region".into()]
                },
                ParamHeader {
                    name: "Dry-Run".into(),
                    path: vec!["opts".into(), "dry".into()]
                },
            ]
        );
        let args = json!({"region": "eu west", "opts": {"dry": true}, "plain": "x"});
        let got: Vec<(String, String)> = values(&d, |p| argument_at(&args, p))
            .into_iter()
            .map(|m| (m.header, m.value))
            .collect();
        assert_eq!(
            got,
            vec![
                ("mcp-param-region".into(), "eu west".into()),
                ("mcp-param-dry-run".into(), "true".into())
            ]
        );
        let null = json!({"region": null});
        assert!(values(&d, |p| argument_at(&null, p)).is_empty());
    }

    #[test]
    fn invalid_declarations_are_refused() {
        let bad = |p: Value| declared(&json!({"properties": p})).expect_err("invalid");
        assert_eq!(
            bad(json!({"a": {"type": "string", "x-mcp-header": "has space"}})),
            InvalidParamHeaders::NotAToken
        );
        assert_eq!(
            bad(json!({"a": {"type": "number", "x-mcp-header": "N"}})),
            InvalidParamHeaders::WrongType
        );
        assert_eq!(
            bad(
                json!({"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}})
            ),
            InvalidParamHeaders::Duplicate
        );
    }

    #[test]
    fn integers_compare_as_numbers_and_strings_as_strings() {
        let int = Mirror {
            header: "h".into(),
            value: "42".into(),
            integer: true,
        };
        assert!(matches("042", &int));
        assert!(!matches("43", &int));
        let text = Mirror {
            header: "h".into(),
            value: "0042".into(),
            integer: false,
        };
        assert!(
            !matches("+42", &text),
            "a string argument is compared as a string"
        );
        assert!(matches("0042", &text));
        let enc = Mirror {
            header: "h".into(),
            value: encode_value("héllo"),
            integer: false,
        };
        assert!(matches("=?base64?aMOpbGxv?=", &enc));
        let b = Mirror {
            header: "h".into(),
            value: "false".into(),
            integer: false,
        };
        assert!(!matches("true", &b));
    }
}
