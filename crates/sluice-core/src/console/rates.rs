//! The metrics page's numbers: calls per second, errors and latency
//! quantiles per upstream, over the last minutes, from the samples of
//! recent calls the gateway keeps (the Prometheus registry holds totals
//! and buckets since start, not a recent window).

/// One answered request, as the gateway remembers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSample {
    /// When it arrived (ms since the Unix epoch).
    pub at_ms: u64,
    /// The upstream it was routed to (`None`: refused before routing, or
    /// answered by sluice itself).
    pub upstream: Option<String>,
    /// Arrival to answer, in microseconds.
    pub duration_us: u64,
    /// Whether the decision was `ok`.
    pub ok: bool,
}

/// The windows the metrics page shows: the last minute, the last five.
pub const RATE_WINDOWS_MS: [u64; 2] = [60_000, 300_000];

/// One upstream's calls over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamRates {
    /// The upstream (`-` for requests routed to none).
    pub upstream: String,
    /// Requests answered in the window.
    pub calls: usize,
    /// `calls` over the window's length.
    pub per_second: f64,
    /// Requests whose decision was not `ok`.
    pub errors: usize,
    /// The median duration, in milliseconds.
    pub p50_ms: f64,
    /// The 99th percentile duration, in milliseconds.
    pub p99_ms: f64,
}

/// The rates of the requests that arrived in the `window_ms` before `now_ms`,
/// one row per upstream, by name.
pub fn rates<'a>(
    samples: impl IntoIterator<Item = &'a CallSample>,
    now_ms: u64,
    window_ms: u64,
) -> Vec<UpstreamRates> {
    let since = now_ms.saturating_sub(window_ms);
    let mut by_upstream: std::collections::BTreeMap<&str, (Vec<u64>, usize)> =
        std::collections::BTreeMap::new();
    for s in samples {
        if s.at_ms <= since || s.at_ms > now_ms {
            continue;
        }
        let row = by_upstream
            .entry(s.upstream.as_deref().unwrap_or("-"))
            .or_default();
        row.0.push(s.duration_us);
        row.1 += usize::from(!s.ok);
    }
    by_upstream
        .into_iter()
        .map(|(upstream, (mut durations, errors))| {
            durations.sort_unstable();
            UpstreamRates {
                upstream: upstream.to_owned(),
                calls: durations.len(),
                per_second: durations.len() as f64 * 1000.0 / window_ms.max(1) as f64,
                errors,
                p50_ms: quantile(&durations, 0.50),
                p99_ms: quantile(&durations, 0.99),
            }
        })
        .collect()
}

/// The nearest-rank quantile of sorted microseconds, in milliseconds.
fn quantile(sorted_us: &[u64], q: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted_us.len() as f64).ceil() as usize;
    let i = rank.clamp(1, sorted_us.len()) - 1;
    sorted_us[i] as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_000_000;

    fn sample(ago_ms: u64, upstream: Option<&str>, duration_ms: u64, ok: bool) -> CallSample {
        CallSample {
            at_ms: NOW - ago_ms,
            upstream: upstream.map(str::to_owned),
            duration_us: duration_ms * 1000,
            ok,
        }
    }

    #[test]
    fn rates_count_the_window_only_per_upstream() {
        let mut samples: Vec<CallSample> = (1..=100)
            .map(|i| sample(i * 100, Some("time"), i, i % 10 != 0))
            .collect();
        samples.push(sample(500, None, 1, false));
        samples.push(sample(120_000, Some("time"), 9999, true));
        let minute = rates(&samples, NOW, 60_000);
        assert_eq!(minute.len(), 2);
        let none = &minute[0];
        assert_eq!(
            (none.upstream.as_str(), none.calls, none.errors),
            ("-", 1, 1)
        );
        let time = &minute[1];
        assert_eq!(time.upstream, "time");
        assert_eq!(time.calls, 100);
        assert_eq!(time.errors, 10);
        assert!((time.per_second - 100.0 / 60.0).abs() < 1e-9);
        assert_eq!(time.p50_ms, 50.0);
        assert_eq!(time.p99_ms, 99.0);
        let five = rates(&samples, NOW, 300_000);
        assert_eq!(
            five[1].calls, 101,
            "the older call is in the 5-minute window"
        );
        assert_eq!(five[1].p99_ms, 100.0);
    }

    #[test]
    fn no_samples_no_rows() {
        assert!(rates(&[], NOW, 60_000).is_empty());
        assert_eq!(quantile(&[], 0.5), 0.0);
        assert_eq!(quantile(&[3000], 0.99), 3.0);
    }
}
