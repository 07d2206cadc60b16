//! Redaction + measurement throughput on 1 MiB results (the target: one
//! 1 MiB result redacted and measured in at most 2 ms), and the canonical
//! digest of a tool definition.
//!
//! `cargo bench -p sluice-core --bench boundary`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use sluice_core::boundary::budget::{self, DEFAULT_READ_BUDGET};
use sluice_core::boundary::redact::{DEFAULT_SECRET_KEYS, Redactor};

const MIB: usize = 1 << 20;

/// 1 MiB of ordinary prose in one text block.
fn prose() -> Value {
    let sentence = "The quarterly report lists 42 open issues, 7 closed this week; see https://example.com/r/2026-11 for the details. ";
    let text: String = sentence.repeat(MIB / sentence.len() + 1)[..MIB].to_owned();
    json!({"content": [{"type": "text", "text": text}]})
}

/// About 1 MiB of structured content: many small records.
fn records() -> Value {
    let rows: Vec<Value> = (0..9_000)
        .map(|i| json!({"id": format!("{i:08x}-5f1e-4c2a-9a77-1c2d3e4f5a6b"), "name": format!("item {i}"), "tags": ["alpha", "beta"], "count": i, "ok": true}))
        .collect();
    json!({"content": [], "structuredContent": {"rows": rows}})
}

/// 1 MiB of prose with a credential every 64 KiB.
fn prose_with_secrets() -> Value {
    let mut text = prose()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    for i in (0..MIB).step_by(64 * 1024).skip(1) {
        text.replace_range(i..i + 44, "token=ghp_abcdefghijklmnopqrstuvwxyz0123456789");
    }
    json!({"content": [{"type": "text", "text": text}]})
}

fn bench(c: &mut Criterion) {
    let redactor = Redactor::new(
        vec!["a-configured-upstream-secret".to_owned()],
        DEFAULT_SECRET_KEYS,
    );
    let mut group = c.benchmark_group("redact+measure 1 MiB");
    group.throughput(Throughput::Bytes(MIB as u64));
    for (name, value) in [
        ("prose", prose()),
        ("records", records()),
        ("prose with secrets", prose_with_secrets()),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || value.clone(),
                // The value is returned so that dropping it is not timed.
                |mut v| {
                    redactor.redact(&mut v);
                    let n = budget::measure(&v, DEFAULT_READ_BUDGET * 2);
                    (v, n)
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
    // From the upstream's bytes to the client's: parsed into a tree,
    // redacted and written (the data path before issue 17), or redacted
    // over the text (`redact::text`).
    let tiny = format!(
        "{{\"structuredContent\":{{\"a\":[{}]}}}}",
        vec!["{\"k\":1}"; 14 * MIB / 8].join(",")
    );
    let mut bytes = c.benchmark_group("bytes to bytes");
    for (name, text) in [
        ("1 MiB prose", prose().to_string()),
        ("1 MiB records", records().to_string()),
        ("14 MiB tiny objects", tiny),
    ] {
        bytes.throughput(Throughput::Bytes(text.len() as u64));
        bytes.bench_function(format!("{name}: tree"), |b| {
            b.iter(|| {
                let mut v: Value = serde_json::from_str(&text).unwrap_or_default();
                redactor.redact(&mut v);
                serde_json::to_vec(&v).unwrap_or_default()
            })
        });
        bytes.bench_function(format!("{name}: text"), |b| {
            b.iter(|| {
                let mut out = Vec::with_capacity(text.len());
                let _ = redactor.redact_text_json(&text, &mut out);
                out
            })
        });
    }
    bytes.finish();
    let mut parts = c.benchmark_group("parts, 1 MiB prose");
    parts.throughput(Throughput::Bytes(MIB as u64));
    let p = prose();
    parts.bench_function("measure only", |b| {
        b.iter(|| budget::measure(&p, DEFAULT_READ_BUDGET * 2))
    });
    let no_exact = Redactor::new(Vec::<String>::new(), DEFAULT_SECRET_KEYS);
    parts.bench_function("redact only, no exact secrets", |b| {
        b.iter_batched(
            || p.clone(),
            |mut v| {
                let counts = no_exact.redact(&mut v);
                (v, counts)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    parts.bench_function("redact only", |b| {
        b.iter_batched(
            || p.clone(),
            |mut v| {
                let counts = redactor.redact(&mut v);
                (v, counts)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    let r = records();
    parts.bench_function("records: measure only", |b| {
        b.iter(|| budget::measure(&r, DEFAULT_READ_BUDGET * 2))
    });
    parts.bench_function("records: redact only", |b| {
        b.iter_batched(
            || r.clone(),
            |mut v| {
                let counts = redactor.redact(&mut v);
                (v, counts)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    parts.finish();
    c.bench_function("compile the redactor (every rule, one exact secret)", |b| {
        b.iter(|| {
            Redactor::new(
                vec!["a-configured-upstream-secret".to_owned()],
                DEFAULT_SECRET_KEYS,
            )
        })
    });
    let tool = json!({"name": "search", "description": "Searches the index.", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "maximum": 200}}, "required": ["q"]}, "annotations": {"readOnlyHint": true}});
    c.bench_function("canonical digest of a tool definition", |b| {
        b.iter(|| sluice_core::canonical::digest(&tool))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
