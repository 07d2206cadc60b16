//! `sluice import`: a `server.json` of the official MCP registry, turned
//! into one `[[upstream]]` of `sluice.toml` (as text, to be appended).
//!
//! A `server.json` names how to run a server (`packages`: npm, PyPI, OCI,
//! each with its runtime, arguments and environment variables) or where it
//! runs (`remotes`, each with a transport and headers). sluice starts a
//! package over stdio with its usual runtime (`npx`, `uvx`, `docker`), or
//! reaches a `streamable-http` remote; the variables and headers the server
//! declares become `${NAME}` references to sluice's environment, which
//! sluice refuses to start without, so none is forgotten.

use serde_json::Value;

use super::diagnostics::{Diagnostic, Diagnostics, Source};
use crate::naming;

/// One `[[upstream]]` made from a `server.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedUpstream {
    /// The upstream's name.
    pub name: String,
    /// The `[[upstream]]` block, with a comment saying where it came from.
    pub toml: String,
    /// The environment variables it refers to, which sluice needs set.
    pub variables: Vec<String>,
}

/// Which of the server's ways to run it is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefer {
    /// A package sluice starts, else a remote.
    Package,
    /// A remote, else a package.
    Remote,
}

/// The `[[upstream]]` for the `server.json` text, named `name` (else after
/// the last part of the server's own name), or every problem.
pub fn import_server_json(
    source: Source<'_>,
    name: Option<&str>,
    prefer: Prefer,
) -> Result<ImportedUpstream, Vec<Diagnostic>> {
    let mut diags = Diagnostics::new(source);
    let Some(doc) = diags.json() else {
        return Err(diags.list);
    };
    let Some(server_name) = doc.get("name").and_then(Value::as_str) else {
        diags.push(
            None,
            "name",
            "a server.json names its server: expected a string like \"io.github.owner/server\""
                .into(),
        );
        return Err(diags.list);
    };
    let wanted = name.unwrap_or_else(|| server_name.rsplit('/').next().unwrap_or(server_name));
    let Some(upstream_name) = naming::normalize_upstream_name(wanted) else {
        diags.push(
            None,
            "name",
            format!("{wanted:?} has no character usable in an upstream name: pass --name"),
        );
        return Err(diags.list);
    };
    let package = (0..)
        .map_while(|i| doc.get("packages")?.get(i).map(|p| (i, p)))
        .find(|(_, p)| runnable(p));
    let remote = (0..)
        .map_while(|i| doc.get("remotes")?.get(i).map(|r| (i, r)))
        .find(|(_, r)| r.get("type").and_then(Value::as_str) == Some("streamable-http"));
    let mut block = Block::default();
    match (prefer, package, remote) {
        (Prefer::Package, Some((i, p)), _) | (Prefer::Remote, Some((i, p)), None) => {
            block.package(&format!("packages[{i}]"), p, &mut diags);
        }
        (_, _, Some((i, r))) => block.remote(&format!("remotes[{i}]"), r, &mut diags),
        (_, None, None) => {
            diags.push(
                None,
                "packages",
                "no npm, pypi or oci package over stdio, and no streamable-http remote: sluice can run neither (an sse remote speaks the HTTP+SSE transport of 2024-11-05, which sluice does not); write the [[upstream]] by hand".into(),
            );
        }
    }
    if !diags.list.is_empty() {
        return Err(diags.list);
    }
    let mut toml = String::new();
    let version = doc.get("version").and_then(Value::as_str);
    let description = doc.get("description").and_then(Value::as_str);
    toml.push_str(&comment(&format!(
        "{server_name}{}{}",
        version.map(|v| format!(" {v}")).unwrap_or_default(),
        description.map(|d| format!(": {d}")).unwrap_or_default()
    )));
    toml.push_str(&comment(&format!(
        "Imported from {} by `sluice import`.",
        source.name
    )));
    toml.push_str(&block.notes);
    toml.push_str("[[upstream]]\n");
    toml.push_str(&format!("name = {}\n", quoted(&upstream_name)));
    for (key, value) in &block.lines {
        toml.push_str(&format!("{key} = {value}\n"));
    }
    Ok(ImportedUpstream {
        name: upstream_name,
        toml,
        variables: block.variables,
    })
}

/// A package sluice can start: npm, pypi or oci, over stdio (the default
/// transport of a package).
fn runnable(package: &Value) -> bool {
    let kind = package.get("registryType").and_then(Value::as_str);
    let transport = package
        .get("transport")
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("stdio");
    matches!(kind, Some("npm" | "pypi" | "oci")) && transport == "stdio"
}

/// The keys of the `[[upstream]]` being made, the comments above it, and
/// the variables it refers to.
#[derive(Default)]
struct Block {
    lines: Vec<(&'static str, String)>,
    notes: String,
    variables: Vec<String>,
}

impl Block {
    /// `command`, `args` and `env` for a package.
    fn package(&mut self, key: &str, package: &Value, diags: &mut Diagnostics<'_>) {
        let Some(identifier) = package.get("identifier").and_then(Value::as_str) else {
            diags.push(
                None,
                &format!("{key}.identifier"),
                "expected a string".into(),
            );
            return;
        };
        let kind = package
            .get("registryType")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let version = package.get("version").and_then(Value::as_str);
        let default_runtime = match kind {
            "npm" => "npx",
            "pypi" => "uvx",
            _ => "docker",
        };
        let runtime = package
            .get("runtimeHint")
            .and_then(Value::as_str)
            .unwrap_or(default_runtime);
        let env = self.declared(package.get("environmentVariables"), |name| name.to_owned());
        let mut args: Vec<String> = match runtime {
            "npx" => vec!["-y".into()],
            // A container sees only the variables passed in by name.
            "docker" | "podman" => ["run", "-i", "--rm"]
                .into_iter()
                .map(String::from)
                .chain(
                    env.iter()
                        .flat_map(|(name, _)| ["-e".to_owned(), name.clone()]),
                )
                .collect(),
            _ => Vec::new(),
        };
        args.extend(arguments(package.get("runtimeArguments")));
        args.push(match (kind, version) {
            ("oci", Some(v)) if !identifier.rsplit('/').next().unwrap_or("").contains(':') => {
                format!("{identifier}:{v}")
            }
            ("oci", _) | (_, None) => identifier.to_owned(),
            (_, Some(v)) => format!("{identifier}@{v}"),
        });
        args.extend(arguments(package.get("packageArguments")));
        self.lines.push(("command", quoted(runtime)));
        let args: Vec<String> = args.iter().map(|a| quoted(a)).collect();
        self.lines.push(("args", format!("[{}]", args.join(", "))));
        if !env.is_empty() {
            self.lines.push(("env", inline_table(&env)));
        }
    }

    /// `url` and `headers` for a remote.
    fn remote(&mut self, key: &str, remote: &Value, diags: &mut Diagnostics<'_>) {
        let Some(url) = remote.get("url").and_then(Value::as_str) else {
            diags.push(None, &format!("{key}.url"), "expected a string".into());
            return;
        };
        let headers = self.declared(remote.get("headers"), env_name);
        self.lines.push(("url", quoted(url)));
        if !headers.is_empty() {
            self.lines.push(("headers", inline_table(&headers)));
        }
    }

    /// The variables or headers a package or remote declares: each as
    /// `${VAR}` (`VAR` from `variable_of` its name), or its default when it
    /// has one and is no secret; each described in a comment.
    fn declared(
        &mut self,
        list: Option<&Value>,
        variable_of: impl Fn(&str) -> String,
    ) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for item in list.and_then(Value::as_array).into_iter().flatten() {
            let Some(name) = item.get("name").and_then(Value::as_str) else {
                continue;
            };
            let secret = item.get("isSecret").and_then(Value::as_bool) == Some(true);
            let required = item.get("isRequired").and_then(Value::as_bool) == Some(true);
            let default = item.get("default").and_then(Value::as_str);
            let value = match default {
                Some(d) if !secret => d.to_owned(),
                _ => {
                    let var = variable_of(name);
                    let reference = format!("${{{var}}}");
                    self.variables.push(var);
                    reference
                }
            };
            let traits: Vec<&str> = [(required, "required"), (secret, "secret")]
                .into_iter()
                .filter_map(|(on, word)| on.then_some(word))
                .collect();
            let description = item
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            self.notes.push_str(&comment(&format!(
                "{name}{}{}",
                if traits.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", traits.join(", "))
                },
                if description.is_empty() {
                    String::new()
                } else {
                    format!(": {description}")
                }
            )));
            out.push((name.to_owned(), value));
        }
        out
    }
}

/// The command-line arguments a package declares, in order: a positional
/// one's value (or default, or `<hint>`), a named one's name and value.
fn arguments(list: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    for arg in list.and_then(Value::as_array).into_iter().flatten() {
        let text = |key: &str| arg.get(key).and_then(Value::as_str);
        let value = text("value").or_else(|| text("default")).map(str::to_owned);
        match text("type") {
            Some("named") => {
                if let Some(name) = text("name") {
                    out.push(name.to_owned());
                }
                out.extend(value);
            }
            _ => out.push(value.unwrap_or_else(|| {
                format!(
                    "<{}>",
                    text("valueHint")
                        .or_else(|| text("name"))
                        .unwrap_or("value")
                )
            })),
        }
    }
    out
}

/// The environment variable a header's value is read from: `X-API-Key` is
/// `X_API_KEY`.
fn env_name(header: &str) -> String {
    header
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// A TOML string.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// A TOML inline table of strings, keys quoted when they are not bare.
fn inline_table(entries: &[(String, String)]) -> String {
    let bare = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    let items: Vec<String> = entries
        .iter()
        .map(|(k, v)| {
            let key = if bare(k) { k.clone() } else { quoted(k) };
            format!("{key} = {}", quoted(v))
        })
        .collect();
    format!("{{ {} }}", items.join(", "))
}

/// One `# ...` line (line breaks in `text` become spaces).
fn comment(text: &str) -> String {
    format!("# {}\n", text.replace(['\r', '\n'], " "))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::{Config, UpstreamTransport};

    fn import(text: &str, prefer: Prefer) -> Result<ImportedUpstream, Vec<String>> {
        import_server_json(
            Source {
                name: "server.json",
                text,
            },
            None,
            prefer,
        )
        .map_err(|ds| ds.iter().map(ToString::to_string).collect())
    }

    /// The block loads as sluice.toml, every variable it names set.
    fn load(imported: &ImportedUpstream) -> Config {
        let env = |k: &str| {
            imported
                .variables
                .iter()
                .any(|v| v == k)
                .then(|| format!("<{k}>"))
        };
        Config::from_toml(
            Source {
                name: "sluice.toml",
                text: &imported.toml,
            },
            &env,
        )
        .expect("the imported block loads")
    }

    const WEATHER: &str = r#"{
      "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
      "name": "io.github.example/weather",
      "description": "Forecasts\nby city",
      "version": "1.0.2",
      "packages": [
        {"registryType": "nuget", "identifier": "Weather", "version": "1.0.2", "transport": {"type": "stdio"}},
        {"registryType": "npm", "identifier": "@example/weather-mcp", "version": "1.0.2",
         "transport": {"type": "stdio"},
         "packageArguments": [{"type": "named", "name": "--units", "default": "metric"},
                              {"type": "positional", "valueHint": "city"}],
         "environmentVariables": [
           {"name": "WEATHER_API_KEY", "description": "Your API key", "isRequired": true, "isSecret": true},
           {"name": "WEATHER_REGION", "default": "eu"}
         ]}
      ],
      "remotes": [
        {"type": "sse", "url": "https://weather.example.com/sse"},
        {"type": "streamable-http", "url": "https://weather.example.com/mcp",
         "headers": [{"name": "X-API-Key", "description": "Your API key", "isRequired": true, "isSecret": true}]}
      ]
    }"#;

    #[test]
    fn an_npm_package_becomes_an_npx_child_with_its_variables_as_references() {
        let imported = import(WEATHER, Prefer::Package).unwrap();
        assert_eq!(
            imported.toml,
            "\
# io.github.example/weather 1.0.2: Forecasts by city
# Imported from server.json by `sluice import`.
# WEATHER_API_KEY (required, secret): Your API key
# WEATHER_REGION
[[upstream]]
name = \"weather\"
command = \"npx\"
args = [\"-y\", \"@example/weather-mcp@1.0.2\", \"--units\", \"metric\", \"<city>\"]
env = { WEATHER_API_KEY = \"${WEATHER_API_KEY}\", WEATHER_REGION = \"eu\" }
"
        );
        assert_eq!(imported.variables, ["WEATHER_API_KEY"]);
        let config = load(&imported);
        let UpstreamTransport::Stdio { env, .. } = &config.upstreams[0].transport else {
            panic!("stdio");
        };
        assert_eq!(env["WEATHER_API_KEY"], "<WEATHER_API_KEY>");
    }

    #[test]
    fn a_streamable_http_remote_becomes_a_url_with_its_headers_as_references() {
        let imported = import(WEATHER, Prefer::Remote).unwrap();
        assert_eq!(
            imported.toml,
            "\
# io.github.example/weather 1.0.2: Forecasts by city
# Imported from server.json by `sluice import`.
# X-API-Key (required, secret): Your API key
[[upstream]]
name = \"weather\"
url = \"https://weather.example.com/mcp\"
headers = { X-API-Key = \"${X_API_KEY}\" }
"
        );
        assert_eq!(imported.variables, ["X_API_KEY"]);
        load(&imported);
    }

    #[test]
    fn pypi_and_oci_packages_run_under_uvx_and_docker() {
        let pypi = r#"{"name": "io.github.example/Time Server", "packages": [
            {"registryType": "pypi", "identifier": "mcp-server-time", "version": "0.6.2",
             "packageArguments": [{"type": "named", "name": "--local-timezone", "value": "UTC"}]}]}"#;
        let imported = import(pypi, Prefer::Package).unwrap();
        assert!(imported.toml.ends_with(
            "name = \"time-server\"\ncommand = \"uvx\"\nargs = [\"mcp-server-time@0.6.2\", \"--local-timezone\", \"UTC\"]\n"
        ), "{}", imported.toml);
        load(&imported);
        let oci = r#"{"name": "io.github.example/db", "version": "2.1.0", "packages": [
            {"registryType": "oci", "identifier": "docker.io/example/db-mcp", "version": "2.1.0",
             "environmentVariables": [{"name": "DB_URL", "isRequired": true, "isSecret": true}]}]}"#;
        let imported = import(oci, Prefer::Package).unwrap();
        assert!(imported.toml.ends_with(
            "command = \"docker\"\nargs = [\"run\", \"-i\", \"--rm\", \"-e\", \"DB_URL\", \"docker.io/example/db-mcp:2.1.0\"]\nenv = { DB_URL = \"${DB_URL}\" }\n"
        ), "{}", imported.toml);
        load(&imported);
    }

    #[test]
    fn a_server_sluice_cannot_run_is_refused_with_the_reason() {
        let sse_only =
            r#"{"name": "x/legacy", "remotes": [{"type": "sse", "url": "https://e.com/sse"}]}"#;
        assert_eq!(
            import(sse_only, Prefer::Package).unwrap_err(),
            [
                "server.json: packages: no npm, pypi or oci package over stdio, and no streamable-http remote: sluice can run neither (an sse remote speaks the HTTP+SSE transport of 2024-11-05, which sluice does not); write the [[upstream]] by hand"
            ]
        );
        assert_eq!(
            import("{}", Prefer::Package).unwrap_err(),
            [
                "server.json: name: a server.json names its server: expected a string like \"io.github.owner/server\""
            ]
        );
    }
}
