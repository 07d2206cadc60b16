//! The `mcp.json` import: the upstreams of a Claude Desktop, Cursor or
//! VS Code MCP client file (`{"mcpServers": {...}}` or `{"servers": {...}}`).
//!
//! The file is shared with those tools, so keys sluice has no use for are
//! ignored rather than refused, and `"disabled": true` entries are skipped.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::diagnostics::{Diagnostic, Diagnostics, Source};
use super::security::Rlimits;
use super::upstream::{UpstreamConfig, UpstreamTransport, check_url};
use crate::naming;
use crate::sandbox::{Sandboxing, dangerous};

/// The upstreams of an `mcp.json` text, in file order, or every problem.
pub(super) fn upstreams(
    source: Source<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<UpstreamConfig>, Vec<Diagnostic>> {
    let mut diags = Diagnostics::new(source);
    let doc: Value = match serde_json::from_str(source.text) {
        Ok(doc) => doc,
        Err(e) => {
            diags.list.push(Diagnostic {
                location: format!("{}:{}:{}", source.name, e.line(), e.column()),
                key: String::new(),
                message: format!("not valid JSON: {e}"),
            });
            return Err(diags.list);
        }
    };
    let servers = doc
        .get("mcpServers")
        .or_else(|| doc.get("servers"))
        .and_then(Value::as_object);
    let Some(servers) = servers else {
        diags.push(
            None,
            "mcpServers",
            "expected an object {\"mcpServers\": {\"name\": {...}}}".into(),
        );
        return Err(diags.list);
    };
    let mut upstreams: Vec<UpstreamConfig> = Vec::new();
    for (raw_name, entry) in servers {
        if let Some(up) = server(raw_name, entry, &upstreams, env, &mut diags) {
            upstreams.push(up);
        }
    }
    if !diags.list.is_empty() {
        return Err(diags.list);
    }
    Ok(upstreams)
}

/// One server entry, unless it is disabled or has a problem (reported).
/// Its name is normalized to `[a-z0-9_-]`, and must differ from the names
/// of the servers `before` it.
fn server(
    raw_name: &str,
    entry: &Value,
    before: &[UpstreamConfig],
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<UpstreamConfig> {
    let key = format!("mcpServers.{raw_name}");
    if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let Some(name) = naming::normalize_upstream_name(raw_name) else {
        diags.push(None, &key, "the server name has no usable character".into());
        return None;
    };
    if let Some(other) = before.iter().find(|u| u.name == name) {
        diags.push(
            None,
            &key,
            format!(
                "normalizes to {name:?}, the same as another server ({:?})",
                other.name
            ),
        );
        return None;
    }
    let transport = transport(&key, entry, env, diags)?;
    Some(UpstreamConfig {
        name,
        transport,
        trusted: false,
        read_only_tools: Vec::new(),
        read_budget: None,
        tool_read_budgets: BTreeMap::new(),
        prefixed: true,
        rate_limit: None,
        tool_rate_limits: BTreeMap::new(),
    })
}

/// `command` (a stdio server) or `url` (a Streamable HTTP server).
fn transport(
    key: &str,
    entry: &Value,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<UpstreamTransport> {
    match (entry.get("command"), entry.get("url")) {
        (Some(Value::String(command)), None) => {
            let args: Vec<String> = entry
                .get("args")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            let env_map = expanded(key, "env", entry, env, diags);
            // mcp.json cannot say `allow_dangerous`: such a server needs
            // sluice.toml.
            if let Some(danger) = dangerous::classify(command, &args) {
                diags.push(
                    None,
                    &format!("{key}.command"),
                    format!("{danger}; refused from mcp.json (sluice.toml can allow it with `allow_dangerous = true`)"),
                );
                return None;
            }
            Some(UpstreamTransport::Stdio {
                command: command.clone(),
                args,
                env: env_map,
                cwd: entry.get("cwd").and_then(Value::as_str).map(PathBuf::from),
                rlimit: Rlimits::default(),
                sandbox: Sandboxing::None,
            })
        }
        (None, Some(Value::String(url))) => {
            if let Err(msg) = check_url(url) {
                diags.push(None, &format!("{key}.url"), format!("{url:?}: {msg}"));
                return None;
            }
            let headers = expanded(key, "headers", entry, env, diags);
            Some(UpstreamTransport::Http {
                url: url.clone(),
                headers,
                // sluice's own key, which the other tools ignore.
                allow_private: entry.get("allowPrivate") == Some(&Value::Bool(true)),
            })
        }
        _ => {
            diags.push(
                None,
                key,
                "needs either \"command\" (a stdio server) or \"url\" (a Streamable HTTP server), as a string".into(),
            );
            None
        }
    }
}

/// The string values of the object `entry.field` (`env` or `headers`), with
/// `${VAR}` expanded; one whose variable is not set is reported and left
/// out. Values that are not strings are ignored.
fn expanded(
    key: &str,
    field: &str,
    entry: &Value,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> BTreeMap<String, String> {
    let strings: BTreeMap<&str, &str> = entry
        .get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
        .collect();
    strings
        .into_iter()
        .filter_map(|(k, v)| {
            diags
                .expand(None, &format!("{key}.{field}.{k}"), v, env)
                .map(|v| (k.to_owned(), v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::config::testing::no_env;
    use crate::config::{Config, Source};

    #[test]
    fn mcp_json() {
        let text = r#"{"mcpServers": {
            "Brave Search": {"command": "npx", "args": ["-y", "x"], "env": {"K": "${T}"}, "autoApprove": []},
            "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"A": "b"}},
            "off": {"command": "x", "disabled": true}
        }}"#;
        let env = |k: &str| (k == "T").then(|| "v".to_owned());
        let c = Config::from_mcp_json(
            Source {
                name: "mcp.json",
                text,
            },
            &env,
        )
        .expect("valid");
        let names: Vec<&str> = c.upstreams.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["brave-search", "remote"]);
        let bad = Config::from_mcp_json(
            Source {
                name: "mcp.json",
                text: r#"{"mcpServers": {"x": {"args": []}, "y": {"url": "file:///"}}}"#,
            },
            &no_env,
        )
        .expect_err("invalid");
        assert_eq!(bad.len(), 2);
        assert!(bad[0].to_string().contains("mcpServers.x: needs either"));
        let bad = Config::from_mcp_json(
            Source {
                name: "mcp.json",
                text: "{",
            },
            &no_env,
        )
        .expect_err("invalid");
        assert!(bad[0].to_string().starts_with("mcp.json:1:"));
    }
}
