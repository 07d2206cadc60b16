use serde_json::{Value, json};

use super::*;
use crate::catalog::UpstreamCatalog;
use crate::catalog::drift::{DriftKind, EntryId, Withheld};
use crate::method::Method;

fn naming() -> Naming {
    Naming::new("__", vec![])
}

/// `a` lists tool `t`, prompt `p`, resource `file:///a` and the template
/// `mem://{key}`; `a`'s tool `gone` and resource `file:///old` are
/// withheld; `b` has no catalog yet.
fn federation() -> Federation {
    let a = UpstreamCatalog {
        tools: vec![json!({"name": "t"})],
        prompts: vec![json!({"name": "p"})],
        resources: vec![json!({"uri": "file:///a"})],
        resource_templates: vec![json!({"uriTemplate": "mem://{key}"})],
    };
    let mut fed = Federation::build([("a", &a)], &naming());
    let withheld = [
        Withheld {
            entry: EntryId {
                kind: ListKind::Tools,
                key: "gone".into(),
            },
            drift: DriftKind::Changed,
        },
        Withheld {
            entry: EntryId {
                kind: ListKind::Resources,
                key: "file:///old".into(),
            },
            drift: DriftKind::Removed,
        },
    ];
    fed.withhold("a", &naming(), &withheld);
    fed
}

/// `b` is still reading its catalog.
fn unread() -> Vec<&'static str> {
    vec!["b"]
}

fn offering<'a>(both: bool) -> impl FnOnce() -> Vec<&'a str> {
    move || if both { vec!["a", "b"] } else { vec!["a"] }
}

#[test]
fn a_name_is_routed_withheld_pending_or_unknown() {
    let fed = federation();
    let route = named(&fed, &naming(), ListKind::Tools, "a__t", unread).expect("routed");
    assert_eq!((route.upstream.as_str(), route.name.as_str()), ("a", "t"));
    assert_eq!(
        named(&fed, &naming(), ListKind::Tools, "a__gone", unread),
        Err(Denied::DriftBlocked {
            kind: ListKind::Tools,
            name: "a__gone".into(),
            upstream: "a".into(),
            drift: DriftKind::Changed,
        })
    );
    assert_eq!(
        named(&fed, &naming(), ListKind::Tools, "b__anything", unread),
        Err(Denied::CatalogPending {
            upstream: "b".into()
        })
    );
    assert_eq!(
        named(&fed, &naming(), ListKind::Prompts, "a__t", unread),
        Err(Denied::UnknownEntry {
            kind: ListKind::Prompts,
            name: "a__t".into()
        })
    );
}

fn owned(route: Result<ResourceRoute<'_>, Denied>) -> Result<(String, Option<String>), Denied> {
    route.map(|r| (r.upstream.to_owned(), r.target))
}

#[test]
fn a_resource_is_listed_withheld_or_found_by_fallback_only_unpinned() {
    let fed = federation();
    assert_eq!(
        owned(resource(&fed, true, "file:///a", offering(false))),
        Ok(("a".to_owned(), Some("file:".to_owned())))
    );
    assert!(matches!(
        resource(&fed, true, "file:///old", offering(false)),
        Err(Denied::DriftBlocked {
            drift: DriftKind::Removed,
            ..
        })
    ));
    let unlisted = "made-up://x";
    assert_eq!(
        owned(resource(&fed, true, unlisted, offering(false))),
        Err(Denied::ResourceNotFound {
            uri: unlisted.into()
        })
    );
    // Unpinned, the only upstream offering resources takes it, unnamed.
    assert_eq!(
        owned(resource(&fed, false, unlisted, offering(false))),
        Ok(("a".to_owned(), None))
    );
    // Two offer resources: nobody guesses.
    assert!(resource(&fed, false, unlisted, offering(true)).is_err());
}

#[test]
fn only_absolute_uris_pass() {
    assert!(check_uri("file:///a").is_ok());
    for bad in ["", "relative/path", "no scheme"] {
        assert_eq!(
            check_uri(bad),
            Err(Denied::invalid_params(
                "params.uri is not an absolute URI (RFC 3986)"
            )),
            "{bad:?}"
        );
    }
}

#[test]
fn a_completion_goes_to_the_prompt_or_template_owner() {
    let fed = federation();
    let (route, name) = completion(
        &fed,
        &naming(),
        true,
        &json!({"type": "ref/prompt", "name": "a__p"}),
        offering(false),
    )
    .expect("routed");
    assert_eq!((route.upstream, name), ("a", Some("p")));
    let (route, name) = completion(
        &fed,
        &naming(),
        true,
        &json!({"type": "ref/resource", "uri": "mem://{key}"}),
        offering(false),
    )
    .expect("routed");
    assert_eq!((route.upstream, name), ("a", None));
    // A prompt of an upstream still reading is unknown to completions.
    assert!(matches!(
        completion(
            &fed,
            &naming(),
            true,
            &json!({"type": "ref/prompt", "name": "b__p"}),
            offering(false)
        ),
        Err(Denied::UnknownEntry { .. })
    ));
    assert_eq!(
        completion(
            &fed,
            &naming(),
            true,
            &json!({"type": "ref/other"}),
            offering(false)
        ),
        Err(Denied::invalid_params(
            "params.ref must be a ref/prompt or ref/resource"
        ))
    );
}

#[test]
fn a_progressive_tool_call_is_a_meta_tool_a_direct_call_or_a_tool() {
    use crate::config::CatalogMode;
    let plain = json!({"name": "a__t", "arguments": {"x": 1}});
    assert_eq!(
        tool_call(CatalogMode::Progressive, &plain),
        Ok(ToolCall::Tool)
    );
    let listing = json!({"name": "sluice_list_tools"});
    assert_eq!(
        tool_call(CatalogMode::Progressive, &listing),
        Ok(ToolCall::Meta {
            name: "sluice_list_tools".into(),
            arguments: json!({})
        })
    );
    // Outside progressive mode the name is an upstream's like any other.
    assert_eq!(tool_call(CatalogMode::Full, &listing), Ok(ToolCall::Tool));
    let direct = json!({"name": "sluice_call_tool", "arguments": {"name": "a__t", "arguments": {"x": 1}}, "_meta": {"progressToken": 7}});
    assert_eq!(
        tool_call(CatalogMode::Progressive, &direct),
        Ok(ToolCall::Direct(
            json!({"name": "a__t", "arguments": {"x": 1}, "_meta": {"progressToken": 7}})
        ))
    );
    let nameless = json!({"name": "sluice_call_tool", "arguments": {}});
    assert_eq!(
        tool_call(CatalogMode::Progressive, &nameless),
        Err(Denied::invalid_params(
            "arguments.name must be a tool's name"
        ))
    );
}

#[test]
fn subscriptions_need_a_session() {
    assert_eq!(subscription_session(Method::Subscribe, Some(1)), Ok(1));
    assert_eq!(
        subscription_session::<u8>(Method::Unsubscribe, None),
        Err(Denied::MethodNotFound("resources/unsubscribe".into()))
    );
}

#[test]
fn arguments_are_an_object_and_a_prompts_are_strings() {
    let call = |arguments: Value| json!({"name": "a__t", "arguments": arguments});
    for ok in [json!({}), json!({"k": [1]}), Value::Null] {
        assert_eq!(
            check_arguments(ListKind::Tools, &call(ok.clone())),
            Ok(()),
            "{ok}"
        );
    }
    assert_eq!(
        check_arguments(ListKind::Tools, &json!({"name": "a__t"})),
        Ok(())
    );
    for bad in [json!("x"), json!([1]), json!(1), json!(true)] {
        let refused = check_arguments(ListKind::Tools, &call(bad.clone())).expect_err("refused");
        assert_eq!(
            refused.to_rpc().code,
            crate::jsonrpc::INVALID_PARAMS,
            "{bad}"
        );
        assert_eq!(refused.to_string(), "params.arguments must be an object");
        // Whatever the mode, before any routing.
        assert_eq!(
            tool_call(CatalogMode::Progressive, &call(bad)),
            Err(refused)
        );
    }
    assert_eq!(
        check_arguments(ListKind::Prompts, &call(json!({"n": "Ada"}))),
        Ok(())
    );
    let refused = check_arguments(ListKind::Prompts, &call(json!({"n": 1}))).expect_err("refused");
    assert_eq!(
        refused.to_string(),
        "params.arguments must be an object of strings"
    );
    // `sluice_call_tool`'s inner arguments too.
    let inner =
        json!({"name": "sluice_call_tool", "arguments": {"name": "a__t", "arguments": "x"}});
    assert_eq!(
        tool_call(CatalogMode::Progressive, &inner),
        Err(Denied::invalid_params("params.arguments must be an object"))
    );
}
