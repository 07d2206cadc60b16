//! The `sluice` command: glue only. It parses arguments, loads the config,
//! starts the gateway, and maps outcomes to exit codes (DESIGN decision 9):
//! 0 ok, 64 usage error, 70 internal error, 78 invalid configuration.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use sluice_core::config::{Config, Diagnostic, MCP_PATH, Source};
use sluice_gateway::Gateway;
use tracing_subscriber::EnvFilter;

const EXIT_USAGE: u8 = 64;
const EXIT_INTERNAL: u8 = 70;
const EXIT_CONFIG: u8 = 78;

/// sluice: an MCP gateway that makes what flows through it complete,
/// bounded and honest.
#[derive(Parser)]
#[command(name = "sluice", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway: Streamable HTTP at http://LISTEN/mcp, or stdio.
    Serve {
        #[command(flatten)]
        source: ConfigArgs,
        /// Serve one client on stdin/stdout instead of HTTP.
        #[arg(long)]
        stdio: bool,
        /// Override `[server] listen` (e.g. 127.0.0.1:0 for any free port).
        #[arg(long, value_name = "ADDR")]
        listen: Option<SocketAddr>,
    },
    /// Work with the configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Validate the configuration: exit 0, or 78 with one line per problem.
    Check {
        #[command(flatten)]
        source: ConfigArgs,
    },
}

#[derive(clap::Args)]
struct ConfigArgs {
    /// The sluice.toml to use (or $SLUICE_CONFIG).
    #[arg(
        long,
        value_name = "FILE",
        env = "SLUICE_CONFIG",
        default_value = "sluice.toml",
        conflicts_with = "mcp_json"
    )]
    config: PathBuf,
    /// Use a Claude Desktop / Cursor / VS Code mcp.json instead.
    #[arg(long, value_name = "FILE")]
    mcp_json: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // --help and --version are not errors; every other parse
            // failure is a usage error, never "could not judge" (2).
            return if e.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .init();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sluice: error: {e:#}");
            ExitCode::from(EXIT_INTERNAL)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Config {
            command: ConfigCommand::Check { source },
        } => Ok(match load(&source) {
            Ok(config) => {
                let names: Vec<&str> = config.upstreams.iter().map(|u| u.name.as_str()).collect();
                println!("ok: {} upstream(s): {}", names.len(), names.join(", "));
                ExitCode::SUCCESS
            }
            Err(code) => code,
        }),
        Command::Serve {
            source,
            stdio,
            listen,
        } => {
            let mut config = match load(&source) {
                Ok(config) => config,
                Err(code) => return Ok(code),
            };
            if let Some(listen) = listen {
                config.server.listen = listen;
            }
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            runtime.block_on(serve(config, stdio))
        }
    }
}

/// Loads and validates the config; on failure prints every problem and
/// returns the exit code.
fn load(args: &ConfigArgs) -> Result<Config, ExitCode> {
    let (path, is_json): (&Path, bool) = match &args.mcp_json {
        Some(path) => (path, true),
        None => (&args.config, false),
    };
    let name = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!(
                "{name}: cannot read the configuration: {e} (pass --config FILE or --mcp-json FILE)"
            );
            return Err(ExitCode::from(EXIT_CONFIG));
        }
    };
    let source = Source {
        name: &name,
        text: &text,
    };
    let env = |key: &str| std::env::var(key).ok();
    let parsed = if is_json {
        Config::from_mcp_json(source, &env)
    } else {
        Config::from_toml(source, &env)
    };
    parsed.map_err(|diagnostics: Vec<Diagnostic>| {
        for d in &diagnostics {
            eprintln!("{d}");
        }
        eprintln!(
            "sluice: {} configuration problem(s); nothing was started",
            diagnostics.len()
        );
        ExitCode::from(EXIT_CONFIG)
    })
}

async fn serve(config: Config, stdio: bool) -> anyhow::Result<ExitCode> {
    let listen = config.server.listen;
    let gateway = Gateway::start(config);
    if stdio {
        let served = sluice_gateway::downstream::stdio::serve(
            Arc::clone(&gateway),
            tokio::io::stdin(),
            tokio::io::stdout(),
        );
        tokio::select! {
            () = served => tracing::info!("stdin closed; shutting down"),
            () = signal() => tracing::info!("signal received; shutting down"),
        }
        gateway.shutdown().await;
        return Ok(ExitCode::SUCCESS);
    }
    let listener = match tokio::net::TcpListener::bind(listen).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("sluice: cannot listen on {listen}: {e}");
            gateway.shutdown().await;
            return Ok(ExitCode::from(EXIT_INTERNAL));
        }
    };
    let local = listener.local_addr().context("reading the bound address")?;
    eprintln!(
        "sluice {} listening on http://{local}{MCP_PATH}",
        sluice_gateway::gateway::VERSION
    );
    let server = tokio::spawn(sluice_gateway::downstream::http::serve(
        Arc::clone(&gateway),
        listener,
    ));
    signal().await;
    tracing::info!("signal received; shutting down");
    gateway.shutdown().await;
    match tokio::time::timeout(std::time::Duration::from_secs(5), server).await {
        Ok(Ok(Ok(()))) | Err(_) => {}
        Ok(Ok(Err(e))) => tracing::warn!("HTTP server ended with an error: {e}"),
        Ok(Err(e)) => tracing::warn!("HTTP server task failed: {e}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// SIGINT or SIGTERM.
async fn signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
