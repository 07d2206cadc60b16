//! The recent calls the console's metrics page reads
//! ([`sluice_core::console::rates`]): one small sample per answered
//! request, kept for the longest window shown and never more than
//! [`MAX_SAMPLES`], so memory stays flat under any load (at a rate higher
//! than the cap over the window, the older part of the window is lost).

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use sluice_core::console::{CallSample, RATE_WINDOWS_MS};

/// The most samples kept.
pub const MAX_SAMPLES: usize = 50_000;

/// The samples of recent calls, oldest first.
#[derive(Debug, Default)]
pub struct RecentCalls(Mutex<VecDeque<CallSample>>);

impl RecentCalls {
    /// Remembers one answered request; forgets what is older than the
    /// longest window, and the oldest past the cap.
    pub(crate) fn push(&self, sample: CallSample) {
        let longest = RATE_WINDOWS_MS.iter().copied().max().unwrap_or_default();
        let mut samples = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let since = sample.at_ms.saturating_sub(longest);
        while samples.front().is_some_and(|s| s.at_ms < since) || samples.len() >= MAX_SAMPLES {
            samples.pop_front();
        }
        samples.push_back(sample);
    }

    /// Runs `with` over the samples held.
    pub(crate) fn with<T>(&self, with: impl FnOnce(&VecDeque<CallSample>) -> T) -> T {
        with(&self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ms: u64) -> CallSample {
        CallSample {
            at_ms,
            upstream: Some("time".into()),
            duration_us: 1,
            ok: true,
        }
    }

    #[test]
    fn old_samples_and_those_past_the_cap_are_forgotten() {
        let recent = RecentCalls::default();
        recent.push(sample(1_000));
        recent.push(sample(2_000));
        recent.push(sample(1_000 + 300_000 + 500));
        assert_eq!(
            recent.with(|s| s.iter().map(|s| s.at_ms).collect::<Vec<_>>()),
            [2_000, 301_500]
        );
        for i in 0..MAX_SAMPLES + 10 {
            recent.push(sample(400_000 + i as u64 / 1000));
        }
        assert_eq!(recent.with(VecDeque::len), MAX_SAMPLES);
    }
}
