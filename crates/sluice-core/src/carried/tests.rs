use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::method::ListKind;
use crate::policy::route;

/// `n` tiny objects: what makes a tree cost a hundred times its text.
fn tiny_objects(n: usize) -> String {
    let mut out = String::from("[");
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        out.push_str(r#"{"k":1}"#);
    }
    out.push(']');
    out
}

/// A request of about 300 KiB whose bulk is in `params.bulk`, `arguments.x`
/// and `_meta.big`.
fn large_call(name: &str) -> String {
    let bulk = tiny_objects(15_000);
    format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{name}","bulk":{bulk},"arguments":{{"x":{bulk},"y":"v","n":{{"id":42}}}},"_meta":{{"progressToken":"p","big":{bulk},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},"z":1}}}}"#
    )
}

fn read_request(text: &str) -> (Value, Value, Arc<Carried>) {
    let read = read(text.as_bytes()).expect("json").expect("json-rpc");
    let Message::Request { id, params, .. } = read.message else {
        panic!("not a request: {:?}", read.message);
    };
    (id, params, read.carried.expect("carried"))
}

fn params_of(text: &str) -> Value {
    let message: Value = serde_json::from_str(text).expect("json");
    message["params"].clone()
}

fn written(carried: &Carried, tree: &Value) -> String {
    let mut out = Vec::new();
    carried.write_params(tree, &mut out);
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn a_small_message_is_read_whole() {
    let text = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","a":[1]}}"#;
    let read = read(text.as_bytes()).expect("json").expect("json-rpc");
    assert!(read.carried.is_none());
    assert_eq!(
        read.message,
        Message::parse(text.as_bytes())
            .expect("json")
            .expect("json-rpc")
    );
}

#[test]
fn a_large_call_keeps_what_sluice_reads_and_carries_the_rest() {
    let text = large_call("t");
    assert!(text.len() >= CARRIED_AS_TEXT_FROM);
    let (id, tree, carried) = read_request(&text);
    assert_eq!(id, json!(7));
    assert_eq!(
        tree,
        json!({
            "name": "t",
            "arguments": {},
            "_meta": {
                "progressToken": "p",
                "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
            }
        })
    );
    // Untouched, the params go out byte for byte as they came.
    let original = params_of(&text);
    assert_eq!(written(&carried, &tree), original.to_string());
    assert_eq!(carried.whole(&tree), original);
}

#[test]
fn what_sluice_changes_goes_out_with_every_carried_member_in_place() {
    let text = large_call("fx__t");
    let (_, mut tree, carried) = read_request(&text);
    tree["name"] = json!("t");
    tree["_meta"]["progressToken"] = json!("sluice-1");
    tree["inputResponses"] = json!({"q": {"action": "accept"}});
    let out: Value = serde_json::from_str(&written(&carried, &tree)).expect("json");
    let mut expected = params_of(&text);
    expected["name"] = json!("t");
    expected["_meta"]["progressToken"] = json!("sluice-1");
    expected["inputResponses"] = json!({"q": {"action": "accept"}});
    assert_eq!(out, expected);
    let keys: Vec<&String> = out.as_object().expect("object").keys().collect();
    assert_eq!(
        keys,
        ["name", "bulk", "arguments", "_meta", "z", "inputResponses"]
    );
    let meta: Vec<&String> = out["_meta"].as_object().expect("object").keys().collect();
    assert_eq!(meta, ["progressToken", "big", "traceparent"]);
}

#[test]
fn a_removed_meta_keeps_what_sluice_did_not_read_of_it() {
    let text = large_call("t");
    let (_, mut tree, carried) = read_request(&text);
    tree.as_object_mut().expect("object").remove("_meta");
    let out: Value = serde_json::from_str(&written(&carried, &tree)).expect("json");
    let mut expected = params_of(&text);
    expected["_meta"] = json!({"big": expected["_meta"]["big"].clone()});
    assert_eq!(out, expected);
}

#[test]
fn whitespace_and_repeated_members_read_as_a_tree_reads_them() {
    let pad = tiny_objects(40_000);
    let text = format!(
        "{{ \"jsonrpc\" : \"2.0\" , \"id\" : \"a\" , \"method\" : \"tools/call\" , \"params\" : {{ \"name\" : \"first\" ,\n \"x\" : {pad} , \"name\" : \"last\" , \"x\" : 2 ,\t\"arguments\" : {{ \"a\" : 1 , \"a\" : 2 }} }} }}"
    );
    let (_, tree, carried) = read_request(&text);
    assert_eq!(tree["name"], json!("last"));
    let out = written(&carried, &tree);
    // The repeated carried members go on as they came; a tree of the
    // output is a tree of the input.
    assert_eq!(
        serde_json::from_str::<Value>(&out).expect("json"),
        params_of(&text)
    );
    assert_eq!(
        out,
        format!(r#"{{"name":"last","x" : {pad},"x" : 2,"arguments":{{"a" : 1 , "a" : 2}}}}"#)
    );
    assert_eq!(
        argument(&tree, Some(&carried), &["a".into()]),
        Some(json!(2))
    );
}

#[test]
fn arguments_are_read_from_their_text_by_path() {
    let (_, tree, carried) = read_request(&large_call("t"));
    let whole = carried.whole(&tree);
    for (path, expected) in [
        (vec!["y"], Some(json!("v"))),
        (vec!["n", "id"], Some(json!(42))),
        (vec!["n"], None),
        (vec!["missing"], None),
        (vec!["y", "deeper"], None),
    ] {
        let path: Vec<String> = path.into_iter().map(String::from).collect();
        assert_eq!(argument(&tree, Some(&carried), &path), expected);
        // The same as read from the tree of the whole request.
        assert_eq!(argument(&whole, None, &path), expected);
    }
}

#[test]
fn a_prompt_argument_that_is_not_a_string_is_refused_as_in_a_tree() {
    let pad = "p".repeat(CARRIED_AS_TEXT_FROM);
    let strings = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{{"name":"p","arguments":{{"a":"{pad}"}}}}}}"#
    );
    let (_, tree, _) = read_request(&strings);
    assert_eq!(tree["arguments"], json!({}));
    assert_eq!(route::check_arguments(ListKind::Prompts, &tree), Ok(()));
    let objects = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{{"name":"p","arguments":{{"a":"x","b":{}}}}}}}"#,
        tiny_objects(40_000)
    );
    let read = read(objects.as_bytes()).expect("json").expect("json-rpc");
    let Message::Request { params, .. } = read.message else {
        panic!("not a request");
    };
    assert_eq!(params["arguments"], json!({"b": null}));
    assert!(route::check_arguments(ListKind::Prompts, &params).is_err());
}

#[test]
fn a_meta_tool_reads_its_arguments() {
    let text = large_call(progressive::CALL_TOOL);
    let (_, tree, carried) = read_request(&text);
    assert_eq!(tree["arguments"], params_of(&text)["arguments"]);
    assert_eq!(written(&carried, &tree), params_of(&text).to_string());
}

#[test]
fn large_messages_that_are_not_requests_keep_their_errors() {
    let bulk = tiny_objects(40_000);
    let cases = [
        (format!("[{bulk}]"), Some(EnvelopeError::Batch)),
        (
            format!(r#"{{"id":1,"method":"ping","params":{{"a":{bulk}}}}}"#),
            Some(EnvelopeError::NotJsonRpc),
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":{{}},"method":"ping","params":{{"a":{bulk}}}}}"#),
            Some(EnvelopeError::BadId),
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{bulk}}}"#),
            Some(EnvelopeError::BadParams),
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":7,"params":{{"a":{bulk}}}}}"#),
            Some(EnvelopeError::NotJsonRpc),
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":1,"id":2,"method":"ping","params":{{"a":{bulk}}}}}"#),
            Some(EnvelopeError::NotJsonRpc),
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":{bulk}"#),
            None,
        ),
    ];
    for (text, expected) in cases {
        let got = read(text.as_bytes()).map(|r| r.err());
        assert_eq!(got, expected.map(Some), "{}", &text[..60]);
    }
}

#[test]
fn a_large_notification_and_a_large_answer() {
    let bulk = tiny_objects(40_000);
    let cancel = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":3,"junk":{bulk}}}}}"#
    );
    let read_cancel = read(cancel.as_bytes()).expect("json").expect("json-rpc");
    assert_eq!(
        read_cancel.message,
        Message::Notification {
            method: "notifications/cancelled".into(),
            params: json!({"requestId": 3})
        }
    );
    assert!(read_cancel.carried.is_some());
    let answer = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{{"a":{bulk}}}}}"#);
    let read_answer = read(answer.as_bytes()).expect("json").expect("json-rpc");
    assert!(read_answer.carried.is_none());
    assert_eq!(
        read_answer.message,
        Message::parse(answer.as_bytes())
            .expect("json")
            .expect("json-rpc")
    );
}

#[test]
fn the_request_text_is_the_request() {
    let (id, tree, carried) = read_request(&large_call("t"));
    let text = request_text(&id, "tools/call", &tree, Some(&carried));
    let value: Value = serde_json::from_slice(&text).expect("json");
    assert_eq!(
        value,
        jsonrpc::request(id.clone(), "tools/call", carried.whole(&tree))
    );
    let plain = request_text(&json!(1), "ping", &Value::Null, None);
    assert_eq!(plain, br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
}

fn member() -> impl Strategy<Value = (String, Value)> {
    let key = prop::sample::select(vec![
        "name",
        "_meta",
        "arguments",
        "cursor",
        "x",
        "y",
        "bulk",
        "uri",
    ]);
    let leaf = prop_oneof![
        Just(json!(1)),
        Just(json!("s")),
        Just(json!(null)),
        Just(json!([{"k": 1}])),
    ];
    let value = leaf.prop_recursive(3, 16, 4, |inner| {
        prop::collection::vec(
            (
                prop::sample::select(vec!["progressToken", "a", "b", "traceparent"]),
                inner,
            ),
            0..4,
        )
        .prop_map(|members| {
            let mut map = Map::new();
            for (k, v) in members {
                map.insert(k.to_owned(), v);
            }
            Value::Object(map)
        })
    });
    (key.prop_map(str::to_owned), value)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Read and written back untouched, any params are the client's, in
    /// the client's order.
    #[test]
    fn params_written_back_are_the_params_read(
        members in prop::collection::vec(member(), 0..8),
        method in prop::sample::select(vec!["tools/call", "prompts/get", "ping"]),
    ) {
        let mut text = String::from("{");
        for (key, value) in &members {
            text.push_str(&format!("{}:{value},", Value::from(key.as_str())));
        }
        let pad = "p".repeat(CARRIED_AS_TEXT_FROM);
        text.push_str(&format!(r#""pad":"{pad}"}}"#));
        let message = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{text}}}"#);
        let read = read(message.as_bytes()).expect("json").expect("json-rpc");
        let Message::Request { params, .. } = read.message else { panic!("not a request") };
        let carried = read.carried.expect("the pad is carried");
        let expected: Value = serde_json::from_str(&text).expect("json");
        // A prompt's arguments are refused as they would be read whole, and
        // a refused request is never written.
        let check = route::check_arguments(ListKind::Prompts, &params);
        if method == "prompts/get" {
            prop_assert_eq!(check.is_ok(), route::check_arguments(ListKind::Prompts, &expected).is_ok());
            if check.is_err() {
                return Ok(());
            }
        }
        let out: Value = serde_json::from_str(&written(&carried, &params)).expect("json");
        prop_assert!(out == expected, "{}", &text[..text.len().min(300)]);
        let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
        prop_assert_eq!(keys(&out), keys(&expected));
    }
}
