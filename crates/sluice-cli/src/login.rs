//! `sluice login`, `sluice logout` and `sluice auth status`: sluice's OAuth
//! logins to the upstreams that need one (`auth = "oauth"`), kept in the
//! vault of the state store, where a serving sluice reads them.

use std::process::ExitCode;

use serde_json::json;
use sluice_core::audit::format_time_ms;
use sluice_core::config::{Config, UpstreamTransport};
use sluice_core::upstream_auth::{LoginRecord, Readiness, VaultKey};
use sluice_gateway::login::{self, LoginError};

use crate::{ConfigArgs, EXIT_CONFIG, EXIT_USAGE, load, runtime, state};

/// A login failed (refused, timed out, or the server could not be used).
const EXIT_LOGIN_FAILED: u8 = 1;

/// `sluice login UPSTREAM`.
#[derive(clap::Args)]
pub struct LoginCommand {
    #[command(flatten)]
    source: ConfigArgs,
    /// The upstream to log in to (an `[[upstream]]` with `auth = "oauth"`).
    upstream: String,
    /// Print the URL to open, and do not try to open a browser.
    #[arg(long)]
    no_browser: bool,
    /// Ask for this scope too (repeatable), beside `[upstream.oauth] scopes`.
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
    /// How long to wait for the browser to come back (default 5m).
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    timeout: String,
}

/// `sluice logout UPSTREAM`.
#[derive(clap::Args)]
pub struct LogoutCommand {
    #[command(flatten)]
    source: ConfigArgs,
    /// The upstream whose login is forgotten.
    upstream: String,
    /// Forget this principal's own login (with `[auth]`) instead of sluice's.
    #[arg(long, value_name = "NAME")]
    principal: Option<String>,
}

/// `sluice auth ...`.
#[derive(clap::Subcommand)]
pub enum AuthCommand {
    /// One line per `auth = "oauth"` upstream: logged in (scopes, expiry),
    /// waiting for a login (and for which scopes), or not logged in.
    Status {
        #[command(flatten)]
        source: ConfigArgs,
        /// Print the states as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn login(command: &LoginCommand) -> anyhow::Result<ExitCode> {
    let config = match load(&command.source) {
        Ok(config) => config,
        Err(code) => return Ok(code),
    };
    let Some(upstream) = config.upstreams.iter().find(|u| u.name == command.upstream) else {
        eprintln!("sluice login: no upstream named {:?}", command.upstream);
        return Ok(ExitCode::from(EXIT_USAGE));
    };
    let Some(wait) = sluice_core::config::parse_duration(&command.timeout) else {
        eprintln!(
            "sluice login: --timeout {:?}: a duration such as 90s or 5m",
            command.timeout
        );
        return Ok(ExitCode::from(EXIT_USAGE));
    };
    let open_browser = !command.no_browser;
    runtime()?.block_on(async {
        let vault = match state::open_vault(command.source.path(), &config).await {
            Ok(vault) => vault,
            Err(e) => {
                eprintln!("sluice login: {e}");
                return Ok(ExitCode::from(EXIT_CONFIG));
            }
        };
        let show = |url: &str| {
            println!("Open this URL to log in to {}:\n{url}", upstream.name);
            if open_browser {
                open_in_browser(url);
            }
        };
        match login::login(upstream, &vault, &command.scopes, wait, show).await {
            Ok(done) => {
                let granted = if done.granted.is_empty() {
                    "no scope named".to_owned()
                } else {
                    format!("scope {:?}", done.granted.join(" "))
                };
                let expires = done
                    .expires_at_ms
                    .map(|ms| format!(", token valid until {}", format_time_ms(ms)))
                    .unwrap_or_default();
                println!(
                    "logged in to {} ({granted}, client {}{expires})",
                    upstream.name,
                    done.registration.as_str()
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(e @ LoginError::NotOAuth(_)) => {
                eprintln!("sluice login: {e}");
                Ok(ExitCode::from(EXIT_USAGE))
            }
            Err(e) => {
                eprintln!("sluice login: {}: {e}", upstream.name);
                Ok(ExitCode::from(EXIT_LOGIN_FAILED))
            }
        }
    })
}

/// Opens `url` with `$BROWSER` when set, else the desktop's opener when
/// there is a display; does nothing (the URL is printed) otherwise.
fn open_in_browser(url: &str) {
    let opener = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.is_empty())
        .or_else(|| {
            let desktop = std::env::var_os("DISPLAY").is_some()
                || std::env::var_os("WAYLAND_DISPLAY").is_some()
                || cfg!(target_os = "macos");
            desktop.then(|| {
                if cfg!(target_os = "macos") {
                    "open"
                } else {
                    "xdg-open"
                }
                .to_owned()
            })
        });
    let Some(opener) = opener else {
        return;
    };
    let spawned = std::process::Command::new(&opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = spawned {
        eprintln!("sluice login: could not start {opener:?} ({e}); open the URL above by hand");
    }
}

pub fn logout(command: &LogoutCommand) -> anyhow::Result<ExitCode> {
    let config = match load(&command.source) {
        Ok(config) => config,
        Err(code) => return Ok(code),
    };
    runtime()?.block_on(async {
        let vault = match state::open_vault(command.source.path(), &config).await {
            Ok(vault) => vault,
            Err(e) => {
                eprintln!("sluice logout: {e}");
                return Ok(ExitCode::from(EXIT_CONFIG));
            }
        };
        let key = VaultKey {
            principal: command.principal.clone().unwrap_or_default(),
            upstream: command.upstream.clone(),
        };
        match vault.delete(&key).await {
            Ok(true) => println!(
                "logged out of {}: its tokens are forgotten",
                command.upstream
            ),
            Ok(false) => println!("no login to {} was kept", command.upstream),
            Err(e) => {
                eprintln!("sluice logout: {e}");
                return Ok(ExitCode::from(EXIT_CONFIG));
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

pub fn auth(command: &AuthCommand) -> anyhow::Result<ExitCode> {
    let AuthCommand::Status { source, json } = command;
    let config = match load(source) {
        Ok(config) => config,
        Err(code) => return Ok(code),
    };
    runtime()?.block_on(async {
        let vault = match state::open_vault(source.path(), &config).await {
            Ok(vault) => vault,
            Err(e) => {
                eprintln!("sluice auth status: {e}");
                return Ok(ExitCode::from(EXIT_CONFIG));
            }
        };
        let listed = match vault.list().await {
            Ok(listed) => listed,
            Err(e) => {
                eprintln!("sluice auth status: {e}");
                return Ok(ExitCode::from(EXIT_CONFIG));
            }
        };
        let mut rows = Vec::new();
        for (name, url) in oauth_upstreams(&config) {
            let key = VaultKey::operator(name);
            let row = match vault.load(&key).await {
                Ok(Some(record)) if record.is_for(&key, url) => status_of(name, &record),
                Ok(_) => json!({"upstream": name, "state": "not_logged_in"}),
                Err(e) => json!({"upstream": name, "state": "unreadable", "error": e.to_string()}),
            };
            rows.push(row);
            // Each principal's own login (with [auth]), after sluice's.
            for (key, record) in &listed {
                if key.upstream != name || key.principal.is_empty() {
                    continue;
                }
                let mut row = match record {
                    Ok(record) if record.is_for(key, url) => status_of(name, record),
                    Ok(_) => continue,
                    Err(e) => {
                        json!({"upstream": name, "state": "unreadable", "error": e.to_string()})
                    }
                };
                row["principal"] = json!(key.principal);
                rows.push(row);
            }
        }
        if *json {
            println!(
                "{}",
                serde_json::to_string_pretty(&json!({"upstreams": rows}))?
            );
        } else if rows.is_empty() {
            println!("no upstream has auth = \"oauth\"");
        } else {
            for row in &rows {
                println!("{}", status_line(row));
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// The upstreams that log in, with their URLs.
fn oauth_upstreams(config: &Config) -> impl Iterator<Item = (&str, &str)> {
    config.upstreams.iter().filter_map(|u| match &u.transport {
        UpstreamTransport::Http {
            url,
            oauth: Some(_),
            ..
        } => Some((u.name.as_str(), url.as_str())),
        _ => None,
    })
}

fn status_of(name: &str, record: &LoginRecord) -> serde_json::Value {
    let (state, scopes) = match record.readiness() {
        Readiness::Ready => ("logged_in", record.granted_scopes()),
        Readiness::NeedsLogin { scopes } => ("login_required", scopes),
        Readiness::GivenUp { scopes } => ("step_up_given_up", scopes),
    };
    json!({
        "upstream": name,
        "state": state,
        "scopes": scopes,
        "client": record.client.registration,
        "expiresAt": record.expires_at_ms().map(format_time_ms),
        "refreshable": record.can_refresh(),
        "loggedInAt": format_time_ms(record.logged_in_at_ms),
    })
}

fn status_line(row: &serde_json::Value) -> String {
    let upstream = row["upstream"].as_str().unwrap_or("?");
    let (name, how) = match row["principal"].as_str() {
        // A principal logs in through the link its next call's error gives.
        Some(principal) => (
            format!("{upstream} ({principal})"),
            "its next call's error gives the login link".to_owned(),
        ),
        None => (
            upstream.to_owned(),
            format!("run `sluice login {upstream}`"),
        ),
    };
    let scopes = row["scopes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    match row["state"].as_str().unwrap_or("") {
        "logged_in" => format!(
            "{name}: logged in (scope {scopes:?}; token until {}{})",
            row["expiresAt"].as_str().unwrap_or("unknown"),
            if row["refreshable"] == true {
                ", refreshable"
            } else {
                ""
            }
        ),
        "login_required" => format!("{name}: needs a login (scope {scopes:?}): {how}"),
        "step_up_given_up" => format!(
            "{name}: refused scope {scopes:?} after a login; log in again when the account may use it: {how}"
        ),
        "not_logged_in" => format!("{name}: not logged in: {how}"),
        _ => format!("{name}: {}", row["error"].as_str().unwrap_or("unknown")),
    }
}
