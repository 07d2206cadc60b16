use std::time::Duration;

use serde_json::json;

use super::*;
use crate::boundary::budget::MIN_READ_BUDGET;
use crate::boundary::redact::DEFAULT_SECRET_KEYS;
use crate::config::Source;
use crate::jsonrpc::RpcError;

const SECRET: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";

fn config() -> Config {
    let text = r#"
        [limits]
        mcp_read_response_max_bytes = 100000

        [[upstream]]
        name = "git"
        command = "git-mcp"
        trusted = true
        read_only_tools = ["blame"]
        tool_read_budget = { log = 70000 }

        [[upstream]]
        name = "web"
        command = "web-mcp"

        [[policy.project]]
        tool = "git__log"
        keep = ["$.content"]
    "#;
    Config::from_toml(
        Source {
            name: "sluice.toml",
            text,
        },
        &|_| None,
    )
    .expect("valid")
}

fn redactor() -> Redactor {
    Redactor::new(Vec::<String>::new(), DEFAULT_SECRET_KEYS)
}

fn hinted() -> Value {
    json!({"name": "log", "annotations": {"readOnlyHint": true}})
}

#[test]
fn a_tool_is_a_read_when_listed_or_hinted_by_a_trusted_upstream() {
    let config = config();
    let (git, web) = (&config.upstreams[0], &config.upstreams[1]);
    assert!(is_read_only(git, "blame", None));
    assert!(is_read_only(git, "log", Some(&hinted())));
    assert!(!is_read_only(git, "push", None));
    // The same hint from an untrusted upstream is not believed.
    assert!(!is_read_only(web, "log", Some(&hinted())));
}

#[test]
fn a_tools_boundary_takes_its_own_budget_and_projection() {
    let config = config();
    let r = redactor();
    let git = &config.upstreams[0];
    let log = tool_boundary(&config, git, &r, "log", "git__log", Some(&hinted()));
    assert!(log.read);
    assert_eq!(log.limit, 70_000);
    assert!(log.projection.is_some());
    let push = tool_boundary(&config, git, &r, "push", "git__push", None);
    assert!(!push.read);
    assert_eq!(push.limit, 100_000);
    assert!(push.projection.is_none());
}

#[test]
fn a_read_over_budget_is_refused_whole_and_a_mutation_never() {
    let config = config();
    let r = redactor();
    let git = &config.upstreams[0];
    let big = json!({"content": [{"type": "text", "text": "x".repeat(MIN_READ_BUDGET * 2)}]});
    let read = boundary(&config, git, &r, Surface::Resource, true);
    let refused = bound(&read, "git", Ok(big.clone().into()));
    assert_eq!(
        refused.answer,
        Err(Denied::ReadTooLarge {
            surface: Surface::Resource,
            limit: 100_000
        })
    );
    // What the client reads instead: the fixed refusal, nothing of the
    // result (a tool's is an `isError` result, a resource's a -32602).
    let Err(denied) = refused.answer else {
        panic!("refused")
    };
    assert_eq!(denied.to_rpc().code, -32602);
    let blame = tool_boundary(&config, git, &r, "blame", "git__blame", None);
    let Err(tool_refusal) = bound(&blame, "git", Ok(big.clone().into())).answer else {
        panic!("a read-only tool's big result is refused")
    };
    let shown = tool_refusal
        .to_answer()
        .expect("a tool's refusal is a result");
    assert_eq!(shown["isError"], true);
    assert!(!shown.to_string().contains("xxxx"));
    let mutation = tool_boundary(&config, git, &r, "push", "git__push", None);
    let asking = json!({"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create", "params": {"message": "x".repeat(MIN_READ_BUDGET * 2)}}}});
    assert!(matches!(
        bound(&mutation, "git", Ok(asking.into())).answer,
        Err(Denied::ReadTooLarge { .. })
    ));
    let passed = bound(&mutation, "git", Ok(big.clone().into()));
    assert_eq!(passed.answer, Ok(Payload::Tree(big)));
    assert_eq!(passed.measured, None);
}

#[test]
fn an_upstream_error_is_redacted_and_a_discarded_answer_refused_or_lost() {
    let config = config();
    let r = redactor();
    let git = &config.upstreams[0];
    let read = boundary(&config, git, &r, Surface::Prompt, true);
    let error = RpcError::new(-32000, format!("bad token {SECRET}"));
    let bounded = bound(&read, "git", Err(UpstreamFailure::Rpc(error)));
    let Err(Denied::Upstream(UpstreamFailure::Rpc(redacted))) = &bounded.answer else {
        panic!("expected the upstream's error, got {:?}", bounded.answer);
    };
    assert!(!redacted.message.contains(SECRET), "{}", redacted.message);
    assert_eq!(bounded.redactions.pattern, 1);
    let too_large = || UpstreamFailure::TooLarge {
        upstream: "git".into(),
    };
    assert!(matches!(
        bound(&read, "git", Err(too_large())).answer,
        Err(Denied::ReadTooLarge { .. })
    ));
    let mutation = tool_boundary(&config, git, &r, "push", "git__push", None);
    assert_eq!(
        bound(&mutation, "git", Err(too_large())).answer,
        Err(Denied::Upstream(too_large()))
    );
    let timeout = UpstreamFailure::Timeout {
        upstream: "git".into(),
        after: Duration::from_secs(1),
    };
    assert_eq!(
        bound(&mutation, "git", Err(timeout.clone())).answer,
        Err(Denied::Upstream(timeout))
    );
}

#[test]
fn notifications_reach_the_client_redacted_under_its_own_token() {
    let r = redactor();
    let progress = json!({"method": "notifications/progress", "params": {"progressToken": "up-7", "progress": 1, "message": SECRET}});
    let token = json!("client-1");
    let (relayed, redactions) = relayed_notification(&r, progress.clone(), Some(&token), true);
    let relayed = relayed.expect("relayed");
    assert_eq!(relayed.pointer("/params/progressToken"), Some(&token));
    assert!(!relayed.to_string().contains(SECRET));
    assert_eq!(redactions.pattern, 1);
    // No token of the client's: nobody to tell.
    assert!(relayed_notification(&r, progress, None, true).0.is_none());
    let log = json!({"method": "notifications/message", "params": {"level": "info", "data": "hi"}});
    assert!(
        relayed_notification(&r, log.clone(), None, false)
            .0
            .is_none()
    );
    assert_eq!(
        relayed_notification(&r, log.clone(), None, true).0,
        Some(log)
    );
}

#[test]
fn a_result_carried_as_text_is_bounded_as_its_tree() {
    let config = config();
    let r = redactor();
    let git = &config.upstreams[0];
    let text = |value: &serde_json::Value| {
        Payload::Text(serde_json::value::to_raw_value(value).expect("json"))
    };
    let read = tool_boundary(&config, git, &r, "blame", "git__blame", None);
    let mutation = tool_boundary(&config, git, &r, "push", "git__push", None);
    let big = json!({"content": [{"type": "text", "text": "x".repeat(MIN_READ_BUDGET * 2)}]});
    let secret = json!({"content": [{"type": "text", "text": format!("key {SECRET}")}], "n": 1.50});
    let asking = json!({"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create", "params": {"message": SECRET}}}});
    for (boundary, result) in [
        (&read, &big),
        (&mutation, &big),
        (&read, &secret),
        (&mutation, &secret),
        (&mutation, &asking),
    ] {
        let from_tree = bound(boundary, "git", Ok(result.clone().into()));
        let from_text = bound(boundary, "git", Ok(text(result)));
        assert_eq!(from_text.answer, from_tree.answer, "{result}");
        assert_eq!(from_text.redactions, from_tree.redactions);
        assert_eq!(from_text.measured, from_tree.measured);
        // What needs a tree gets one; the rest stays text.
        let kept_text = matches!(from_text.answer, Ok(Payload::Text(_)));
        assert_eq!(kept_text, from_tree.answer.is_ok() && result != &asking);
    }
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let deep = Payload::Text(serde_json::value::RawValue::from_string(deep).expect("json"));
    assert_eq!(
        bound(&mutation, "git", Ok(deep)).answer,
        Err(Denied::Upstream(UpstreamFailure::nested_too_deeply("git")))
    );
}

#[test]
fn a_large_answer_of_few_values_travels_as_a_tree_and_one_of_many_as_text() {
    let raw = |json: String| RawValue::from_string(json).expect("json");
    // One long string: a tree costs about its text.
    let prose = format!(
        r#"{{"content":[{{"type":"text","text":"{}"}}]}}"#,
        "x".repeat(300_000)
    );
    let expected: Value = serde_json::from_str(&prose).expect("json");
    assert!(matches!(carried(raw(prose)), Payload::Tree(tree) if tree == expected));
    // Tiny objects: a hundred times their text as a tree.
    let objects = format!(r#"{{"a":[{}]}}"#, vec![r#"{"k":1}"#; 40_000].join(","));
    let text = raw(objects.clone());
    assert!(matches!(carried(text), Payload::Text(t) if t.get() == objects));
}
