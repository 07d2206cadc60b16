//! Long CPU work on a large message, without stalling the tasks that share
//! its worker thread.
//!
//! A walk of a 14 MiB answer takes hundreds of milliseconds; run on a
//! runtime worker as it is, every task queued behind it on that worker (the
//! other upstreams' calls) waits as long. `block_in_place` hands the worker's
//! queue to another thread first.

use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `work`, which may take long, off the worker's queue: on a
/// multi-threaded runtime (`sluice serve`) the worker's other tasks move to
/// another thread meanwhile; elsewhere (a single-threaded test runtime) it
/// runs in place.
pub(crate) fn heavy<T>(work: impl FnOnce() -> T) -> T {
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}
