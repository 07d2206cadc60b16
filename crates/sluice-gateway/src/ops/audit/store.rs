//! The audit log's database: SQLite (a file in `[state] dir`) or
//! PostgreSQL, one table, the same SQL for both (`$N` placeholders work in
//! either).

use std::path::Path;
use std::time::Duration;

use sluice_core::audit::{AuditQuery, AuditRecord, AuditRow, Decision, SizeBucket};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{
    AssertSqlSafe, ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Postgres,
    QueryBuilder, Row, SqlSafeStr, Sqlite, Type,
};

use super::StoreError;

/// How long a write waits for another SQLite connection's lock.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long opening waits for a PostgreSQL connection.
const PG_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

const COLUMNS: &str =
    "time_ms, principal, view, method, upstream, target, decision, code, duration_us, size";

/// An open audit database (a clone shares its pool).
#[derive(Clone)]
pub enum AuditStore {
    /// The embedded default.
    Sqlite(Store<Sqlite>),
    /// `[state] url = "postgres://..."`.
    Postgres(Store<Postgres>),
}

/// One database's pool; the queries are the same for both.
pub struct Store<DB: Database> {
    pool: Pool<DB>,
}

impl<DB: Database> Clone for Store<DB> {
    fn clone(&self) -> Self {
        Store {
            pool: self.pool.clone(),
        }
    }
}

impl AuditStore {
    /// Opens (creating it if missing) the SQLite file at `path`, in WAL
    /// mode, and brings its schema up to date.
    pub async fn open_sqlite(path: &Path) -> Result<AuditStore, StoreError> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL with NORMAL loses at most the last commits on power loss,
            // never consistency; FULL would fsync every batch.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(SQLITE_BUSY_TIMEOUT);
        let open_error = |source| StoreError::Open {
            what: format!("the SQLite file {}", path.display()),
            source,
        };
        let pool = SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(options)
            .await
            .map_err(open_error)?;
        migrator([
            include_str!("../../../migrations/sqlite/0001_audit_log.sql"),
            include_str!("../../../migrations/sqlite/0002_audit_view.sql"),
        ])
        .run(&pool)
        .await?;
        Ok(AuditStore::Sqlite(Store { pool }))
    }

    /// Connects to the PostgreSQL database at `url` and brings its schema
    /// up to date (replicas starting together take turns: sqlx locks the
    /// migration).
    pub async fn open_postgres(url: &str) -> Result<AuditStore, StoreError> {
        // The URL may hold a password: errors name the database, not it.
        let open_error = |source| StoreError::Open {
            what: "the PostgreSQL database of [state] url".into(),
            source,
        };
        let options: PgConnectOptions = url.parse().map_err(open_error)?;
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(PG_CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(open_error)?;
        migrator([
            include_str!("../../../migrations/postgres/0001_audit_log.sql"),
            include_str!("../../../migrations/postgres/0002_audit_view.sql"),
        ])
        .run(&pool)
        .await?;
        Ok(AuditStore::Postgres(Store { pool }))
    }

    /// Writes `rows` in one transaction.
    pub async fn insert(&self, rows: &[AuditRecord]) -> Result<(), StoreError> {
        match self {
            AuditStore::Sqlite(s) => s.insert(rows).await,
            AuditStore::Postgres(s) => s.insert(rows).await,
        }
    }

    /// Deletes the rows older than `cutoff_ms`; how many went.
    pub async fn delete_before(&self, cutoff_ms: i64) -> Result<u64, StoreError> {
        match self {
            AuditStore::Sqlite(s) => Ok(s.delete_before(cutoff_ms).await?.rows_affected()),
            AuditStore::Postgres(s) => Ok(s.delete_before(cutoff_ms).await?.rows_affected()),
        }
    }

    /// The rows `query` asks for, newest first.
    pub async fn read(&self, query: &AuditQuery) -> Result<Vec<AuditRow>, StoreError> {
        match self {
            AuditStore::Sqlite(s) => s.read(query).await,
            AuditStore::Postgres(s) => s.read(query).await,
        }
    }

    /// Closes the pool (SQLite checkpoints its WAL on the last close).
    pub async fn close(&self) {
        match self {
            AuditStore::Sqlite(s) => s.pool.close().await,
            AuditStore::Postgres(s) => s.pool.close().await,
        }
    }
}

/// What each migration does, in order (version 1 first).
const MIGRATIONS: [&str; 2] = ["audit log", "audit view"];

/// The migrations, embedded from `migrations/{sqlite,postgres}/`, in
/// [`MIGRATIONS`] order: a database an older sluice made gets the ones it
/// lacks.
fn migrator(schemas: [&'static str; MIGRATIONS.len()]) -> Migrator {
    Migrator::with_migrations(
        (1..)
            .zip(MIGRATIONS.iter().zip(schemas))
            .map(|(version, (what, schema))| {
                Migration::new(
                    version,
                    (*what).into(),
                    MigrationType::Simple,
                    AssertSqlSafe(schema).into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}

impl<DB> Store<DB>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB> + Default,
    for<'t> i64: Encode<'t, DB> + Decode<'t, DB> + Type<DB>,
    for<'t> &'t str: Encode<'t, DB> + Type<DB>,
    for<'t> Option<&'t str>: Encode<'t, DB>,
    for<'t> Option<i64>: Encode<'t, DB>,
    for<'t> String: Decode<'t, DB> + Type<DB>,
    for<'t> &'t str: ColumnIndex<DB::Row>,
{
    async fn insert(&self, rows: &[AuditRecord]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut sql = QueryBuilder::<DB>::new(format!("INSERT INTO audit_log ({COLUMNS}) "));
        sql.push_values(rows, |mut row, r| {
            row.push_bind(r.time_ms)
                .push_bind(r.principal.as_str())
                .push_bind(r.view.as_deref())
                .push_bind(r.method.as_str())
                .push_bind(r.upstream.as_deref())
                .push_bind(r.target.as_deref())
                .push_bind(r.decision.as_str())
                .push_bind(r.code)
                .push_bind(r.duration_us)
                .push_bind(r.size.map(SizeBucket::as_str));
        });
        let mut tx = self.pool.begin().await?;
        sql.build().execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn delete_before(&self, cutoff_ms: i64) -> Result<DB::QueryResult, StoreError> {
        let mut sql = QueryBuilder::<DB>::new("DELETE FROM audit_log WHERE time_ms < ");
        sql.push_bind(cutoff_ms);
        Ok(sql.build().execute(&self.pool).await?)
    }

    async fn read(&self, query: &AuditQuery) -> Result<Vec<AuditRow>, StoreError> {
        let mut sql =
            QueryBuilder::<DB>::new(format!("SELECT id, {COLUMNS} FROM audit_log WHERE 1 = 1"));
        if let Some(since) = query.since_ms {
            sql.push(" AND time_ms >= ").push_bind(since);
        }
        if let Some(upstream) = &query.upstream {
            sql.push(" AND upstream = ").push_bind(upstream.as_str());
        }
        if let Some(decision) = query.decision {
            sql.push(" AND decision = ").push_bind(decision.as_str());
        }
        if let Some(view) = &query.view {
            sql.push(" AND view = ").push_bind(view.as_str());
        }
        if let Some(before) = query.before {
            sql.push(" AND (time_ms < ")
                .push_bind(before.time_ms)
                .push(" OR (time_ms = ")
                .push_bind(before.time_ms)
                .push(" AND id < ")
                .push_bind(before.id)
                .push("))");
        }
        sql.push(" ORDER BY time_ms DESC, id DESC LIMIT ")
            .push_bind(i64::try_from(query.limit).unwrap_or(i64::MAX));
        let rows = sql.build().fetch_all(&self.pool).await?;
        rows.iter().map(audit_row::<DB>).collect()
    }
}

fn audit_row<DB>(row: &DB::Row) -> Result<AuditRow, StoreError>
where
    DB: Database,
    for<'t> i64: Decode<'t, DB> + Type<DB>,
    for<'t> String: Decode<'t, DB> + Type<DB>,
    for<'t> &'t str: ColumnIndex<DB::Row>,
{
    let decision: String = row.try_get("decision")?;
    let size: Option<String> = row.try_get("size")?;
    Ok(AuditRow {
        id: row.try_get("id")?,
        record: AuditRecord {
            time_ms: row.try_get("time_ms")?,
            principal: row.try_get("principal")?,
            view: row.try_get("view")?,
            method: row.try_get("method")?,
            upstream: row.try_get("upstream")?,
            target: row.try_get("target")?,
            decision: Decision::parse(&decision).ok_or(StoreError::Unknown {
                column: "decision",
                value: decision,
            })?,
            code: row.try_get("code")?,
            duration_us: row.try_get("duration_us")?,
            size: size
                .map(|name| {
                    SizeBucket::parse(&name).ok_or(StoreError::Unknown {
                        column: "size",
                        value: name,
                    })
                })
                .transpose()?,
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn record(view: Option<&str>, time_ms: i64) -> AuditRecord {
        AuditRecord {
            time_ms,
            principal: "local".into(),
            view: view.map(str::to_owned),
            method: "tools/call".into(),
            upstream: Some("fx".into()),
            target: Some("fx__echo".into()),
            decision: Decision::Ok,
            code: None,
            duration_us: 5,
            size: Some(SizeBucket::Under1K),
        }
    }

    fn query(view: Option<&str>) -> AuditQuery {
        AuditQuery {
            since_ms: None,
            upstream: None,
            decision: None,
            view: view.map(str::to_owned),
            before: None,
            limit: 10,
        }
    }

    #[tokio::test]
    async fn an_audit_db_made_before_views_opens_and_gains_the_view_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(super::super::SQLITE_FILE);
        // What a sluice without views left: migration 1 only, and a row.
        let pool = SqlitePoolOptions::new()
            .connect_with(
                SqliteConnectOptions::new()
                    .filename(&path)
                    .create_if_missing(true),
            )
            .await
            .unwrap();
        let mut older = migrator([
            include_str!("../../../migrations/sqlite/0001_audit_log.sql"),
            include_str!("../../../migrations/sqlite/0002_audit_view.sql"),
        ]);
        older.migrations = older.migrations[..1].to_vec().into();
        older.run(&pool).await.unwrap();
        sqlx::query(
            "INSERT INTO audit_log (time_ms, principal, method, upstream, target, decision, code, duration_us, size) \
             VALUES (1000, 'local', 'tools/call', 'fx', 'fx__echo', 'ok', NULL, 5, '<1KiB')",
        )
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;

        let store = AuditStore::open_sqlite(&path).await.unwrap();
        store
            .insert(&[record(Some("narrow"), 2_000)])
            .await
            .unwrap();
        let all = store.read(&query(None)).await.unwrap();
        let records: Vec<AuditRecord> = all.into_iter().map(|r| r.record).collect();
        assert_eq!(
            records,
            [record(Some("narrow"), 2_000), record(None, 1_000)],
            "the old row has no view, the new one its view"
        );
        let through = store.read(&query(Some("narrow"))).await.unwrap();
        assert_eq!(through.len(), 1);
        assert_eq!(through[0].record.time_ms, 2_000);
        store.close().await;
        // Opening it again applies nothing twice.
        let again = AuditStore::open_sqlite(&path).await.unwrap();
        assert_eq!(again.read(&query(None)).await.unwrap().len(), 2);
        again.close().await;
    }
}
