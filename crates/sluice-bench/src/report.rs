//! The result of a run, as text or as one JSON object.

use std::fmt::Write as _;

use serde::Serialize;

use crate::phase::Stats;

/// Latency percentiles and mean, in milliseconds (microsecond resolution).
#[derive(Debug, Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

/// The report: what was measured and what came out.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The URL, or the command line.
    pub target: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// `modern` or `legacy`.
    pub era: &'static str,
    pub connections: usize,
    pub concurrency: usize,
    /// Measured calls that finished (`ok + errors`).
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    /// Wall-clock time of the measured run.
    pub seconds: f64,
    pub throughput_rps: f64,
    pub latency_ms: Latency,
}

/// Rounds to `digits` decimals (for a readable JSON report).
fn round(value: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (value * scale).round() / scale
}

/// Microseconds to milliseconds.
fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

impl Report {
    /// The report of a measured run of `seconds` that produced `stats`.
    pub fn new(
        target: String,
        transport: &'static str,
        era: &'static str,
        connections: usize,
        concurrency: usize,
        stats: &Stats,
        seconds: f64,
    ) -> Report {
        let h = &stats.hist;
        let latency_ms = if h.is_empty() {
            Latency {
                p50: 0.0,
                p90: 0.0,
                p99: 0.0,
                max: 0.0,
                mean: 0.0,
            }
        } else {
            Latency {
                p50: ms(h.value_at_quantile(0.50)),
                p90: ms(h.value_at_quantile(0.90)),
                p99: ms(h.value_at_quantile(0.99)),
                max: ms(h.max()),
                mean: round(h.mean() / 1000.0, 3),
            }
        };
        let requests = stats.requests();
        let throughput_rps = if seconds > 0.0 {
            round(requests as f64 / seconds, 1)
        } else {
            0.0
        };
        Report {
            target,
            transport,
            era,
            connections,
            concurrency,
            requests,
            ok: stats.ok,
            errors: stats.errors,
            seconds: round(seconds, 6),
            throughput_rps,
            latency_ms,
        }
    }

    /// One JSON object.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// A few aligned lines for people.
    pub fn to_text(&self) -> String {
        let l = &self.latency_ms;
        let mut out = String::new();
        let _ = writeln!(out, "target       {}", self.target);
        let _ = writeln!(out, "transport    {}, {} era", self.transport, self.era);
        let _ = writeln!(
            out,
            "load         {} connection(s), {} in flight",
            self.connections, self.concurrency
        );
        let _ = writeln!(
            out,
            "requests     {} (ok {}, errors {}) in {:.3} s",
            self.requests, self.ok, self.errors, self.seconds
        );
        let _ = writeln!(out, "throughput   {:.1} req/s", self.throughput_rps);
        let _ = writeln!(
            out,
            "latency ms   p50 {:.3}  p90 {:.3}  p99 {:.3}  max {:.3}  mean {:.3}",
            l.p50, l.p90, l.p99, l.max, l.mean
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn json_has_the_documented_fields() {
        let mut stats = Stats::new(Duration::from_secs(30));
        for us in [100, 200, 300, 400, 5000] {
            stats.answered(true, Duration::from_micros(us));
        }
        stats.failed();
        let r = Report::new("x".into(), "stdio", "modern", 2, 8, &stats, 0.5);
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).expect("json");
        let keys: Vec<&str> = v
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "target",
                "transport",
                "era",
                "connections",
                "concurrency",
                "requests",
                "ok",
                "errors",
                "seconds",
                "throughput_rps",
                "latency_ms"
            ]
        );
        assert_eq!(v["requests"], 6);
        assert_eq!(v["errors"], 1);
        assert_eq!(v["throughput_rps"].as_f64(), Some(12.0));
        let l = &v["latency_ms"];
        let p = |k: &str| l[k].as_f64().expect("number");
        assert!(p("p50") <= p("p90") && p("p90") <= p("p99") && p("p99") <= p("max"));
        assert!((p("max") - 5.0).abs() < 0.01);
        assert!(r.to_text().contains("errors 1"));
    }

    #[test]
    fn no_answers_no_latency() {
        let r = Report::new(
            "x".into(),
            "http",
            "legacy",
            1,
            1,
            &Stats::new(Duration::from_secs(30)),
            0.0,
        );
        assert_eq!(r.latency_ms.max, 0.0);
        assert_eq!(r.throughput_rps, 0.0);
    }
}
