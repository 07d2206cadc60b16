//! S-27: an upstream must never ask the user for a secret through an
//! elicitation form, where the answer would pass through the client, the
//! gateway and the upstream in the clear. sluice reads the form an
//! `elicitation/create` asks for and names the fields that look sensitive;
//! the gateway refuses such a request unless the operator allows it.
//!
//! A field is sensitive when its name, title or description contains one of
//! [`SENSITIVE_WORDS`], compared word by word as secret keys are
//! (`apiKey`, `api_key` and "API key" all match; `tokenizer` does not). A
//! URL-mode elicitation has no form: the secret goes to the upstream's own
//! page, which is the safe way to collect it.

use serde_json::Value;

use crate::boundary::redact::names_secret;

/// Words that mark a field as asking for a credential, payment or identity
/// data.
pub const SENSITIVE_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "api key",
    "access key",
    "private key",
    "credential",
    "credentials",
    "card number",
    "credit card",
    "debit card",
    "cvv",
    "cvc",
    "ssn",
    "social security",
    "iban",
    "account number",
    "routing number",
    "pin",
    "otp",
    "one time code",
    "security code",
    "mfa code",
    "totp",
];

/// The names of the form fields of an `elicitation/create` request's params
/// that look sensitive (empty: nothing sensitive, or no form).
pub fn sensitive_fields(params: &Value) -> Vec<String> {
    let properties = params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object);
    let mut out = Vec::new();
    for (name, schema) in properties.into_iter().flatten() {
        let text = |key: &str| schema.get(key).and_then(Value::as_str).unwrap_or_default();
        let looks_sensitive = [name.as_str(), text("title"), text("description")]
            .iter()
            .any(|t| names_secret(t, SENSITIVE_WORDS))
            || schema.get("format").and_then(Value::as_str) == Some("password");
        if looks_sensitive {
            out.push(name.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form(properties: Value) -> Value {
        json!({"message": "Please fill in", "requestedSchema": {"type": "object", "properties": properties}})
    }

    #[test]
    fn credentials_payment_and_identity_fields_are_sensitive() {
        let p = form(json!({
            "password": {"type": "string"},
            "apiKey": {"type": "string"},
            "cardNumber": {"type": "string"},
            "x": {"type": "string", "title": "Your GitHub token"},
            "y": {"type": "string", "description": "The CVV on the back of the card"},
            "social_security_number": {"type": "string"},
            "code": {"type": "string", "format": "password"},
            "name": {"type": "string"},
            "email": {"type": "string", "title": "E-mail"},
            "tokenizer": {"type": "string", "description": "Which tokenizer to use"},
            "pinned": {"type": "boolean"}
        }));
        let mut got = sensitive_fields(&p);
        got.sort();
        assert_eq!(
            got,
            [
                "apiKey",
                "cardNumber",
                "code",
                "password",
                "social_security_number",
                "x",
                "y"
            ]
        );
    }

    #[test]
    fn no_form_is_nothing_sensitive() {
        assert!(sensitive_fields(&json!({"mode": "url", "url": "https://x/login"})).is_empty());
        assert!(sensitive_fields(&json!({"message": "ok?"})).is_empty());
        assert!(sensitive_fields(&form(json!({"confirm": {"type": "boolean"}}))).is_empty());
    }
}
