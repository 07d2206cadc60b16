//! The walk over text against the tree walker: the same output, counts
//! and all, for documents of every shape, with the tree threshold low
//! enough that every container of a few values is walked over the text.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::super::{DEFAULT_SECRET_KEYS, Redactions, Redactor};
use crate::boundary::budget;

const SECRET: &str = "s3cr3t-upstream-token";

fn redactor() -> Redactor {
    Redactor::new(vec![SECRET.to_owned()], DEFAULT_SECRET_KEYS)
}

/// The tree walker's output and counts.
fn by_tree(r: &Redactor, doc: &Value) -> (String, Redactions, usize) {
    let mut tree = doc.clone();
    let counts = r.redact(&mut tree);
    let binary = budget::binary_bytes(&tree);
    (
        serde_json::to_string(&tree).unwrap_or_default(),
        counts,
        binary,
    )
}

/// The text walker's, with trees of at most `tree_values` values.
fn by_text(r: &Redactor, text: &str, tree_values: usize) -> (String, Redactions, usize) {
    let mut out = Vec::new();
    let found = r
        .redact_text_json_in(text, &mut out, tree_values)
        .expect("valid JSON");
    let out = String::from_utf8(out).unwrap_or_default();
    (out, found.redactions, found.binary_bytes)
}

fn assert_same(doc: &Value) {
    let r = redactor();
    let expected = by_tree(&r, doc);
    let text = serde_json::to_string_pretty(doc).unwrap_or_default();
    for tree_values in [0, 2, 5, super::TREE_VALUES] {
        assert_eq!(
            by_text(&r, &text, tree_values),
            expected,
            "at {tree_values}: {text}"
        );
    }
}

#[test]
fn the_rules_of_each_container_hold_over_text() {
    assert_same(&json!({
        "user": "ada",
        "credentials": {"password": "hunter2!", "apiKey": ["k1-abcdefgh", {"nested": "deep"}, ["x", 1]], "retries": 3},
        "note": "call with s3cr3t-upstream-token please",
        "content": [
            {"type": "text", "text": "Authorization: Bearer abcdef0123456789xyz"},
            {"type": "text", "text": "the token is s3cr3t-up"},
            {"type": "image", "data": "s3cr3t-upstream-token", "mimeType": "image/png"},
            {"type": "text", "text": ""},
            "stream-token and more",
            {"type": "text", "text": "nothing here"},
        ],
        "parts": ["s3cr3t-", 7, "upstream-token", null, true],
        "halves": {"a": "s3cr3t-upst", "n": 1, "b": "ream-token"},
        "resource": {"mimeType": "text/plain", "blob": "czNjcjN0LXVwc3RyZWFtLXRva2Vu", "uri": "file:///x"},
        "binary": {"blob": "s3cr3t-upstream-token", "mimeType": "image/png"},
        "requestState": {"opaque": "s3cr3t-upstream-token"},
        "embedded": "{\"password\": \"hunter2!\", \"list\": [1, 2]}",
    }));
    // Number spellings are kept (arbitrary precision).
    let numbers: Value =
        serde_json::from_str(r#"{"n": [1.50, -0, 1e400, 12345678901234567890123, 0.1e-7]}"#)
            .expect("valid");
    assert_same(&numbers);
}

#[test]
fn a_secret_split_across_a_large_container_is_joined() {
    // The held text waits across items that are not text, however many.
    let mut items = vec![json!("s3cr3t-upst")];
    items.extend((0..50).map(|k| json!({"k": k})));
    items.push(json!("ream-token"));
    let doc = json!({"content": items});
    let r = redactor();
    let (tree, counts, _) = by_tree(&r, &doc);
    assert_eq!(counts.exact, 1, "{tree}");
    assert_same(&doc);
}

#[test]
fn errors_and_depth_are_refused() {
    let r = redactor();
    let mut out = Vec::new();
    assert!(r.redact_text_json("{\"a\": [1, 2}", &mut out).is_err());
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    assert!(r.redact_text_json_in(&deep, &mut Vec::new(), 0).is_err());
}

/// Strings that exercise the rules: secrets whole and in halves, secret
/// keys, JSON inside strings, empty strings.
fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(SECRET.to_owned()),
        Just("s3cr3t-up".to_owned()),
        Just("stream-token".to_owned()),
        Just("Bearer abcdef0123456789xyz".to_owned()),
        Just("{\"token\": \"ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\"}".to_owned()),
        "[a-z ]{0,12}",
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("type".to_owned()),
        Just("text".to_owned()),
        Just("data".to_owned()),
        Just("blob".to_owned()),
        Just("mimeType".to_owned()),
        Just("password".to_owned()),
        Just("apiKey".to_owned()),
        Just("requestState".to_owned()),
        "[a-z]{1,6}",
    ]
}

fn document() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        string().prop_map(Value::String),
        Just(json!("text")),
        Just(json!("image")),
        Just(json!("text/plain")),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..8)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn text_walk_matches_the_tree_walk(doc in document()) {
        assert_same(&doc);
    }
}
