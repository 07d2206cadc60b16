//! The `mcp.json` import: the upstreams of a Claude Desktop, Cursor or
//! VS Code MCP client file (`{"mcpServers": {...}}` or `{"servers": {...}}`).
//!
//! The file is shared with those tools, so keys sluice has no use for are
//! ignored rather than refused, and `"disabled": true` entries are skipped.
//! The keys sluice reads are checked as strictly as `sluice.toml`'s: a value
//! of the wrong type is an error naming the server and the key, never
//! dropped; a transport sluice does not speak (`"sse"`) is an error saying
//! what to write instead.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

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
    let Some(doc) = diags.json() else {
        return Err(diags.list);
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
    let Some(entry) = entry.as_object() else {
        diags.push(None, &key, wrong_type("an object", entry));
        return None;
    };
    let fields = Fields { key: &key, entry };
    if fields.boolean("disabled", diags)? == Some(true) {
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
    let transport = transport(&fields, env, diags)?;
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

/// The `"type"` values of the clients' files: stdio, and the names they
/// give Streamable HTTP.
const STDIO_TYPES: &[&str] = &["stdio"];
const HTTP_TYPES: &[&str] = &["http", "streamable-http", "streamableHttp"];

/// `command` (a stdio server) or `url` (a Streamable HTTP server), as
/// `"type"` says when it is given.
fn transport(
    fields: &Fields<'_>,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<UpstreamTransport> {
    let key = fields.key;
    let kind = fields.string("type", diags)?;
    if let Some(kind) = kind
        && !STDIO_TYPES.contains(&kind)
        && !HTTP_TYPES.contains(&kind)
    {
        let message = if kind == "sse" {
            "\"sse\" (the HTTP+SSE transport of MCP 2024-11-05) is not supported: sluice reaches HTTP servers over Streamable HTTP. Point \"url\" at the server's Streamable HTTP endpoint (often /mcp) with \"type\": \"http\", or run the server over stdio with \"command\"".to_owned()
        } else {
            let allowed: Vec<String> = STDIO_TYPES
                .iter()
                .chain(HTTP_TYPES)
                .map(|t| format!("{t:?}"))
                .collect();
            format!(
                "{kind:?} is not a transport sluice speaks (allowed: {})",
                allowed.join(", ")
            )
        };
        diags.push(None, &format!("{key}.type"), message);
        return None;
    }
    let command = fields.string("command", diags)?;
    let url = fields.string("url", diags)?;
    let stdio = kind.is_none_or(|k| STDIO_TYPES.contains(&k));
    let http = kind.is_none_or(|k| HTTP_TYPES.contains(&k));
    match (command, url) {
        (Some(command), None) if stdio => {
            let args = fields.strings("args", diags);
            let env_map = fields.expanded("env", env, diags);
            let cwd = fields.string("cwd", diags);
            fields.only_for("stdio", &["headers", "allowPrivate"], diags)?;
            let args = args?;
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
                command: command.to_owned(),
                args,
                env: env_map?,
                cwd: cwd?.map(PathBuf::from),
                rlimit: Rlimits::default(),
                sandbox: Sandboxing::None,
            })
        }
        (None, Some(url)) if http => {
            if let Err(msg) = check_url(url) {
                diags.push(None, &format!("{key}.url"), format!("{url:?}: {msg}"));
                return None;
            }
            let headers = fields.expanded("headers", env, diags);
            // sluice's own key, which the other tools ignore.
            let allow_private = fields.boolean("allowPrivate", diags);
            fields.only_for("http", &["args", "env", "cwd"], diags)?;
            Some(UpstreamTransport::Http {
                url: url.to_owned(),
                headers: headers?,
                allow_private: allow_private?.unwrap_or(false),
                oauth: None,
            })
        }
        (Some(_), Some(_)) => {
            diags.push(
                None,
                key,
                "has both \"command\" and \"url\": choose one (a stdio server or a Streamable HTTP server)".into(),
            );
            None
        }
        _ => {
            let message = match kind {
                Some(kind) if stdio => format!("\"type\": {kind:?} needs \"command\""),
                Some(kind) => format!("\"type\": {kind:?} needs \"url\""),
                None => "needs either \"command\" (a stdio server) or \"url\" (a Streamable HTTP server)".to_owned(),
            };
            diags.push(None, key, message);
            None
        }
    }
}

/// The keys of one server entry, each read with its type checked: a value
/// of the wrong type is reported under `<key>.<field>` (the outer `None`),
/// an absent key is `Some(None)`.
struct Fields<'a> {
    key: &'a str,
    entry: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    fn string(&self, field: &str, diags: &mut Diagnostics<'_>) -> Option<Option<&'a str>> {
        self.typed(field, "a string", Value::as_str, diags)
    }

    fn boolean(&self, field: &str, diags: &mut Diagnostics<'_>) -> Option<Option<bool>> {
        self.typed(field, "a boolean (true or false)", Value::as_bool, diags)
    }

    fn typed<T>(
        &self,
        field: &str,
        expected: &str,
        read: impl Fn(&'a Value) -> Option<T>,
        diags: &mut Diagnostics<'_>,
    ) -> Option<Option<T>> {
        let Some(value) = self.entry.get(field) else {
            return Some(None);
        };
        match read(value) {
            Some(v) => Some(Some(v)),
            None => {
                diags.push(
                    None,
                    &format!("{}.{field}", self.key),
                    wrong_type(expected, value),
                );
                None
            }
        }
    }

    /// `args`: an array of strings, each element checked.
    fn strings(&self, field: &str, diags: &mut Diagnostics<'_>) -> Option<Vec<String>> {
        let items = self
            .typed(field, "an array of strings", Value::as_array, diags)?
            .map_or(&[][..], Vec::as_slice);
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) => out.push(s.to_owned()),
                None => {
                    diags.push(
                        None,
                        &format!("{}.{field}[{i}]", self.key),
                        wrong_type("a string", item),
                    );
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }

    /// `env` or `headers`: an object of strings, with `${VAR}` expanded;
    /// every value of the wrong type and every variable not set is
    /// reported.
    fn expanded(
        &self,
        field: &str,
        env: &dyn Fn(&str) -> Option<String>,
        diags: &mut Diagnostics<'_>,
    ) -> Option<BTreeMap<String, String>> {
        let table = self.typed(field, "an object of strings", Value::as_object, diags)?;
        let mut out = BTreeMap::new();
        let mut ok = true;
        for (name, value) in table.into_iter().flatten() {
            let key = format!("{}.{field}.{name}", self.key);
            let expanded = match value.as_str() {
                Some(template) => diags.expand(None, &key, template, env),
                None => {
                    diags.push(None, &key, wrong_type("a string", value));
                    None
                }
            };
            match expanded {
                Some(v) => {
                    out.insert(name.clone(), v);
                }
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// `None` (each reported) when the entry has one of `fields`, which
    /// the other transport takes.
    fn only_for(
        &self,
        transport: &str,
        fields: &[&str],
        diags: &mut Diagnostics<'_>,
    ) -> Option<()> {
        let mut ok = true;
        for field in fields.iter().filter(|f| self.entry.contains_key(**f)) {
            diags.push(
                None,
                &format!("{}.{field}", self.key),
                format!("a {transport} server does not take {field:?}"),
            );
            ok = false;
        }
        ok.then_some(())
    }
}

/// "expected X, found Y", Y being what the file holds.
fn wrong_type(expected: &str, found: &Value) -> String {
    let found = match found {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    };
    format!("expected {expected}, found {found}")
}

#[cfg(test)]
mod tests {
    use crate::config::testing::no_env;
    use crate::config::{Config, Source, UpstreamTransport};

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

    fn problems(text: &str) -> Vec<String> {
        Config::from_mcp_json(
            Source {
                name: "mcp.json",
                text,
            },
            &no_env,
        )
        .expect_err("invalid")
        .iter()
        .map(ToString::to_string)
        .collect()
    }

    #[test]
    fn a_value_of_the_wrong_type_is_an_error_naming_the_server_and_the_key() {
        let text = r#"{"mcpServers": {
            "time": {"command": "mcp-server-time", "args": "--local-timezone"},
            "git": {"command": "mcp-server-git", "args": ["--repository", 7], "env": {"PORT": 8080, "HOME": "/h"}},
            "remote": {"url": "https://example.com/mcp", "headers": ["A"], "allowPrivate": "yes"},
            "off": {"command": "x", "disabled": "no"},
            "odd": "npx"
        }}"#;
        assert_eq!(
            problems(text),
            [
                "mcp.json: mcpServers.time.args: expected an array of strings, found string \"--local-timezone\"",
                "mcp.json: mcpServers.git.args[1]: expected a string, found number 7",
                "mcp.json: mcpServers.git.env.PORT: expected a string, found number 8080",
                "mcp.json: mcpServers.remote.headers: expected an object of strings, found an array",
                "mcp.json: mcpServers.remote.allowPrivate: expected a boolean (true or false), found string \"yes\"",
                "mcp.json: mcpServers.off.disabled: expected a boolean (true or false), found string \"no\"",
                "mcp.json: mcpServers.odd: expected an object, found string \"npx\"",
            ]
        );
    }

    #[test]
    fn an_unsupported_transport_says_what_to_write_instead() {
        let text = r#"{"mcpServers": {
            "legacy": {"type": "sse", "url": "https://example.com/sse"},
            "ws": {"type": "websocket", "url": "wss://example.com"},
            "mixed": {"type": "http", "command": "x"},
            "both": {"command": "x", "url": "https://example.com/mcp"},
            "child": {"command": "x", "headers": {"A": "b"}}
        }}"#;
        assert_eq!(
            problems(text),
            [
                "mcp.json: mcpServers.legacy.type: \"sse\" (the HTTP+SSE transport of MCP 2024-11-05) is not supported: sluice reaches HTTP servers over Streamable HTTP. Point \"url\" at the server's Streamable HTTP endpoint (often /mcp) with \"type\": \"http\", or run the server over stdio with \"command\"",
                "mcp.json: mcpServers.ws.type: \"websocket\" is not a transport sluice speaks (allowed: \"stdio\", \"http\", \"streamable-http\", \"streamableHttp\")",
                "mcp.json: mcpServers.mixed: \"type\": \"http\" needs \"url\"",
                "mcp.json: mcpServers.both: has both \"command\" and \"url\": choose one (a stdio server or a Streamable HTTP server)",
                "mcp.json: mcpServers.child.headers: a stdio server does not take \"headers\"",
            ]
        );
    }

    #[test]
    fn allow_private_and_types_are_read() {
        let text = r#"{"servers": {
            "local": {"type": "streamable-http", "url": "http://127.0.0.1:3000/mcp", "allowPrivate": true},
            "time": {"type": "stdio", "command": "t", "args": ["--local-timezone", "UTC"], "env": {}}
        }}"#;
        let c = Config::from_mcp_json(
            Source {
                name: "mcp.json",
                text,
            },
            &no_env,
        )
        .expect("valid");
        assert!(matches!(
            &c.upstreams[0].transport,
            UpstreamTransport::Http {
                allow_private: true,
                ..
            }
        ));
        let UpstreamTransport::Stdio { args, .. } = &c.upstreams[1].transport else {
            panic!("stdio");
        };
        assert_eq!(args, &["--local-timezone", "UTC"]);
    }
}
