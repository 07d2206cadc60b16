//! S-21 on sluice's own configuration (`sluice doctor --config FILE`),
//! judged statically: whether every stdio upstream runs sandboxed, and
//! which were allowed a dangerous command. A server under examination is
//! never judged by it: how a server is run is its host's business.

use super::{Detector, Finding, Report, Verdict};
use crate::config::{Config, UpstreamTransport};
use crate::sandbox::{Sandboxing, dangerous};

/// The detector.
pub const SANDBOXED: Detector = Detector {
    id: "S-21/sandboxed",
    rule: "S-21",
    title: "every stdio upstream runs sandboxed; dangerous commands are allowed by name",
    fix: "set [sandbox] enabled = true (or sandbox = { enabled = true } on the upstream), with bubblewrap installed",
};

/// The report on the configuration read from `target`.
pub fn report(target: String, config: &Config) -> Report {
    Report::new(target, "config", None, None, vec![judge(config)])
}

/// The verdict on `config`'s stdio upstreams.
pub fn judge(config: &Config) -> Finding {
    let mut unsandboxed = Vec::new();
    let mut notes = Vec::new();
    let mut stdio = 0;
    for upstream in &config.upstreams {
        let UpstreamTransport::Stdio {
            command,
            args,
            sandbox,
            ..
        } = &upstream.transport
        else {
            continue;
        };
        stdio += 1;
        let name = &upstream.name;
        match sandbox {
            Sandboxing::None => unsandboxed.push(format!(
                "upstream {name:?} runs unsandboxed, with sluice's rights"
            )),
            Sandboxing::Bwrap(policy) if policy.network => {
                notes.push(format!("{name:?} shares the host's network"));
            }
            Sandboxing::Bwrap(_) => {}
        }
        // A config that loaded holds a dangerous command only by
        // `allow_dangerous = true`.
        if let Some(danger) = dangerous::classify(command, args) {
            notes.push(format!("{name:?} is allowed a dangerous command: {danger}"));
        }
    }
    let verdict = if !unsandboxed.is_empty() {
        Verdict::Fail {
            evidence: unsandboxed,
        }
    } else {
        let mut note = if stdio == 0 {
            "no stdio upstream".to_owned()
        } else {
            format!("{stdio} stdio upstream(s), all sandboxed (bwrap)")
        };
        for n in notes {
            note.push_str("; ");
            note.push_str(&n);
        }
        Verdict::Pass { note: Some(note) }
    };
    SANDBOXED.finding(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        crate::config::testing::parse(text).expect("valid")
    }

    #[test]
    fn an_unsandboxed_stdio_upstream_fails() {
        let finding = judge(&config(
            "[sandbox]\nenabled = true\n[[upstream]]\nname = \"a\"\ncommand = \"node\"\n[[upstream]]\nname = \"b\"\ncommand = \"node\"\nsandbox = { enabled = false }\n[[upstream]]\nname = \"web\"\nurl = \"https://h/mcp\"\n",
        ));
        assert_eq!(
            finding.verdict,
            Verdict::Fail {
                evidence: vec!["upstream \"b\" runs unsandboxed, with sluice's rights".into()]
            }
        );
        let report = report(
            "sluice.toml".into(),
            &config("[[upstream]]\nname = \"a\"\ncommand = \"node\"\n"),
        );
        assert_eq!(report.exit_code(), 1);
    }

    #[test]
    fn all_sandboxed_passes_with_what_was_allowed() {
        let finding = judge(&config(
            "[sandbox]\nenabled = true\n[[upstream]]\nname = \"a\"\ncommand = \"sh\"\nargs = [\"-c\", \"x\"]\nallow_dangerous = true\nsandbox = { network = true }\n",
        ));
        assert_eq!(
            finding.verdict,
            Verdict::Pass {
                note: Some(
                    "1 stdio upstream(s), all sandboxed (bwrap); \"a\" shares the host's network; \"a\" is allowed a dangerous command: runs a shell command line (sh -c), which can do anything".into()
                )
            }
        );
        assert_eq!(
            judge(&config("")).verdict,
            Verdict::Pass {
                note: Some("no stdio upstream".into())
            }
        );
    }
}
