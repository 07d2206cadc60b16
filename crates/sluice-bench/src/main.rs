//! `sluice-bench`: a load generator for MCP servers, cheap enough to measure the server and
//! not itself.
//!
//! It calls one method (`tools/call` of one tool with fixed arguments, or `tools/list`) over
//! and over, on N connections with C calls in flight in total, and reports throughput and
//! latency percentiles. Targets are a stdio server (`-- COMMAND ARGS`: each connection is one
//! child process) or a Streamable HTTP endpoint (`URL`: each connection is its own HTTP
//! client), in the 2026-07-28 era (`_meta` on every request, MCP headers on every POST, no
//! handshake) or the 2025-11-25 era (`initialize` per process or session first).
//!
//! # Design
//!
//! A load generator that allocates, serializes and parses like a full client measures its own
//! overheads as much as the server's. The send path therefore does as little as possible:
//!
//! - **Pre-rendered bodies** ([`template`]). Every call is the same request but for its
//!   `id`, so the body is serialized once at start-up as a prefix and a suffix around the id.
//!   A call writes prefix, id digits (`itoa`) and suffix into a buffer it reuses: no
//!   `serde_json::Value`, no serializer, no allocation per call on stdio.
//! - **Cheap answers** ([`answer`]). The receive path deserializes a small struct that reads
//!   the `id`, notes whether there is an `error` or a result with `"isError": true`, and skips
//!   the rest without building it.
//! - **Pipelining on stdio** ([`stdio`]). A stdio server reads requests from one pipe, so
//!   concurrency there means requests in flight on the pipe, not tasks. Each connection keeps
//!   its share of the concurrency in flight in a slot table whose index is encoded in the id;
//!   its writer task sends every freed slot's next call in one `write`, its reader task parses
//!   lines and hands answers back over a channel. No task, oneshot or lock per call.
//! - **HTTP** ([`http`]). One POST is one call, so each connection runs one worker task per
//!   call in flight over its own `reqwest::Client` (HTTP/1.1 keep-alive, pool as big as the
//!   connection's share), with constant headers set once as the client's defaults.
//! - **The histogram**. Latencies (request written to answer read, in microseconds) go into
//!   an [`hdrhistogram`] per connection (3 significant digits: any percentile within 0.1%, in
//!   fixed memory and O(1) per record), merged at the end: no sample list that grows with the
//!   run and must be sorted, nothing shared between connections.
//!
//! Calls are handed out from one shared budget ([`phase::Phase`]) so fast connections take
//! more of them. A run is: connect every connection (spawn or build the client, the legacy
//! handshake, then one probe call that must be answered); `--warmup` calls (not recorded);
//! the measured run (`--requests` calls, or new calls until `--duration` elapses and then the
//! ones in flight finish). Latency percentiles cover every answered call, errors included;
//! timeouts and calls lost with a connection count as errors without a latency.
//!
//! Exit status: 0 every measured call succeeded, 1 some failed (a JSON-RPC error,
//! `isError: true`, a timeout, a lost connection), 2 a connection could not be established
//! (or the arguments are invalid).

mod answer;
mod http;
mod phase;
mod report;
mod stdio;
mod template;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::builder::RangedU64ValueParser;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use reqwest::Url;
use serde_json::{Map, Value};

use crate::http::{HttpConn, HttpSpec};
use crate::phase::{Phase, Stats};
use crate::report::Report;
use crate::stdio::StdioConn;
use crate::template::{Era, Method, Template};

const EXIT_ERRORS: u8 = 1;
const EXIT_NOT_CONNECTED: u8 = 2;

/// Measure an MCP server: throughput and latency of one method called over and over.
///
/// `sluice-bench [OPTIONS] URL` loads a Streamable HTTP endpoint;
/// `sluice-bench [OPTIONS] -- COMMAND ARGS...` starts a stdio server per connection.
/// Exit status: 0 no error, 1 some calls failed, 2 a connection could not be established.
#[derive(Parser, Debug)]
#[command(name = "sluice-bench", version, about)]
struct Cli {
    /// Connections to open: child processes (stdio) or HTTP clients with their own pools.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=4096))]
    connections: usize,

    /// Calls in flight in total, spread evenly over the connections (at least one each):
    /// pipelined requests on a stdio connection, concurrent POSTs on an HTTP one.
    #[arg(long, value_name = "C", default_value_t = 1,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    concurrency: usize,

    /// Measured calls [default: 10000].
    #[arg(long, value_name = "R", conflicts_with = "duration",
          value_parser = clap::value_parser!(u64).range(1..))]
    requests: Option<u64>,

    /// Measure for this long instead (e.g. 10s, 500ms, 2m): no new call starts after the
    /// deadline, and the calls in flight then are waited for.
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    duration: Option<Duration>,

    /// Calls made before the measured run and not recorded (spread over all connections).
    #[arg(long, value_name = "W", default_value_t = 200)]
    warmup: u64,

    /// Protocol era: `modern` (2026-07-28, `_meta` on every request) or `legacy`
    /// (2025-11-25, `initialize` handshake per process or session).
    #[arg(long, value_enum, default_value_t = Era::Modern)]
    era: Era,

    /// The tool `tools/call` calls.
    #[arg(long, value_name = "NAME", default_value = "echo")]
    tool: String,

    /// The tool's arguments: a JSON object, sent as is on every call.
    #[arg(long, value_name = "JSON", default_value = r#"{"text":"hello"}"#,
          value_parser = parse_args)]
    args: Map<String, Value>,

    /// The method to measure: `tools/call` (of --tool with --args) or `tools/list`.
    #[arg(long, value_enum, default_value_t = Method::ToolsCall)]
    method: Method,

    /// Print the report as one JSON object on stdout.
    #[arg(long)]
    json: bool,

    /// A call not answered within this time fails (also bounds connecting and the legacy
    /// handshake).
    #[arg(long, value_name = "TIME", default_value = "30s", value_parser = parse_duration)]
    timeout: Duration,

    /// A Streamable HTTP endpoint (http:// or https://), e.g. http://127.0.0.1:8080/mcp.
    #[arg(value_name = "URL", required_unless_present = "command",
          conflicts_with = "command", value_parser = parse_url)]
    url: Option<Url>,

    /// A stdio server to start once per connection (after `--`); its stderr is discarded.
    #[arg(last = true, value_name = "COMMAND ARGS")]
    command: Vec<String>,
}

/// `500ms`, `10s`, `2m`, `1h`, `1.5s`; a bare number is seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 500ms, 10s, 2m)"))?;
    let seconds = match unit.trim() {
        "ms" => number / 1000.0,
        "" | "s" => number,
        "m" | "min" => number * 60.0,
        "h" => number * 3600.0,
        other => return Err(format!("unknown unit `{other}` (use ms, s, m or h)")),
    };
    match Duration::try_from_secs_f64(seconds) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(format!("`{text}` must be a positive duration")),
    }
}

/// A JSON object.
fn parse_args(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("the tool's arguments must be a JSON object".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// An http(s) URL.
fn parse_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(format!(
            "`{other}:` URLs are not supported (http or https; a stdio server goes after `--`)"
        )),
    }
}

/// Why a run could not take place.
#[derive(Debug, thiserror::Error)]
enum BenchError {
    /// At least one connection could not be established.
    #[error("could not connect to {target}:\n{reasons}")]
    NotConnected { target: String, reasons: String },
    /// A bug or a resource problem.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// One connection of either transport.
enum Conn {
    Stdio(Box<StdioConn>),
    Http(HttpConn),
}

impl Conn {
    async fn run_phase(&mut self, phase: &Arc<Phase>) -> Stats {
        match self {
            Conn::Stdio(c) => c.run_phase(phase).await,
            Conn::Http(c) => c.run_phase(phase).await,
        }
    }

    async fn close(self) {
        match self {
            Conn::Stdio(c) => c.close().await,
            Conn::Http(c) => c.close().await,
        }
    }
}

/// `total` calls in flight over `connections`: the first `total % connections` get one more.
fn shares(total: usize, connections: usize) -> Vec<usize> {
    (0..connections)
        .map(|i| total / connections + usize::from(i < total % connections))
        .collect()
}

/// Opens connection `index` (spawn or client, legacy handshake).
async fn open(cli: Arc<Cli>, window: usize) -> Result<Conn, String> {
    let line = cli.url.is_none();
    let template = Template::measured(cli.era, cli.method, &cli.tool, &cli.args, line);
    match &cli.url {
        None => StdioConn::open(
            &cli.command,
            cli.era,
            Arc::new(template),
            window,
            cli.timeout,
        )
        .await
        .map(|c| Conn::Stdio(Box::new(c))),
        Some(url) => HttpConn::open(HttpSpec {
            url,
            era: cli.era,
            method: cli.method,
            tool: &cli.tool,
            template,
            workers: window,
            timeout: cli.timeout,
        })
        .await
        .map(Conn::Http),
    }
}

/// Runs `phase` on every connection at once; returns them with the merged statistics.
async fn run_phase(
    conns: Vec<Conn>,
    phase: Phase,
    timeout: Duration,
) -> anyhow::Result<(Vec<Conn>, Stats)> {
    let phase = Arc::new(phase);
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|mut conn| {
            let phase = Arc::clone(&phase);
            tokio::spawn(async move {
                let stats = conn.run_phase(&phase).await;
                (conn, stats)
            })
        })
        .collect();
    let mut conns = Vec::with_capacity(tasks.len());
    let mut total = Stats::new(timeout);
    for task in tasks {
        let (conn, stats) = task
            .await
            .map_err(|e| anyhow::anyhow!("a connection task failed: {e}"))?;
        conns.push(conn);
        total.merge(stats);
    }
    Ok((conns, total))
}

/// Closes every connection (children exit or are killed, legacy sessions are deleted).
async fn close_all(conns: Vec<Conn>) {
    let tasks: Vec<_> = conns.into_iter().map(|c| tokio::spawn(c.close())).collect();
    for task in tasks {
        let _ = task.await;
    }
}

/// What a finished run has to say.
struct Outcome {
    report: Report,
    stats: Stats,
    /// `--requests` asked for more calls than finished (connections were lost).
    short_of: Option<u64>,
}

fn target_name(cli: &Cli) -> String {
    match &cli.url {
        Some(url) => url.to_string(),
        None => cli.command.join(" "),
    }
}

async fn run(cli: Arc<Cli>) -> Result<Outcome, BenchError> {
    let target = target_name(&cli);

    // Connect: open every connection, then one probe call each that must be answered.
    let opening: Vec<_> = shares(cli.concurrency, cli.connections)
        .into_iter()
        .map(|window| tokio::spawn(open(Arc::clone(&cli), window)))
        .collect();
    let mut conns = Vec::new();
    let mut reasons = Vec::new();
    for (i, task) in opening.into_iter().enumerate() {
        match task.await {
            Ok(Ok(conn)) => conns.push(conn),
            Ok(Err(why)) => reasons.push(format!("  connection {}: {why}", i + 1)),
            Err(e) => reasons.push(format!("  connection {}: {e}", i + 1)),
        }
    }
    if reasons.is_empty() {
        let probes: Vec<_> = conns
            .into_iter()
            .map(|mut conn| {
                tokio::spawn(async move {
                    let stats = conn.run_phase(&Arc::new(Phase::calls(1))).await;
                    (conn, stats)
                })
            })
            .collect();
        conns = Vec::new();
        for (i, task) in probes.into_iter().enumerate() {
            let (conn, stats) = task
                .await
                .map_err(|e| anyhow::anyhow!("a connection task failed: {e}"))?;
            if stats.hist.is_empty() {
                let why = stats.first_error.unwrap_or_else(|| "no answer".into());
                reasons.push(format!("  connection {}: first call: {why}", i + 1));
            }
            conns.push(conn);
        }
    }
    if !reasons.is_empty() {
        close_all(conns).await;
        return Err(BenchError::NotConnected {
            target,
            reasons: reasons.join("\n"),
        });
    }

    if cli.warmup > 0 {
        let (warm, _) = run_phase(conns, Phase::calls(cli.warmup), cli.timeout).await?;
        conns = warm;
    }

    let requested = cli.requests.unwrap_or(10_000);
    let start = Instant::now();
    let phase = match cli.duration {
        Some(d) => Phase::Until(start + d),
        None => Phase::calls(requested),
    };
    let (conns, stats) = run_phase(conns, phase, cli.timeout).await?;
    let seconds = start.elapsed().as_secs_f64();
    close_all(conns).await;

    let transport = if cli.url.is_some() { "http" } else { "stdio" };
    let report = Report::new(
        target,
        transport,
        cli.era.name(),
        cli.connections,
        cli.concurrency,
        &stats,
        seconds,
    );
    let short_of = (cli.duration.is_none() && stats.requests() < requested).then_some(requested);
    Ok(Outcome {
        report,
        stats,
        short_of,
    })
}

/// Worker threads: one per connection (stdio: a connection's writer and reader share it) or
/// per call in flight (HTTP), at most one per core.
fn threads(cli: &Cli) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let wanted = if cli.url.is_some() {
        cli.concurrency
    } else {
        cli.connections
    };
    wanted.clamp(1, cores)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.concurrency < cli.connections {
        Cli::command()
            .error(
                ErrorKind::ValueValidation,
                format!(
                    "--concurrency ({}) must be at least --connections ({}): each connection \
                     needs a call in flight",
                    cli.concurrency, cli.connections
                ),
            )
            .exit();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads(&cli))
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sluice-bench: cannot start the runtime: {e}");
            return ExitCode::from(EXIT_NOT_CONNECTED);
        }
    };
    let json = cli.json;
    let outcome = runtime.block_on(run(Arc::new(cli)));
    // Children are already closed; do not wait for stray blocking work.
    runtime.shutdown_timeout(Duration::from_secs(1));
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("sluice-bench: {e:#}");
            return ExitCode::from(EXIT_NOT_CONNECTED);
        }
    };
    if json {
        println!("{}", outcome.report.to_json());
    } else {
        print!("{}", outcome.report.to_text());
    }
    if let Some(requested) = outcome.short_of {
        eprintln!(
            "sluice-bench: only {} of {requested} calls finished",
            outcome.stats.requests()
        );
    }
    if let Some(why) = &outcome.stats.lost {
        eprintln!("sluice-bench: a connection was lost: {why}");
    }
    if let Some(first) = &outcome.stats.first_error {
        eprintln!(
            "sluice-bench: {} errors; the first: {first}",
            outcome.stats.errors
        );
    }
    if outcome.stats.errors > 0 || outcome.stats.lost.is_some() {
        ExitCode::from(EXIT_ERRORS)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn concurrency_is_spread_evenly() {
        assert_eq!(shares(8, 2), [4, 4]);
        assert_eq!(shares(7, 3), [3, 2, 2]);
        assert_eq!(shares(1, 1), [1]);
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert!(parse_args(r#"{"text":"hi"}"#).is_ok());
        assert!(parse_args("[1]").is_err());
        assert!(parse_args("{").is_err());
    }

    #[test]
    fn the_cli_is_consistent() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from(["sluice-bench", "--", "server", "--flag"]).expect("parse");
        assert_eq!(cli.command, ["server", "--flag"]);
        assert!(cli.url.is_none());
        assert!(Cli::try_parse_from(["sluice-bench"]).is_err());
        assert!(Cli::try_parse_from(["sluice-bench", "ftp://x"]).is_err());
        assert!(
            Cli::try_parse_from([
                "sluice-bench",
                "--requests",
                "5",
                "--duration",
                "1s",
                "http://x/mcp"
            ])
            .is_err()
        );
    }
}
