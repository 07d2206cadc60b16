//! `sluice doctor`: its flags, the credentials read from them, and the
//! report printed as asked.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;

use crate::{EXIT_CONFIG, EXIT_USAGE, progress, read_config, runtime};

#[derive(clap::Args)]
pub struct DoctorArgs {
    /// Print the report as JSON (stable, documented in the README).
    #[arg(long)]
    json: bool,
    /// Also write the report as SARIF 2.1.0 to FILE.
    #[arg(long, value_name = "FILE")]
    sarif: Option<PathBuf>,
    /// The server's mcp.json manifest, for the static checks.
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// Also call tools annotated destructiveHint: false (never a tool that
    /// may destroy something).
    #[arg(long)]
    allow_calls: bool,
    /// Send bursts of 30 requests (completions, a read-only tool) to see
    /// the rate limits of S-15 and S-24.
    #[arg(long)]
    allow_load: bool,
    /// A header sent with every request (repeatable), e.g. `X-Api-Key:K`.
    /// Its value is never printed.
    // Parsed in `doctor`, not by clap: clap's error would quote the value.
    #[arg(long, value_name = "NAME:VALUE")]
    header: Vec<String>,
    /// Send `Authorization: Bearer <the value of VAR>`; the token is never
    /// printed, nor in the JSON or SARIF report, nor in errors.
    #[arg(long, value_name = "VAR")]
    bearer_env: Option<String>,
    /// A second principal's token, from VAR, for the session-binding and
    /// cache-scope rules (S-18, S-26).
    #[arg(long, value_name = "VAR", requires = "bearer_env")]
    second_bearer_env: Option<String>,
    /// Print every rule the doctor judges, with what each check judges (or
    /// why it cannot be seen from outside), and exit.
    #[arg(long, conflicts_with_all = ["target", "config"])]
    list_rules: bool,
    /// The most one request may take (1ms to 1h).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration_arg)]
    timeout: std::time::Duration,
    /// The most all tool calls may take together (1ms to 1h); tools left
    /// when it is spent are reported as not called.
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_duration_arg)]
    budget: std::time::Duration,
    /// The read budget results are measured against, in bytes (at most 1 GiB).
    #[arg(long, value_name = "BYTES", default_value_t = sluice_core::boundary::budget::DEFAULT_READ_BUDGET,
          value_parser = parse_budget_arg)]
    read_budget: usize,
    /// Judge this sluice.toml (S-21), not a server.
    #[arg(long, value_name = "FILE", conflicts_with = "target")]
    config: Option<PathBuf>,
    /// A URL (http:// or https://), or after `--`, a command and its arguments.
    #[arg(
        required_unless_present_any = ["config", "list_rules"],
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "URL | COMMAND ARGS"
    )]
    target: Vec<String>,
}

fn parse_duration_arg(s: &str) -> Result<std::time::Duration, String> {
    let d = sluice_core::config::parse_duration(s)
        .ok_or_else(|| format!("{s:?} is not a duration (e.g. 10s, 500ms, 2m)"))?;
    let range = std::time::Duration::from_millis(1)..=std::time::Duration::from_secs(3600);
    if range.contains(&d) {
        Ok(d)
    } else {
        Err(format!("{s:?} is out of range: 1ms to 1h"))
    }
}

fn parse_budget_arg(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=1 << 30).contains(&n) => Ok(n),
        _ => Err(format!("{s:?}: a number of bytes from 1 to 1073741824")),
    }
}

/// `sluice doctor`: examine, print, exit with the verdict.
pub fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    use sluice_gateway::doctor::{OnPage, Options, Target, examine};
    if args.list_rules {
        print!("{}", sluice_core::doctor::Report::rules_text());
        return Ok(ExitCode::SUCCESS);
    }
    let bearer = |var: &Option<String>| -> Result<Option<(String, String)>, String> {
        let Some(var) = var else { return Ok(None) };
        match std::env::var(var) {
            Ok(token) if !token.trim().is_empty() => Ok(Some((
                "Authorization".into(),
                format!("Bearer {}", token.trim()),
            ))),
            _ => Err(format!(
                "sluice doctor: ${var} is not set (it holds the bearer token)"
            )),
        }
    };
    let (first, second) = match (bearer(&args.bearer_env), bearer(&args.second_bearer_env)) {
        (Ok(first), Ok(second)) => (first, second),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let mut given = Vec::new();
    for (i, h) in args.header.iter().enumerate() {
        match sluice_core::headers::name_value(h) {
            Some(header) => given.push(header),
            // The value is never printed: it may be a credential.
            _ => {
                eprintln!("sluice doctor: --header number {} is not NAME:VALUE", i + 1);
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    let mut headers = given.clone();
    headers.extend(first);
    // The second principal sends the same headers, with its own token.
    let second_headers = second.map(|token| {
        let mut h: Vec<(String, String)> = given
            .iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("authorization"))
            .cloned()
            .collect();
        h.push(token);
        h
    });
    if let Some(path) = &args.config {
        let config = match read_config(path, false) {
            Ok(config) => config,
            Err(problems) => {
                for p in &problems {
                    eprintln!("{p}");
                }
                return Ok(ExitCode::from(EXIT_CONFIG));
            }
        };
        let report = sluice_core::doctor::sandboxing::report(path.display().to_string(), &config);
        return print_report(&args, &report);
    }
    let target = match args.target.as_slice() {
        [url] if url.starts_with("http://") || url.starts_with("https://") => {
            Target::Http { url: url.clone() }
        }
        [command, rest @ ..] => Target::Stdio {
            command: command.clone(),
            args: rest.to_vec(),
        },
        [] => {
            eprintln!("sluice doctor: name a URL, or `-- COMMAND ARGS...`");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let manifest = match &args.manifest {
        None => None,
        Some(path) => {
            let text = match std::fs::read_to_string(path) {
                Ok(text) => text,
                Err(e) => {
                    eprintln!("sluice doctor: cannot read {}: {e}", path.display());
                    return Ok(ExitCode::from(EXIT_USAGE));
                }
            };
            match serde_json::from_str(&text) {
                Ok(value) => Some(value),
                Err(e) => {
                    eprintln!("sluice doctor: {} is not JSON: {e}", path.display());
                    return Ok(ExitCode::from(EXIT_USAGE));
                }
            }
        }
    };
    // The line names the server as the report will.
    let shown = match &target {
        Target::Http { url } => url.clone(),
        Target::Stdio { command, .. } => command.clone(),
    };
    let progress = Arc::new(std::sync::Mutex::new(progress::ReadProgress::start(
        std::slice::from_ref(&shown),
    )));
    let on_page = {
        let progress = Arc::clone(&progress);
        move |so_far| {
            if let Ok(mut progress) = progress.lock() {
                progress.heard(sluice_gateway::gateway::ReadEvent::Page(&shown, so_far));
            }
        }
    };
    let options = Options {
        target,
        allow_calls: args.allow_calls,
        allow_load: args.allow_load,
        headers,
        second_headers,
        manifest,
        read_budget: args.read_budget,
        timeout: args.timeout,
        budget: args.budget,
        on_page: OnPage::new(on_page),
    };
    let report = runtime()?.block_on(examine(&options));
    drop(options);
    if let Some(progress) = Arc::into_inner(progress).and_then(|p| p.into_inner().ok()) {
        progress.finish();
    }
    print_report(&args, &report)
}

/// Prints `report` as `args` ask, and exits with its verdict.
fn print_report(
    args: &DoctorArgs,
    report: &sluice_core::doctor::Report,
) -> anyhow::Result<ExitCode> {
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        print!("{}", report.to_text());
    }
    if let Some(path) = &args.sarif {
        let sarif = serde_json::to_string_pretty(&report.to_sarif())?;
        std::fs::write(path, sarif + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::from(report.exit_code()))
}
