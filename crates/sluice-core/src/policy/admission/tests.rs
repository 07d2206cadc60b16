use serde_json::json;

use super::*;
use crate::config::ServerConfig;
use crate::jsonrpc::RpcError;

/// Header fields as a list of pairs; `None` stands for a value that is not
/// text.
struct Fields(Vec<(String, Option<String>)>);

impl Fields {
    fn append(&mut self, name: &str, value: &str) {
        self.0.push((name.to_owned(), Some(value.to_owned())));
    }
}

impl Headers for Fields {
    fn get_all(&self, name: &str) -> Vec<Option<&str>> {
        self.0
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_deref())
            .collect()
    }

    fn count(&self) -> usize {
        self.0.len()
    }

    fn bytes(&self) -> usize {
        self.0
            .iter()
            .map(|(n, v)| n.len() + v.as_ref().map_or(1, String::len))
            .sum()
    }
}

fn headers(pairs: &[(&str, &str)]) -> Fields {
    let mut h = Fields(Vec::new());
    for (k, v) in pairs {
        h.append(k, v);
    }
    h
}

fn code(denied: Denied) -> i64 {
    denied.to_rpc().code
}

#[test]
fn origin_and_host_guard() {
    let local = ServerConfig::default().allowed_origins;
    let check = |pairs: &[(&str, &str)], loopback: bool| {
        check_origin(&headers(pairs), loopback, &local).is_ok()
    };
    assert!(check(&[("host", "127.0.0.1:8787")], true));
    assert!(check(&[("host", "localhost")], true));
    assert!(check(&[("host", "[::1]:80")], true));
    assert!(!check(&[("host", "evil.example.com")], true));
    assert!(check(
        &[("host", "127.0.0.1"), ("origin", "http://localhost:3000")],
        true
    ));
    assert!(check(
        &[("host", "127.0.0.1"), ("origin", "https://[::1]")],
        true
    ));
    assert!(!check(
        &[("host", "127.0.0.1"), ("origin", "http://evil.example.com")],
        true
    ));
    assert!(!check(
        &[
            ("host", "127.0.0.1"),
            ("origin", "http://localhost.evil.example.com")
        ],
        true
    ));
    assert!(!check(&[("host", "127.0.0.1"), ("origin", "null")], true));
    // Bound to a public address, Host is not checked (auth guards it).
    assert!(check(&[("host", "mcp.example.com")], false));
    // A configured allowlist replaces the default.
    let app = ["https://app.example.com", "http://localhost:*"]
        .map(|o| AllowedOrigin::parse(o).expect("origin"));
    let with = |origin: &str| {
        check_origin(
            &headers(&[("host", "127.0.0.1"), ("origin", origin)]),
            true,
            &app,
        )
        .is_ok()
    };
    assert!(with("https://app.example.com"));
    assert!(with("https://app.example.com:443"));
    assert!(!with("https://app.example.com:8443"));
    assert!(!with("http://app.example.com"));
    assert!(with("http://localhost:5173"));
    assert!(!with("http://127.0.0.1:5173"));
}

#[test]
fn two_origins_are_refused() {
    let local = ServerConfig::default().allowed_origins;
    let mut h = headers(&[("host", "127.0.0.1")]);
    h.append("origin", "http://localhost:1");
    assert!(check_origin(&h, true, &local).is_ok());
    h.append("origin", "http://localhost:2");
    assert_eq!(
        check_origin(&h, true, &local),
        Err(Denied::Forbidden("this Origin"))
    );
}

#[test]
fn a_host_or_origin_that_is_not_text_is_refused() {
    let local = ServerConfig::default().allowed_origins;
    let host = Fields(vec![("host".into(), None)]);
    assert_eq!(
        check_origin(&host, true, &local),
        Err(Denied::Forbidden("this Host"))
    );
    let mut origin = headers(&[("host", "127.0.0.1")]);
    origin.0.push(("origin".into(), None));
    assert_eq!(
        check_origin(&origin, true, &local),
        Err(Denied::Forbidden("this Origin"))
    );
}

#[test]
fn the_header_caps_come_before_the_origin() {
    let local = ServerConfig::default().allowed_origins;
    let mut h = headers(&[("host", "evil.example.com")]);
    assert_eq!(
        check_transport(&h, None, true, &local),
        Err(Denied::Forbidden("this Host"))
    );
    for i in 0..MAX_HEADERS {
        h.append(&format!("x-{i}"), "1");
    }
    let too_large = Err(Denied::HeadersTooLarge {
        max_headers: 64,
        max_bytes: 32_768,
    });
    assert_eq!(check_transport(&h, None, true, &local), too_large);
    let big = headers(&[("host", "localhost"), ("x", &"a".repeat(MAX_HEADER_BYTES))]);
    assert_eq!(check_header_size(&big), too_large);
    let fits = headers(&[("x", &"a".repeat(MAX_HEADER_BYTES - 1))]);
    assert_eq!(check_header_size(&fits), Ok(()));
}

#[test]
fn the_era_of_a_post() {
    let modern = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let none = headers(&[]);
    assert_eq!(post_era(&none, &modern), Era::Modern);
    assert_eq!(post_era(&none, &json!({})), Era::Legacy);
    // The header alone makes it modern (its missing `_meta` is refused).
    let header = headers(&[("MCP-Protocol-Version", "2026-07-28")]);
    assert_eq!(post_era(&header, &json!({})), Era::Modern);
    let legacy = headers(&[("mcp-protocol-version", "2025-06-18")]);
    assert_eq!(post_era(&legacy, &json!({})), Era::Legacy);
}

#[test]
fn modern_headers_must_mirror_the_body() {
    let p =
        json!({"name": "a b", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let check = |h: &Fields| check_modern_headers(h, "tools/call", Method::CallTool, &p);
    let ok = headers(&[
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "a b"),
    ]);
    assert!(check(&ok).is_ok());
    let b64 = headers(&[
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "=?base64?YSBi?="),
    ]);
    assert!(check(&b64).is_ok());
    let cases = [
        headers(&[("mcp-method", "tools/call"), ("mcp-name", "a b")]),
        headers(&[
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "a b"),
        ]),
        headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
            ("mcp-name", "a b"),
        ]),
        headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
        ]),
        headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "other"),
        ]),
    ];
    for h in cases {
        let e = check(&h).expect_err("mismatch");
        assert_eq!(code(e), -32020);
    }
}

#[test]
fn the_mismatch_messages_clients_read() {
    let p =
        json!({"uri": "a://b", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let read = |pairs: &[(&str, &str)]| {
        check_modern_headers(&headers(pairs), "resources/read", Method::ReadResource, &p)
            .expect_err("mismatch")
            .to_string()
    };
    assert_eq!(
        read(&[("mcp-protocol-version", "2025-11-25")]),
        "MCP-Protocol-Version header \"2025-11-25\" does not match the body's \"2026-07-28\""
    );
    assert_eq!(
        read(&[("mcp-protocol-version", "2026-07-28")]),
        "missing Mcp-Method header"
    );
    assert_eq!(
        read(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "resources/list")
        ]),
        "Mcp-Method header \"resources/list\" does not match the body's \"resources/read\""
    );
    assert_eq!(
        read(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "resources/read")
        ]),
        "missing Mcp-Name header"
    );
    assert_eq!(
        read(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "resources/read"),
            ("mcp-name", "a://c")
        ]),
        "Mcp-Name header does not match params.uri"
    );
    // A value that is not text equals nothing the body says.
    let mut h = headers(&[("mcp-method", "resources/read"), ("mcp-name", "a://b")]);
    h.0.push(("mcp-protocol-version".into(), None));
    let e = check_modern_headers(&h, "resources/read", Method::ReadResource, &p);
    assert_eq!(
        e.expect_err("mismatch").to_string(),
        "MCP-Protocol-Version header \"\u{fffd}\" does not match the body's \"2026-07-28\""
    );
    // A method without a target needs no Mcp-Name.
    let list = headers(&[
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ]);
    assert!(
        check_modern_headers(
            &list,
            "tools/list",
            Method::List(crate::method::ListKind::Tools),
            &p
        )
        .is_ok()
    );
}

#[test]
fn param_headers_must_mirror_the_arguments_a_tool_declares() {
    let tool = json!({"name": "t", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}});
    let params = json!({"name": "t", "arguments": {"region": "eu"}});
    // The same arguments in a request large enough that they stay text
    // (`crate::carried`).
    let pad = "p".repeat(crate::payload::CARRIED_AS_TEXT_FROM);
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"pad":"{pad}","region":"eu"}}}}}}"#
    );
    let read = crate::carried::read(text.as_bytes())
        .expect("json")
        .expect("json-rpc");
    let jsonrpc::Message::Request {
        params: large_params,
        ..
    } = read.message
    else {
        panic!("not a request");
    };
    assert_eq!(large_params["arguments"], json!({}));
    for (params, carried) in [(&params, None), (&large_params, read.carried.as_deref())] {
        let check = |pairs: &[(&str, &str)]| {
            check_param_headers(
                &headers(pairs),
                Method::CallTool,
                params,
                carried,
                Some(&tool),
            )
            .map_err(|e| e.to_string())
        };
        assert_eq!(check(&[("mcp-param-region", "eu")]), Ok(()));
        assert_eq!(
            check(&[("mcp-param-region", "us")]),
            Err("header mcp-param-region does not match its argument".into())
        );
        assert_eq!(check(&[]), Err("missing header mcp-param-region".into()));
    }
    // A value that is not text is as good as none.
    let opaque = Fields(vec![("mcp-param-region".into(), None)]);
    assert_eq!(
        check_param_headers(&opaque, Method::CallTool, &params, None, Some(&tool))
            .map_err(|e| e.to_string()),
        Err("missing header mcp-param-region".into())
    );
    // Only tools/call, and only a tool the federation has.
    let none = headers(&[]);
    assert!(check_param_headers(&none, Method::GetPrompt, &params, None, Some(&tool)).is_ok());
    assert!(check_param_headers(&none, Method::CallTool, &params, None, None).is_ok());
}

#[test]
fn a_modern_request_is_judged_headers_then_meta_then_params() {
    let tool = json!({"name": "t", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}});
    let admit = |pairs: &[(&str, &str)], params: &Value| {
        admit_modern(
            &headers(pairs),
            "tools/call",
            Method::CallTool,
            params,
            None,
            |name| (name == "t").then_some(&tool),
        )
    };
    let mirrored = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "t"),
    ];
    // No `_meta`: the headers pass, `_meta` does not.
    let bare = json!({"name": "t", "arguments": {"region": "eu"}});
    assert_eq!(admit(&mirrored, &bare).map_err(code), Err(-32602));
    assert_eq!(admit(&[], &bare).map_err(code), Err(-32020));
    let full = json!({"name": "t", "arguments": {"region": "eu"}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}});
    assert_eq!(
        admit(&mirrored, &full).map_err(|e| e.to_string()),
        Err("missing header mcp-param-region".into())
    );
    let all = [mirrored.as_slice(), &[("mcp-param-region", "eu")]].concat();
    let meta = admit(&all, &full).expect("admitted");
    assert_eq!(meta.client_capabilities, json!({"sampling": {}}));
}

#[test]
fn a_legacy_version_header_must_be_a_legacy_version() {
    assert_eq!(check_legacy_version(&headers(&[])), Ok(()));
    let ok = headers(&[("mcp-protocol-version", "2025-06-18")]);
    assert_eq!(check_legacy_version(&ok), Ok(()));
    let modern = headers(&[("mcp-protocol-version", "2026-07-28")]);
    let e = check_legacy_version(&modern).expect_err("unsupported");
    assert_eq!(e, Denied::UnsupportedVersionHeader("2026-07-28".into()));
    let rpc: RpcError = e.to_rpc();
    assert_eq!(rpc.code, -32600);
    assert_eq!(
        rpc.message,
        "Unsupported MCP-Protocol-Version: \"2026-07-28\""
    );
    assert_eq!(
        rpc.data,
        Some(json!({"supported": protocol::supported_versions()}))
    );
    // Not text: named as empty, as it always was.
    let opaque = Fields(vec![("mcp-protocol-version".into(), None)]);
    assert_eq!(
        check_legacy_version(&opaque),
        Err(Denied::UnsupportedVersionHeader(String::new()))
    );
}

#[test]
fn ports_and_local_names() {
    assert_eq!(strip_port("127.0.0.1:8787"), "127.0.0.1");
    assert_eq!(strip_port("[::1]:80"), "::1");
    assert_eq!(strip_port("[::1]"), "::1");
    assert_eq!(strip_port("localhost"), "localhost");
    assert!(is_local_host("::1") && !is_local_host("localhost.evil.example.com"));
}

#[test]
fn one_host_that_the_target_does_not_contradict() {
    let local = ServerConfig::default().allowed_origins;
    let h = headers(&[("host", "127.0.0.1:8787")]);
    assert_eq!(check_host(&h, None), Ok(()));
    assert_eq!(check_host(&h, Some("127.0.0.1:8787")), Ok(()));
    // An absolute-form target naming another host: 421, even where the
    // Host itself would pass.
    let misdirected = check_transport(&h, Some("evil.example"), true, &local);
    assert_eq!(misdirected, Err(Denied::Misdirected));
    assert_eq!(Denied::Misdirected.http_status(Era::Legacy), 421);
    assert_eq!(
        check_host(&headers(&[]), Some("127.0.0.1:8787")),
        Err(Denied::Misdirected),
        "a target and no Host"
    );
    let two = headers(&[("host", "127.0.0.1"), ("host", "evil.example")]);
    let refused = check_host(&two, None).expect_err("two Host fields");
    assert_eq!(
        refused,
        Denied::MalformedRequest("more than one Host header")
    );
    assert_eq!(refused.http_status(Era::Legacy), 400);
    assert_eq!(code(refused), jsonrpc::INVALID_REQUEST);
    // Host names are case-insensitive.
    assert_eq!(
        check_host(&headers(&[("host", "LocalHost:1")]), Some("localhost:1")),
        Ok(())
    );
}

#[test]
fn one_credential_at_most() {
    assert_eq!(credential(&headers(&[])), Ok(None));
    assert_eq!(
        credential(&headers(&[("Authorization", "Bearer a")])),
        Ok(Some("Bearer a"))
    );
    for pair in [["Bearer good", "Bearer bad"], ["Bearer bad", "Bearer good"]] {
        let h = headers(&[("authorization", pair[0]), ("Authorization", pair[1])]);
        let refused = credential(&h).expect_err("two credentials");
        assert_eq!(refused.http_status(Era::Legacy), 400);
        assert_eq!(
            refused.to_string(),
            "Bad Request: more than one Authorization header; send one credential"
        );
    }
    let mut not_text = Fields(Vec::new());
    not_text.0.push(("authorization".into(), None));
    assert_eq!(credential(&not_text), Ok(Some("\u{fffd}")));
}

#[test]
fn a_post_is_declared_json() {
    for ok in [
        "application/json",
        "Application/JSON",
        "application/json; charset=utf-8",
    ] {
        assert_eq!(
            check_content_type(&headers(&[("content-type", ok)])),
            Ok(()),
            "{ok}"
        );
    }
    for bad in [
        "text/plain",
        "application/jsonx",
        "application/x-www-form-urlencoded",
        "",
    ] {
        let refused = check_content_type(&headers(&[("content-type", bad)])).expect_err("not JSON");
        assert_eq!(refused, Denied::UnsupportedMediaType, "{bad}");
    }
    assert_eq!(
        check_content_type(&headers(&[])),
        Err(Denied::UnsupportedMediaType)
    );
    let two = headers(&[
        ("content-type", "application/json"),
        ("content-type", "text/plain"),
    ]);
    assert_eq!(check_content_type(&two), Err(Denied::UnsupportedMediaType));
    assert_eq!(Denied::UnsupportedMediaType.http_status(Era::Modern), 415);
}

#[test]
fn mismatch_messages_quote_a_bounded_excerpt() {
    let long = "v".repeat(10_000);
    let h = headers(&[
        ("mcp-protocol-version", &long),
        ("mcp-method", "tools/list"),
    ]);
    let params = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let refused = check_modern_headers(
        &h,
        "tools/list",
        Method::List(crate::method::ListKind::Tools),
        &params,
    )
    .expect_err("a mismatch");
    assert_eq!(
        refused.to_string(),
        format!(
            "MCP-Protocol-Version header \"{}\"… does not match the body's \"2026-07-28\"",
            "v".repeat(64)
        )
    );
}
