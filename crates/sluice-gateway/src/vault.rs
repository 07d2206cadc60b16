//! The vault: sluice's OAuth logins to upstreams, kept in the state store
//! (`vault.db` in `[state] dir`, or the PostgreSQL database of
//! `[state] url`), one sealed row per principal and upstream.
//!
//! A row holds a [`LoginRecord`] sealed with XChaCha20-Poly1305 under the
//! vault key (`[state] vault_key`, else `vault.key` in the state
//! directory), so that a copy of the database gives away no token. The key
//! path of the row is sealed inside the record too: a row moved under
//! another principal or upstream does not open there. After a key rotation
//! (`vault_previous_key`), old rows still open and are sealed anew when
//! next written.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use sluice_core::seal::{SealKey, secret_from_passphrase};
use sluice_core::upstream_auth::{LoginRecord, VaultKey};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{
    AssertSqlSafe, Database, Decode, Encode, Executor, IntoArguments, Pool, Postgres, Row,
    SqlSafeStr, Sqlite, Type,
};

/// How long a write waits for another SQLite connection's lock (a
/// `sluice login` beside a serving sluice).
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long opening waits for a PostgreSQL connection.
const PG_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Its own migrations table, apart from the audit log's in a shared
/// PostgreSQL database.
const MIGRATIONS_TABLE: &str = "_sluice_vault_migrations";
const SEAL_PREFIX: &str = "v1.";
const SEAL_DOMAIN: &str = "sluice upstream login v1";

/// Why the vault could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// It could not be opened or reached.
    #[error("cannot open {what}: {source}")]
    Open {
        /// Which database (never a URL: it may hold a password).
        what: String,
        /// Why.
        source: sqlx::Error,
    },
    /// Its schema could not be brought up to date.
    #[error("cannot create or update the vault's table: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A query failed.
    #[error("vault database: {0}")]
    Query(#[from] sqlx::Error),
    /// A row does not open with the vault key (or the previous one).
    #[error(
        "the login of {principal:?} to {upstream:?} does not open with the vault key (was [state] vault_key changed without vault_previous_key?); run `sluice logout {upstream}` and log in again"
    )]
    Sealed {
        /// Its principal.
        principal: String,
        /// Its upstream.
        upstream: String,
    },
}

/// The keys rows are sealed with.
pub struct VaultKeys {
    current: SealKey,
    previous: Option<SealKey>,
}

impl VaultKeys {
    /// Keys from a 32-byte secret and, after a rotation, the one before.
    pub fn new(current: [u8; 32], previous: Option<[u8; 32]>) -> VaultKeys {
        let key = |secret| SealKey::new(secret, SEAL_PREFIX.to_owned(), SEAL_DOMAIN);
        VaultKeys {
            current: key(current),
            previous: previous.map(key),
        }
    }

    /// Keys from `[state] vault_key` and `vault_previous_key` passphrases.
    pub fn from_passphrases(current: &str, previous: Option<&str>) -> VaultKeys {
        VaultKeys::new(
            secret_from_passphrase(current),
            previous.map(secret_from_passphrase),
        )
    }

    fn open(&self, sealed: &str) -> Option<Value> {
        self.current
            .open(sealed)
            .ok()
            .or_else(|| self.previous.as_ref()?.open(sealed).ok())
    }
}

/// The open vault (a clone shares its pool).
#[derive(Clone)]
pub struct Vault {
    db: Db,
    keys: std::sync::Arc<VaultKeys>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let db = match self.db {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        };
        f.debug_struct("Vault")
            .field("db", &db)
            .finish_non_exhaustive()
    }
}

#[derive(Clone)]
enum Db {
    Sqlite(Pool<Sqlite>),
    Postgres(Pool<Postgres>),
}

/// One login as listed by [`Vault::list`]: its key, and the record or why
/// it does not open.
pub type Listed = (VaultKey, Result<LoginRecord, VaultError>);

impl Vault {
    /// Opens (creating it if missing) the SQLite file at `path`.
    pub async fn open_sqlite(path: &Path, keys: VaultKeys) -> Result<Vault, VaultError> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(SQLITE_BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(options)
            .await
            .map_err(|source| VaultError::Open {
                what: format!("the vault {}", path.display()),
                source,
            })?;
        migrator().run(&pool).await?;
        Ok(Vault {
            db: Db::Sqlite(pool),
            keys: std::sync::Arc::new(keys),
        })
    }

    /// Connects to the PostgreSQL database at `url`.
    pub async fn open_postgres(url: &str, keys: VaultKeys) -> Result<Vault, VaultError> {
        let open_error = |source| VaultError::Open {
            what: "the PostgreSQL database of [state] url".into(),
            source,
        };
        let options: PgConnectOptions = url.parse().map_err(open_error)?;
        let pool = PgPoolOptions::new()
            .max_connections(2)
            .acquire_timeout(PG_CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(open_error)?;
        migrator().run(&pool).await?;
        Ok(Vault {
            db: Db::Postgres(pool),
            keys: std::sync::Arc::new(keys),
        })
    }

    /// The login kept for `key`, if any.
    pub async fn load(&self, key: &VaultKey) -> Result<Option<LoginRecord>, VaultError> {
        let sealed = match &self.db {
            Db::Sqlite(p) => load(p, key).await?,
            Db::Postgres(p) => load(p, key).await?,
        };
        sealed.map(|s| self.open(key, &s)).transpose()
    }

    /// Keeps `record` (sealed with the current key) under its own key.
    pub async fn save(&self, record: &LoginRecord, now_ms: i64) -> Result<(), VaultError> {
        let value = serde_json::to_value(record).unwrap_or(Value::Null);
        let sealed = self.keys.current.seal(&value);
        match &self.db {
            Db::Sqlite(p) => save(p, record, &sealed, now_ms).await,
            Db::Postgres(p) => save(p, record, &sealed, now_ms).await,
        }
    }

    /// Forgets the login of `key`; whether there was one.
    pub async fn delete(&self, key: &VaultKey) -> Result<bool, VaultError> {
        let done = match &self.db {
            Db::Sqlite(p) => delete(p, key).await?.rows_affected(),
            Db::Postgres(p) => delete(p, key).await?.rows_affected(),
        };
        Ok(done > 0)
    }

    /// Every login kept, by principal then upstream.
    pub async fn list(&self) -> Result<Vec<Listed>, VaultError> {
        let rows = match &self.db {
            Db::Sqlite(p) => list(p).await?,
            Db::Postgres(p) => list(p).await?,
        };
        Ok(rows
            .into_iter()
            .map(|(key, sealed)| {
                let record = self.open(&key, &sealed);
                (key, record)
            })
            .collect())
    }

    fn open(&self, key: &VaultKey, sealed: &str) -> Result<LoginRecord, VaultError> {
        let record = self
            .keys
            .open(sealed)
            .and_then(|v| serde_json::from_value::<LoginRecord>(v).ok())
            .filter(|r| r.principal == key.principal && r.upstream == key.upstream);
        record.ok_or_else(|| VaultError::Sealed {
            principal: key.principal.clone(),
            upstream: key.upstream.clone(),
        })
    }
}

fn migrator() -> Migrator {
    let mut migrator = Migrator::with_migrations(vec![Migration::new(
        1,
        "upstream logins".into(),
        MigrationType::Simple,
        AssertSqlSafe(include_str!("../migrations/vault/0001_upstream_logins.sql")).into_sql_str(),
        false,
    )]);
    migrator.dangerous_set_table_name(MIGRATIONS_TABLE);
    migrator
}

async fn load<DB>(pool: &Pool<DB>, key: &VaultKey) -> Result<Option<String>, sqlx::Error>
where
    DB: Database,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'t> &'t str: Encode<'t, DB> + Type<DB>,
    for<'t> String: Decode<'t, DB> + Type<DB>,
    for<'n> &'n str: sqlx::ColumnIndex<DB::Row>,
{
    let row = sqlx::query::<DB>(
        "SELECT sealed FROM upstream_logins WHERE principal = $1 AND upstream = $2",
    )
    .bind(key.principal.as_str())
    .bind(key.upstream.as_str())
    .fetch_optional(pool)
    .await?;
    row.map(|r| r.try_get::<String, _>("sealed")).transpose()
}

async fn save<DB>(
    pool: &Pool<DB>,
    record: &LoginRecord,
    sealed: &str,
    now_ms: i64,
) -> Result<(), VaultError>
where
    DB: Database,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'t> &'t str: Encode<'t, DB> + Type<DB>,
    for<'t> i64: Encode<'t, DB> + Type<DB>,
{
    sqlx::query::<DB>(
        "INSERT INTO upstream_logins (principal, upstream, sealed, updated_ms) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (principal, upstream) DO UPDATE SET sealed = excluded.sealed, updated_ms = excluded.updated_ms",
    )
    .bind(record.principal.as_str())
    .bind(record.upstream.as_str())
    .bind(sealed)
    .bind(now_ms)
    .execute(pool)
    .await?;
    Ok(())
}

async fn delete<DB>(pool: &Pool<DB>, key: &VaultKey) -> Result<DB::QueryResult, sqlx::Error>
where
    DB: Database,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'t> &'t str: Encode<'t, DB> + Type<DB>,
{
    sqlx::query::<DB>("DELETE FROM upstream_logins WHERE principal = $1 AND upstream = $2")
        .bind(key.principal.as_str())
        .bind(key.upstream.as_str())
        .execute(pool)
        .await
}

async fn list<DB>(pool: &Pool<DB>) -> Result<Vec<(VaultKey, String)>, sqlx::Error>
where
    DB: Database,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'t> String: Decode<'t, DB> + Type<DB>,
    for<'n> &'n str: sqlx::ColumnIndex<DB::Row>,
{
    let rows = sqlx::query::<DB>(
        "SELECT principal, upstream, sealed FROM upstream_logins ORDER BY principal, upstream",
    )
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok((
                VaultKey {
                    principal: r.try_get("principal")?,
                    upstream: r.try_get("upstream")?,
                },
                r.try_get("sealed")?,
            ))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;
    use sluice_core::upstream_auth::ClientIdentity;

    fn record(principal: &str, upstream: &str, token: &str) -> LoginRecord {
        LoginRecord {
            format: LoginRecord::FORMAT,
            upstream: upstream.into(),
            principal: principal.into(),
            url: "https://mcp.example.com/mcp".into(),
            client: ClientIdentity {
                client_id: "client".into(),
                client_secret: Some("client-secret-value".into()),
                registration: "dynamic".into(),
                redirect_uri: "http://127.0.0.1:9/callback".into(),
            },
            metadata: json!({"token_endpoint": "https://as.example.com/token"}),
            credentials: json!({"client_id": "client", "token_response": {"access_token": token}}),
            step_up: None,
            logged_in_at_ms: 1,
        }
    }

    #[tokio::test]
    async fn a_login_is_kept_sealed_and_only_under_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vault.db");
        let keys = || VaultKeys::new([7; 32], None);
        let vault = Vault::open_sqlite(&path, keys()).await.unwrap();
        let key = VaultKey::operator("docs");
        assert!(vault.load(&key).await.unwrap().is_none());
        let r = record("", "docs", "access-token-1234567890");
        vault.save(&r, 5).await.unwrap();
        assert_eq!(vault.load(&key).await.unwrap(), Some(r.clone()));
        // The same again replaces it.
        let r2 = record("", "docs", "access-token-second-one");
        vault.save(&r2, 6).await.unwrap();
        assert_eq!(vault.load(&key).await.unwrap(), Some(r2.clone()));
        drop(vault);
        // Nothing secret is readable in the file.
        let bytes = std::fs::read(&path).unwrap();
        let wal = std::fs::read(dir.path().join("vault.db-wal")).unwrap_or_default();
        for secret in [
            "access-token-second-one",
            "client-secret-value",
            "as.example.com",
        ] {
            for content in [&bytes, &wal] {
                assert!(
                    !content
                        .windows(secret.len())
                        .any(|w| w == secret.as_bytes()),
                    "{secret} is stored in the clear"
                );
            }
        }
        // A row moved under another key does not open there.
        let vault = Vault::open_sqlite(&path, keys()).await.unwrap();
        let Db::Sqlite(pool) = &vault.db else {
            panic!("sqlite")
        };
        sqlx::query("UPDATE upstream_logins SET upstream = 'other'")
            .execute(pool)
            .await
            .unwrap();
        let err = vault.load(&VaultKey::operator("other")).await.unwrap_err();
        assert!(matches!(err, VaultError::Sealed { .. }), "{err}");
        assert!(vault.delete(&VaultKey::operator("other")).await.unwrap());
        assert!(vault.list().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_rotated_key_still_opens_old_rows_and_reseals_on_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vault.db");
        let old = Vault::open_sqlite(&path, VaultKeys::new([1; 32], None))
            .await
            .unwrap();
        old.save(&record("", "docs", "t-old"), 1).await.unwrap();
        drop(old);
        let rotated = Vault::open_sqlite(&path, VaultKeys::new([2; 32], Some([1; 32])))
            .await
            .unwrap();
        let key = VaultKey::operator("docs");
        let r = rotated.load(&key).await.unwrap().unwrap();
        rotated.save(&r, 2).await.unwrap();
        drop(rotated);
        let new_only = Vault::open_sqlite(&path, VaultKeys::new([2; 32], None))
            .await
            .unwrap();
        assert_eq!(new_only.load(&key).await.unwrap(), Some(r));
        let wrong = Vault::open_sqlite(&path, VaultKeys::new([3; 32], None))
            .await
            .unwrap();
        let listed = wrong.list().await.unwrap();
        assert_eq!(listed.len(), 1);
        assert!(matches!(listed[0].1, Err(VaultError::Sealed { .. })));
    }

    /// The vault in PostgreSQL, beside the audit log in the same database
    /// (each with its own migrations table), sealed as in SQLite.
    #[tokio::test]
    async fn logins_on_postgres_share_the_audit_database_and_stay_sealed() {
        let Ok(server) = std::env::var("SLUICE_TEST_POSTGRES_URL") else {
            panic!(
                "SLUICE_TEST_POSTGRES_URL is not set: start PostgreSQL with `eval \"$(scripts/services.sh start)\"`"
            );
        };
        let admin = PgPoolOptions::new()
            .max_connections(1)
            .connect(&server)
            .await
            .unwrap();
        let name = format!("sluice_vault_{}", std::process::id());
        sqlx::query(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name}")))
            .execute(&admin)
            .await
            .unwrap();
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&admin)
            .await
            .unwrap();
        let (base, rest) = server.rsplit_once('/').unwrap();
        let query = rest
            .split_once('?')
            .map_or(String::new(), |(_, q)| format!("?{q}"));
        let url = format!("{base}/{name}{query}");
        crate::ops::audit::AuditStore::open_postgres(&url)
            .await
            .unwrap();
        for _ in 0..2 {
            let vault = Vault::open_postgres(&url, VaultKeys::new([9; 32], None))
                .await
                .unwrap();
            let r = record("alice", "docs", "pg-access-token-0123456789");
            vault.save(&r, 1).await.unwrap();
            let key = VaultKey {
                principal: "alice".into(),
                upstream: "docs".into(),
            };
            assert_eq!(vault.load(&key).await.unwrap(), Some(r));
        }
        // The audit log still opens beside it.
        crate::ops::audit::AuditStore::open_postgres(&url)
            .await
            .unwrap();
        let Db::Postgres(pool) = Vault::open_postgres(&url, VaultKeys::new([9; 32], None))
            .await
            .unwrap()
            .db
        else {
            panic!("postgres")
        };
        let rows: Vec<(String,)> = sqlx::query_as("SELECT t::text FROM upstream_logins t")
            .fetch_all(&pool)
            .await
            .unwrap();
        assert_eq!(rows.len(), 1);
        for secret in ["pg-access-token-0123456789", "client-secret-value"] {
            assert!(
                !rows[0].0.contains(secret),
                "{secret} is stored in the clear"
            );
        }
        pool.close().await;
        sqlx::query(AssertSqlSafe(format!("DROP DATABASE {name} WITH (FORCE)")))
            .execute(&admin)
            .await
            .unwrap();
    }
}
