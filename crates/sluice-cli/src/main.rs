//! The `sluice` command: glue only. It parses arguments, loads the config
//! and the lockfile, starts the gateway (or reads catalogs for `lock` and
//! `check`), prints completions and the man page (`shell`), and maps
//! outcomes to exit codes, the same for every command: 0 ok,
//! 1 drift found (or, for `lock`, findings not accepted), 2 not
//! established, 64 usage error, 70 internal error,
//! 78 invalid configuration or lockfile.

mod audit;
mod client_config;
mod doctor;
mod import;
mod login;
mod pinning;
mod progress;
mod reload;
mod shell;
mod state;
mod telemetry;

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use sluice_core::catalog::lockfile::Lockfile;
use sluice_core::config::{self, Config, Diagnostic, MCP_PATH, Source};
use sluice_gateway::Gateway;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

const EXIT_DRIFT: u8 = 1;
const EXIT_FINDINGS: u8 = 1;
const EXIT_NOT_ESTABLISHED: u8 = 2;
const EXIT_USAGE: u8 = 64;
const EXIT_INTERNAL: u8 = 70;
const EXIT_CONFIG: u8 = 78;

/// The config file read when none is named.
const DEFAULT_CONFIG: &str = "sluice.toml";

/// An MCP gateway that makes what flows through it complete, bounded and
/// honest.
#[derive(Parser)]
#[command(name = "sluice", version)]
struct Cli {
    /// Colour in the log: auto (on a terminal, unless NO_COLOR is set),
    /// always or never.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    color: Color,
    #[command(subcommand)]
    command: Command,
}

/// `--color`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

impl Color {
    /// Whether the log gets ANSI colours: `auto` only on a terminal and when
    /// `NO_COLOR` is unset or empty (no-color.org: a flag overrides it).
    fn ansi(self, no_color: Option<&std::ffi::OsStr>, terminal: bool) -> bool {
        match self {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => terminal && no_color.is_none_or(|v| v.is_empty()),
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway: Streamable HTTP at http://LISTEN/mcp, or stdio.
    Serve {
        #[command(flatten)]
        source: PinnedConfigArgs,
        /// Serve one client on stdin/stdout instead of HTTP.
        #[arg(long)]
        stdio: bool,
        /// With --stdio: serve the part of the catalog `[[view]]` NAME
        /// shows (over HTTP, a view is served at /mcp/NAME).
        #[arg(long, value_name = "NAME", requires = "stdio")]
        view: Option<String>,
        /// Override `[server] listen` (e.g. 127.0.0.1:0 for any free port).
        #[arg(long, value_name = "ADDR")]
        listen: Option<SocketAddr>,
    },
    /// Read every upstream's catalog to its end and write the approved
    /// definitions to the lockfile (exit 2, keeping the previous approval,
    /// for an upstream whose read did not finish; exit 1, likewise, for an
    /// upstream whose poisoning scan has findings).
    Lock {
        #[command(flatten)]
        source: PinnedConfigArgs,
        /// Lock only this upstream (repeatable); the others keep their
        /// approval.
        #[arg(long = "upstream", value_name = "NAME")]
        upstreams: Vec<String>,
        /// Approve entries with poisoning findings, recording the findings
        /// in the lockfile beside their digests.
        #[arg(long)]
        accept_findings: bool,
    },
    /// Compare every upstream's catalog with the lockfile: exit 0 unchanged,
    /// 1 drifted (the diff is printed), 2 not established.
    Check {
        #[command(flatten)]
        source: PinnedConfigArgs,
        /// Print the verdicts as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Audit any MCP server against the server standard: exit 0 all pass,
    /// 1 any fail, 2 nothing failed but something could not be judged.
    ///
    /// `sluice doctor -- COMMAND ARGS...` starts a stdio server;
    /// `sluice doctor URL` reaches a Streamable HTTP one. Every rule of the
    /// server standard (S-1..S-27) is in every report: judged by a
    /// detector, or marked not observable from outside with the reason
    /// (`--list-rules` prints each with what it checks). Only tools
    /// annotated readOnlyHint: true are called, with arguments made from
    /// their input schema. `sluice doctor --config FILE` judges sluice's
    /// own configuration instead (S-21: its stdio upstreams sandboxed).
    Doctor(doctor::DoctorArgs),
    /// Read the audit log, newest first, a page at a time: one row per
    /// decision (exit 64 for a bad filter or cursor).
    Audit(audit::AuditCommand),
    /// Log in to an upstream with `auth = "oauth"`: prints the
    /// authorization URL (and opens a browser unless --no-browser), waits
    /// for the redirect to 127.0.0.1, and keeps the tokens, encrypted, in
    /// the state store, where `sluice serve` reads them (exit 1 when the
    /// login fails).
    Login(login::LoginCommand),
    /// Forget the login to an upstream (its tokens).
    Logout(login::LogoutCommand),
    /// The OAuth logins to upstreams.
    #[command(subcommand)]
    Auth(login::AuthCommand),
    /// Work with the configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Add a server of the official MCP registry (its server.json: an npm,
    /// PyPI or OCI package, or a streamable-http remote) to sluice.toml as
    /// an `[[upstream]]`.
    Import(import::ImportCommand),
    /// Print the entry an MCP client (Claude Desktop, Cursor, VS Code,
    /// Claude Code) needs to reach sluice, or merge it into the client's
    /// file with --write.
    ClientConfig(client_config::ClientConfigCommand),
    /// Print a shell completion script: e.g. `sluice completions bash >
    /// ~/.local/share/bash-completion/completions/sluice`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): e.g. `sluice man > ~/.local/share/man/man1/sluice.1`.
    Man,
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
        default_value = DEFAULT_CONFIG,
        conflicts_with = "mcp_json"
    )]
    config: PathBuf,
    /// Use a Claude Desktop / Cursor / VS Code mcp.json instead.
    #[arg(long, value_name = "FILE")]
    mcp_json: Option<PathBuf>,
}

impl ConfigArgs {
    fn path(&self) -> &Path {
        self.mcp_json.as_deref().unwrap_or(&self.config)
    }
}

/// The configuration and its lockfile: for the commands that read or
/// write the lockfile (`serve`, `lock`, `check`).
#[derive(clap::Args)]
struct PinnedConfigArgs {
    #[command(flatten)]
    file: ConfigArgs,
    /// The lockfile (default: `[catalog] lockfile`, relative to the
    /// config file's directory).
    #[arg(long, value_name = "FILE")]
    lockfile: Option<PathBuf>,
}

impl PinnedConfigArgs {
    fn path(&self) -> &Path {
        self.file.path()
    }

    fn lockfile(&self, config: &Config) -> PathBuf {
        pinning::lockfile_path(self.path(), config, self.lockfile.as_deref())
    }
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
    // `lock` and `check` print their own report; their log is for trouble.
    let default_level = match cli.command {
        Command::Lock { .. } | Command::Check { .. } | Command::Doctor(_) | Command::Audit(_) => {
            "warn"
        }
        _ => "info",
    };
    let ansi = cli.color.ansi(
        std::env::var_os("NO_COLOR").as_deref(),
        std::io::stderr().is_terminal(),
    );
    match run(
        cli,
        Logging {
            default_level,
            ansi,
        },
    ) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sluice: error: {e:#}");
            ExitCode::from(EXIT_INTERNAL)
        }
    }
}

/// How the log is written: its level unless `SLUICE_LOG` says otherwise,
/// and whether in colour.
#[derive(Clone, Copy)]
struct Logging {
    default_level: &'static str,
    ansi: bool,
}

/// Logs to stderr at `SLUICE_LOG` (default `logging.default_level`); spans
/// also go to `traces` when given (`serve` with `[telemetry]`).
fn init_logging(logging: Logging, traces: Option<telemetry::TraceLayer>) {
    // The log level filters the log only: traces keep sluice's spans
    // whatever `SLUICE_LOG` says.
    let log_filter = EnvFilter::try_from_env("SLUICE_LOG")
        .unwrap_or_else(|_| EnvFilter::new(logging.default_level));
    tracing_subscriber::registry()
        .with(traces)
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(logging.ansi)
                .with_target(false)
                .with_filter(log_filter),
        )
        .init();
}

fn run(cli: Cli, logging: Logging) -> anyhow::Result<ExitCode> {
    // `serve` starts logging once its config says where traces go.
    if !matches!(cli.command, Command::Serve { .. }) {
        init_logging(logging, None);
    }
    match cli.command {
        Command::Config {
            command: ConfigCommand::Check { source },
        } => Ok(match load(&source) {
            Ok(config) => config_check(&config, source.path()),
            Err(code) => code,
        }),
        Command::Completions { shell } => {
            shell::completions(shell);
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            shell::man().context("writing the man page")?;
            Ok(ExitCode::SUCCESS)
        }
        Command::ClientConfig(command) => client_config::run(&command),
        Command::Import(command) => import::run(&command),
        Command::Doctor(args) => doctor::run(args),
        Command::Audit(command) => audit::run(&command),
        Command::Login(command) => login::login(&command),
        Command::Logout(command) => login::logout(&command),
        Command::Auth(command) => login::auth(&command),
        Command::Lock {
            source,
            upstreams,
            accept_findings,
        } => {
            let config = match load(&source.file) {
                Ok(config) => config,
                Err(code) => return Ok(code),
            };
            let path = source.lockfile(&config);
            let scope = pinning::LockOptions {
                upstreams: &upstreams,
                accept_findings,
            };
            runtime()?.block_on(async {
                match state::vault_if_needed(source.path(), &config).await {
                    Ok(vault) => pinning::lock(&config, vault, &path, scope).await,
                    Err(message) => {
                        eprintln!("sluice lock: {message}");
                        Ok(ExitCode::from(EXIT_CONFIG))
                    }
                }
            })
        }
        Command::Check { source, json } => {
            let config = match load(&source.file) {
                Ok(config) => config,
                Err(code) => return Ok(code),
            };
            let path = source.lockfile(&config);
            runtime()?.block_on(async {
                match state::vault_if_needed(source.path(), &config).await {
                    Ok(vault) => pinning::check(&config, vault, &path, json).await,
                    Err(message) => {
                        eprintln!("sluice check: {message}");
                        Ok(ExitCode::from(EXIT_CONFIG))
                    }
                }
            })
        }
        Command::Serve {
            source,
            stdio,
            view,
            listen,
        } => {
            let mut config = match load(&source.file) {
                Ok(config) => config,
                Err(code) => return Ok(code),
            };
            if let Some(view) = &view
                && !config.views.iter().any(|v| &v.name == view)
            {
                let names: Vec<&str> = config.views.iter().map(|v| v.name.as_str()).collect();
                eprintln!(
                    "sluice: no [[view]] named {view:?} in the config (configured: {})",
                    names.join(", ")
                );
                return Ok(ExitCode::from(EXIT_USAGE));
            }
            let traces = match telemetry::start_traces(&config) {
                Ok(Some((traces, layer))) => {
                    init_logging(logging, Some(layer));
                    tracing::info!(
                        "exporting traces to {}/v1/traces",
                        config
                            .telemetry
                            .otlp_endpoint
                            .as_deref()
                            .unwrap_or_default()
                    );
                    Some(traces)
                }
                Ok(None) => {
                    init_logging(logging, None);
                    None
                }
                Err(e) => {
                    eprintln!("sluice: {e:#}");
                    return Ok(ExitCode::from(EXIT_CONFIG));
                }
            };
            if let Some(listen) = listen {
                config.server.listen = listen;
                // The flag is checked as the key would be (stdio serves no
                // listener, so it needs no auth).
                if let Some(problem) = config::exposure_problem(listen, &config.auth)
                    && !stdio
                {
                    eprintln!("--listen: {problem}");
                    return Ok(ExitCode::from(EXIT_CONFIG));
                }
            }
            let path = source.lockfile(&config);
            let lock = match pinning::read_lockfile(&path) {
                Ok(Some(lock)) => {
                    tracing::info!(
                        "pinned: serving only what {} approves (on_drift = {:?})",
                        path.display(),
                        config.catalog.on_drift.as_str()
                    );
                    if let Some(note) = pinning::format_1_note(&lock, &path) {
                        tracing::warn!("{note}");
                    }
                    Some(lock)
                }
                Ok(None) if config.catalog.require_lock => {
                    eprintln!("{}; nothing was started", pinning::missing_lock(&path));
                    return Ok(ExitCode::from(EXIT_CONFIG));
                }
                Ok(None) => {
                    tracing::warn!(
                        "unpinned: no lockfile at {}; catalogs are served as the upstreams send them (run `sluice lock` to pin them)",
                        path.display()
                    );
                    None
                }
                Err(code) => return Ok(code),
            };
            let cursor_secret = match state::cursor_secret(source.path(), &config) {
                Ok(secret) => secret,
                Err(message) => {
                    eprintln!("sluice: {message}; nothing was started");
                    return Ok(ExitCode::from(EXIT_CONFIG));
                }
            };
            // One client on stdio: one thread, so that a message is never
            // handed from one worker thread to another on its way (each
            // hand-off is a futex wake and a context switch).
            let runtime = if stdio {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("starting the async runtime")?
            } else {
                runtime()?
            };
            let sources = reload::Sources {
                config: source.path().to_owned(),
                is_json: source.file.mcp_json.is_some(),
                lockfile: path,
                listen_flag: listen,
                bound: (!stdio).then_some(config.server.listen),
            };
            let state_dir = state::dir(source.path(), &config);
            let transport = if stdio {
                Transport::Stdio(view.map(Arc::from))
            } else {
                Transport::Http
            };
            runtime.block_on(serve(
                config,
                lock,
                cursor_secret,
                transport,
                sources,
                traces,
                &state_dir,
            ))
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Runtime::new().context("starting the async runtime")
}

/// `sluice config check` of a config that loads: what [`config::preflight`]
/// finds (host names resolved here), or the upstreams it names.
fn config_check(config: &Config, path: &Path) -> ExitCode {
    use std::net::ToSocketAddrs;
    let resolve = |host: &str, port: u16| {
        (host, port)
            .to_socket_addrs()
            .map(|addrs| addrs.map(|a| a.ip()).collect())
            .unwrap_or_default()
    };
    let problems = config::preflight(config, &path.display().to_string(), &resolve);
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("{p}");
        }
        eprintln!("sluice: {} configuration problem(s)", problems.len());
        return ExitCode::from(EXIT_CONFIG);
    }
    let names: Vec<&str> = config.upstreams.iter().map(|u| u.name.as_str()).collect();
    println!("ok: {} upstream(s): {}", names.len(), names.join(", "));
    ExitCode::SUCCESS
}

/// Loads and validates the config; on failure prints every problem and
/// returns the exit code.
fn load(args: &ConfigArgs) -> Result<Config, ExitCode> {
    read_config(args.path(), args.mcp_json.is_some()).map_err(|problems| {
        for p in &problems {
            eprintln!("{p}");
        }
        eprintln!(
            "sluice: {} configuration problem(s); nothing was started",
            problems.len()
        );
        ExitCode::from(EXIT_CONFIG)
    })
}

/// Reads and validates the config at `path` (an `mcp.json` when
/// `is_json`): the config, or every problem found, one line each.
fn read_config(path: &Path, is_json: bool) -> Result<Config, Vec<String>> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![format!(
            "{name}: cannot read the configuration: {e} (pass --config FILE or --mcp-json FILE)"
        )]
    })?;
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
    let mut config = parsed.map_err(|diagnostics: Vec<Diagnostic>| {
        diagnostics
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    })?;
    // Token files are relative to the config file, like the lockfile.
    let dir = path.parent().unwrap_or(Path::new("."));
    let read = |file: &Path| std::fs::read_to_string(dir.join(file)).map_err(|e| e.to_string());
    config.auth.load_token_files(&read).map_err(|problems| {
        problems
            .iter()
            .map(|p| format!("{name}: {p}"))
            .collect::<Vec<_>>()
    })?;
    Ok(config)
}

/// How `serve` meets its clients.
enum Transport {
    /// Streamable HTTP at `/mcp` (and `/mcp/<view>`).
    Http,
    /// One client on stdin/stdout, through a view or not.
    Stdio(Option<Arc<str>>),
}

async fn serve(
    mut config: Config,
    lock: Option<Lockfile>,
    cursor_secret: [u8; 32],
    transport: Transport,
    sources: reload::Sources,
    traces: Option<telemetry::Traces>,
    state_dir: &Path,
) -> anyhow::Result<ExitCode> {
    let listen = config.server.listen;
    // The port first: when it is taken, no upstream has been spawned for
    // nothing.
    let (listener, view) = match transport {
        Transport::Stdio(view) => (None, view),
        Transport::Http => match tokio::net::TcpListener::bind(listen).await {
            Ok(listener) => (Some(listener), None),
            Err(e) => {
                eprintln!("sluice: cannot listen on {listen}: {e}; nothing was started");
                return Ok(ExitCode::from(EXIT_INTERNAL));
            }
        },
    };
    // Without `[server] public_url`, the login pages are where sluice
    // listens (the port bound, when it was 0).
    if config.server.public_url.is_none()
        && let Some(bound) = listener.as_ref().and_then(|l| l.local_addr().ok())
    {
        config.server.public_url = Some(format!("http://{bound}"));
    }
    let metrics_listener = match telemetry::start_metrics(&config).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("sluice: {e:#}");
            return Ok(ExitCode::from(EXIT_INTERNAL));
        }
    };
    let audit = match audit::open_log(&config.state, state_dir).await {
        Ok(audit) => audit,
        Err(message) => {
            eprintln!("sluice: {message}; nothing was started");
            return Ok(ExitCode::from(EXIT_CONFIG));
        }
    };
    let sink = audit
        .clone()
        .map(|log| log as Arc<dyn sluice_gateway::ops::AuditSink>);
    let vault = match state::vault_if_needed(&sources.config, &config).await {
        Ok(vault) => vault,
        Err(message) => {
            eprintln!("sluice: {message}; nothing was started");
            return Ok(ExitCode::from(EXIT_CONFIG));
        }
    };
    let limits = config.server.connections;
    let gateway = Gateway::start(
        config,
        lock,
        cursor_secret,
        sluice_gateway::ops::Ops::new(sink),
        vault,
    );
    let console = Arc::new(sluice_gateway::console::Console::new(
        sources.lockfile.clone(),
        audit.as_ref().map(|log| log.store().clone()),
    ));
    if let Some(listener) = metrics_listener {
        let console = Some((Arc::clone(&gateway), Arc::clone(&console)));
        telemetry::serve_metrics(listener, limits, console)?;
    }
    // Ends with the runtime, when `serve` returns.
    tokio::spawn(reload::run(Arc::clone(&gateway), sources));
    // Every way out writes the queued audit rows first.
    let close_audit = async || {
        if let Some(audit) = &audit {
            audit.close().await;
        }
    };
    let Some(listener) = listener else {
        let (input, output) = sluice_gateway::downstream::stdio::std_streams();
        let served =
            sluice_gateway::downstream::stdio::serve(Arc::clone(&gateway), view, input, output);
        tokio::select! {
            () = served => tracing::info!("stdin closed; shutting down"),
            () = signal() => tracing::info!("signal received; shutting down"),
        }
        gateway.shutdown().await;
        close_audit().await;
        if let Some(traces) = traces {
            traces.shutdown().await;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let local = listener.local_addr().context("reading the bound address")?;
    if !gateway.auth().is_on() {
        // Loopback only (a public bind without auth is refused at load),
        // but every local process and user can still call every upstream.
        tracing::warn!(
            "serving HTTP without [auth]: any process on this machine can use every upstream; set [auth] mode = \"bearer\" or use --stdio (S-16)"
        );
    }
    eprintln!(
        "sluice {} listening on http://{local}{MCP_PATH}",
        sluice_gateway::gateway::VERSION
    );
    if sluice_gateway::console::served_on(&gateway) == Some(config::ConsoleListener::Main) {
        eprintln!("sluice console on http://{local}/ui/");
    }
    let server = tokio::spawn(sluice_gateway::downstream::http::serve(
        Arc::clone(&gateway),
        listener,
        Some(console),
    ));
    signal().await;
    tracing::info!("signal received; shutting down");
    gateway.shutdown().await;
    match tokio::time::timeout(std::time::Duration::from_secs(5), server).await {
        Ok(Ok(Ok(()))) | Err(_) => {}
        Ok(Ok(Err(e))) => tracing::warn!("HTTP server ended with an error: {e}"),
        Ok(Err(e)) => tracing::warn!("HTTP server task failed: {e}"),
    }
    // What the drained requests recorded goes out last.
    close_audit().await;
    if let Some(traces) = traces {
        traces.shutdown().await;
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

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use clap::Parser;

    use super::{Cli, Color, Command};

    #[test]
    fn a_cursor_that_begins_with_a_hyphen_is_a_value_not_a_flag() {
        // Sealed cursors are base64url: about one in 32 begins with `-`.
        let cli = Cli::try_parse_from(["sluice", "audit", "--cursor", "-Xab_c", "--json"]);
        let Ok(Cli {
            command: Command::Audit(audit),
            ..
        }) = cli
        else {
            panic!("`--cursor -Xab_c` did not parse as audit");
        };
        assert_eq!(audit.cursor.as_deref(), Some("-Xab_c"));
    }

    #[test]
    fn no_color_turns_auto_off_and_a_flag_wins() {
        let set = Some(OsStr::new("1"));
        assert!(Color::Auto.ansi(None, true));
        assert!(Color::Auto.ansi(Some(OsStr::new("")), true));
        assert!(!Color::Auto.ansi(set, true));
        assert!(!Color::Auto.ansi(None, false));
        assert!(Color::Always.ansi(set, false));
        assert!(!Color::Never.ansi(None, true));
    }
}
