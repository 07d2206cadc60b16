//! `sluice client-config`: prints the entry an MCP client needs to reach
//! sluice, or merges it into the client's file with a backup. What the entry
//! is, and how it is merged, is `sluice_core::client_config`'s; this module
//! finds the file, reads it, keeps the backup and writes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use serde_json::Value;
use sluice_core::client_config::{Client, Reach};
use sluice_core::config::{DEFAULT_LISTEN, MCP_PATH};

use crate::{EXIT_CONFIG, EXIT_USAGE};

/// `sluice client-config`.
#[derive(clap::Args)]
pub(crate) struct ClientConfigCommand {
    /// The client.
    client: ClientName,
    /// Reach sluice's Streamable HTTP endpoint at URL (default for all but
    /// claude-desktop: http://127.0.0.1:8787/mcp).
    #[arg(long, value_name = "URL", conflicts_with = "stdio")]
    url: Option<String>,
    /// Have the client start `sluice serve --stdio` itself (default for
    /// claude-desktop).
    #[arg(long)]
    stdio: bool,
    /// With --stdio: the sluice.toml the client's sluice reads.
    #[arg(long, value_name = "FILE", default_value = crate::DEFAULT_CONFIG)]
    config: PathBuf,
    /// The entry's name in the client's file.
    #[arg(long, value_name = "NAME", default_value = "sluice")]
    name: String,
    /// Merge the entry into the client's file (the old one is kept as
    /// FILE.bak) instead of printing it.
    #[arg(long)]
    write: bool,
    /// The client's file, instead of its usual place.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ClientName {
    ClaudeDesktop,
    Cursor,
    Vscode,
    ClaudeCode,
}

impl ClientName {
    fn client(self) -> Client {
        match self {
            ClientName::ClaudeDesktop => Client::ClaudeDesktop,
            ClientName::Cursor => Client::Cursor,
            ClientName::Vscode => Client::VsCode,
            ClientName::ClaudeCode => Client::ClaudeCode,
        }
    }
}

pub(crate) fn run(command: &ClientConfigCommand) -> anyhow::Result<ExitCode> {
    let client = command.client.client();
    let reach = reach(command, client)?;
    if !command.write {
        match client.snippet(&command.name, &reach) {
            Ok(snippet) => {
                println!("{}", serde_json::to_string_pretty(&snippet)?);
                return Ok(ExitCode::SUCCESS);
            }
            Err(e) => {
                eprintln!("sluice client-config: {e}");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    let Some(path) = command.file.clone().or_else(|| usual_file(client)) else {
        eprintln!(
            "sluice client-config: cannot tell where the file is (HOME is not set): pass --file"
        );
        return Ok(ExitCode::from(EXIT_USAGE));
    };
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(doc) => Some(doc),
            Err(e) => {
                eprintln!(
                    "sluice client-config: {} is not JSON ({e}); nothing was written",
                    path.display()
                );
                return Ok(ExitCode::from(EXIT_CONFIG));
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let had_file = existing.is_some();
    let (merged, replaced) = match client.merge(existing, &command.name, &reach) {
        Ok(merged) => merged,
        Err(e) => {
            eprintln!(
                "sluice client-config: {}: {e}; nothing was written",
                path.display()
            );
            return Ok(ExitCode::from(EXIT_CONFIG));
        }
    };
    if had_file {
        let backup = backup_path(&path);
        std::fs::copy(&path, &backup)
            .with_context(|| format!("keeping a backup at {}", backup.display()))?;
        eprintln!("kept the previous file as {}", backup.display());
    } else if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&path, serde_json::to_string_pretty(&merged)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    let verb = if replaced.is_some() {
        "replaced"
    } else {
        "added"
    };
    eprintln!("{verb} {:?} in {}", command.name, path.display());
    Ok(ExitCode::SUCCESS)
}

/// The URL given, or sluice's own command line for `--stdio` (and for
/// Claude Desktop, which starts its servers itself).
fn reach(command: &ClientConfigCommand, client: Client) -> anyhow::Result<Reach> {
    if let Some(url) = &command.url {
        return Ok(Reach::Url(url.clone()));
    }
    if !command.stdio && !client.stdio_by_default() {
        return Ok(Reach::Url(format!("http://{DEFAULT_LISTEN}{MCP_PATH}")));
    }
    // The client starts sluice from a directory of its own: both paths
    // are absolute.
    let exe = std::env::current_exe().context("finding the sluice binary")?;
    let config = std::path::absolute(&command.config)
        .with_context(|| format!("resolving {}", command.config.display()))?;
    Ok(Reach::Stdio {
        command: exe.display().to_string(),
        args: vec![
            "serve".to_owned(),
            "--stdio".to_owned(),
            "--config".to_owned(),
            config.display().to_string(),
        ],
    })
}

/// Where each client keeps its file: Claude Desktop's and Cursor's in the
/// home directory, VS Code's and Claude Code's in the project (the current
/// directory).
fn usual_file(client: Client) -> Option<PathBuf> {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    match client {
        Client::ClaudeDesktop => {
            let dir = if cfg!(target_os = "macos") {
                home()?.join("Library/Application Support")
            } else {
                std::env::var_os("XDG_CONFIG_HOME")
                    .map(PathBuf::from)
                    .or_else(|| home().map(|h| h.join(".config")))?
            };
            Some(dir.join("Claude").join("claude_desktop_config.json"))
        }
        Client::Cursor => Some(home()?.join(".cursor").join("mcp.json")),
        Client::VsCode => Some(PathBuf::from(".vscode").join("mcp.json")),
        Client::ClaudeCode => Some(PathBuf::from(".mcp.json")),
    }
}

/// `FILE.bak`.
fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".bak");
    PathBuf::from(name)
}
