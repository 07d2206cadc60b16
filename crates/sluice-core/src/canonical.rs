//! One spelling for equal JSON values, and digests over it.
//!
//! Two definitions that differ only in key order, whitespace or number
//! spelling (`1`, `1.0`, `1e0`) mean the same thing, so they must have the
//! same digest; any other difference must change it. The rules follow
//! RFC 8785 in spirit: object keys sorted (by UTF-8 bytes) at every level,
//! no insignificant whitespace, and numbers in one canonical form. They
//! differ where RFC 8785 would lose data: an integer literal of any size is
//! kept digit for digit instead of being rounded to a double.

use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

/// Magnitudes below this are exactly representable as `f64` integers, so a
/// fractional spelling of one (`3.0`, `3e0`) is rewritten as the integer.
const EXACT_F64_INTEGER: f64 = 9_007_199_254_740_992.0;

/// The canonical form of a value: keys sorted at every level, numbers in
/// canonical form. Strings, booleans and nulls are unchanged.
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(obj) => {
            let mut keys: Vec<&String> = obj.keys().collect();
            keys.sort();
            let mut out = Map::with_capacity(obj.len());
            for k in keys {
                out.insert(k.clone(), canonical(&obj[k]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        Value::Number(n) => Value::Number(canonical_number(n)),
        other => other.clone(),
    }
}

/// The canonical form as compact JSON text.
pub fn canonical_json(value: &Value) -> String {
    canonical(value).to_string()
}

/// `sha256:<hex>` of the canonical JSON text.
pub fn digest(value: &Value) -> String {
    let hash = Sha256::digest(canonical_json(value).as_bytes());
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in hash.iter() {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// An integer literal keeps its digits (`-0` becomes `0`); a number with a
/// fraction or exponent becomes the integer it denotes when that is exact,
/// else the shortest decimal that reads back as the same double.
fn canonical_number(n: &Number) -> Number {
    let text = n.to_string();
    let is_integer_literal = !text.contains(['.', 'e', 'E']);
    if is_integer_literal {
        return if text == "-0" {
            Number::from(0)
        } else {
            n.clone()
        };
    }
    match n.as_f64() {
        Some(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < EXACT_F64_INTEGER => {
            // Exact by the bound above.
            #[allow(clippy::cast_possible_truncation)]
            Number::from(f as i64)
        }
        Some(f) if f.is_finite() => Number::from_f64(f).unwrap_or_else(|| n.clone()),
        // Out of f64 range (`1e400`): keep the spelling, lowercased.
        _ => text
            .to_ascii_lowercase()
            .parse()
            .unwrap_or_else(|_| n.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).expect("test JSON")
    }

    #[test]
    fn sorts_keys_at_every_level() {
        let a = json!({"b": 1, "a": {"d": [3, {"z": 1, "y": 2}], "c": null}});
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}"#
        );
    }

    #[test]
    fn equal_numbers_have_one_spelling() {
        for (a, b) in [
            ("1", "1.0"),
            ("1", "1e0"),
            ("100", "1E2"),
            ("0", "-0"),
            ("0", "0.0"),
            ("0.5", "5e-1"),
            ("-2.25", "-225e-2"),
        ] {
            assert_eq!(
                canonical_json(&parse(a)),
                canonical_json(&parse(b)),
                "{a} vs {b}"
            );
        }
    }

    #[test]
    fn different_numbers_stay_different() {
        let big = "123456789012345678901234567890";
        let bigger = "123456789012345678901234567891";
        assert_ne!(canonical_json(&parse(big)), canonical_json(&parse(bigger)));
        assert_eq!(canonical_json(&parse(big)), big);
        assert_ne!(canonical_json(&parse("0.1")), canonical_json(&parse("0.2")));
        assert_ne!(canonical_json(&parse("1")), canonical_json(&parse("\"1\"")));
    }

    #[test]
    fn whitespace_and_order_do_not_change_the_digest() {
        let a = parse(
            r#"{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"integer","maximum":10}}}}"#,
        );
        let b = parse(
            "{ \"inputSchema\" : { \"properties\": {\"a\": {\"maximum\": 10.0, \"type\": \"integer\"}},\n \"type\": \"object\" },\n \"name\": \"t\" }",
        );
        assert_eq!(digest(&a), digest(&b));
        let c = parse(
            r#"{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"integer","maximum":11}}}}"#,
        );
        assert_ne!(digest(&a), digest(&c));
        assert!(digest(&a).starts_with("sha256:"));
        assert_eq!(digest(&a).len(), 7 + 64);
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-z ]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::btree_map("[a-e]{1,3}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Canonicalising is idempotent, and the digest ignores key order.
        #[test]
        fn canonical_is_stable(v in arb_json()) {
            let once = canonical(&v);
            prop_assert_eq!(canonical_json(&once), canonical_json(&v));
            let reversed = reverse_keys(&v);
            prop_assert_eq!(digest(&reversed), digest(&v));
        }
    }

    fn reverse_keys(v: &Value) -> Value {
        match v {
            Value::Object(obj) => Value::Object(
                obj.iter()
                    .rev()
                    .map(|(k, v)| (k.clone(), reverse_keys(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(reverse_keys).collect()),
            other => other.clone(),
        }
    }
}
