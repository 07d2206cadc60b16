//! The list surfaces' own costs: sealing and opening a cursor, and building
//! a page of tool definitions under a byte cap.
//!
//! `cargo bench -p sluice-core --bench lists`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use sluice_core::envelope::{Cursors, Position, Shape, build_page};

/// A tool definition of a realistic size (~400 bytes).
fn tool(i: usize) -> Value {
    json!({
        "name": format!("upstream__tool_{i:05}"),
        "description": "Reads one record from the upstream's store and returns it with its metadata; read-only.",
        "inputSchema": {"type": "object", "properties": {
            "id": {"type": "string", "description": "The record's id"},
            "fields": {"type": "array", "items": {"type": "string"}}},
            "required": ["id"]},
        "annotations": {"readOnlyHint": true}
    })
}

fn lists(c: &mut Criterion) {
    let cursors = Cursors::new([7; 32]);
    let filter = json!({"server": "upstream"});
    let position = Position {
        offset: 500,
        last_key: "upstream__tool_00499".into(),
    };
    let mut g = c.benchmark_group("cursor");
    g.bench_function("issue", |b| {
        b.iter(|| cursors.issue("tools/list", &filter, &position, 1_800_000_000_000))
    });
    let token = Value::from(cursors.issue("tools/list", &filter, &position, 1_800_000_000_000));
    g.bench_function("open", |b| {
        b.iter(|| cursors.open(&token, "tools/list", &filter, 1_800_000_000_000))
    });
    g.finish();

    let window: Vec<Value> = (0..501).map(tool).collect();
    let shape = Shape {
        field: "tools",
        capped_flag: false,
    };
    let mut g = c.benchmark_group("page");
    g.throughput(Throughput::Elements(500));
    for (name, cap) in [
        ("500 tools, fits", 1 << 20),
        ("500 tools, cut at 50 KB", 50_000),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                build_page(&window[..500], true, cap, shape, |n| {
                    let p = Position {
                        offset: n,
                        last_key: format!("upstream__tool_{:05}", n - 1),
                    };
                    cursors.issue("tools/list", &filter, &p, 1_800_000_000_000)
                })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, lists);
criterion_main!(benches);
