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
//! page, which is the safe way to collect it; its URL is judged instead
//! ([`refused_url`], by [`crate::outbound::browser`]).
//!
//! Which modes a client takes ([`mode_declared`]) follows its
//! `elicitation` capability (MCP 2025-11-25, Client Features, Elicitation
//! § Capabilities): `form` and `url` name each; an empty object, as a
//! 2025-06-18 client declares, means form only.

use serde_json::Value;

use crate::boundary::redact::names_secret;
use crate::outbound::browser::{self, BrowserUrlError};

/// How an `elicitation/create` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A form the client shows (`mode` absent or `"form"`).
    Form,
    /// A URL the user opens (`mode: "url"`, 2025-11-25 on).
    Url,
}

impl Mode {
    /// The mode of a request's params; `None` for a mode this sluice does
    /// not know, which no client can have declared.
    pub fn of(params: &Value) -> Option<Mode> {
        match params.get("mode") {
            None => Some(Mode::Form),
            Some(mode) => match mode.as_str() {
                Some("form") => Some(Mode::Form),
                Some("url") => Some(Mode::Url),
                _ => None,
            },
        }
    }

    /// Its key in the `elicitation` capability.
    pub fn key(self) -> &'static str {
        match self {
            Mode::Form => "form",
            Mode::Url => "url",
        }
    }
}

/// Whether a client's `elicitation` capability takes the mode of a
/// request's params.
pub fn mode_declared(capability: &Value, params: &Value) -> bool {
    let Some(mode) = Mode::of(params) else {
        return false;
    };
    let Some(declared) = capability.as_object() else {
        return false;
    };
    let names_modes = [Mode::Form, Mode::Url]
        .iter()
        .any(|m| declared.get(m.key()).is_some_and(|c| !c.is_null()));
    match declared.get(mode.key()) {
        Some(c) => !c.is_null(),
        // `{}`: form only.
        None => mode == Mode::Form && !names_modes,
    }
}

/// Why the URL of a URL-mode elicitation may not be put to a user; `None`
/// for a form, or a URL that passes.
pub fn refused_url(params: &Value) -> Option<BrowserUrlError> {
    if Mode::of(params) != Some(Mode::Url) {
        return None;
    }
    let url = params
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or_default();
    browser::check(url).err()
}

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

/// Fragments that mark a text as asking for a secret wherever they appear
/// in it, case and separators ignored (`newPassword`, `password1`,
/// `api-token`, `AUTHTOKEN`): long and specific enough not to occur in
/// ordinary words.
const SENSITIVE_FRAGMENTS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "pwd",
    "apikey",
    "apitoken",
    "authtoken",
    "accesstoken",
    "refreshtoken",
    "bearertoken",
    "secretkey",
    "privatekey",
    "clientsecret",
    "cardnumber",
    "creditcard",
    "cvv",
    "cvc",
];

/// Whether a name, title, description or message asks for a secret.
pub fn looks_sensitive(text: &str) -> bool {
    if names_secret(text, SENSITIVE_WORDS) {
        return true;
    }
    let squashed: String = text
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    SENSITIVE_FRAGMENTS.iter().any(|f| squashed.contains(f))
}

/// The names of the form fields of an `elicitation/create` request's params
/// that look sensitive (empty: nothing sensitive, or no form). A field is
/// judged by its name, title, description, format and the titles of its
/// choices; when the request's `message` itself asks for a secret, every
/// free-text field of the form is taken to be the answer it wants.
pub fn sensitive_fields(params: &Value) -> Vec<String> {
    let properties = params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object);
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let message_asks = looks_sensitive(message);
    let mut out = Vec::new();
    for (name, schema) in properties.into_iter().flatten() {
        let text = |key: &str| schema.get(key).and_then(Value::as_str).unwrap_or_default();
        let choice_titles = ["oneOf", "anyOf", "enumNames"]
            .iter()
            .filter_map(|k| schema.get(*k).and_then(Value::as_array))
            .flatten()
            .filter_map(|c| {
                c.get("title")
                    .and_then(Value::as_str)
                    .or_else(|| c.as_str())
            });
        let free_text = schema.get("type").and_then(Value::as_str) == Some("string")
            && schema.get("enum").is_none()
            && schema.get("oneOf").is_none();
        let sensitive = [name.as_str(), text("title"), text("description")]
            .into_iter()
            .chain(choice_titles)
            .any(looks_sensitive)
            || text("format") == "password"
            || (message_asks && free_text);
        if sensitive {
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
    fn compounds_and_the_message_count_too() {
        let p = form(json!({
            "newpassword": {"type": "string"},
            "password1": {"type": "string"},
            "apitoken": {"type": "string"},
            "x-auth-token": {"type": "string"},
            "pwd": {"type": "string"},
            "kind": {"type": "string", "oneOf": [{"const": "a", "title": "Use my passcode"}]},
            "spinner": {"type": "string"},
            "shipping": {"type": "string"}
        }));
        let mut got = sensitive_fields(&p);
        got.sort();
        assert_eq!(
            got,
            [
                "apitoken",
                "kind",
                "newpassword",
                "password1",
                "pwd",
                "x-auth-token"
            ]
        );
        // The message asks; the form has one neutral field: it is the answer.
        let asked = json!({"message": "Enter your GitHub password",
            "requestedSchema": {"type": "object", "properties": {
                "answer": {"type": "string"}, "remember": {"type": "boolean"}}}});
        assert_eq!(sensitive_fields(&asked), ["answer"]);
        let plain = json!({"message": "Which colour?",
            "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}});
        assert!(sensitive_fields(&plain).is_empty());
    }

    #[test]
    fn modes_follow_the_capability() {
        let form = json!({"message": "m", "requestedSchema": {"type": "object"}});
        let url = json!({"mode": "url", "message": "m", "url": "https://x.example/", "elicitationId": "e"});
        let cases = [
            (json!({}), true, false),
            (json!({"form": {}}), true, false),
            (json!({"url": {}}), false, true),
            (json!({"form": {}, "url": {}}), true, true),
            (json!({"form": null, "url": {}}), false, true),
            (json!(null), false, false),
            (json!(true), false, false),
        ];
        for (capability, takes_form, takes_url) in cases {
            assert_eq!(
                mode_declared(&capability, &form),
                takes_form,
                "{capability}"
            );
            assert_eq!(mode_declared(&capability, &url), takes_url, "{capability}");
        }
        let explicit = json!({"mode": "form", "message": "m", "requestedSchema": {}});
        assert!(mode_declared(&json!({}), &explicit));
        let unknown = json!({"mode": "carrier-pigeon"});
        assert!(!mode_declared(&json!({"form": {}, "url": {}}), &unknown));
    }

    #[test]
    fn a_url_elicitation_is_judged_by_its_url() {
        let ask = |url: &str| json!({"mode": "url", "message": "Sign in", "url": url, "elicitationId": "e1"});
        assert_eq!(refused_url(&ask("https://github.com/login/device")), None);
        assert!(matches!(
            refused_url(&ask("http://example.com/pay")),
            Some(BrowserUrlError::NotHttps { .. })
        ));
        assert!(refused_url(&json!({"mode": "url", "message": "no url"})).is_some());
        // A form has no URL to judge, whatever it says.
        assert_eq!(
            refused_url(&json!({"message": "http://x", "url": "http://x"})),
            None
        );
    }

    #[test]
    fn no_form_is_nothing_sensitive() {
        assert!(sensitive_fields(&json!({"mode": "url", "url": "https://x/login"})).is_empty());
        assert!(sensitive_fields(&json!({"message": "ok?"})).is_empty());
        assert!(sensitive_fields(&form(json!({"confirm": {"type": "boolean"}}))).is_empty());
    }
}
