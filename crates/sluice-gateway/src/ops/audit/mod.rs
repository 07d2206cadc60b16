//! The audit log: one row per decision (`sluice_core::audit::AuditRecord`),
//! kept in SQLite or PostgreSQL ([`AuditStore`]).
//!
//! A request never waits on the database: [`AuditLog::record`] only
//! queues the row (a full queue drops it, counted in the metrics). One
//! writer task takes rows off the queue and writes them in batches of up
//! to [`MAX_BATCH`] rows, each one transaction, waiting at most [`LINGER`]
//! for a batch to fill. It also deletes the rows older than the
//! retention, hourly. [`AuditLog::close`] writes what is queued and stops.

mod store;

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_core::audit::AuditRecord;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

pub use store::AuditStore;

use super::metrics;

/// The SQLite file's name in `[state] dir`.
pub const SQLITE_FILE: &str = "audit.db";
/// The most rows one transaction writes.
pub const MAX_BATCH: usize = 500;
/// The longest a row waits for its batch to fill.
pub const LINGER: Duration = Duration::from_millis(200);
/// Rows waiting for the writer; beyond this, rows are dropped (and
/// counted) rather than slowing requests while the database is slow.
const QUEUE_ROWS: usize = 16_384;
/// How often rows past the retention are deleted.
const PRUNE_EVERY: Duration = Duration::from_secs(3_600);
/// At most one log line about store failures per this long.
const FAILURE_LOG_EVERY: Duration = Duration::from_secs(60);

/// Where audit rows go. Recording never waits: a request is never slowed
/// or failed by its audit row (rows that cannot be queued are counted as
/// dropped in the metrics).
pub trait AuditSink: Send + Sync {
    /// Queues one row.
    fn record(&self, record: AuditRecord);
}

/// What went wrong with the audit database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// It could not be opened or reached.
    #[error("cannot open {what}: {source}")]
    Open {
        /// Which database (never a URL: it may hold a password).
        what: String,
        /// Why.
        source: sqlx::Error,
    },
    /// Its schema could not be brought up to date.
    #[error("cannot create or update the audit log's table: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A query failed.
    #[error("audit database: {0}")]
    Query(#[from] sqlx::Error),
    /// A row holds a name this sluice does not know.
    #[error(
        "the audit log holds a {column} this sluice does not know: {value:?} (written by a newer version?)"
    )]
    Unknown {
        /// The column.
        column: &'static str,
        /// Its value.
        value: String,
    },
}

/// The running audit log: the queue and its writer task.
pub struct AuditLog {
    /// The store the writer writes to, for readers (the console).
    store: AuditStore,
    queue: mpsc::Sender<AuditRecord>,
    closing: CancellationToken,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl AuditLog {
    /// Deletes the rows older than `retention`, then starts the writer.
    /// Fails when the first deletion does (the database is not usable).
    pub async fn start(store: AuditStore, retention: Duration) -> Result<AuditLog, StoreError> {
        store.delete_before(cutoff_ms(retention)).await?;
        Ok(AuditLog::spawn(store, retention, QUEUE_ROWS))
    }

    fn spawn(store: AuditStore, retention: Duration, capacity: usize) -> AuditLog {
        let (queue, rows) = mpsc::channel(capacity);
        let closing = CancellationToken::new();
        let writer = tokio::spawn(write_rows(store.clone(), rows, closing.clone(), retention));
        AuditLog {
            store,
            queue,
            closing,
            writer: Mutex::new(Some(writer)),
        }
    }

    /// The store rows are written to, to read them back.
    pub fn store(&self) -> &AuditStore {
        &self.store
    }

    /// Writes every row queued so far, then stops the writer and closes
    /// the database; rows recorded after this are dropped (and counted).
    pub async fn close(&self) {
        self.closing.cancel();
        let writer = self
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(writer) = writer
            && let Err(e) = writer.await
        {
            tracing::error!("the audit log's writer failed: {e}");
        }
    }
}

impl AuditSink for AuditLog {
    fn record(&self, record: AuditRecord) {
        if self.queue.try_send(record).is_err() {
            metrics::audit_row_dropped();
        }
    }
}

/// The writer task.
async fn write_rows(
    store: AuditStore,
    mut rows: mpsc::Receiver<AuditRecord>,
    closing: CancellationToken,
    retention: Duration,
) {
    let mut failures = Failures::default();
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut prune = tokio::time::interval_at(Instant::now() + PRUNE_EVERY, PRUNE_EVERY);
    prune.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            () = closing.cancelled() => break,
            got = rows.recv_many(&mut batch, MAX_BATCH) => {
                if got == 0 {
                    break;
                }
                fill(&mut rows, &mut batch, &closing).await;
                write(&store, &mut batch, &mut failures).await;
            }
            _ = prune.tick() => {
                if let Err(e) = store.delete_before(cutoff_ms(retention)).await {
                    failures.note(0, &e);
                }
            }
        }
    }
    // Closing: what is queued now is written before the writer stops.
    rows.close();
    while rows.recv_many(&mut batch, MAX_BATCH).await > 0 {
        write(&store, &mut batch, &mut failures).await;
    }
    failures.flush();
    store.close().await;
}

/// Adds to `batch` what arrives within [`LINGER`], up to [`MAX_BATCH`]
/// rows: a busy gateway writes fewer, larger transactions.
async fn fill(
    rows: &mut mpsc::Receiver<AuditRecord>,
    batch: &mut Vec<AuditRecord>,
    closing: &CancellationToken,
) {
    let deadline = Instant::now() + LINGER;
    while batch.len() < MAX_BATCH {
        let room = MAX_BATCH - batch.len();
        tokio::select! {
            biased;
            () = closing.cancelled() => return,
            got = rows.recv_many(batch, room) => {
                if got == 0 {
                    return;
                }
            }
            () = tokio::time::sleep_until(deadline) => return,
        }
    }
}

async fn write(store: &AuditStore, batch: &mut Vec<AuditRecord>, failures: &mut Failures) {
    if let Err(e) = store.insert(batch).await {
        for _ in 0..batch.len() {
            metrics::audit_row_dropped();
        }
        failures.note(batch.len(), &e);
    }
    batch.clear();
}

/// Store failures, logged at most once per [`FAILURE_LOG_EVERY`] with the
/// rows lost since the last line (never the rows themselves).
#[derive(Default)]
struct Failures {
    last_logged: Option<Instant>,
    rows_lost: usize,
    unlogged: usize,
}

impl Failures {
    fn note(&mut self, rows_lost: usize, error: &StoreError) {
        self.rows_lost += rows_lost;
        let due = self
            .last_logged
            .is_none_or(|at| at.elapsed() >= FAILURE_LOG_EVERY);
        if !due {
            self.unlogged += 1;
            return;
        }
        tracing::error!(
            "audit log: {error}; {} row(s) lost since the last report ({} failure(s) not logged)",
            self.rows_lost,
            self.unlogged
        );
        self.last_logged = Some(Instant::now());
        self.rows_lost = 0;
        self.unlogged = 0;
    }

    /// At shutdown: reports what the rate limit held back.
    fn flush(&self) {
        if self.unlogged > 0 || self.rows_lost > 0 {
            tracing::error!(
                "audit log: {} more store failure(s); {} row(s) lost since the last report",
                self.unlogged,
                self.rows_lost
            );
        }
    }
}

/// The time before which rows are past `retention`, now.
fn cutoff_ms(retention: Duration) -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    now.saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use sluice_core::audit::{AuditQuery, AuditRow, Decision, RowKey, SizeBucket};

    fn record(i: i64, time_ms: i64) -> AuditRecord {
        let decision = Decision::ALL[usize::try_from(i).unwrap() % Decision::ALL.len()];
        AuditRecord {
            time_ms,
            principal: format!("p{}", i % 3),
            view: (i % 3 == 1).then(|| format!("v{}", i % 2)),
            method: "tools/call".into(),
            upstream: (i % 4 != 0).then(|| format!("up{}", i % 2)),
            target: (i % 5 != 0).then(|| format!("up__tool{i}")),
            decision,
            code: (decision != Decision::Ok).then_some(-32_000 - i),
            duration_us: i * 7,
            size: (i % 2 == 0).then(|| SizeBucket::of(usize::try_from(i).unwrap() * 100)),
        }
    }

    async fn sqlite(dir: &tempfile::TempDir) -> AuditStore {
        AuditStore::open_sqlite(&dir.path().join(SQLITE_FILE))
            .await
            .unwrap()
    }

    async fn all(store: &AuditStore) -> Vec<AuditRow> {
        let query = AuditQuery {
            since_ms: None,
            upstream: None,
            decision: None,
            view: None,
            before: None,
            limit: usize::MAX,
        };
        store.read(&query).await.unwrap()
    }

    #[tokio::test]
    async fn rows_are_written_in_batches_and_read_back_filtered_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::start(sqlite(&dir).await, Duration::from_secs(3_600))
            .await
            .unwrap();
        let now = cutoff_ms(Duration::ZERO);
        // More than one batch; times repeat so ids break ties.
        let records: Vec<AuditRecord> = (0..1_234)
            .map(|i| record(i, now - 1_000 + i % 50))
            .collect();
        for r in &records {
            log.record(r.clone());
        }
        log.close().await;
        let store = sqlite(&dir).await;
        let stored = all(&store).await;
        assert_eq!(stored.len(), records.len());
        let mut by_id = stored.clone();
        by_id.sort_by_key(|r| r.id);
        let written: Vec<AuditRecord> = by_id.into_iter().map(|r| r.record).collect();
        assert_eq!(written, records, "every field round-trips, in queue order");
        let queries = [
            (Some(now - 980), None, None, None, None, 40),
            (None, Some("up1"), None, None, None, 1_000),
            (None, None, Some(Decision::RateLimited), None, None, 7),
            (None, None, None, Some("v1"), None, 1_000),
            (
                Some(now - 995),
                Some("up1"),
                Some(Decision::ToolError),
                None,
                Some(RowKey {
                    time_ms: now - 960,
                    id: 900,
                }),
                1_000,
            ),
        ];
        for (since_ms, upstream, decision, view, before, limit) in queries {
            let query = AuditQuery {
                since_ms,
                upstream: upstream.map(str::to_owned),
                decision,
                view: view.map(str::to_owned),
                before,
                limit,
            };
            let mut expected: Vec<AuditRow> = stored
                .iter()
                .filter(|r| query.matches(r))
                .cloned()
                .collect();
            expected.sort_by_key(|r| std::cmp::Reverse(r.key()));
            expected.truncate(limit);
            assert!(!expected.is_empty(), "{query:?} selects something");
            assert_eq!(store.read(&query).await.unwrap(), expected, "{query:?}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_full_queue_drops_rows_instead_of_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::spawn(sqlite(&dir).await, Duration::from_secs(3_600), 4);
        // The writer cannot run before this test yields: 4 fit, 6 do not.
        for i in 0..10 {
            log.record(record(i, 1_000 + i));
        }
        log.close().await;
        let stored = all(&sqlite(&dir).await).await;
        let times: Vec<i64> = stored.iter().map(|r| r.record.time_ms).collect();
        assert_eq!(times, [1_003, 1_002, 1_001, 1_000]);
        // Closed: later rows are dropped, never written.
        log.record(record(11, 2_000));
        assert_eq!(all(&sqlite(&dir).await).await.len(), 4);
    }

    #[tokio::test]
    async fn rows_past_the_retention_are_deleted_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let store = sqlite(&dir).await;
        let now = cutoff_ms(Duration::ZERO);
        let hour = 3_600_000;
        store
            .insert(&[
                record(1, now - 3 * hour),
                record(2, now - hour - 60_000),
                record(3, now - hour + 60_000),
                record(4, now),
            ])
            .await
            .unwrap();
        let log = AuditLog::start(store, Duration::from_secs(3_600))
            .await
            .unwrap();
        log.close().await;
        let kept: Vec<i64> = all(&sqlite(&dir).await)
            .await
            .iter()
            .map(|r| r.record.duration_us / 7)
            .collect();
        assert_eq!(kept, [4, 3]);
    }

    #[tokio::test]
    async fn an_unwritable_place_is_an_error_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let inside_a_file = dir.path().join("file");
        std::fs::write(&inside_a_file, "x").unwrap();
        let e = AuditStore::open_sqlite(&inside_a_file.join(SQLITE_FILE))
            .await
            .err()
            .unwrap();
        assert!(
            e.to_string().starts_with(&format!(
                "cannot open the SQLite file {}/file/audit.db: ",
                dir.path().display()
            )),
            "{e}"
        );
        let e = AuditStore::open_postgres("postgres://sluice:pw-not-shown@127.0.0.1:1/audit")
            .await
            .err()
            .unwrap();
        let text = e.to_string();
        assert!(
            text.starts_with("cannot open the PostgreSQL database of [state] url: "),
            "{text}"
        );
        assert!(!text.contains("pw-not-shown"), "{text}");
    }
}
