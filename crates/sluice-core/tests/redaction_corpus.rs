//! The redaction corpus: fake credentials in real formats, each placed in
//! prose, inside JSON and inside a URL, must all be redacted; look-alikes
//! (UUIDs, git SHAs, hex digests, base64 image data, ordinary prose about
//! keys and tokens) must all pass unchanged. Prints recall and the
//! false-positive rate.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use sluice_core::boundary::redact::{DEFAULT_SECRET_KEYS, Redactor};

fn corpus() -> Value {
    serde_json::from_str(include_str!("data/redaction-corpus.json")).unwrap()
}

/// `text` placed in a context: prose, a JSON document (under a key that
/// names no secret), or a URL.
fn place(context: &str, text: &str) -> Value {
    match context {
        "prose" => json!(format!(
            "Here is what the deploy log printed: {text} (rotate it soon)."
        )),
        "json" => json!({"log": {"level": "info", "line": text, "count": 3}}),
        "url" => json!(format!("https://logs.example.com/view?q={text}&page=2")),
        other => panic!("unknown context {other}"),
    }
}

#[test]
fn every_secret_is_redacted_and_no_look_alike_is_touched() {
    let corpus = corpus();
    let r = Redactor::new(Vec::<String>::new(), DEFAULT_SECRET_KEYS);
    let (mut cases, mut caught) = (0, 0);
    let mut missed = Vec::new();
    for s in corpus["secrets"].as_array().unwrap() {
        let secret = s["secret"].as_str().unwrap();
        let rendered = s["template"].as_str().unwrap().replace("{s}", secret);
        for context in s["contexts"].as_array().unwrap() {
            let context = context.as_str().unwrap();
            let mut value = place(context, &rendered);
            r.redact(&mut value);
            cases += 1;
            let out = value.to_string();
            // A multi-line secret is caught when none of its lines survive.
            let leaked = secret
                .lines()
                .filter(|l| l.len() > 8)
                .any(|l| out.contains(l));
            if leaked {
                missed.push(format!("{} in {context}: {out}", s["kind"]));
            } else {
                caught += 1;
                assert!(out.contains("[redacted]"), "{out}");
            }
        }
    }
    let mut lookalike_cases = 0;
    let mut touched = Vec::new();
    for l in corpus["lookalikes"].as_array().unwrap() {
        let v = l["value"].as_str().unwrap();
        let contexts: &[&str] = if l["kind"] == "prose" {
            &["prose", "json"]
        } else {
            &["prose", "json", "url"]
        };
        for context in contexts {
            let before = place(context, v);
            let mut after = before.clone();
            let counts = r.redact(&mut after);
            lookalike_cases += 1;
            if counts.total() > 0 || after != before {
                touched.push(format!("{} in {context}: {after}", l["kind"]));
            }
        }
    }
    let secrets = corpus["secrets"].as_array().unwrap().len();
    let lookalikes = corpus["lookalikes"].as_array().unwrap().len();
    println!(
        "redaction corpus: {secrets} secrets in {cases} placements, recall {:.1}% ({caught}/{cases}); \
         {lookalikes} look-alikes in {lookalike_cases} placements, false positives {:.1}% ({}/{lookalike_cases})",
        100.0 * caught as f64 / cases as f64,
        100.0 * touched.len() as f64 / lookalike_cases as f64,
        touched.len()
    );
    assert!(secrets >= 40 && lookalikes >= 40);
    assert!(missed.is_empty(), "missed:\n{}", missed.join("\n"));
    assert!(
        touched.is_empty(),
        "false positives:\n{}",
        touched.join("\n")
    );
}
