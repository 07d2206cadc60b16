//! `sluice doctor`: judging an MCP server against the server standard.
//!
//! The shell (`sluice-gateway`'s `doctor`) connects to the server, makes
//! the calls [`plan`] allows, and records what it saw as [`Observations`];
//! the detectors here turn them into one [`Finding`] per detector, each
//! `pass`, `fail` (with evidence: which method, which field, never a
//! payload) or `could-not-judge` (with the reason, never counted as a
//! pass). [`Report`] renders them as a table, stable JSON or SARIF 2.1.0
//! and gives the exit code: 0 all pass, 1 any fail, 2 nothing failed but
//! something could not be judged.
//!
//! [`sandboxing`] judges sluice's own configuration instead (S-21), with
//! no server to reach.

pub mod detect;
pub mod observe;
pub mod plan;
mod render;
pub mod sandboxing;

use serde::Serialize;

pub use observe::Observations;

/// The outcome of one detector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// The rule holds on what was observed.
    Pass {
        /// What was checked, briefly.
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The rule is broken; each line names a method and a field.
    Fail {
        /// What was seen, never a payload.
        evidence: Vec<String>,
    },
    /// Nothing observed could decide it.
    CouldNotJudge {
        /// Why.
        reason: String,
    },
    /// The rule is about what no client can see from outside (the
    /// server's own code, its outbound fetches, a third-party OAuth flow):
    /// listed so that every rule of the standard is in every report, and
    /// never counted as a pass.
    NotObservable {
        /// Why it cannot be seen from outside.
        reason: String,
    },
}

/// One detector's verdict on one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The detector's id (`S-12/invalid-cursor`).
    pub id: &'static str,
    /// The rule it checks (`S-12`, `envelope`, ...).
    pub rule: &'static str,
    /// What it checks, in a few words.
    pub title: &'static str,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// How to fix a failure, in one line.
    pub fix: &'static str,
}

/// What a detector is: its id, rule, title and fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detector {
    /// The id.
    pub id: &'static str,
    /// The rule.
    pub rule: &'static str,
    /// What it checks.
    pub title: &'static str,
    /// The one-line fix shown with a failure.
    pub fix: &'static str,
}

impl Detector {
    /// This detector's finding with `verdict`.
    pub fn finding(&self, verdict: Verdict) -> Finding {
        Finding {
            id: self.id,
            rule: self.rule,
            title: self.title,
            verdict,
            fix: self.fix,
        }
    }
}

/// A whole report: the server, how it was reached, every finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The report format's version.
    pub format: u32,
    /// The command or URL judged.
    pub target: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// The protocol version spoken, once connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// `serverInfo` name and version, when the server gave them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerName>,
    /// Why the server could not be reached, once (each detector that
    /// needed it then says [`detect::NOT_REACHED`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<String>,
    /// One per detector, in [`detect::DETECTORS`] order.
    pub findings: Vec<Finding>,
    /// The listed tools the doctor did not call, and why: what its
    /// verdicts could not see.
    pub not_called: Vec<NotCalled>,
    /// Counts by verdict.
    pub summary: Summary,
}

/// A tool the doctor did not call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotCalled {
    /// The tool's name.
    pub tool: String,
    /// Why (not read-only, arguments it cannot make up, the time budget).
    pub reason: String,
}

/// `serverInfo`'s name and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerName {
    /// `name`.
    pub name: String,
    /// `version`.
    pub version: String,
}

/// How many findings of each verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Passed.
    pub pass: usize,
    /// Failed.
    pub fail: usize,
    /// Could not be judged.
    #[serde(rename = "could-not-judge")]
    pub could_not_judge: usize,
    /// Not observable from outside.
    #[serde(rename = "not-observable")]
    pub not_observable: usize,
}

/// The report format version ([`Report::format`]).
pub const REPORT_FORMAT: u32 = 2;

impl Report {
    /// A report of `findings` about `target`.
    pub fn new(
        target: String,
        transport: &'static str,
        protocol_version: Option<String>,
        server: Option<ServerName>,
        findings: Vec<Finding>,
    ) -> Report {
        let mut summary = Summary::default();
        for f in &findings {
            match f.verdict {
                Verdict::Pass { .. } => summary.pass += 1,
                Verdict::Fail { .. } => summary.fail += 1,
                Verdict::CouldNotJudge { .. } => summary.could_not_judge += 1,
                Verdict::NotObservable { .. } => summary.not_observable += 1,
            }
        }
        Report {
            format: REPORT_FORMAT,
            target,
            transport,
            protocol_version,
            server,
            unreachable: None,
            findings,
            not_called: Vec::new(),
            summary,
        }
    }

    /// The report, saying why the server could not be reached.
    pub fn with_unreachable(mut self, cause: Option<String>) -> Report {
        self.unreachable = cause;
        self
    }

    /// The report, saying which tools were not called and why.
    pub fn with_not_called(mut self, not_called: &[(String, String)]) -> Report {
        self.not_called = not_called
            .iter()
            .map(|(tool, reason)| NotCalled {
                tool: tool.clone(),
                reason: reason.clone(),
            })
            .collect();
        self
    }

    /// 0 all pass, 1 any fail, 2 nothing failed but something could not
    /// be judged. A rule not observable from outside changes nothing: no
    /// run of the doctor could ever judge it.
    pub fn exit_code(&self) -> u8 {
        if self.summary.fail > 0 {
            1
        } else if self.summary.could_not_judge > 0 {
            2
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::detect::{self, DETECTORS};
    use super::observe::{Observations, Outcome, Transport};
    use super::*;
    use crate::protocol::Era;
    use serde_json::json;

    fn report(obs: &Observations) -> Report {
        Report::new("t".into(), "stdio", None, None, detect::judge(obs))
    }

    #[test]
    fn exit_codes_follow_the_worst_verdict() {
        let d = DETECTORS[0];
        let pass = d.finding(Verdict::Pass { note: None });
        let fail = d.finding(Verdict::Fail {
            evidence: vec!["x".into()],
        });
        let nj = d.finding(Verdict::CouldNotJudge { reason: "y".into() });
        let r = |f: Vec<Finding>| Report::new("t".into(), "stdio", None, None, f).exit_code();
        assert_eq!(r(vec![pass.clone()]), 0);
        assert_eq!(r(vec![pass.clone(), nj.clone()]), 2);
        assert_eq!(r(vec![nj, fail, pass]), 1);
    }

    #[test]
    fn a_server_never_reached_is_judged_on_nothing() {
        let obs = Observations {
            transport: Some(Transport::Stdio),
            connect_error: Some("could not start \"x\"".into()),
            ..Observations::default()
        };
        let r = report(&obs).with_unreachable(Some("connection refused".into()));
        assert_eq!(r.findings.len(), DETECTORS.len());
        assert_eq!(
            r.summary.could_not_judge + r.summary.not_observable,
            DETECTORS.len()
        );
        assert_eq!(r.exit_code(), 2);
        // The cause is said once, not once per detector.
        let text = r.to_text();
        assert_eq!(text.matches("connection refused").count(), 1, "{text}");
        assert!(!text.contains(detect::NOT_REACHED), "{text}");
    }

    #[test]
    fn sarif_lists_every_rule_and_every_finding_that_is_not_a_pass() {
        let obs = Observations {
            transport: Some(Transport::Stdio),
            era: Some(Era::Modern),
            served: vec![("tools/list".into(), Outcome::Result(json!({"tools": []})))],
            ..Observations::default()
        };
        let r = report(&obs);
        let sarif = r.to_sarif();
        assert_eq!(sarif["version"], "2.1.0");
        let run = &sarif["runs"][0];
        assert_eq!(
            run["tool"]["driver"]["rules"].as_array().map(Vec::len),
            Some(DETECTORS.len())
        );
        let results = run["results"].as_array().cloned().unwrap_or_default();
        assert_eq!(
            results.len(),
            r.summary.fail + r.summary.could_not_judge + r.summary.not_observable
        );
        let driver = &run["tool"]["driver"];
        assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
        assert!(driver.get("informationUri").is_none());
        assert!(
            driver["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .all(|rule| rule["help"]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("Fix:")))
        );
        assert!(
            results
                .iter()
                .any(|x| x["ruleId"] == "S-2/result-type" && x["level"] == "error")
        );
        let text = r.to_text();
        assert!(text.contains("FAIL  S-2/result-type"), "{text}");
        assert!(text.contains("tools/list: no resultType"), "{text}");
        assert_eq!(r.to_json()["findings"][0]["verdict"], "could-not-judge");
    }
}
