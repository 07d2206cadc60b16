//! Fuzzing, on the stable toolchain, of every parser in the core that sees
//! bytes from outside: the JSON-RPC envelope and the id peek, list cursors,
//! session ids, request states, HTTP header rules, traceparent, SEP-2243
//! header values, `sluice.toml`, `mcp.json`, `sluice.lock`, the audit
//! filters' times, an upstream's result redacted over its text (which
//! must also come out as the tree walker's output), and a client's request
//! read by its members (which must come out as the request read whole).
//!
//! Each target gets random bytes and, mostly, valid inputs mutated (bytes
//! flipped, inserted, deleted, duplicated; JSON and TOML tokens spliced in;
//! deep nesting). No input may panic, and none may allocate more than its
//! target's bound (bytes allocated while parsing, counted by the global
//! allocator: an upper bound on the peak).
//!
//! CI runs `PROPTEST_CASES` (default 256) inputs per target;
//! `scripts/fuzz.sh` runs a million per target in release.
#![allow(clippy::unwrap_used)]

use std::alloc::System;

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, FileFailurePersistence, TestRunner};
use serde_json::{Value, json};
use sluice_core::audit::{parse_rfc3339_ms, parse_since};
use sluice_core::boundary::redact::{DEFAULT_SECRET_KEYS, Redactor};
use sluice_core::carried;
use sluice_core::catalog::lockfile::Lockfile;
use sluice_core::config::{AllowedOrigin, Config, Source};
use sluice_core::envelope::{Cursors, Position};
use sluice_core::headers::decode_value;
use sluice_core::jsonrpc::{Message, peek_id};
use sluice_core::method::ListKind;
use sluice_core::policy::admission::{self, Headers};
use sluice_core::policy::route;
use sluice_core::request_state::{ParkedCall, StateKey};
use sluice_core::session_token::{SessionClaims, SessionKey};
use sluice_core::trace_context::TraceParent;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocation bound of a parser: at most `per_byte` bytes per input byte
/// plus `fixed`.
#[derive(Clone, Copy)]
struct Bound {
    per_byte: usize,
    fixed: usize,
}

/// Parsers that build no tree: their cost is a copy or two of the input.
const FLAT: Bound = Bound {
    per_byte: 4,
    fixed: 16 << 10,
};

/// Parsers that build a `serde_json::Value` or TOML tree. Such a tree costs
/// tens of bytes per value whatever the value's size, so their bound is
/// per byte of the densest input (`[0,0,0,...]`: a value every 2 bytes).
/// Carrying messages as bytes, not trees, is what brings this down.
const TREE: Bound = Bound {
    per_byte: 64,
    fixed: 64 << 10,
};

/// `sluice.toml` and `mcp.json`: each `[[upstream]]` table becomes a whole
/// upstream with its defaults, and each problem found costs a pass over the
/// document (at most 20 are reported). These files come from the operator,
/// not from clients.
const OPERATOR_FILE: Bound = Bound {
    per_byte: 2048,
    fixed: 256 << 10,
};

/// Where a mutation splices text in: tokens that move a parser into its
/// rare states.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    "\\u0000",
    "\\ud800",
    "1e400",
    "-0",
    "null",
    ",",
    ":",
    "\n",
    "\r\n",
    "=",
    "[[upstream]]",
    "${",
    "%",
    ".",
    "-",
    "_",
    "\u{200b}",
    "\u{feff}",
    "\0",
    "999999999999999999999999",
    "\"jsonrpc\":\"2.0\"",
    "\"id\":",
    "\"method\":",
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Duplicate(usize, usize),
    Token(usize, usize),
    Nest(usize, usize),
    Repeat(usize, usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Flip(at, b)),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(at, b)| Mutation::Insert(at, b)),
        (any::<usize>(), 1usize..64).prop_map(|(at, n)| Mutation::Delete(at, n)),
        (any::<usize>(), 1usize..256).prop_map(|(at, n)| Mutation::Duplicate(at, n)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, t)| Mutation::Token(at, t)),
        (any::<usize>(), 1usize..300).prop_map(|(at, depth)| Mutation::Nest(at, depth)),
        (any::<usize>(), 1usize..64, 2usize..400)
            .prop_map(|(at, n, times)| Mutation::Repeat(at, n, times)),
    ]
}

fn apply(seed: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for m in mutations {
        let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
        match m {
            Mutation::Flip(i, x) if !b.is_empty() => {
                let i = i % b.len();
                b[i] ^= x | 1;
            }
            Mutation::Flip(..) => {}
            Mutation::Insert(i, bytes) => {
                let i = at(*i, b.len());
                b.splice(i..i, bytes.iter().copied());
            }
            Mutation::Delete(i, n) => {
                let i = at(*i, b.len());
                let end = (i + n).min(b.len());
                b.drain(i..end);
            }
            Mutation::Duplicate(i, n) => {
                let i = at(*i, b.len());
                let end = (i + n).min(b.len());
                let copy = b[i..end].to_vec();
                b.splice(end..end, copy);
            }
            Mutation::Token(i, t) => {
                let i = at(*i, b.len());
                b.splice(i..i, TOKENS[*t].bytes());
            }
            Mutation::Nest(i, depth) => {
                let i = at(*i, b.len());
                b.splice(i..i, std::iter::repeat_n(b'[', *depth));
            }
            // Shapes dense in values: one region many times over.
            Mutation::Repeat(i, n, times) => {
                let i = at(*i, b.len());
                let end = (i + n).min(b.len());
                let copy = b[i..end].repeat(*times);
                b.splice(end..end, copy);
            }
        }
    }
    b
}

/// Random bytes, or a seed mutated.
fn input(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let n = seeds.len();
    prop_oneof![
        1 => proptest::collection::vec(any::<u8>(), 0..512),
        4 => (0..n, proptest::collection::vec(mutation(), 1..8))
            .prop_map(move |(i, ms)| apply(&seeds[i], &ms)),
    ]
}

/// Runs `parse` on every input of `seeds`' strategy, as `prepare` hands
/// it over (text, header fields: what the shell would have made of the
/// bytes, not counted): none may panic (the runner reports the input that
/// did) or allocate over `bound`.
fn fuzz<T>(
    name: &str,
    seeds: Vec<Vec<u8>>,
    bound: Bound,
    prepare: impl Fn(&[u8]) -> T,
    parse: impl Fn(&T),
) {
    // Inputs per target: proptest's own `PROPTEST_CASES` (default 256).
    let mut runner = TestRunner::new(RunnerConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        max_shrink_time: 60_000,
        ..RunnerConfig::default()
    });
    let worst = std::cell::Cell::new(0.0f64);
    let result = runner.run(&input(seeds), |bytes| {
        let prepared = prepare(&bytes);
        let region = Region::new(GLOBAL);
        parse(&prepared);
        let allocated = region.change().bytes_allocated;
        let allowed = bound.per_byte * bytes.len() + bound.fixed;
        prop_assert!(
            allocated <= allowed,
            "{name}: {allocated} bytes allocated for {} input bytes (bound {allowed})",
            bytes.len()
        );
        let beyond_fixed = allocated.saturating_sub(bound.fixed) as f64;
        worst.set(worst.get().max(beyond_fixed / bytes.len().max(1) as f64));
        Ok(())
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    eprintln!(
        "{name}: {} inputs, at most {:.1} bytes allocated per input byte beyond the fixed part",
        runner.config().cases,
        worst.get()
    );
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_jsonrpc_envelope_and_the_id_peek() {
    let seeds = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a__b", "arguments": {"x": [1, 2.5e10, "é"]}, "_meta": {"progressToken": "p"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 0.5}}),
        json!({"jsonrpc": "2.0", "id": "x", "result": {"content": [{"type": "text", "text": "hi"}], "isError": false}}),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "m", "data": {"k": true}}}),
    ];
    let seeds: Vec<Vec<u8>> = seeds.iter().map(|s| s.to_string().into_bytes()).collect();
    fuzz("jsonrpc", seeds, TREE, <[u8]>::to_vec, |b| {
        let _ = Message::parse(b);
        let _ = peek_id(b);
    });
}

#[test]
fn a_client_request_read_by_its_members() {
    // `carried::read` of any size (here from 0 bytes): no input panics,
    // and a request it reads is the request a whole parse reads, with
    // what it carried put back.
    let seeds = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a__b", "x": [{"k": 1}], "arguments": {"x": [1, 2.5e10, "é"], "y": "v"}, "_meta": {"progressToken": "p", "vendor/k": [{}], "traceparent": "t"}}}),
        json!({"jsonrpc": "2.0", "id": "q", "method": "prompts/get", "params": {"name": "p", "arguments": {"a": "x", "b": "y"}, "z": null}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "junk": [[[]]]}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "c", "_meta": {}}}),
    ];
    let seeds: Vec<Vec<u8>> = seeds.iter().map(|s| s.to_string().into_bytes()).collect();
    // The comparison (two more trees) runs beforehand, not counted; what
    // is counted is the read alone.
    let compared = |b: &[u8]| {
        check_read_by_members(b);
        b.to_vec()
    };
    fuzz("carried request", seeds, TREE, compared, |b| {
        let _ = carried::read_carrying_from(b, 0);
    });
}

/// A request that `carried::read` reads is the request a whole parse
/// reads, with what it carried put back.
fn check_read_by_members(b: &[u8]) {
    let Some(Ok(read)) = carried::read_carrying_from(b, 0) else {
        return;
    };
    let Message::Request { id, method, params } = read.message else {
        return;
    };
    let Some(Ok(Message::Request {
        id: whole_id,
        method: whole_method,
        params: whole_params,
    })) = Message::parse(b)
    else {
        // A carried member is checked to be JSON, not decoded: an
        // escaped lone surrogate, which decoding refuses, goes on as
        // the client sent it.
        let t = text(b).to_ascii_lowercase();
        let lone = [
            "\\ud8", "\\ud9", "\\uda", "\\udb", "\\udc", "\\udd", "\\ude", "\\udf",
        ];
        assert!(
            lone.iter().any(|s| t.contains(s)),
            "read by members, not whole: {}",
            text(b)
        );
        return;
    };
    assert_eq!((&id, &method), (&whole_id, &whole_method));
    let refused =
        method == "prompts/get" && route::check_arguments(ListKind::Prompts, &params).is_err();
    if !refused {
        let put_back = match &read.carried {
            Some(carried) => carried.whole(&params),
            None => params,
        };
        assert_eq!(put_back, whole_params, "{}", text(b));
    }
}

#[test]
fn list_cursors() {
    let cursors = Cursors::new([7; 32]);
    let filter = json!({"upstream": "git"});
    let seeds = (0..4)
        .map(|i| {
            let position = Position {
                offset: i * 500,
                last_key: format!("git__tool_{i}"),
            };
            cursors
                .issue("tools/list", &filter, &position, 1_000)
                .into_bytes()
        })
        .collect();
    fuzz(
        "cursor",
        seeds,
        FLAT,
        |b| Value::String(text(b)),
        |token| {
            let _ = cursors.open(token, "tools/list", &filter, 2_000);
        },
    );
}

#[test]
fn session_ids() {
    let key = SessionKey::derive(&[3; 32]);
    let seeds = (0..4u8)
        .map(|i| {
            let claims = SessionClaims {
                session_nonce: [i; 16],
                principal: format!("https://issuer alice{i}"),
                protocol_version: "2025-11-25".into(),
                client_capabilities: json!({"roots": {"listChanged": true}}),
                issued_at_ms: 1_000,
                view: (i % 2 == 0).then(|| "ops".to_owned()),
            };
            key.seal(&claims, [i; 24]).into_bytes()
        })
        .collect();
    fuzz("session id", seeds, FLAT, text, |t| {
        let _ = key.open(t);
    });
}

#[test]
fn request_states() {
    let key = StateKey::new([5; 32]);
    let params = json!({"name": "a__b"});
    let seeds = (0..4)
        .map(|i| {
            key.seal(&ParkedCall {
                handle: format!("h{i}"),
                method: "tools/call".into(),
                params_digest: sluice_core::request_state::params_digest(&params),
                expires_at_ms: 10_000,
            })
            .into_bytes()
        })
        .collect();
    fuzz("request state", seeds, FLAT, text, |t| {
        let _ = key.open(t, "tools/call", &params, 1_000);
    });
}

/// Header fields as a client sends them: names and values, in order.
struct Fields(Vec<(String, Vec<u8>)>);

impl Headers for Fields {
    fn get_all(&self, name: &str) -> Vec<Option<&str>> {
        self.0
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| {
                std::str::from_utf8(v)
                    .ok()
                    .filter(|s| s.bytes().all(|c| c == b'\t' || (0x20..0x7f).contains(&c)))
            })
            .collect()
    }
    fn count(&self) -> usize {
        self.0.len()
    }
    fn bytes(&self) -> usize {
        self.0.iter().map(|(n, v)| n.len() + v.len()).sum()
    }
}

/// A header block (`name: value` lines) as fields.
fn fields(bytes: &[u8]) -> Fields {
    Fields(
        bytes
            .split(|&c| c == b'\n')
            .filter_map(|line| {
                let colon = line.iter().position(|&c| c == b':')?;
                let name = std::str::from_utf8(&line[..colon]).ok()?.trim().to_owned();
                Some((name, line[colon + 1..].trim_ascii().to_vec()))
            })
            .collect(),
    )
}

#[test]
fn http_header_rules() {
    let seeds = [
        "Host: 127.0.0.1:8787\nOrigin: http://localhost:3000\nAuthorization: Bearer abc\nContent-Type: application/json; charset=utf-8\nMCP-Protocol-Version: 2025-11-25",
        "Host: [::1]:8787\nAuthorization: Bearer a\nAuthorization: Bearer b\nContent-Type: text/plain",
        "Host: example.com\nOrigin: null\nMcp-Method: tools/call\nMcp-Name: a__b\nMCP-Protocol-Version: 2026-07-28",
    ];
    let seeds = seeds.iter().map(|s| s.as_bytes().to_vec()).collect();
    let allowed: Vec<AllowedOrigin> = Vec::new();
    let params = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    fuzz("headers", seeds, FLAT, fields, |f| {
        let _ = admission::check_transport(f, Some("127.0.0.1:8787"), true, &allowed);
        let _ = admission::credential(f);
        let _ = admission::check_content_type(f);
        let _ = admission::check_legacy_version(f);
        let _ = admission::post_era(f, &params);
        if let Some(Some(host)) = f.get("host") {
            let _ = admission::is_local_host(admission::strip_port(host));
        }
    });
}

#[test]
fn traceparent_and_sep_2243_values() {
    let seeds = [
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "ff-00000000000000000000000000000000-0000000000000000-00",
        "=?base64?SGVsbG8sIOS4lueVjA==?=",
        "plain value",
    ];
    let seeds = seeds.iter().map(|s| s.as_bytes().to_vec()).collect();
    fuzz("traceparent and header values", seeds, FLAT, text, |t| {
        let _ = TraceParent::parse(t);
        let _ = decode_value(t);
    });
}

#[test]
fn sluice_toml() {
    let seeds = vec![
        include_bytes!("../../../examples/sluice.toml").to_vec(),
        b"[server]\nlisten = \"127.0.0.1:0\"\n[server.connections]\nmax = 5\n[auth]\nmode = \"bearer\"\n[[auth.token]]\nprincipal = \"p\"\nfile = \"t\"\n[[upstream]]\nname = \"a\"\nurl = \"https://example.com/mcp\"\nheaders = { Authorization = \"Bearer ${T}\" }\n".to_vec(),
        b"[[upstream]]\nname = \"x\"\ncommand = \"srv\"\nargs = [\"--a\"]\nrate_limit = \"5/s\"\ntool_rate_limit = { t = \"1/h\" }\n[[view]]\nname = \"v\"\nupstreams = [\"x\"]\n".to_vec(),
    ];
    let env = |var: &str| (var == "T").then(|| "secret-value".to_owned());
    fuzz("sluice.toml", seeds, OPERATOR_FILE, text, |t| {
        let _ = Config::from_toml(
            Source {
                name: "sluice.toml",
                text: t,
            },
            &env,
        );
    });
}

#[test]
fn mcp_json() {
    let seeds = [
        json!({"mcpServers": {"files": {"command": "npx", "args": ["-y", "srv", "/tmp"], "env": {"K": "${K}"}}}}),
        json!({"mcpServers": {"remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}}}}),
        json!({"servers": {"a": {"type": "stdio", "command": "a"}}}),
    ];
    let seeds = seeds.iter().map(|s| s.to_string().into_bytes()).collect();
    fuzz("mcp.json", seeds, OPERATOR_FILE, text, |t| {
        let _ = Config::from_mcp_json(
            Source {
                name: "mcp.json",
                text: t,
            },
            &|_| None,
        );
    });
}

#[test]
fn sluice_lock() {
    let definition = json!({"name": "echo", "description": "Echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}});
    let digest = sluice_core::canonical::digest(&definition);
    let seeds = [
        json!({"version": 1, "upstreams": {"fx": {"tools": {"echo": {"digest": digest, "definition": definition}}}}}),
        json!({"version": 1, "upstreams": {"fx": {"prompts": {"p": {"digest": "sha256:00", "definition": {"name": "p"}, "findings": ["hidden-instructions"]}}}}}),
    ];
    let seeds = seeds
        .iter()
        .map(|s| serde_json::to_vec_pretty(s).unwrap())
        .collect();
    fuzz("sluice.lock", seeds, TREE, text, |t| {
        let _ = Lockfile::parse(t);
    });
}

#[test]
fn audit_times() {
    let seeds = [
        "90s",
        "30m",
        "1h",
        "7d",
        "2026-12-02T01:02:03Z",
        "2026-12-02T01:02:03.123+02:00",
    ];
    let seeds = seeds.iter().map(|s| s.as_bytes().to_vec()).collect();
    fuzz("audit times", seeds, FLAT, text, |t| {
        let _ = parse_since(t, 1_800_000_000_000);
        let _ = parse_rfc3339_ms(t);
    });
}

#[test]
fn redaction_over_text() {
    // An upstream's result, redacted over its text without a tree: any
    // bytes that are one JSON document come out as the tree walker's
    // output; no input panics.
    let seeds = [
        json!({"content": [{"type": "text", "text": "token s3cr3t-upstream-token"}, {"type": "image", "data": "QUJD", "mimeType": "image/png"}], "structuredContent": {"password": "hunter2!", "rows": [{"k": 1}, {"k": [2, "s3cr3t-"]}, "upstream-token"]}}),
        json!({"contents": [{"uri": "file:///a", "mimeType": "text/plain", "blob": "czNjcjN0LXVwc3RyZWFtLXRva2Vu"}]}),
        json!({"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create", "params": {"message": "m"}}}, "requestState": "opaque"}),
    ];
    let seeds: Vec<Vec<u8>> = seeds.iter().map(|s| s.to_string().into_bytes()).collect();
    let redactor = Redactor::new(
        vec!["s3cr3t-upstream-token".to_owned()],
        DEFAULT_SECRET_KEYS,
    );
    // The tree walker's output is computed beforehand (not counted); the
    // rules' expressions, compiled the first time they are needed, then.
    let expected = |bytes: &[u8]| {
        let t = text(bytes);
        let tree = serde_json::from_str::<Value>(&t).ok().map(|mut tree| {
            let counts = redactor.redact(&mut tree);
            (serde_json::to_vec(&tree).unwrap(), counts)
        });
        (t, tree)
    };
    fuzz("redaction over text", seeds, TREE, expected, |(t, tree)| {
        let mut out = Vec::new();
        let over_text = redactor.redact_text_json(t, &mut out);
        if let Some((expected, counts)) = tree {
            let found = over_text.expect("a document the tree parses");
            assert_eq!(&found.redactions, counts);
            assert_eq!(&out, expected);
        }
    });
}
