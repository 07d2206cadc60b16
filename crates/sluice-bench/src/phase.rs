//! What a phase (probe, warmup, measured run) may issue, and what it observed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

/// The smallest top of the histogram's range, in microseconds.
const MIN_RANGE_US: u64 = 1_000;

/// How many calls a phase may start, shared by every connection (and every HTTP worker) of
/// the run: whoever has a free slot claims the next call, so a slow connection does not hold
/// back the others' share.
#[derive(Debug)]
pub enum Phase {
    /// At most this many calls in all.
    Calls { issued: AtomicU64, total: u64 },
    /// Any number of calls started before the deadline.
    Until(Instant),
}

impl Phase {
    /// A phase of `total` calls.
    pub fn calls(total: u64) -> Phase {
        Phase::Calls {
            issued: AtomicU64::new(0),
            total,
        }
    }

    /// Claims one call, started at `now`; `false` once the phase is over.
    #[inline]
    pub fn claim(&self, now: Instant) -> bool {
        match self {
            // Relaxed: the counter only hands out tickets, it orders nothing else.
            Phase::Calls { issued, total } => issued.fetch_add(1, Ordering::Relaxed) < *total,
            Phase::Until(deadline) => now < *deadline,
        }
    }
}

/// What one connection (or all of them, merged) observed in a phase.
#[derive(Debug)]
pub struct Stats {
    /// Latencies of answered calls (successes and error answers), in microseconds.
    pub hist: Histogram<u64>,
    /// Calls answered with a result that is not `isError: true`.
    pub ok: u64,
    /// Calls answered with an error, timed out, or lost with their connection.
    pub errors: u64,
    /// The first error, described (for the operator).
    pub first_error: Option<String>,
    /// Why a connection stopped serving, if one did.
    pub lost: Option<String>,
}

impl Stats {
    /// Empty statistics for calls that take at most `longest` (the call timeout; a longer
    /// latency is recorded as `longest`). Every `Stats` of a run must use the same `longest`,
    /// so that they merge.
    pub fn new(longest: Duration) -> Stats {
        let top = u64::try_from(longest.as_micros())
            .unwrap_or(u64::MAX / 2)
            .max(MIN_RANGE_US);
        Stats {
            // 3 significant digits: 0.1% resolution at any latency, in memory that grows with
            // the log of the range (about 128 KiB for 30 s).
            hist: Histogram::new_with_max(top, 3)
                .expect("3 significant figures and a max above 2 are valid bounds"),
            ok: 0,
            errors: 0,
            first_error: None,
            lost: None,
        }
    }

    /// An answer arrived `latency` after its request was sent.
    #[inline]
    pub fn answered(&mut self, ok: bool, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.hist.saturating_record(us);
        if ok {
            self.ok += 1;
        } else {
            self.errors += 1;
        }
    }

    /// A call that got no answer (timeout, lost connection, transport error).
    pub fn failed(&mut self) {
        self.errors += 1;
    }

    /// Keeps `why` if it is the first error seen.
    pub fn note_error(&mut self, why: impl FnOnce() -> String) {
        if self.first_error.is_none() {
            self.first_error = Some(why());
        }
    }

    /// Calls that finished (answered or failed).
    pub fn requests(&self) -> u64 {
        self.ok + self.errors
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: Stats) {
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.hist.add(&other.hist);
        self.ok += other.ok;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        if self.lost.is_none() {
            self.lost = other.lost;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONGEST: Duration = Duration::from_secs(30);

    #[test]
    fn a_call_budget_hands_out_exactly_its_calls() {
        let phase = Phase::calls(3);
        let now = Instant::now();
        let claimed = (0..10).filter(|_| phase.claim(now)).count();
        assert_eq!(claimed, 3);
    }

    #[test]
    fn a_deadline_stops_claims() {
        let now = Instant::now();
        let phase = Phase::Until(now + Duration::from_secs(1));
        assert!(phase.claim(now));
        assert!(!phase.claim(now + Duration::from_secs(2)));
    }

    #[test]
    fn merge_adds_counts_and_latencies() {
        let mut a = Stats::new(LONGEST);
        a.answered(true, Duration::from_micros(100));
        let mut b = Stats::new(LONGEST);
        b.answered(false, Duration::from_micros(300));
        b.failed();
        b.note_error(|| "boom".into());
        a.merge(b);
        assert_eq!((a.ok, a.errors, a.requests()), (1, 2, 3));
        assert_eq!(a.hist.len(), 2);
        assert_eq!(a.first_error.as_deref(), Some("boom"));
        assert!(a.hist.max() >= 300);
    }

    #[test]
    fn latencies_beyond_the_range_are_clamped() {
        let mut s = Stats::new(Duration::from_millis(10));
        s.answered(true, Duration::from_secs(5));
        assert_eq!(s.hist.len(), 1);
        assert!(s.hist.max() < 20_000, "{}", s.hist.max());
    }
}
