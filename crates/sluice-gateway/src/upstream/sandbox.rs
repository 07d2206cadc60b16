//! Where a sandboxed child's paths are on disk, for the core's bwrap
//! command line (`sluice_core::sandbox::bwrap`).
//!
//! Everything the sandbox shows must exist before it starts: a path that
//! is missing, a command not found or no `bwrap` on `PATH` is an error the
//! upstream fails to start with, never a start without the sandbox.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sluice_core::sandbox::SandboxPolicy;
use sluice_core::sandbox::bwrap::{
    Interpreter, Located, Resolved, SYSTEM_DIRS, command_line, interpreter,
};

use super::child::ChildSpec;

/// Why a sandbox could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SandboxError {
    #[error(
        "the sandbox needs bwrap, which is not on PATH (install bubblewrap, or turn the sandbox off with `enabled = false`)"
    )]
    NoBwrap,
    #[error("sandbox: sluice's working directory is unknown: {0}")]
    NoWorkingDir(std::io::Error),
    #[error("sandbox: the working directory {0:?} is not a directory")]
    Cwd(PathBuf),
    #[error("sandbox: the command {command:?} is not found: {error}")]
    Command {
        command: String,
        error: which::Error,
    },
    #[error("sandbox: {what} path {path:?} cannot be shown: {error}")]
    Path {
        what: &'static str,
        path: PathBuf,
        error: std::io::Error,
    },
}

/// `bwrap` and its arguments, which run `spec` under `policy`.
pub(crate) fn bwrap(
    spec: &ChildSpec<'_>,
    policy: &SandboxPolicy,
) -> Result<(PathBuf, Vec<OsString>), SandboxError> {
    let bwrap = which::which("bwrap").map_err(|_| SandboxError::NoBwrap)?;
    let here = std::env::current_dir().map_err(SandboxError::NoWorkingDir)?;
    let cwd = spec.cwd.map_or(here.clone(), |cwd| here.join(cwd));
    if !cwd.is_dir() {
        return Err(SandboxError::Cwd(cwd));
    }
    // The child's own PATH and HOME: its `env`, else sluice's.
    let inherited = |key: &str| {
        spec.env
            .get(key)
            .map(OsString::from)
            .or_else(|| std::env::var_os(key))
    };
    let path_var = inherited("PATH");
    let find = |command: &str| {
        which::which_in(command, path_var.as_ref(), &cwd)
            .map(|p| cwd.join(p))
            .map_err(|error| SandboxError::Command {
                command: command.to_owned(),
                error,
            })
    };
    let program = find(spec.command)?;
    let mut own = vec![located("command", program.clone())?];
    // A script's interpreter, and its own, a few levels deep at most.
    let mut script = program.clone();
    for _ in 0..4 {
        let next = match first_line(&script).as_deref().and_then(interpreter) {
            Some(Interpreter::Path(path)) => cwd.join(path),
            Some(Interpreter::OnPath(name)) => find(&name)?,
            None => break,
        };
        own.push(located("interpreter", next.clone())?);
        script = next;
    }
    for arg in spec.args {
        let path = cwd.join(arg);
        if !arg.is_empty() && !arg.starts_with('-') && path.is_file() {
            own.push(located("argument", path)?);
        }
    }
    let declared = |what, paths: &[PathBuf]| {
        paths
            .iter()
            .map(|p| located(what, cwd.join(p)))
            .collect::<Result<Vec<_>, _>>()
    };
    let resolved = Resolved {
        program,
        home: inherited("HOME").map(PathBuf::from),
        system: SYSTEM_DIRS
            .iter()
            .map(PathBuf::from)
            .filter(|d| d.exists())
            .collect(),
        own,
        read: declared("read", &policy.read)?,
        write: declared("write", &policy.write)?,
        cwd,
    };
    Ok((bwrap, command_line(policy, &resolved, spec.args)))
}

/// The first bytes of `file`, up to its first newline, when it can be read.
fn first_line(file: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(file).ok()?.read(&mut head).ok()?;
    let line = head[..n].split(|b| *b == b'\n').next().unwrap_or_default();
    Some(line.to_vec())
}

/// `seen` and where it really is.
fn located(what: &'static str, seen: PathBuf) -> Result<Located, SandboxError> {
    match std::fs::canonicalize(&seen) {
        Ok(real) => Ok(Located { seen, real }),
        Err(error) => Err(SandboxError::Path {
            what,
            path: seen,
            error,
        }),
    }
}
