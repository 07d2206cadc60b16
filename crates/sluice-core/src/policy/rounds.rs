//! The questions an upstream asks during a call (sampling, elicitation,
//! roots), and the multi-round-trip (MRTR) logic of 2026-07-28: which
//! question may reach the client, who may be asked, and what to do with
//! an `input_required` result.
//!
//! An elicitation form that asks for a credential, payment or identity
//! datum never reaches a client (S-27, `[policy] sensitive_elicitation`),
//! nor does a URL-mode elicitation whose URL the browser guard refuses
//! (`outbound::browser`, whatever the policy): in a modern upstream's
//! round such a question is answered `decline` by sluice; asked in flight
//! by a legacy upstream it gets an error ([`refusal`]).

use serde_json::{Map, Value, json};

use super::Denied;
use crate::config::SensitiveElicitation;
use crate::elicitation;
use crate::method::{Method, ServerRequest};
use crate::protocol::Era;

/// The most MRTR rounds one request may take.
pub const MAX_INPUT_ROUNDS: usize = 10;

/// What to do with an upstream's answer in the round loop.
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a round verdict says whether the call goes on"]
pub enum Round {
    /// The answer goes to the client as it is.
    Answer,
    /// Every question was declined by sluice: retry with these answers.
    Retry(Map<String, Value>),
    /// Some questions are refused and the client would have to answer
    /// the rest itself: the call ends with the first refusal.
    Refuse(Denied),
    /// A legacy client answers the questions sluice did not; `declined`
    /// holds those sluice answered.
    AskClient(Map<String, Value>),
}

/// The fields of an elicitation that ask for sensitive data (empty when
/// the policy allows them or the question is no elicitation).
pub fn sensitive_fields(policy: SensitiveElicitation, method: &str, params: &Value) -> Vec<String> {
    if policy == SensitiveElicitation::Allow
        || ServerRequest::parse(method) != Some(ServerRequest::Elicit)
    {
        return Vec::new();
    }
    elicitation::sensitive_fields(params)
}

/// Why sluice answers an upstream's question itself instead of putting it
/// to the client: a form that asks for a secret, or an elicitation URL the
/// browser guard refuses. `None`: the question may be asked.
pub fn refusal(policy: SensitiveElicitation, method: &str, params: &Value) -> Option<Denied> {
    if ServerRequest::parse(method) != Some(ServerRequest::Elicit) {
        return None;
    }
    if let Some(refused) = elicitation::refused_url(params) {
        return Some(Denied::UnsafeElicitationUrl(refused));
    }
    (!sensitive_fields(policy, method, params).is_empty()).then_some(Denied::SensitiveElicitation)
}

/// Whether a client declared the capability a question needs (for an
/// elicitation, its mode: a URL-mode one needs `elicitation.url`).
pub fn declared(client_capabilities: &Value, method: &str, params: &Value) -> bool {
    let Some(question) = ServerRequest::parse(method) else {
        return false;
    };
    let Some(capability) = client_capabilities
        .get(question.capability())
        .filter(|c| !c.is_null())
    else {
        return false;
    };
    match question {
        ServerRequest::Elicit => elicitation::mode_declared(capability, params),
        _ => true,
    }
}

/// Whether a question an upstream asks in flight may be put to the client
/// directly: only a legacy client that declared its capability, over a
/// link that carries server-to-client requests. (A modern client is asked
/// only through MRTR rounds.)
pub fn client_may_be_asked(
    era: Era,
    client_capabilities: &Value,
    takes_requests: bool,
    method: &str,
    params: &Value,
) -> bool {
    era == Era::Legacy && takes_requests && declared(client_capabilities, method, params)
}

/// Whether an upstream's question during a call of `call` is parked for
/// the client as an MRTR round: a 2026-07-28 client, a method whose result
/// may be `input_required`, and a capability the client declared.
pub fn may_park(
    era: Era,
    call: Method,
    client_capabilities: &Value,
    question: &str,
    params: &Value,
) -> bool {
    era == Era::Modern && call.is_bridgeable() && declared(client_capabilities, question, params)
}

/// Whether a result asks for input (an MRTR round).
pub fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// The verdict on an upstream's answer: `from_upstream` is false when the
/// round came from a call sluice parked for the client (its questions were
/// already screened).
pub fn next_round(
    policy: SensitiveElicitation,
    era: Era,
    from_upstream: bool,
    result: &Value,
) -> Round {
    if !(from_upstream && is_input_required(result)) {
        return Round::Answer;
    }
    let requests = result.get("inputRequests").and_then(Value::as_object);
    let refusals: Vec<(&String, Denied)> = requests
        .into_iter()
        .flatten()
        .filter_map(|(key, request)| {
            let method = request.get("method").and_then(Value::as_str)?;
            let params = request.get("params").unwrap_or(&Value::Null);
            refusal(policy, method, params).map(|denied| (key, denied))
        })
        .collect();
    let asked = requests.map_or(0, Map::len);
    let declined: Map<String, Value> = refusals
        .iter()
        .map(|(key, _)| ((*key).clone(), json!({"action": "decline"})))
        .collect();
    match (era, refusals.into_iter().next()) {
        (_, Some(_)) if declined.len() == asked => Round::Retry(declined),
        (Era::Modern, Some((_, denied))) => Round::Refuse(denied),
        (Era::Modern, None) => Round::Answer,
        (Era::Legacy, _) => Round::AskClient(declined),
    }
}

/// Puts one round's `answers` and the upstream's `requestState` into the
/// retry's params.
pub fn answer_round(params: &mut Value, result: &Value, answers: Map<String, Value>) {
    if let Some(obj) = params.as_object_mut() {
        obj.insert("inputResponses".into(), Value::Object(answers));
        match result.get("requestState") {
            Some(state) => obj.insert("requestState".into(), state.clone()),
            None => obj.remove("requestState"),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn password_form() -> Value {
        json!({"method": "elicitation/create", "params": {"message": "Your password?", "requestedSchema": {"type": "object", "properties": {"password": {"type": "string"}}}}})
    }

    fn color_form() -> Value {
        json!({"method": "elicitation/create", "params": {"message": "A color?", "requestedSchema": {"type": "object", "properties": {"color": {"type": "string"}}}}})
    }

    fn round(requests: Value) -> Value {
        json!({"resultType": "input_required", "inputRequests": requests, "requestState": "s1"})
    }

    #[test]
    fn a_round_of_sensitive_questions_only_is_declined_by_sluice() {
        let result = round(json!({"a": password_form()}));
        for era in [Era::Modern, Era::Legacy] {
            let Round::Retry(answers) =
                next_round(SensitiveElicitation::Refuse, era, true, &result)
            else {
                panic!("expected a retry");
            };
            assert_eq!(
                answers,
                json!({"a": {"action": "decline"}})
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
            );
        }
        // Allowed by the operator: the client is asked.
        assert_eq!(
            next_round(SensitiveElicitation::Allow, Era::Modern, true, &result),
            Round::Answer
        );
    }

    #[test]
    fn a_mixed_round_ends_a_modern_call_and_a_legacy_client_answers_the_rest() {
        let result = round(json!({"a": password_form(), "b": color_form()}));
        assert_eq!(
            next_round(SensitiveElicitation::Refuse, Era::Modern, true, &result),
            Round::Refuse(Denied::SensitiveElicitation)
        );
        let Round::AskClient(declined) =
            next_round(SensitiveElicitation::Refuse, Era::Legacy, true, &result)
        else {
            panic!("expected the legacy client to be asked");
        };
        assert_eq!(declined.keys().collect::<Vec<_>>(), ["a"]);
        let harmless = round(json!({"b": color_form()}));
        assert_eq!(
            next_round(SensitiveElicitation::Refuse, Era::Modern, true, &harmless),
            Round::Answer
        );
        // A parked call's round was screened when it was asked.
        assert_eq!(
            next_round(SensitiveElicitation::Refuse, Era::Legacy, false, &result),
            Round::Answer
        );
        assert_eq!(
            next_round(
                SensitiveElicitation::Refuse,
                Era::Legacy,
                true,
                &json!({"content": []})
            ),
            Round::Answer
        );
    }

    #[test]
    fn who_may_be_asked() {
        let caps = json!({"sampling": {}, "roots": null});
        let none = Value::Null;
        assert!(declared(&caps, "sampling/createMessage", &none));
        assert!(!declared(&caps, "roots/list", &none));
        assert!(!declared(&caps, "tools/call", &none));
        assert!(client_may_be_asked(
            Era::Legacy,
            &caps,
            true,
            "sampling/createMessage",
            &none
        ));
        assert!(!client_may_be_asked(
            Era::Legacy,
            &caps,
            false,
            "sampling/createMessage",
            &none
        ));
        assert!(!client_may_be_asked(
            Era::Modern,
            &caps,
            true,
            "sampling/createMessage",
            &none
        ));
        let params = password_form()["params"].clone();
        assert_eq!(
            sensitive_fields(SensitiveElicitation::Refuse, "elicitation/create", &params),
            ["password"]
        );
        assert!(
            sensitive_fields(
                SensitiveElicitation::Refuse,
                "sampling/createMessage",
                &params
            )
            .is_empty()
        );
    }

    fn url_elicitation(url: &str) -> Value {
        json!({"method": "elicitation/create", "params": {"mode": "url", "message": "Sign in to continue", "url": url, "elicitationId": "e-1"}})
    }

    #[test]
    fn a_url_elicitation_needs_the_url_mode_and_a_url_the_guard_passes() {
        let ok = url_elicitation("https://auth.example.com/authorize?state=abc");
        let (method, params) = ("elicitation/create", &ok["params"]);
        let form_only = json!({"elicitation": {}});
        let both = json!({"elicitation": {"form": {}, "url": {}}});
        assert!(!declared(&form_only, method, params));
        assert!(declared(&both, method, params));
        assert!(declared(&form_only, method, &color_form()["params"]));
        assert!(!client_may_be_asked(
            Era::Legacy,
            &form_only,
            true,
            method,
            params
        ));
        assert!(client_may_be_asked(
            Era::Legacy,
            &both,
            true,
            method,
            params
        ));
        assert!(may_park(
            Era::Modern,
            Method::CallTool,
            &both,
            method,
            params
        ));
        assert!(!may_park(
            Era::Modern,
            Method::CallTool,
            &form_only,
            method,
            params
        ));
        assert_eq!(refusal(SensitiveElicitation::Refuse, method, params), None);
        // The guard holds whatever the sensitive-elicitation policy.
        for policy in [SensitiveElicitation::Refuse, SensitiveElicitation::Allow] {
            let bad = url_elicitation("http://203.0.113.9/pay");
            assert!(matches!(
                refusal(policy, method, &bad["params"]),
                Some(Denied::UnsafeElicitationUrl(_))
            ));
        }
        // In a modern upstream's round: declined alone, refused mixed.
        let bad = url_elicitation("https://10.1.2.3/");
        let alone = round(json!({"u": bad}));
        let Round::Retry(answers) =
            next_round(SensitiveElicitation::Allow, Era::Modern, true, &alone)
        else {
            panic!("expected a retry");
        };
        assert_eq!(answers["u"], json!({"action": "decline"}));
        let mixed = round(json!({"u": bad, "c": color_form()}));
        assert!(matches!(
            next_round(SensitiveElicitation::Allow, Era::Modern, true, &mixed),
            Round::Refuse(Denied::UnsafeElicitationUrl(_))
        ));
        let fine = round(json!({"u": ok}));
        assert_eq!(
            next_round(SensitiveElicitation::Refuse, Era::Modern, true, &fine),
            Round::Answer
        );
    }

    #[test]
    fn a_retry_carries_the_answers_and_the_upstreams_state() {
        let mut params = json!({"name": "t", "requestState": "old"});
        let answers = json!({"a": {"action": "decline"}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        answer_round(&mut params, &round(json!({})), answers.clone());
        assert_eq!(params["inputResponses"], Value::Object(answers.clone()));
        assert_eq!(params["requestState"], "s1");
        answer_round(
            &mut params,
            &json!({"resultType": "input_required"}),
            answers,
        );
        assert!(params.get("requestState").is_none());
    }
}
