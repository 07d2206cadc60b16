//! `sluice import server.json`: appends the `[[upstream]]` that
//! `sluice_core::config::import_server_json` makes of a registry entry to
//! sluice.toml (or prints it), once the file with it still loads.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use sluice_core::config::{Config, Prefer, Source, import_server_json};

use crate::{EXIT_CONFIG, EXIT_USAGE};

/// `sluice import`.
#[derive(clap::Args)]
pub(crate) struct ImportCommand {
    /// The server.json (the official MCP registry's server format).
    file: PathBuf,
    /// The upstream's name (default: the last part of the server's name).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Take the server's streamable-http remote rather than a package.
    #[arg(long)]
    remote: bool,
    /// The sluice.toml to append to (created when missing).
    #[arg(long, value_name = "FILE", env = "SLUICE_CONFIG", default_value = crate::DEFAULT_CONFIG)]
    config: PathBuf,
    /// Print the `[[upstream]]` instead of appending it.
    #[arg(long)]
    print: bool,
}

pub(crate) fn run(command: &ImportCommand) -> anyhow::Result<ExitCode> {
    let text = match std::fs::read_to_string(&command.file) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("sluice import: cannot read {}: {e}", command.file.display());
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let name = command.file.display().to_string();
    let prefer = if command.remote {
        Prefer::Remote
    } else {
        Prefer::Package
    };
    let imported = match import_server_json(
        Source {
            name: &name,
            text: &text,
        },
        command.name.as_deref(),
        prefer,
    ) {
        Ok(imported) => imported,
        Err(problems) => {
            for p in &problems {
                eprintln!("{p}");
            }
            return Ok(ExitCode::from(EXIT_CONFIG));
        }
    };
    if command.print {
        print!("{}", imported.toml);
        return Ok(ExitCode::SUCCESS);
    }
    let existing = match std::fs::read_to_string(&command.config) {
        Ok(existing) => existing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", command.config.display())),
    };
    let separator = if existing.is_empty() || existing.ends_with("\n\n") {
        ""
    } else if existing.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    let combined = format!("{existing}{separator}{}", imported.toml);
    // Checked as it will be read, every variable taken as set: what is left
    // is a real problem (a name already taken, say).
    let config_name = command.config.display().to_string();
    let any_set = |_: &str| Some("set".to_owned());
    if let Err(problems) = Config::from_toml(
        Source {
            name: &config_name,
            text: &combined,
        },
        &any_set,
    ) {
        for p in &problems {
            eprintln!("{p}");
        }
        eprintln!(
            "sluice import: {} was left as it was",
            command.config.display()
        );
        return Ok(ExitCode::from(EXIT_CONFIG));
    }
    std::fs::write(&command.config, combined)
        .with_context(|| format!("writing {}", command.config.display()))?;
    eprintln!(
        "added [[upstream]] {:?} to {}",
        imported.name,
        command.config.display()
    );
    if !imported.variables.is_empty() {
        eprintln!(
            "set {} in the environment sluice runs in (see the comments above the entry)",
            imported.variables.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
