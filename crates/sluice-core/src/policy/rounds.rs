//! The questions an upstream asks during a call (sampling, elicitation,
//! roots), and the multi-round-trip (MRTR) logic of 2026-07-28: which
//! question may reach the client, who may be asked, and what to do with
//! an `input_required` result.
//!
//! An elicitation form that asks for a credential, payment or identity
//! datum never reaches a client (S-27, `[policy] sensitive_elicitation`):
//! in a modern upstream's round it is answered `decline` by sluice; asked
//! in flight by a legacy upstream it gets an error.

use serde_json::{Map, Value, json};

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
    /// Some questions are sensitive and the client would have to answer
    /// the rest itself: the call ends with a refusal.
    Refuse,
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

/// Whether a client declared the capability a question needs.
pub fn declared(client_capabilities: &Value, method: &str) -> bool {
    ServerRequest::parse(method).is_some_and(|q| {
        client_capabilities
            .get(q.capability())
            .is_some_and(|c| !c.is_null())
    })
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
) -> bool {
    era == Era::Legacy && takes_requests && declared(client_capabilities, method)
}

/// Whether an upstream's question during a call of `call` is parked for
/// the client as an MRTR round: a 2026-07-28 client, a method whose result
/// may be `input_required`, and a capability the client declared.
pub fn may_park(era: Era, call: Method, client_capabilities: &Value, question: &str) -> bool {
    era == Era::Modern && call.is_bridgeable() && declared(client_capabilities, question)
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
    let declined: Map<String, Value> = requests
        .into_iter()
        .flatten()
        .filter(|(_, request)| {
            let method = request.get("method").and_then(Value::as_str);
            let params = request.get("params").unwrap_or(&Value::Null);
            method.is_some_and(|m| !sensitive_fields(policy, m, params).is_empty())
        })
        .map(|(key, _)| (key.clone(), json!({"action": "decline"})))
        .collect();
    let asked = requests.map_or(0, Map::len);
    match era {
        _ if !declined.is_empty() && declined.len() == asked => Round::Retry(declined),
        Era::Modern if !declined.is_empty() => Round::Refuse,
        Era::Modern => Round::Answer,
        Era::Legacy => Round::AskClient(declined),
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
            Round::Refuse
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
        assert!(declared(&caps, "sampling/createMessage"));
        assert!(!declared(&caps, "roots/list"));
        assert!(!declared(&caps, "tools/call"));
        assert!(client_may_be_asked(
            Era::Legacy,
            &caps,
            true,
            "sampling/createMessage"
        ));
        assert!(!client_may_be_asked(
            Era::Legacy,
            &caps,
            false,
            "sampling/createMessage"
        ));
        assert!(!client_may_be_asked(
            Era::Modern,
            &caps,
            true,
            "sampling/createMessage"
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
