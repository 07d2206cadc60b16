//! The redactor over whole values.

use super::*;
use serde_json::json;

fn redactor() -> Redactor {
    Redactor::new(
        vec!["s3cr3t-upstream-token".to_owned(), "short".to_owned()],
        DEFAULT_SECRET_KEYS,
    )
}

#[test]
fn structure_and_keys_are_kept() {
    let r = redactor();
    let mut v = json!({
        "user": "ada",
        "credentials": {"password": "hunter2!", "apiKey": ["k1-abcdefgh", {"nested": "deep"}], "retries": 3},
        "note": "call with s3cr3t-upstream-token please",
        "content": [{"type": "text", "text": "Authorization: Bearer abcdef0123456789xyz"}],
    });
    let counts = r.redact(&mut v);
    assert_eq!(
        v,
        json!({
            "user": "ada",
            // An object under a secret key is walked, not blanked whole.
            "credentials": {"password": "[redacted]", "apiKey": ["[redacted]", {"nested": "deep"}], "retries": 3},
            "note": "call with [redacted] please",
            "content": [{"type": "text", "text": "Authorization: Bearer [redacted]"}],
        })
    );
    assert_eq!(
        counts,
        Redactions {
            exact: 1,
            key: 2,
            pattern: 1
        }
    );
}

#[test]
fn json_inside_a_text_block_gets_the_key_rule() {
    let r = redactor();
    // A passphrase with spaces: the text pattern takes its first word
    // only; the key rule takes all of it.
    let mut v = json!({"content": [{"type": "text", "text": "{\"user\": \"ada\", \"password\": \"correct horse battery\", \"n\": 1}"}]});
    let counts = r.redact(&mut v);
    assert_eq!(
        v["content"][0]["text"],
        "{\"user\":\"ada\",\"password\":\"[redacted]\",\"n\":1}"
    );
    assert_eq!(counts.key, 1);
    // JSON without secrets keeps its exact text.
    let original = "{ \"user\" : \"ada\" }";
    let mut v = json!(original);
    r.redact(&mut v);
    assert_eq!(v, json!(original));
}

#[test]
fn review_cases_json_text_pem_schemas_and_state() {
    let r = redactor();
    // A URL-password rule never cuts across JSON quotes.
    let mut v = json!("{\"url\":\"https://a.io\",\"email\":\"x@y.z\"}");
    r.redact(&mut v);
    assert_eq!(v, json!("{\"url\":\"https://a.io\",\"email\":\"x@y.z\"}"));
    // Escapes do not hide a password from the JSON pass.
    let mut v = json!("{\"dsn\":\"postgres:\\/\\/app:pa55w0rd@db\",\"n\":1}");
    r.redact(&mut v);
    assert!(!v.to_string().contains("pa55w0rd"), "{v}");
    // A private key cut before its END line.
    let mut c = Redactions::default();
    let cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1L";
    assert_eq!(r.redact_str(cut, &mut c).as_deref(), Some("[redacted]"));
    // A schema property named like a secret keeps its schema; a
    // requestState is echoed as it came.
    let mut v = json!({"requestedSchema": {"properties": {"apiToken": {"type": "string"}}},
                       "requestState": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefgh"});
    let before = v.clone();
    r.redact(&mut v);
    assert_eq!(v, before);
}

#[test]
fn binary_data_is_never_touched() {
    let r = redactor();
    // Base64 that happens to contain a secret-looking run.
    let data = "AKIAABCDEFGHIJKLMNOPghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let mut v = json!({"content": [
        {"type": "image", "data": data, "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "x://1", "blob": data}},
    ]});
    let before = v.clone();
    assert_eq!(r.redact(&mut v).total(), 0);
    assert_eq!(v, before);
}

#[test]
fn short_exact_values_are_ignored() {
    let r = redactor();
    let mut counts = Redactions::default();
    assert_eq!(r.redact_str("a short story", &mut counts), None);
}

#[test]
fn only_the_secret_part_of_a_context_pattern_goes() {
    let r = redactor();
    let mut c = Redactions::default();
    assert_eq!(
        r.redact_str("postgres://app:pa55w0rd@db.internal:5432/prod", &mut c)
            .as_deref(),
        Some("postgres://app:[redacted]@db.internal:5432/prod")
    );
    assert_eq!(
        r.redact_str(
            "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            &mut c
        )
        .as_deref(),
        Some("export AWS_SECRET_ACCESS_KEY=[redacted]")
    );
}

#[test]
fn a_textual_blob_is_redacted_and_a_binary_one_is_not() {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let r = redactor();
    let env = "APP=1\nSECRET_KEY=Q7kx9Lm2Np4Rt6Vw8Yz0\n";
    let mut v = json!({"contents": [
        {"uri": "file:///app/.env", "mimeType": "text/plain", "blob": b64.encode(env)},
        {"uri": "file:///app/logo.png", "mimeType": "image/png", "blob": b64.encode(env)},
    ]});
    let counts = r.redact(&mut v);
    assert_eq!(counts.pattern, 1);
    let text = b64
        .decode(v["contents"][0]["blob"].as_str().unwrap_or_default())
        .unwrap_or_default();
    assert_eq!(
        String::from_utf8_lossy(&text),
        "APP=1\nSECRET_KEY=[redacted]\n"
    );
    assert_eq!(v["contents"][1]["blob"], b64.encode(env));
}

#[test]
fn a_resource_text_env_line_is_redacted() {
    let r = redactor();
    let mut v = json!({"contents": [{"uri": "file:///app/.env", "mimeType": "text/plain",
        "text": "DATABASE_URL=postgres://app:pa55w0rd-x@db/prod\nSECRET_KEY=Q7kx9Lm2Np4Rt6Vw8Yz0\nDEBUG=false\n"}]});
    r.redact(&mut v);
    assert_eq!(
        v["contents"][0]["text"],
        "DATABASE_URL=postgres://app:[redacted]@db/prod\nSECRET_KEY=[redacted]\nDEBUG=false\n"
    );
}

#[test]
fn a_trigger_inside_a_longer_one_does_not_hide_it() {
    // `@` (the URL rule's anchor) ends before the exact secret that holds
    // it, and `key` before `AccountKey=`.
    let r = Redactor::new(vec!["pa55-with@sign-123".to_owned()], DEFAULT_SECRET_KEYS);
    let mut c = Redactions::default();
    assert_eq!(
        r.redact_str("use pa55-with@sign-123 now", &mut c)
            .as_deref(),
        Some("use [redacted] now")
    );
    let key = "Q7kQQfgSZE/7rMYM1l3LqhPOiXlW3VKmTIL8w514ZHgOgEKYbnYGiqmhNJnzwV2M3Xmshm==";
    assert_eq!(
        r.redact_str(&format!("AccountName=a;AccountKey={key};x=1"), &mut c)
            .as_deref(),
        Some("AccountName=a;AccountKey=[redacted];x=1")
    );
}

#[test]
fn a_long_text_stepped_in_lanes_loses_every_secret_at_every_lane_boundary() {
    let r = redactor();
    let filler = "lorem ipsum dolor sit amet, consectetur adipiscing elit. ";
    let len = 64 * 1024;
    let mut text = filler.repeat(len / filler.len() + 1);
    text.truncate(len);
    let mut c = Redactions::default();
    assert_eq!(r.redact_str(&text, &mut c), None, "the filler is no secret");
    let secrets = [
        " ghp_0123456789abcdefghijABCDEFGHIJklmnopqr ",
        " AKIAQWERTYUIOPASDFGH ",
        " s3cr3t-upstream-token ",
    ];
    // Each secret at the three inner lane boundaries, cut at several
    // points of it, or before them by up to twice the longest trigger (the
    // lanes' warm-up); written over the filler, so the boundaries stay put.
    let lane = len / 4;
    for secret in secrets {
        for back in [1, 3, secret.len() / 2, secret.len() - 1, 60, 120] {
            let (mut text, mut expected) = (text.clone(), text.clone());
            // From the end: a replacement changes the length after it.
            for boundary in [3 * lane, 2 * lane, lane] {
                let at = boundary - back;
                text.replace_range(at..at + secret.len(), secret);
                expected.replace_range(at..at + secret.len(), " [redacted] ");
            }
            let mut counts = Redactions::default();
            let redacted = r.redact_str(&text, &mut counts);
            assert!(
                redacted.as_deref() == Some(expected.as_str()),
                "{secret} {back}"
            );
            assert_eq!(counts.total(), 3);
        }
    }
}

#[test]
fn a_secret_split_after_a_clean_string_is_found_from_its_end_state() {
    // Each left part holds no trigger on its own (and is long enough to be
    // scanned), so the join goes on from its end state.
    let r = redactor();
    let mut v = json!({
        "object": {"a": "the prefix s3cr3t-ups", "b": "tream-token the suffix", "n": 1},
        "array": ["see the token gh", "p_0123456789abcdefghijABCDEFGHIJklmnopqr here", "and more"],
        // Three in a row: the middle one is changed by the first join, and
        // its end state is not reused for the second.
        "chain": ["one two s3cr3t-ups", "tream-token", "ghp_0123456789abcdefghijABCDEFGHIJklmnopqr x"],
        "clean": {"id": "0000002a-5f1e-4c2a-9a77-1c2d3e4f5a6b", "name": "item 42"},
    });
    let counts = r.redact(&mut v);
    assert_eq!(
        v,
        json!({
            "object": {"a": "the prefix [redacted]", "b": "[redacted] the suffix", "n": 1},
            "array": ["see the token [redacted]", "[redacted] here", "and more"],
            "chain": ["one two [redacted]", "[redacted]", "[redacted] x"],
            "clean": {"id": "0000002a-5f1e-4c2a-9a77-1c2d3e4f5a6b", "name": "item 42"},
        })
    );
    assert_eq!(counts.total(), 4);
}

#[test]
fn a_joins_word_edges_are_found_in_any_text() {
    // The edges by characters, over the whole text: what the byte by byte
    // search must agree with.
    let tail = |t: &str| {
        let after_space = t
            .rfind(char::is_whitespace)
            .map_or(0, |i| i + t[i..].chars().next().map_or(1, char::len_utf8));
        let mut start = after_space.max(t.len().saturating_sub(JOIN_REACH));
        while !t.is_char_boundary(start) {
            start += 1;
        }
        start
    };
    let head = |t: &str| {
        let mut end = t
            .find(char::is_whitespace)
            .unwrap_or(t.len())
            .min(JOIN_REACH);
        while !t.is_char_boundary(end) {
            end -= 1;
        }
        end
    };
    let long = "x".repeat(JOIN_REACH + 3);
    let texts = [
        String::new(),
        "word".to_owned(),
        "two words".to_owned(),
        " lead".to_owned(),
        "trail ".to_owned(),
        "café au lait".to_owned(),
        "no\u{3000}break\u{a0}here é".to_owned(),
        "é".repeat(JOIN_REACH),
        format!("{long} {long}"),
        format!("a {long}é"),
        format!("é{long}\u{2003}b"),
        format!("{} {long}", "é".repeat(300)),
    ];
    for t in &texts {
        assert_eq!(join_tail(t), tail(t), "tail of {t:?}");
        assert_eq!(join_head(t), head(t), "head of {t:?}");
    }
}

#[test]
fn a_key_shorter_than_every_secret_word_is_not_secret() {
    let r = Redactor::new(Vec::<String>::new(), &["x-auth", "pwd"]);
    // `x` of `x-auth` is one byte: every key is looked at.
    assert!(r.is_secret_key("x-auth"));
    assert!(r.is_secret_key("pwd"));
    assert!(!r.is_secret_key("id"));
    let r = redactor();
    assert!(!r.is_secret_key("id"));
    assert!(r.is_secret_key("pass"));
}
