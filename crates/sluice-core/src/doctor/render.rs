//! A report as a table for people, stable JSON for programs, and SARIF
//! 2.1.0 for code-scanning tools.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{Report, Verdict, detect};

impl Report {
    /// The human report: one block per rule, a line per detector, the
    /// evidence and the fix under each failure, the summary last.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let server = self
            .server
            .as_ref()
            .map_or_else(String::new, |s| format!(" ({} {})", s.name, s.version));
        let _ = writeln!(out, "sluice doctor: {}{server}", self.target);
        let _ = writeln!(
            out,
            "transport {}, protocol {}",
            self.transport,
            self.protocol_version.as_deref().unwrap_or("none")
        );
        if let Some(cause) = &self.unreachable {
            let _ = writeln!(out, "unreachable: {cause}");
        }
        let mut rule = "";
        for f in &self.findings {
            if f.rule != rule {
                rule = f.rule;
                let _ = writeln!(out, "\n{rule}");
            }
            let (mark, detail) = match &f.verdict {
                Verdict::Pass { note } => ("pass", note.clone().unwrap_or_default()),
                Verdict::Fail { .. } => ("FAIL", String::new()),
                // Said once above, not once per detector.
                Verdict::CouldNotJudge { reason } if reason == detect::NOT_REACHED => {
                    ("n/j ", String::new())
                }
                Verdict::CouldNotJudge { reason } => ("n/j ", reason.clone()),
                Verdict::NotObservable { reason } => ("n/o ", reason.clone()),
            };
            let detail = if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            };
            let _ = writeln!(out, "  {mark}  {:<28} {}{detail}", f.id, f.title);
            if let Verdict::Fail { evidence } = &f.verdict {
                for e in evidence {
                    let _ = writeln!(out, "          - {e}");
                }
                let _ = writeln!(out, "          fix: {}", f.fix);
            }
        }
        if !self.not_called.is_empty() {
            let _ = writeln!(out, "\nnot called ({}):", self.not_called.len());
            for n in &self.not_called {
                let _ = writeln!(out, "  {}: {}", n.tool, n.reason);
            }
        }
        let _ = writeln!(
            out,
            "\n{} passed, {} failed, {} could not be judged, {} not observable from outside (exit {})",
            self.summary.pass,
            self.summary.fail,
            self.summary.could_not_judge,
            self.summary.not_observable,
            self.exit_code()
        );
        out
    }

    /// The stable JSON report (see README, "sluice doctor").
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// A URI reference for the judged server: the URL, or the program of a
    /// stdio command (percent-encoded; its arguments are in the run's
    /// `properties.target`).
    fn artifact_uri(&self) -> String {
        let program = match self.transport {
            "http" => self.target.as_str(),
            _ => self.target.split(' ').next().unwrap_or_default(),
        };
        program
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z'
                | b'a'..=b'z'
                | b'0'..=b'9'
                | b'-'
                | b'.'
                | b'_'
                | b'~'
                | b'/'
                | b':'
                | b'?'
                | b'='
                | b'&'
                | b'%'
                | b'@' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    }

    /// SARIF 2.1.0: one rule per detector (with its help text), one result
    /// per finding that is not a pass (`error` for a failure, `note` for
    /// could-not-judge and not observable).
    pub fn to_sarif(&self) -> Value {
        let rules: Vec<Value> = detect::DETECTORS
            .iter()
            .map(|d| {
                json!({
                    "id": d.id,
                    "name": d.id.replace(['/', '-'], "_"),
                    "shortDescription": {"text": d.title},
                    "help": {"text": format!("{}. Fix: {}.", d.title, d.fix)},
                    "properties": {"rule": d.rule},
                })
            })
            .collect();
        let results: Vec<Value> = self
            .findings
            .iter()
            .filter_map(|f| {
                let (level, message) = match &f.verdict {
                    Verdict::Pass { .. } => return None,
                    Verdict::Fail { evidence } => {
                        ("error", format!("{}: {}", f.title, evidence.join("; ")))
                    }
                    Verdict::CouldNotJudge { reason } => {
                        let reason = match (&self.unreachable, reason.as_str()) {
                            (Some(cause), detect::NOT_REACHED) => format!("{reason}: {cause}"),
                            _ => reason.clone(),
                        };
                        ("note", format!("could not judge: {reason}"))
                    }
                    Verdict::NotObservable { reason } => ("note", reason.clone()),
                };
                let index = detect::DETECTORS.iter().position(|d| d.id == f.id)?;
                Some(json!({
                    "ruleId": f.id,
                    "ruleIndex": index,
                    "level": level,
                    "message": {"text": message},
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": self.artifact_uri()}}}],
                }))
            })
            .collect();
        // No informationUri: the workspace names no public home page.
        json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {
                    "name": "sluice doctor",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }},
                "results": results,
                "properties": {"target": self.target, "transport": self.transport},
            }],
        })
    }

    /// `sluice doctor --list-rules`: every rule of the standard, in order,
    /// with what each of its detectors judges, or why none can; then the
    /// envelope, boundary and poisoning detectors.
    pub fn rules_text() -> String {
        let mut out = String::new();
        for d in detect::DETECTORS {
            match detect::not_observable(d.id) {
                Some(why) => writeln!(out, "{:<28} {} ({why})", d.id, d.title),
                None => writeln!(out, "{:<28} {}", d.id, d.title),
            }
            .unwrap_or_default();
        }
        out
    }
}
