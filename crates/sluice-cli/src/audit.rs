//! The audit log from the command line: opened by `sluice serve` before
//! anything starts, read by `sluice audit`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use sluice_core::audit::{
    AuditArgs, AuditReading, AuditRow, audit_page, format_time_ms, plan_reading,
};
use sluice_core::config::{Config, StateConfig, StateStore};
use sluice_core::envelope::Cursors;
use sluice_gateway::ops::audit::{AuditLog, AuditStore, SQLITE_FILE, StoreError};

use crate::{ConfigArgs, EXIT_CONFIG, EXIT_INTERNAL, EXIT_USAGE, load, state};

/// `sluice audit`: read the audit log, newest first.
#[derive(clap::Args)]
pub struct AuditCommand {
    #[command(flatten)]
    source: ConfigArgs,
    /// Only rows since then: a duration back from now (90s, 30m, 1h, 7d)
    /// or an RFC 3339 time (2026-11-30T09:00:00Z).
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Only rows routed to this upstream.
    #[arg(long, value_name = "NAME")]
    upstream: Option<String>,
    /// Only rows with this decision (ok, tool_error, refused_size,
    /// blocked_drift, rate_limited, refused_scope, refused_elicitation,
    /// invalid, upstream_error, timeout, input_required, cancelled).
    #[arg(long, value_name = "NAME")]
    decision: Option<String>,
    /// Only rows of requests through this `[[view]]` (`/mcp/NAME`,
    /// `serve --stdio --view NAME`).
    #[arg(long, value_name = "NAME")]
    view: Option<String>,
    /// Rows a page, 1 to 200 (default 20).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// The `nextCursor` of the page before (same filters). A sealed cursor
    /// is base64url and may begin with `-`, so hyphen values are accepted.
    #[arg(long, value_name = "CURSOR", allow_hyphen_values = true)]
    pub(crate) cursor: Option<String>,
    /// Print the page as JSON: `{items, nextCursor?, isCapped?}`, the
    /// envelope of sluice's own lists.
    #[arg(long)]
    json: bool,
}

/// Opens the audit log `[state]` configures (nothing when `audit = false`)
/// and starts its writer. `state_dir` holds the SQLite file.
pub async fn open_log(
    state: &StateConfig,
    state_dir: &Path,
) -> Result<Option<Arc<AuditLog>>, String> {
    if !state.audit {
        return Ok(None);
    }
    let store = match &state.store {
        StateStore::Sqlite => {
            let path = sqlite_path(state_dir);
            state::create_private_file(state_dir, &path)
                .map_err(|e| format!("{}: cannot create the audit log: {e}", path.display()))?;
            AuditStore::open_sqlite(&path).await
        }
        StateStore::Postgres { url } => AuditStore::open_postgres(url).await,
    };
    let log = match store {
        Ok(store) => AuditLog::start(store, state.audit_retention).await,
        Err(e) => Err(e),
    };
    log.map(|log| Some(Arc::new(log))).map_err(|e| {
        format!("[state] audit log: {e} (fix [state] url or dir, or set [state] audit = false)")
    })
}

fn sqlite_path(state_dir: &Path) -> PathBuf {
    state_dir.join(SQLITE_FILE)
}

/// Runs `sluice audit`.
pub fn run(command: &AuditCommand) -> anyhow::Result<ExitCode> {
    let config = match load(&command.source) {
        Ok(config) => config,
        Err(code) => return Ok(code),
    };
    let secret = match state::cursor_secret(command.source.path(), &config) {
        Ok(secret) => secret,
        Err(message) => {
            eprintln!("sluice audit: {message}");
            return Ok(ExitCode::from(EXIT_CONFIG));
        }
    };
    let cursors = Cursors::new(secret);
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let args = AuditArgs {
        since: command.since.as_deref(),
        upstream: command.upstream.as_deref(),
        decision: command.decision.as_deref(),
        view: command.view.as_deref(),
        limit: command.limit,
        cursor: command.cursor.as_deref(),
    };
    let reading = match plan_reading(&args, &cursors, now_ms) {
        Ok(reading) => reading,
        Err(e) => {
            eprintln!("sluice audit: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let state_dir = state::dir(command.source.path(), &config);
    let rows = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(read(&config, &state_dir, &reading))
    {
        Ok(rows) => rows,
        Err(Failure::Open(e)) => {
            eprintln!("sluice audit: [state] audit log: {e}");
            return Ok(ExitCode::from(EXIT_CONFIG));
        }
        Err(Failure::Read(e)) => {
            eprintln!("sluice audit: {e}");
            return Ok(ExitCode::from(EXIT_INTERNAL));
        }
    };
    let page = audit_page(&reading, &rows, &cursors, now_ms);
    if command.json {
        println!("{}", serde_json::to_string(&page.value)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", table(&rows[..page.rows]));
    if let Some(next) = page.value.get("nextCursor").and_then(|c| c.as_str()) {
        println!("more: {}", next_command(command, next));
    }
    Ok(ExitCode::SUCCESS)
}

enum Failure {
    Open(StoreError),
    Read(StoreError),
}

/// The rows of one page; none when the SQLite file was never written
/// (reading creates nothing).
async fn read(
    config: &Config,
    state_dir: &Path,
    reading: &AuditReading,
) -> Result<Vec<AuditRow>, Failure> {
    let store = match &config.state.store {
        StateStore::Sqlite => {
            let path = sqlite_path(state_dir);
            if !path.exists() {
                return Ok(Vec::new());
            }
            AuditStore::open_sqlite(&path).await
        }
        StateStore::Postgres { url } => AuditStore::open_postgres(url).await,
    }
    .map_err(Failure::Open)?;
    let rows = store.read(&reading.query).await.map_err(Failure::Read);
    store.close().await;
    rows
}

/// The rows as an aligned table with a header line.
fn table(rows: &[AuditRow]) -> String {
    if rows.is_empty() {
        return "no audit rows match\n".to_owned();
    }
    let header = [
        "TIME",
        "PRINCIPAL",
        "VIEW",
        "METHOD",
        "UPSTREAM",
        "TARGET",
        "DECISION",
        "CODE",
        "DURATION",
        "SIZE",
    ]
    .map(str::to_owned);
    let lines: Vec<[String; 10]> = std::iter::once(header)
        .chain(rows.iter().map(|row| {
            let r = &row.record;
            [
                format_time_ms(r.time_ms),
                r.principal.clone(),
                r.view.clone().unwrap_or_else(|| "-".into()),
                r.method.clone(),
                r.upstream.clone().unwrap_or_else(|| "-".into()),
                r.target.clone().unwrap_or_else(|| "-".into()),
                r.decision.as_str().to_owned(),
                r.code.map_or_else(|| "-".into(), |c| c.to_string()),
                duration(r.duration_us),
                r.size.map_or("-", |s| s.as_str()).to_owned(),
            ]
        }))
        .collect();
    let mut widths = [0; 10];
    for line in &lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for line in &lines {
        let cells: Vec<String> = line
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn duration(us: i64) -> String {
    match us {
        ..1_000 => format!("{us}us"),
        1_000..1_000_000 => format!("{:.1}ms", us as f64 / 1e3),
        _ => format!("{:.2}s", us as f64 / 1e6),
    }
}

/// The command that reads the next page: the same filters and the cursor.
fn next_command(command: &AuditCommand, cursor: &str) -> String {
    let mut words = vec!["sluice".to_owned(), "audit".to_owned()];
    if let Some(path) = &command.source.mcp_json {
        words.extend(["--mcp-json".into(), quote(&path.display().to_string())]);
    } else if command.source.config != Path::new(crate::DEFAULT_CONFIG) {
        words.extend([
            "--config".into(),
            quote(&command.source.config.display().to_string()),
        ]);
    }
    let flags = [
        ("--since", &command.since),
        ("--upstream", &command.upstream),
        ("--decision", &command.decision),
        ("--view", &command.view),
    ];
    for (flag, value) in flags {
        if let Some(value) = value {
            words.extend([flag.to_owned(), quote(value)]);
        }
    }
    if let Some(limit) = command.limit {
        words.extend(["--limit".into(), limit.to_string()]);
    }
    words.extend(["--cursor".into(), cursor.to_owned()]);
    words.join(" ")
}

/// `text` as one shell word.
fn quote(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:+=@".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}
