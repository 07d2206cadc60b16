//! What sluice keeps across restarts, in `[state] dir` (default `.sluice/`
//! beside the config): the key that seals list cursors, so that a client
//! paging through a list can go on after sluice restarts, and the SQLite
//! audit log.

use std::io::Write;
use std::path::{Path, PathBuf};

use sluice_core::config::Config;
use sluice_core::seal;

const CURSOR_KEY_FILE: &str = "cursor.key";

/// The cursor secret: from `[state] cursor_secret` when set (replicas
/// share it), else the key file in the state directory, made with a random
/// key at first start (mode 0600).
pub fn cursor_secret(config_path: &Path, config: &Config) -> Result<[u8; 32], String> {
    if let Some(passphrase) = &config.state.cursor_secret {
        return Ok(seal::secret_from_passphrase(passphrase));
    }
    let dir = dir(config_path, config);
    let path = dir.join(CURSOR_KEY_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => seal::secret_from_text(&text).ok_or_else(|| {
            format!(
                "{}: not a cursor key (43 base64url characters); delete it to make a new one",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let secret: [u8; 32] = rand::random();
            write_private(&dir, &path, &seal::secret_to_text(&secret))
                .map_err(|e| format!("{}: cannot write the cursor key: {e}", path.display()))?;
            tracing::info!("made a new cursor key in {}", path.display());
            Ok(secret)
        }
        Err(e) => Err(format!(
            "{}: cannot read the cursor key: {e}",
            path.display()
        )),
    }
}

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
