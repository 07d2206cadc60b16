use super::*;

fn up() -> String {
    "git".to_owned()
}

#[test]
fn each_upstream_failure_has_its_own_code_and_names_the_upstream() {
    let cases = [
        (
            UpstreamFailure::Unavailable {
                upstream: up(),
                state: UpstreamState::Restarting,
            },
            UPSTREAM_UNAVAILABLE,
        ),
        (
            UpstreamFailure::Timeout {
                upstream: up(),
                after: Duration::from_secs(60),
            },
            UPSTREAM_TIMEOUT,
        ),
        (UpstreamFailure::Lost { upstream: up() }, UPSTREAM_LOST),
        (
            UpstreamFailure::Protocol {
                upstream: up(),
                detail: "not JSON",
            },
            UPSTREAM_PROTOCOL,
        ),
        (
            UpstreamFailure::TooLarge { upstream: up() },
            ANSWER_TOO_LARGE,
        ),
    ];
    let mut codes = Vec::new();
    for (failure, code) in cases {
        let rpc = failure.to_rpc();
        assert_eq!(rpc.code, code);
        assert!((-32019..=-32000).contains(&rpc.code));
        assert_eq!(rpc.data, Some(json!({"upstream": "git"})));
        assert!(rpc.message.contains("\"git\""), "{}", rpc.message);
        codes.push(code);
    }
    codes.dedup();
    assert_eq!(codes.len(), 5);
    let passthrough = RpcError::new(-32602, "Unknown tool");
    assert_eq!(
        UpstreamFailure::Rpc(passthrough.clone()).to_rpc(),
        passthrough
    );
}

#[test]
fn a_needed_login_names_the_command_and_the_scopes() {
    let rpc = UpstreamFailure::LoginRequired {
        upstream: "docs".into(),
        scopes: vec!["read".into(), "write".into()],
        login: "sluice login docs".into(),
    }
    .to_rpc();
    assert_eq!(rpc.code, UPSTREAM_LOGIN_REQUIRED);
    assert_eq!(
        rpc.message,
        "upstream \"docs\" needs a login for scope \"read write\": run `sluice login docs`"
    );
    assert_eq!(
        rpc.data,
        Some(
            json!({"upstream": "docs", "login": "sluice login docs", "scopes": ["read", "write"]})
        )
    );
    let plain = UpstreamFailure::LoginRequired {
        upstream: "docs".into(),
        scopes: vec![],
        login: "sluice login docs".into(),
    };
    assert_eq!(
        plain.to_string(),
        "upstream \"docs\" needs a login: run `sluice login docs`"
    );
    let page = UpstreamFailure::LoginRequired {
        upstream: "docs".into(),
        scopes: vec![],
        login: "https://sluice.example.com/oauth/login/docs?ticket=lt.x".into(),
    };
    assert_eq!(
        page.to_string(),
        "upstream \"docs\" needs a login: open https://sluice.example.com/oauth/login/docs?ticket=lt.x in a browser"
    );
    let refused = UpstreamFailure::LoginRefused {
        upstream: "docs".into(),
        scopes: vec!["admin".into()],
        login: "sluice login docs".into(),
    }
    .to_rpc();
    assert_eq!(refused.code, UPSTREAM_LOGIN_REFUSED);
    assert!(
        refused.message.contains("sluice stopped asking"),
        "{}",
        refused.message
    );
    assert_eq!(
        refused.data,
        Some(json!({"upstream": "docs", "scopes": ["admin"]}))
    );
}

/// Every refusal: its code, HTTP status (legacy, modern) and decision.
#[test]
fn the_refusal_table() {
    let rows: Vec<(Denied, i64, u16, u16, Decision)> = vec![
        (Denied::ParseError, -32700, 400, 400, Decision::Invalid),
        (
            Denied::MethodNotFound("x/y".into()),
            -32601,
            200,
            404,
            Decision::Invalid,
        ),
        (
            Denied::invalid_params("bad"),
            -32602,
            200,
            200,
            Decision::Invalid,
        ),
        (
            Denied::UnknownEntry {
                kind: ListKind::Tools,
                name: "a__b".into(),
            },
            -32602,
            200,
            200,
            Decision::Invalid,
        ),
        (
            Denied::DriftBlocked {
                kind: ListKind::Prompts,
                name: "a__p".into(),
                upstream: up(),
                drift: DriftKind::Changed,
            },
            DRIFT_BLOCKED,
            200,
            200,
            Decision::BlockedDrift,
        ),
        (
            Denied::RateLimited {
                tool: "a__t".into(),
                retry_after: Duration::from_millis(1500),
            },
            RATE_LIMITED,
            429,
            429,
            Decision::RateLimited,
        ),
        (
            Denied::InsufficientScope {
                target: "a__t".into(),
                required: vec!["write".into()],
            },
            INSUFFICIENT_SCOPE,
            403,
            403,
            Decision::RefusedScope,
        ),
        (
            Denied::ReadTooLarge {
                surface: Surface::Resource,
                limit: 65_536,
            },
            -32602,
            200,
            200,
            Decision::RefusedSize,
        ),
        (
            Denied::SensitiveElicitation,
            -32602,
            200,
            200,
            Decision::RefusedElicitation,
        ),
        (
            Denied::MissingExtension("io.modelcontextprotocol/tasks"),
            -32021,
            200,
            400,
            Decision::Invalid,
        ),
        (
            Denied::UnsafeElicitationUrl(BrowserUrlError::NotHttps {
                host: "pay.example".into(),
            }),
            -32602,
            200,
            200,
            Decision::RefusedElicitation,
        ),
        (
            Denied::Upstream(UpstreamFailure::Timeout {
                upstream: up(),
                after: Duration::from_secs(1),
            }),
            UPSTREAM_TIMEOUT,
            200,
            200,
            Decision::Timeout,
        ),
        (
            Denied::Upstream(UpstreamFailure::Rpc(RpcError::method_not_found("x"))),
            -32601,
            200,
            404,
            Decision::UpstreamError,
        ),
        (
            Denied::ResourceNotFound {
                uri: "a://b".into(),
            },
            -32002,
            200,
            200,
            Decision::Invalid,
        ),
        (Denied::SessionNotFound, -32600, 404, 404, Decision::Invalid),
        (
            Denied::MalformedRequest("more than one Host header"),
            -32600,
            400,
            400,
            Decision::Invalid,
        ),
        (Denied::Misdirected, -32600, 421, 421, Decision::Invalid),
        (
            Denied::SlowBody(Duration::from_secs(30)),
            -32600,
            408,
            408,
            Decision::Invalid,
        ),
        (
            Denied::UnsupportedMediaType,
            -32600,
            415,
            415,
            Decision::Invalid,
        ),
        (
            Denied::Upstream(UpstreamFailure::Restarted {
                upstream: up(),
                after_timeouts: 3,
            }),
            UPSTREAM_LOST,
            200,
            200,
            Decision::UpstreamError,
        ),
        (Denied::TooManySessions, -32603, 503, 503, Decision::Invalid),
        (
            Denied::Forbidden("this Origin"),
            -32600,
            403,
            403,
            Decision::Invalid,
        ),
        (
            Denied::Unauthorized(None),
            -32600,
            401,
            401,
            Decision::Invalid,
        ),
        (
            Denied::TokenLacksScopes(vec!["mcp".into()]),
            -32600,
            403,
            403,
            Decision::Invalid,
        ),
        (
            Denied::HeadersTooLarge {
                max_headers: 64,
                max_bytes: 32_768,
            },
            -32600,
            431,
            431,
            Decision::Invalid,
        ),
        (
            Denied::HeaderMismatch("missing Mcp-Method header".into()),
            -32020,
            400,
            400,
            Decision::Invalid,
        ),
    ];
    for (denied, code, legacy, modern, decision) in rows {
        assert_eq!(denied.to_rpc().code, code, "{denied:?}");
        assert_eq!(denied.http_status(Era::Legacy), legacy, "{denied:?}");
        assert_eq!(denied.http_status(Era::Modern), modern, "{denied:?}");
        assert_eq!(denied.decision(), decision, "{denied:?}");
    }
}

#[test]
fn the_messages_clients_read() {
    let drift = Denied::DriftBlocked {
        kind: ListKind::Tools,
        name: "git__push".into(),
        upstream: up(),
        drift: DriftKind::Added,
    };
    assert_eq!(
        drift.to_string(),
        "tool \"git__push\" is blocked: it is not approved in sluice.lock. Review the drift with `sluice check`; approve it with `sluice lock`"
    );
    assert_eq!(
        drift.to_rpc().data,
        Some(json!({"upstream": "git", "drift": "added"}))
    );
    let unknown = Denied::UnknownEntry {
        kind: ListKind::Prompts,
        name: "nope".into(),
    };
    assert_eq!(unknown.to_string(), "Unknown prompt: nope");
    let limited = Denied::RateLimited {
        tool: "a__t".into(),
        retry_after: Duration::from_micros(10),
    };
    // Never "retry in 0 ms", never Retry-After: 0.
    assert!(limited.to_string().ends_with("retry in 1 ms"));
    assert_eq!(limited.to_rpc().data, Some(json!({"retryAfterMs": 1})));
    assert_eq!(limited.retry_after_secs(), Some(1));
    let scope = Denied::InsufficientScope {
        target: "a__t".into(),
        required: vec!["read".into(), "write".into()],
    };
    assert_eq!(
        scope.to_string(),
        "insufficient scope: calling \"a__t\" needs the scope(s) read write"
    );
    assert_eq!(
        scope.required_scopes(),
        Some(&["read".to_owned(), "write".to_owned()][..])
    );
    assert_eq!(
        Denied::Unauthorized(None).to_string(),
        "Unauthorized: send Authorization: Bearer <token>"
    );
    assert_eq!(
        Denied::Unauthorized(Some("the token expired".into())).to_string(),
        "Unauthorized: the token expired"
    );
    assert_eq!(
        Denied::TokenLacksScopes(vec!["mcp".into(), "files".into()]).to_string(),
        "Forbidden: the token lacks the scope(s) mcp files"
    );
}

#[test]
fn a_tools_read_refusal_is_a_result_and_a_resources_an_error() {
    let tool = Denied::ReadTooLarge {
        surface: Surface::Tool,
        limit: 65_536,
    };
    let result = tool.to_answer().expect("a tool's refusal is a result");
    assert_eq!(result, budget::tool_refusal(65_536));
    assert_eq!(tool.http_status(Era::Modern), 200);
    let resource = Denied::ReadTooLarge {
        surface: Surface::Resource,
        limit: 65_536,
    };
    assert_eq!(
        resource.to_answer(),
        Err(budget::read_refusal(65_536, Surface::Resource))
    );
}

#[test]
fn sluices_own_codes_stay_in_their_band() {
    for code in [
        UPSTREAM_UNAVAILABLE,
        UPSTREAM_TIMEOUT,
        UPSTREAM_LOST,
        UPSTREAM_PROTOCOL,
        ANSWER_TOO_LARGE,
        DRIFT_BLOCKED,
        RATE_LIMITED,
        INSUFFICIENT_SCOPE,
    ] {
        assert!((-32019..=-32000).contains(&code), "{code}");
    }
}

#[test]
fn a_restart_says_so_and_names_its_upstream() {
    let rpc = Denied::Upstream(UpstreamFailure::Restarted {
        upstream: "fx".into(),
        after_timeouts: 3,
    })
    .to_rpc();
    assert_eq!(rpc.code, UPSTREAM_LOST);
    assert!(
        rpc.message
            .starts_with("upstream \"fx\" was restarted while this request was in flight")
    );
    assert_eq!(rpc.data, Some(json!({"upstream": "fx", "restarted": true})));
}

#[test]
fn names_a_client_sent_are_quoted_bounded() {
    let name = "n".repeat(1 << 20);
    let unknown = Denied::UnknownEntry {
        kind: ListKind::Tools,
        name: name.clone(),
    };
    assert_eq!(
        unknown.to_string(),
        format!("Unknown tool: {}…", "n".repeat(64))
    );
    let method = Denied::MethodNotFound(name.clone());
    assert_eq!(
        method.to_string(),
        format!("Method not found: {}…", "n".repeat(64))
    );
    let version = Denied::UnsupportedVersionHeader(name);
    assert_eq!(
        version.to_string(),
        format!("Unsupported MCP-Protocol-Version: \"{}\"…", "n".repeat(64))
    );
}
