//! What each MCP client's configuration file needs to reach sluice, and how
//! sluice's entry is merged into a file the user already has
//! (`sluice client-config`).
//!
//! Each client names its servers' table and spells a server its own way:
//! Claude Desktop and Cursor under `mcpServers`, VS Code under `servers`,
//! Claude Code (`.mcp.json`) under `mcpServers` with a `type`. Merging
//! replaces only sluice's own entry and keeps every other key as it was.

use serde_json::{Map, Value, json};

/// A client whose configuration file `sluice client-config` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// Claude Desktop's `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Cursor's `mcp.json`.
    Cursor,
    /// VS Code's `.vscode/mcp.json`.
    VsCode,
    /// Claude Code's project `.mcp.json`.
    ClaudeCode,
}

/// How the client reaches sluice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// sluice's Streamable HTTP endpoint.
    Url(String),
    /// The client starts `sluice serve --stdio` itself.
    Stdio {
        /// The sluice binary.
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
}

/// Why no entry can be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientConfigError {
    /// The client's file takes local (stdio) servers only.
    #[error(
        "Claude Desktop's configuration file takes stdio servers only (remote servers are added in its settings, as connectors): use --stdio"
    )]
    StdioOnly,
    /// The existing file is not a JSON object, or its servers' table is not one.
    #[error("{key} is not a JSON object; fix or move the file, and run again")]
    NotAnObject {
        /// The key (or `the file`) that should be an object.
        key: String,
    },
}

impl Client {
    /// The key of the servers' table in this client's file.
    pub fn servers_key(self) -> &'static str {
        match self {
            Client::VsCode => "servers",
            Client::ClaudeDesktop | Client::Cursor | Client::ClaudeCode => "mcpServers",
        }
    }

    /// The default way this client reaches sluice: Claude Desktop starts
    /// it over stdio, the others take the URL.
    pub fn stdio_by_default(self) -> bool {
        self == Client::ClaudeDesktop
    }

    /// sluice's entry in this client's servers' table.
    pub fn entry(self, reach: &Reach) -> Result<Value, ClientConfigError> {
        // VS Code and Claude Code say which transport an entry is; Cursor
        // and Claude Desktop tell by the keys present.
        let typed = matches!(self, Client::VsCode | Client::ClaudeCode);
        match reach {
            Reach::Url(_) if self == Client::ClaudeDesktop => Err(ClientConfigError::StdioOnly),
            Reach::Url(url) if typed => Ok(json!({"type": "http", "url": url})),
            Reach::Url(url) => Ok(json!({"url": url})),
            Reach::Stdio { command, args } if typed => {
                Ok(json!({"type": "stdio", "command": command, "args": args}))
            }
            Reach::Stdio { command, args } => Ok(json!({"command": command, "args": args})),
        }
    }

    /// The whole snippet: `{"<servers key>": {"<name>": <entry>}}`.
    pub fn snippet(self, name: &str, reach: &Reach) -> Result<Value, ClientConfigError> {
        let mut servers = Map::new();
        servers.insert(name.to_owned(), self.entry(reach)?);
        let mut doc = Map::new();
        doc.insert(self.servers_key().to_owned(), Value::Object(servers));
        Ok(Value::Object(doc))
    }

    /// `existing` (the file as it is, `None` when there is none) with
    /// sluice's entry `name` set, and the entry it replaced, if any.
    pub fn merge(
        self,
        existing: Option<Value>,
        name: &str,
        reach: &Reach,
    ) -> Result<(Value, Option<Value>), ClientConfigError> {
        let entry = self.entry(reach)?;
        let mut doc = match existing {
            None => Map::new(),
            Some(Value::Object(doc)) => doc,
            Some(_) => {
                return Err(ClientConfigError::NotAnObject {
                    key: "the file".to_owned(),
                });
            }
        };
        let key = self.servers_key();
        let servers = doc
            .entry(key.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(servers) = servers else {
            return Err(ClientConfigError::NotAnObject {
                key: key.to_owned(),
            });
        };
        let replaced = servers.insert(name.to_owned(), entry);
        Ok((Value::Object(doc), replaced))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn url() -> Reach {
        Reach::Url("http://127.0.0.1:8787/mcp".into())
    }

    fn stdio() -> Reach {
        Reach::Stdio {
            command: "/usr/local/bin/sluice".into(),
            args: vec![
                "serve".into(),
                "--stdio".into(),
                "--config".into(),
                "/home/me/sluice.toml".into(),
            ],
        }
    }

    #[test]
    fn each_client_gets_its_own_spelling() {
        assert_eq!(
            Client::Cursor.snippet("sluice", &url()).unwrap(),
            json!({"mcpServers": {"sluice": {"url": "http://127.0.0.1:8787/mcp"}}})
        );
        assert_eq!(
            Client::VsCode.snippet("sluice", &url()).unwrap(),
            json!({"servers": {"sluice": {"type": "http", "url": "http://127.0.0.1:8787/mcp"}}})
        );
        assert_eq!(
            Client::ClaudeCode.snippet("sluice", &stdio()).unwrap(),
            json!({"mcpServers": {"sluice": {"type": "stdio", "command": "/usr/local/bin/sluice",
                "args": ["serve", "--stdio", "--config", "/home/me/sluice.toml"]}}})
        );
        assert_eq!(
            Client::ClaudeDesktop.snippet("sluice", &stdio()).unwrap(),
            json!({"mcpServers": {"sluice": {"command": "/usr/local/bin/sluice",
                "args": ["serve", "--stdio", "--config", "/home/me/sluice.toml"]}}})
        );
        assert_eq!(
            Client::ClaudeDesktop.snippet("sluice", &url()),
            Err(ClientConfigError::StdioOnly)
        );
    }

    #[test]
    fn merging_replaces_only_sluices_entry() {
        let existing = json!({
            "theme": "dark",
            "mcpServers": {"other": {"command": "x"}, "sluice": {"url": "http://old/mcp"}}
        });
        let (merged, replaced) = Client::Cursor
            .merge(Some(existing), "sluice", &url())
            .unwrap();
        assert_eq!(
            merged,
            json!({
                "theme": "dark",
                "mcpServers": {"other": {"command": "x"}, "sluice": {"url": "http://127.0.0.1:8787/mcp"}}
            })
        );
        assert_eq!(replaced, Some(json!({"url": "http://old/mcp"})));
        let (fresh, replaced) = Client::VsCode.merge(None, "sluice", &url()).unwrap();
        assert_eq!(fresh, Client::VsCode.snippet("sluice", &url()).unwrap());
        assert_eq!(replaced, None);
        assert_eq!(
            Client::Cursor.merge(Some(json!({"mcpServers": []})), "sluice", &url()),
            Err(ClientConfigError::NotAnObject {
                key: "mcpServers".into()
            })
        );
        assert_eq!(
            Client::Cursor.merge(Some(json!([1])), "sluice", &url()),
            Err(ClientConfigError::NotAnObject {
                key: "the file".into()
            })
        );
    }
}
