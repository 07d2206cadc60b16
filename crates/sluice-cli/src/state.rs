//! What sluice keeps across restarts, in `[state] dir` (default `.sluice/`
//! beside the config): the key that seals list cursors, so that a client
//! paging through a list can go on after sluice restarts, the SQLite
//! audit log, and the vault of OAuth logins with its key.

use std::io::Write;
use std::path::{Path, PathBuf};

use sluice_core::config::{Config, StateStore, UpstreamTransport};
use sluice_core::seal;
use sluice_gateway::vault::{Vault, VaultKeys};

const CURSOR_KEY_FILE: &str = "cursor.key";
const VAULT_KEY_FILE: &str = "vault.key";

/// The cursor secret: from `[state] cursor_secret` when set (replicas
/// share it), else the key file in the state directory, made with a random
/// key at first start (mode 0600).
pub fn cursor_secret(config_path: &Path, config: &Config) -> Result<[u8; 32], String> {
    match &config.state.cursor_secret {
        Some(passphrase) => Ok(seal::secret_from_passphrase(passphrase)),
        None => key_file(&dir(config_path, config), CURSOR_KEY_FILE, "cursor key"),
    }
}

/// The vault key: from `[state] vault_key` when set (replicas share it),
/// else `vault.key` in the state directory, made at first use. With
/// `vault_previous_key`, the key before a rotation too.
pub fn vault_keys(config_path: &Path, config: &Config) -> Result<VaultKeys, String> {
    let previous = config
        .state
        .vault_previous_key
        .as_deref()
        .map(seal::secret_from_passphrase);
    let current = match &config.state.vault_key {
        Some(passphrase) => seal::secret_from_passphrase(passphrase),
        None => key_file(&dir(config_path, config), VAULT_KEY_FILE, "vault key")?,
    };
    Ok(VaultKeys::new(current, previous))
}

/// The 32-byte key kept in `dir/name`, made with a random key (mode 0600)
/// when missing.
fn key_file(dir: &Path, name: &str, what: &str) -> Result<[u8; 32], String> {
    let path = dir.join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) => seal::secret_from_text(&text).ok_or_else(|| {
            format!(
                "{}: not a {what} (43 base64url characters); delete it to make a new one",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let secret: [u8; 32] = rand::random();
            write_private(dir, &path, &seal::secret_to_text(&secret))
                .map_err(|e| format!("{}: cannot write the {what}: {e}", path.display()))?;
            tracing::info!("made a new {what} in {}", path.display());
            Ok(secret)
        }
        Err(e) => Err(format!("{}: cannot read the {what}: {e}", path.display())),
    }
}

/// The vault of OAuth logins: `vault.db` in the state directory, or the
/// PostgreSQL database of `[state] url`.
pub async fn open_vault(config_path: &Path, config: &Config) -> Result<Vault, String> {
    let keys = vault_keys(config_path, config)?;
    match &config.state.store {
        StateStore::Sqlite => {
            let dir = dir(config_path, config);
            let path = dir.join(VAULT_FILE);
            create_private_file(&dir, &path)
                .map_err(|e| format!("{}: cannot create the vault: {e}", path.display()))?;
            Vault::open_sqlite(&path, keys).await
        }
        StateStore::Postgres { url } => Vault::open_postgres(url, keys).await,
    }
    .map_err(|e| e.to_string())
}

/// The vault, when an upstream of `config` logs in with OAuth.
pub async fn vault_if_needed(config_path: &Path, config: &Config) -> Result<Option<Vault>, String> {
    let needed = config
        .upstreams
        .iter()
        .any(|u| matches!(&u.transport, UpstreamTransport::Http { oauth: Some(_), .. }));
    if needed {
        open_vault(config_path, config).await.map(Some)
    } else {
        Ok(None)
    }
}

/// The SQLite file of the vault, in the state directory.
const VAULT_FILE: &str = "vault.db";

/// `[state] dir`, relative to the config file's directory.
pub fn dir(config_path: &Path, config: &Config) -> PathBuf {
    config_path
        .parent()
        .unwrap_or_else(|| Path::new(""))
        .join(&config.state.dir)
}

/// Makes `path` in `dir` (mode 0700), empty and readable by its owner only
/// (mode 0600), unless it exists. SQLite keeps that mode, and gives it to
/// its `-wal` and `-shm` files.
pub fn create_private_file(dir: &Path, path: &Path) -> std::io::Result<()> {
    private_dir(dir)?;
    match private_file(path) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other.map(drop),
    }
}

fn write_private(dir: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    private_dir(dir)?;
    let mut file = private_file(path)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")
}

fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}
