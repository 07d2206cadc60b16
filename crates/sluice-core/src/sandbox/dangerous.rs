//! Commands that are not a server but a way to run anything (S-21): a
//! shell given a command line, a privilege-raising wrapper, an interpreter
//! given code inline or a script by URL. An upstream runs one only with
//! `allow_dangerous = true`.
//!
//! The command is judged by its file name (`/usr/bin/bash` is `bash`,
//! `python3.12` is `python`), through `env` and its options. Package
//! runners (`npx`, `uvx`) fetch a named package and are not refused,
//! except `npx -c`, which runs a shell command.

use std::fmt;
use std::path::Path;

/// Why a command is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Danger {
    /// A shell given a command line (`sh -c ...`).
    ShellCommand {
        /// The shell.
        shell: String,
    },
    /// A program that runs another with more privileges (`sudo`).
    Elevation {
        /// The program.
        program: String,
    },
    /// An interpreter given its program inline (`python -c`, `node -e`).
    InlineCode {
        /// The interpreter.
        interpreter: String,
        /// The option that carries the code.
        option: String,
    },
    /// An interpreter given a script by URL (`deno run https://...`).
    RemoteScript {
        /// The interpreter.
        interpreter: String,
    },
}

impl fmt::Display for Danger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Danger::ShellCommand { shell } => write!(
                f,
                "runs a shell command line ({shell} -c), which can do anything"
            ),
            Danger::Elevation { program } => {
                write!(f, "runs a program with raised privileges ({program})")
            }
            Danger::InlineCode {
                interpreter,
                option,
            } => write!(
                f,
                "runs code given inline ({interpreter} {option}), not a server's own files"
            ),
            Danger::RemoteScript { interpreter } => write!(
                f,
                "runs a script fetched from a URL ({interpreter}), which can change under you"
            ),
        }
    }
}

const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox",
];
const ELEVATION: &[&str] = &["sudo", "doas", "su", "pkexec", "runuser", "run0"];

/// Interpreters, and the options that give them their code inline.
const INLINE: &[(&str, &[&str])] = &[
    ("python", &["-c"]),
    ("pypy", &["-c"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("bun", &["-e", "--eval", "-p", "--print"]),
    ("deno", &["eval"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("php", &["-r"]),
    ("npx", &["-c", "--call"]),
];

/// Why `command` with `args` is refused, if it is.
pub fn classify(command: &str, args: &[String]) -> Option<Danger> {
    let program = program_name(command);
    if program == "env" {
        // `env [-i] [-u NAME] [NAME=value]... command args...`
        let mut rest = args.iter().enumerate();
        while let Some((i, arg)) = rest.next() {
            if arg == "-u" || arg == "--unset" || arg == "-C" || arg == "--chdir" {
                rest.next();
            } else if !(arg.starts_with('-') || arg.contains('=')) {
                return classify(arg, &args[i + 1..]);
            }
        }
        return None;
    }
    if ELEVATION.contains(&program.as_str()) {
        return Some(Danger::Elevation { program });
    }
    if SHELLS.contains(&program.as_str()) {
        // `-c`, alone or among short options (`-ec`, `-lc`).
        let command_line = args.iter().any(|a| {
            a.strip_prefix('-')
                .is_some_and(|opts| !opts.starts_with('-') && opts.contains('c'))
        });
        return command_line.then_some(Danger::ShellCommand { shell: program });
    }
    let (_, options) = INLINE.iter().find(|(name, _)| *name == program)?;
    if let Some(option) = args.iter().find(|a| options.contains(&a.as_str())) {
        return Some(Danger::InlineCode {
            interpreter: program,
            option: option.clone(),
        });
    }
    let remote = args
        .iter()
        .any(|a| a.starts_with("http://") || a.starts_with("https://"));
    remote.then_some(Danger::RemoteScript {
        interpreter: program,
    })
}

/// The file name of `command`, without a version (`python3.12` is
/// `python`, `pypy3` is `pypy`).
fn program_name(command: &str) -> String {
    let name = Path::new(command)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(line: &str) -> Option<Danger> {
        let mut words = line.split(' ').map(str::to_owned);
        let command = words.next().unwrap_or_default();
        classify(&command, &words.collect::<Vec<_>>())
    }

    #[test]
    fn shells_with_a_command_line_are_refused_with_the_reason() {
        let danger = judge("/bin/bash -lc curl|sh");
        assert_eq!(
            danger,
            Some(Danger::ShellCommand {
                shell: "bash".into()
            })
        );
        assert_eq!(
            danger.map(|d| d.to_string()).unwrap_or_default(),
            "runs a shell command line (bash -c), which can do anything"
        );
        assert!(judge("sh -c exec server").is_some());
        assert!(judge("busybox sh -c x").is_some());
        // A shell running a script file is a server's own launcher.
        assert_eq!(judge("sh ./run-server.sh"), None);
        assert_eq!(judge("bash --norc ./run.sh"), None);
    }

    #[test]
    fn privileges_inline_code_and_remote_scripts_are_refused() {
        assert_eq!(
            judge("sudo mcp-server-git"),
            Some(Danger::Elevation {
                program: "sudo".into()
            })
        );
        assert_eq!(
            judge("/usr/bin/python3.12 -c import os"),
            Some(Danger::InlineCode {
                interpreter: "python".into(),
                option: "-c".into()
            })
        );
        assert!(judge("node --eval require('x')").is_some());
        assert!(judge("npx -c rm").is_some());
        assert_eq!(
            judge("deno run https://example.com/server.ts"),
            Some(Danger::RemoteScript {
                interpreter: "deno".into()
            })
        );
        // Through env, its options and assignments skipped.
        assert_eq!(
            judge("/usr/bin/env -i -u HOME A=b sudo x"),
            Some(Danger::Elevation {
                program: "sudo".into()
            })
        );
    }

    #[test]
    fn ordinary_servers_pass() {
        for line in [
            "npx -y @modelcontextprotocol/server-everything",
            "uvx mcp-server-time",
            "node dist/index.js stdio",
            ".peers/venv/bin/mcp-server-time --local-timezone UTC",
            "python3 -m mcp_server_git",
            "env NODE_ENV=production node server.js",
            "/usr/bin/env",
        ] {
            assert_eq!(judge(line), None, "{line}");
        }
    }
}
