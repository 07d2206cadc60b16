//! Secrets out of catalog entries, before they are served, pinned or
//! written to `sluice.lock`: a definition (a description, a title, an
//! input schema's `default`, `examples` and `enum`, a prompt's arguments)
//! is upstream text like any result.
//!
//! An entry's identifiers (`name`, `uri`, `uriTemplate`) are kept: a client
//! calls the entry by them, and the route back to the upstream needs them
//! as the upstream sent them. A schema property that names a secret
//! (`password`, `api_key`) has the values of its `default`, `examples`,
//! `enum` and `const` replaced whatever they look like: a sample value of a
//! secret field is the secret.

use serde_json::Value;

use crate::boundary::redact::{self, Redactor};
use crate::discovery::UpstreamCatalog;
use crate::method::ListKind;

/// The fields by which an entry is called, kept as the upstream sent them.
const IDENTIFIERS: &[&str] = &["uri", "uriTemplate", "name"];

/// The schema keywords whose values are sample values of the property.
const SAMPLE_KEYWORDS: &[&str] = &["default", "examples", "enum", "const"];

/// One entry whose definition held a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactedEntry {
    /// Its list.
    pub list: ListKind,
    /// Its URI (a resource, a template) or name.
    pub name: String,
    /// How many secrets were replaced.
    pub secrets: usize,
}

/// Redacts every entry of `catalog` in place; the entries that held a
/// secret, in list order.
pub fn redact(catalog: &mut UpstreamCatalog, redactor: &Redactor) -> Vec<RedactedEntry> {
    let mut out = Vec::new();
    for (list, entries) in [
        (ListKind::Tools, &mut catalog.tools),
        (ListKind::Resources, &mut catalog.resources),
        (ListKind::ResourceTemplates, &mut catalog.resource_templates),
        (ListKind::Prompts, &mut catalog.prompts),
    ] {
        for entry in entries.iter_mut() {
            let secrets = redact_entry(entry, redactor);
            if secrets > 0 {
                out.push(RedactedEntry {
                    list,
                    name: identifier(entry),
                    secrets,
                });
            }
        }
    }
    out
}

fn identifier(entry: &Value) -> String {
    IDENTIFIERS
        .iter()
        .find_map(|k| entry.get(*k).and_then(Value::as_str))
        .unwrap_or("(unnamed)")
        .to_owned()
}

fn redact_entry(entry: &mut Value, redactor: &Redactor) -> usize {
    let Value::Object(fields) = entry else {
        return 0;
    };
    let mut secrets = 0;
    for (key, value) in fields.iter_mut() {
        if IDENTIFIERS.contains(&key.as_str()) {
            continue;
        }
        secrets += secret_samples(value, redactor);
        secrets += redactor.redact(value).total();
    }
    secrets
}

/// Blanks the sample values of every schema property that names a secret,
/// at any depth.
fn secret_samples(value: &mut Value, redactor: &Redactor) -> usize {
    match value {
        Value::Object(obj) => {
            let mut n = 0;
            if let Some(Value::Object(properties)) = obj.get_mut("properties") {
                for (name, schema) in properties.iter_mut() {
                    if !redactor.is_secret_key(name) {
                        continue;
                    }
                    if let Value::Object(schema) = schema {
                        for keyword in SAMPLE_KEYWORDS {
                            if let Some(sample) = schema.get_mut(*keyword) {
                                n += redact::blank_strings(sample);
                            }
                        }
                    }
                }
            }
            n + obj
                .values_mut()
                .map(|v| secret_samples(v, redactor))
                .sum::<usize>()
        }
        Value::Array(items) => items.iter_mut().map(|v| secret_samples(v, redactor)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn definitions_lose_their_secrets_and_keep_their_names() {
        let r = Redactor::new(Vec::<String>::new(), redact::DEFAULT_SECRET_KEYS);
        let token = "ghp_Q7kN2m4p6r8t0v2x4z6b8d0f2h4j6l8n0p2r";
        let mut catalog = UpstreamCatalog {
            tools: vec![
                json!({"name": "search", "description": format!("Searches. Uses {token} by default."),
                       "inputSchema": {"type": "object", "properties": {
                           "q": {"type": "string", "default": "rust", "examples": ["mcp"]},
                           "api_key": {"type": "string", "default": "plainvalue", "examples": ["other"]},
                           "repo_token": {"type": "string", "enum": [token]}}}}),
                json!({"name": "plain", "description": "Nothing here.", "inputSchema": {"type": "object"}}),
            ],
            resources: vec![
                json!({"uri": "file:///etc/app.env", "name": "env", "description": "SECRET_KEY=Q7kx9Lm2Np4Rt6Vw8Yz0"}),
            ],
            resource_templates: vec![],
            prompts: vec![
                json!({"name": "deploy", "arguments": [{"name": "target", "description": "password: Hunter22!x"}]}),
            ],
        };
        let plain = catalog.tools[1].clone();
        let redacted = redact(&mut catalog, &r);
        assert_eq!(
            redacted,
            vec![
                RedactedEntry {
                    list: ListKind::Tools,
                    name: "search".into(),
                    secrets: 4
                },
                RedactedEntry {
                    list: ListKind::Resources,
                    name: "file:///etc/app.env".into(),
                    secrets: 1
                },
                RedactedEntry {
                    list: ListKind::Prompts,
                    name: "deploy".into(),
                    secrets: 1
                },
            ]
        );
        let all =
            serde_json::to_string(&json!([catalog.tools, catalog.resources, catalog.prompts]))
                .unwrap_or_default();
        for secret in [
            token,
            "plainvalue",
            "other",
            "Q7kx9Lm2Np4Rt6Vw8Yz0",
            "Hunter22!x",
        ] {
            assert!(!all.contains(secret), "{secret} in {all}");
        }
        assert_eq!(
            catalog.tools[0]["inputSchema"]["properties"]["q"]["default"],
            "rust"
        );
        assert_eq!(catalog.tools[1], plain);
        assert_eq!(catalog.resources[0]["uri"], "file:///etc/app.env");
    }
}
