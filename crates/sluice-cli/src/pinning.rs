//! `sluice lock` and `sluice check`: the lockfile workflow.
//!
//! `lock` reads every catalog to its end, scans it for poisoning, and
//! writes the approved definitions; `check` reads them again and compares.
//! Both refuse to judge a read that did not finish: exit 2 ("not
//! established") is never a drift. `lock` refuses an upstream with
//! findings (exit 1) unless they are accepted. What `lock` approves is
//! `sluice_core::catalog::locking`'s decision, the same as the console's.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Value, json};
use sluice_core::catalog::drift::{self, EntryId, NotEstablished, Verdict};
use sluice_core::catalog::lockfile::{LockedUpstream, Lockfile};
use sluice_core::catalog::locking::{self, LockChange, LockScope, UpstreamLock};
use sluice_core::catalog::poisoning;
use sluice_core::config::Config;
use sluice_core::discovery::{CatalogRead, ListKind};
use sluice_gateway::gateway::write_lockfile;
use sluice_gateway::vault::Vault;

use crate::progress::ReadProgress;
use crate::{EXIT_CONFIG, EXIT_DRIFT, EXIT_FINDINGS, EXIT_NOT_ESTABLISHED, EXIT_USAGE};

/// Where the lockfile is: `--lockfile`, else `[catalog] lockfile` relative
/// to the config file's directory.
pub fn lockfile_path(config_path: &Path, config: &Config, flag: Option<&Path>) -> PathBuf {
    if let Some(flag) = flag {
        return flag.to_owned();
    }
    let dir = config_path.parent().unwrap_or_else(|| Path::new(""));
    dir.join(&config.catalog.lockfile)
}

/// The lockfile, `Ok(None)` when there is none, or the exit code after
/// printing why it cannot be read.
pub fn read_lockfile(path: &Path) -> Result<Option<Lockfile>, ExitCode> {
    parse_lockfile(path).map_err(|problem| {
        eprintln!("{problem}");
        ExitCode::from(EXIT_CONFIG)
    })
}

/// The lockfile, `Ok(None)` when there is none, or why it cannot be read.
pub fn parse_lockfile(path: &Path) -> Result<Option<Lockfile>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: cannot read the lockfile: {e}", path.display())),
    };
    Lockfile::parse(&text)
        .map(Some)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// What `check` and `serve` say of upstreams still approved under lockfile
/// format 1 (see `sluice_core::catalog::lockfile`), if there are any.
pub fn format_1_note(lock: &Lockfile, path: &Path) -> Option<String> {
    let old = lock.format_1_upstreams();
    (!old.is_empty()).then(|| {
        format!(
            "{}: {} approved by lockfile format 1, which pins neither `execution` (task support) nor `icons`; they are compared on what format 1 pins until `sluice lock` approves them again",
            path.display(),
            old.join(", ")
        )
    })
}

/// Why `serve` refuses to run without the lockfile at `path`
/// (`[catalog] require_lock`).
pub fn missing_lock(path: &Path) -> String {
    format!(
        "{}: no lockfile, and [catalog] require_lock is true: run `sluice lock` first",
        path.display()
    )
}

/// What `sluice lock` approves.
pub struct LockOptions<'a> {
    /// Only these upstreams (every configured one when empty).
    pub upstreams: &'a [String],
    /// Approve entries with findings, recording the findings.
    pub accept_findings: bool,
}

/// `sluice lock [--upstream NAME]... [--accept-findings]`.
pub async fn lock(
    config: &Config,
    vault: Option<Vault>,
    path: &Path,
    options: LockOptions<'_>,
) -> anyhow::Result<ExitCode> {
    let only = options.upstreams;
    let configured: Vec<String> = config.upstreams.iter().map(|u| u.name.clone()).collect();
    if let Some(unknown) = only.iter().find(|n| !configured.contains(n)) {
        eprintln!(
            "sluice lock: no upstream named {unknown:?} in the config (configured: {})",
            configured.join(", ")
        );
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let partial = !only.is_empty();
    let old = match read_lockfile(path) {
        Ok(old) => old,
        // A whole new lock may replace an unreadable file; a partial one
        // must keep the other upstreams' approvals, so it needs them.
        Err(code) if partial => return Ok(code),
        Err(_) => {
            eprintln!("sluice lock: the old lockfile is replaced");
            None
        }
    };
    let names = if partial {
        only.to_vec()
    } else {
        configured.clone()
    };
    let mut progress = ReadProgress::start(&names);
    let reads = sluice_gateway::gateway::read_catalogs(config, vault, &names, &mut |event| {
        progress.heard(event)
    })
    .await;
    progress.finish();
    let scope = if partial {
        LockScope::Upstreams
    } else {
        LockScope::All
    };
    let plan = locking::plan(
        &configured,
        old.as_ref(),
        reads,
        &scope,
        options.accept_findings,
    );
    for gone in &plan.removed {
        println!("{gone}: removed (no longer configured)");
    }
    for (name, outcome) in &plan.upstreams {
        match outcome {
            UpstreamLock::Locked {
                approved,
                change,
                accepted,
            } => {
                let changes = match change {
                    LockChange::New => "new".to_owned(),
                    LockChange::Unchanged => "unchanged".to_owned(),
                    LockChange::Updated(d) => {
                        format!("updated:\n{}", indent(&summary(&d.to_string())))
                    }
                };
                println!("{name}: locked {} ({changes})", counts(approved));
                if let Some(found) = accepted {
                    println!(
                        "  accepted findings, recorded in the lockfile:\n{}",
                        indent(&indent(&poisoning::lines(found)))
                    );
                }
            }
            UpstreamLock::Flagged(found) => println!(
                "{name}: not locked: the poisoning scan found, in {} entr{} (its previous approval, if any, is kept; review them, and approve them with `sluice lock --accept-findings`):\n{}",
                found.len(),
                if found.len() == 1 { "y" } else { "ies" },
                indent(&poisoning::lines(found))
            ),
            UpstreamLock::NotLocked(reason) => refuse(name, reason),
        }
    }
    let (flagged, refused) = (plan.flagged(), plan.not_locked());
    if !plan.writes() {
        eprintln!(
            "sluice lock: nothing could be locked; {} left as it was",
            path.display()
        );
        return Ok(ExitCode::from(if flagged > 0 {
            EXIT_FINDINGS
        } else {
            EXIT_NOT_ESTABLISHED
        }));
    }
    write_lockfile(path, &plan.lock).with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(if flagged > 0 {
        ExitCode::from(EXIT_FINDINGS)
    } else if refused > 0 {
        ExitCode::from(EXIT_NOT_ESTABLISHED)
    } else {
        ExitCode::SUCCESS
    })
}

fn refuse(name: &str, reason: &NotEstablished) {
    println!("{name}: not locked: {reason} (its previous approval, if any, is kept)");
}

/// `sluice check [--json]`.
pub async fn check(
    config: &Config,
    vault: Option<Vault>,
    path: &Path,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let lock = match read_lockfile(path) {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            let reason = format!(
                "no lockfile at {} (run `sluice lock` to create it)",
                path.display()
            );
            if as_json {
                println!(
                    "{}",
                    json!({"result": "not-established", "reason": reason, "upstreams": []})
                );
            } else {
                println!("not established: {reason}");
            }
            return Ok(ExitCode::from(EXIT_NOT_ESTABLISHED));
        }
        Err(code) => return Ok(code),
    };
    if let Some(note) = format_1_note(&lock, path) {
        eprintln!("{note}");
    }
    let names: Vec<String> = config.upstreams.iter().map(|u| u.name.clone()).collect();
    let mut progress = ReadProgress::start(&names);
    let reads = sluice_gateway::gateway::read_catalogs(config, vault, &names, &mut |event| {
        progress.heard(event)
    })
    .await;
    progress.finish();
    let unlocked = LockedUpstream::default();
    let mut report: Vec<(String, Verdict, Option<[usize; 4]>)> = Vec::new();
    for (name, read) in reads {
        let approved = lock.upstreams.get(&name).unwrap_or(&unlocked);
        let sizes = match &read {
            Ok(CatalogRead::Complete(c)) => Some(ListKind::ALL.map(|k| c.list(k).len())),
            _ => None,
        };
        let verdict = match read {
            Ok(read) => drift::judge(approved, &read),
            Err(reason) => Verdict::NotEstablished(reason),
        };
        report.push((name, verdict, sizes));
    }
    // An approval for an upstream that is no longer configured: all of it
    // was removed.
    for (name, approved) in lock.upstreams.iter().filter(|(n, _)| !names.contains(n)) {
        let removed = drift::diff(approved, &Default::default());
        if !removed.is_empty() {
            report.push((name.clone(), Verdict::Drifted(removed), None));
        }
    }
    let drifted = report
        .iter()
        .any(|(_, v, _)| matches!(v, Verdict::Drifted(_)));
    let not_established = report
        .iter()
        .any(|(_, v, _)| matches!(v, Verdict::NotEstablished(_)));
    let (result, code) = if drifted {
        ("drifted", ExitCode::from(EXIT_DRIFT))
    } else if not_established {
        ("not-established", ExitCode::from(EXIT_NOT_ESTABLISHED))
    } else {
        ("unchanged", ExitCode::SUCCESS)
    };
    if as_json {
        let upstreams: Vec<Value> = report
            .iter()
            .map(|(name, verdict, _)| {
                verdict_json(name, verdict, lock.upstreams.contains_key(name))
            })
            .collect();
        println!("{}", json!({"result": result, "upstreams": upstreams}));
    } else {
        let mut out = String::new();
        for (name, verdict, sizes) in &report {
            let _ = match verdict {
                Verdict::Unchanged => {
                    let sizes = sizes
                        .map(|s| format!(" ({})", size_words(s)))
                        .unwrap_or_default();
                    writeln!(out, "{name}: unchanged{sizes}")
                }
                Verdict::Drifted(diff) => {
                    let note = if lock.upstreams.contains_key(name) {
                        ""
                    } else {
                        " (not in the lockfile)"
                    };
                    writeln!(out, "{name}: drifted{note}\n{}", indent(&diff.to_string()))
                }
                Verdict::NotEstablished(reason) => {
                    writeln!(out, "{name}: not established: {reason}")
                }
            };
        }
        print!("{out}");
    }
    Ok(code)
}

fn verdict_json(name: &str, verdict: &Verdict, locked: bool) -> Value {
    match verdict {
        Verdict::Unchanged => json!({"name": name, "verdict": "unchanged"}),
        Verdict::NotEstablished(reason) => {
            json!({"name": name, "verdict": "not-established", "reason": reason.to_string()})
        }
        Verdict::Drifted(diff) => json!({
            "name": name,
            "verdict": "drifted",
            "inLockfile": locked,
            "added": diff.added.iter().map(entry_json).collect::<Vec<_>>(),
            "removed": diff.removed.iter().map(entry_json).collect::<Vec<_>>(),
            "changed": diff.changed.iter().map(|c| {
                let mut e = entry_json(&c.entry);
                e["fields"] = json!(c.fields);
                e
            }).collect::<Vec<_>>(),
            "findings": diff.findings.iter().map(|u| {
                let mut e = entry_json(&u.entry);
                e["findings"] = u.findings.iter().map(|f| f.key()).collect();
                e
            }).collect::<Vec<_>>(),
        }),
    }
}

fn entry_json(id: &EntryId) -> Value {
    json!({"list": id.kind.field(), "key": id.key})
}

fn counts(up: &LockedUpstream) -> String {
    size_words(ListKind::ALL.map(|k| up.list(k).len()))
}

fn size_words(sizes: [usize; 4]) -> String {
    let nouns = ["tool", "resource", "resource template", "prompt"];
    let words: Vec<String> = sizes
        .iter()
        .zip(nouns)
        .map(|(n, noun)| format!("{n} {noun}{}", if *n == 1 { "" } else { "s" }))
        .collect();
    words.join(", ")
}

/// The first lines of a long diff (the file diff in review has all of it).
fn summary(diff: &str) -> String {
    const SHOWN: usize = 20;
    let total = diff.lines().count();
    let mut out: Vec<&str> = diff.lines().take(SHOWN).collect();
    let more = format!("... and {} more", total.saturating_sub(SHOWN));
    if total > SHOWN {
        out.push(&more);
    }
    out.join("\n")
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
