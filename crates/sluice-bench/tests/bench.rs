//! Runs the `sluice-bench` binary against `sluice-fixture` (the repo's test server) on both
//! transports and both eras, and checks the report's counts and shape. No timing assertions:
//! the numbers depend on the machine.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

/// `sluice-fixture`, beside the bench binary; built (`cargo build -p sluice-testkit`) if a
/// crate-only test run did not build it.
fn fixture() -> PathBuf {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_sluice-bench"));
    let path = bench.with_file_name("sluice-fixture");
    if !path.exists() {
        let profile_dir = bench.parent().expect("target profile directory");
        let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        build.args(["build", "-p", "sluice-testkit"]);
        if profile_dir.ends_with("release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "cargo build -p sluice-testkit failed");
    }
    assert!(path.exists(), "{} is missing", path.display());
    path
}

/// `sluice-fixture --http 0`, killed when dropped.
struct HttpFixture {
    child: Child,
    url: String,
}

impl HttpFixture {
    fn start() -> HttpFixture {
        let mut child = Command::new(fixture())
            .args(["--http", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the fixture starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut lines = BufReader::new(stderr).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("the fixture printed its address")
                .expect("stderr is readable");
            if let Some(at) = line.find("listening on ") {
                break line[at + "listening on ".len()..].trim().to_owned();
            }
        };
        // Keep draining stderr so the fixture never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        HttpFixture { child, url }
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where a run goes.
enum Target<'a> {
    Stdio,
    Http(&'a str),
}

/// Runs the bench with `args` against `target`.
fn bench(target: &Target<'_>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice-bench"));
    cmd.args(args);
    match target {
        Target::Stdio => {
            cmd.arg("--").arg(fixture());
        }
        Target::Http(url) => {
            cmd.arg(url);
        }
    }
    cmd.stdin(Stdio::null())
        .output()
        .expect("sluice-bench runs")
}

/// The JSON report on stdout.
fn report(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

const LOAD: [&str; 7] = [
    "--connections",
    "2",
    "--concurrency",
    "8",
    "--requests",
    "500",
    "--json",
];

fn ms(report: &Value, key: &str) -> f64 {
    report["latency_ms"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("latency_ms.{key} is a number: {report}"))
}

/// 500 echo calls, 8 in flight over 2 connections: all succeed, and the report is coherent.
fn all_ok(target: &Target<'_>, era: &str, transport: &str) {
    let mut args = LOAD.to_vec();
    args.extend(["--era", era]);
    let out = bench(target, &args);
    let r = report(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{r}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(r["transport"], transport);
    assert_eq!(r["era"], era);
    assert_eq!(r["connections"], 2);
    assert_eq!(r["concurrency"], 8);
    assert_eq!(r["requests"], 500);
    assert_eq!(r["ok"], 500);
    assert_eq!(r["errors"], 0);
    assert!(r["seconds"].as_f64().is_some_and(|s| s > 0.0), "{r}");
    assert!(r["throughput_rps"].as_f64().is_some_and(|t| t > 0.0), "{r}");
    let (p50, p90, p99, max) = (ms(&r, "p50"), ms(&r, "p90"), ms(&r, "p99"), ms(&r, "max"));
    assert!(
        p50 <= p90 && p90 <= p99 && p99 <= max,
        "percentiles out of order: {r}"
    );
    let mean = ms(&r, "mean");
    assert!(mean > 0.0 && mean <= max, "{r}");
}

#[test]
fn stdio_modern() {
    all_ok(&Target::Stdio, "modern", "stdio");
}

#[test]
fn stdio_legacy() {
    all_ok(&Target::Stdio, "legacy", "stdio");
}

#[test]
fn http_modern() {
    let fx = HttpFixture::start();
    all_ok(&Target::Http(&fx.url), "modern", "http");
}

#[test]
fn http_legacy() {
    let fx = HttpFixture::start();
    all_ok(&Target::Http(&fx.url), "legacy", "http");
}

/// `echo` needs `text`: with `--args '{}'` every call is an error answer, and the exit is 1.
fn all_errors(target: &Target<'_>) {
    let mut args = LOAD.to_vec();
    args.extend(["--args", "{}"]);
    let out = bench(target, &args);
    let r = report(&out);
    assert_eq!(out.status.code(), Some(1), "{r}");
    assert_eq!(r["ok"], 0);
    assert_eq!(r["errors"], r["requests"]);
    assert_eq!(r["errors"], 500);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing string argument"), "{stderr}");
}

#[test]
fn stdio_every_call_an_error() {
    all_errors(&Target::Stdio);
}

#[test]
fn http_every_call_an_error() {
    let fx = HttpFixture::start();
    all_errors(&Target::Http(&fx.url));
}

#[test]
fn tools_list_and_a_duration() {
    let fx = HttpFixture::start();
    let out = bench(
        &Target::Http(&fx.url),
        &["--method", "tools/list", "--duration", "300ms", "--json"],
    );
    let r = report(&out);
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(r["errors"], 0);
    assert_eq!(r["ok"], r["requests"]);

    let out = bench(
        &Target::Stdio,
        &[
            "--method",
            "tools/list",
            "--era",
            "legacy",
            "--requests",
            "50",
            "--json",
        ],
    );
    let r = report(&out);
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(r["ok"], 50);
}

#[test]
fn text_report() {
    let out = bench(&Target::Stdio, &["--requests", "20", "--warmup", "0"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("requests     20 (ok 20, errors 0)"), "{text}");
    assert!(text.contains("latency ms   p50 "), "{text}");
}

#[test]
fn nothing_to_connect_to_exits_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice-bench"))
        .args(["--", "/nonexistent/sluice-bench-server"])
        .output()
        .expect("sluice-bench runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("could not connect"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_server_that_never_answers_is_not_connected() {
    // The fixture's `hang` tool never answers: the probe call times out.
    let out = bench(
        &Target::Stdio,
        &["--tool", "hang", "--args", "{}", "--timeout", "300ms"],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no answer within"), "{stderr}");
}
