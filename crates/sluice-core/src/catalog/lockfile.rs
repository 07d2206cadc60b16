//! `sluice.lock`: the approved catalog of every upstream.
//!
//! Like `Cargo.lock`, it is written by a command (`sluice lock`), reviewed
//! in pull requests and checked in beside the config. It is JSON, because
//! definitions are JSON (schemas with `null`s and nesting that TOML cannot
//! say), pretty-printed with every map sorted so that the same catalog
//! always gives the same bytes and a change shows as a small diff:
//!
//! ```json
//! {
//!   "version": 2,
//!   "upstreams": {
//!     "files": {
//!       "tools": {
//!         "read_file": {
//!           "digest": "sha256:…",
//!           "definition": { "description": "…", "inputSchema": { … }, "name": "read_file" }
//!         }
//!       },
//!       "resources": {},
//!       "resourceTemplates": {},
//!       "prompts": {}
//!     }
//!   }
//! }
//! ```
//!
//! Each entry keeps its whole approved definition (the fields of
//! [`super::definition`]) and that definition's digest. Reading checks that
//! every digest matches its definition, so a hand edit of one without the
//! other is caught instead of silently approving something else.
//!
//! An entry approved with `sluice lock --accept-findings` also lists the
//! [`super::poisoning`] findings that were accepted, beside its digest, so
//! that a reviewer sees them in the diff:
//!
//! ```json
//! "fetch": {
//!   "digest": "sha256:…",
//!   "definition": { … },
//!   "findings": ["url at description"]
//! }
//! ```
//!
//! An entry without findings has no `findings` field.
//!
//! ## Format versions
//!
//! Format 2 added `execution` and `icons` to what defines an entry
//! ([`definition::Format`]). A format-1 file still loads: its digests are
//! checked, and its entries compared with live ones, on the format-1
//! fields, so the upgrade is never drift; but a change of `execution` or
//! `icons` is not caught for those upstreams until `sluice lock` approves
//! them again ([`Lockfile::format_1_upstreams`]; `sluice check` and `serve`
//! say so). `sluice lock` writes format 2; a partial lock
//! (`--upstream NAME`) rewrites only the upstreams it reads, and keeps each
//! other upstream's format-1 approval as it was, marked in place:
//!
//! ```json
//! "git": { "format": 1, "tools": { … }, … }
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::UpstreamCatalog;
use super::definition::{self, Format};
use super::poisoning::{CatalogFindings, Finding};
use crate::discovery::ListKind;

/// The format version this sluice writes (it reads 1 as well).
pub const LOCKFILE_VERSION: u64 = 2;

/// The approved catalogs, by upstream name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lockfile {
    /// Upstream name -> its approved catalog.
    pub upstreams: BTreeMap<String, LockedUpstream>,
}

/// One upstream's approved entries, per list, by name or URI.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LockedUpstream {
    /// The fields its entries were approved on.
    pub format: Format,
    /// `tools`, by name.
    pub tools: BTreeMap<String, LockedEntry>,
    /// `resources`, by URI.
    pub resources: BTreeMap<String, LockedEntry>,
    /// `resourceTemplates`, by URI template.
    pub resource_templates: BTreeMap<String, LockedEntry>,
    /// `prompts`, by name.
    pub prompts: BTreeMap<String, LockedEntry>,
}

/// One approved entry.
#[derive(Debug, Clone, PartialEq)]
pub struct LockedEntry {
    /// `sha256:<hex>` of the canonical definition.
    pub digest: String,
    /// The approved definition, canonical.
    pub definition: Value,
    /// The accepted findings ([`Finding::key`]), sorted.
    pub findings: Vec<String>,
}

/// Why a lockfile could not be read. The location is a JSON path or a
/// line and column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {message}")]
pub struct LockfileError {
    /// Where: `line L column C`, or a path such as `upstreams.git.tools.log`.
    pub location: String,
    /// What is wrong.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLockfile {
    version: u64,
    #[serde(default)]
    upstreams: BTreeMap<String, RawUpstream>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawUpstream {
    #[serde(default)]
    format: Option<u64>,
    #[serde(default)]
    tools: BTreeMap<String, RawEntry>,
    #[serde(default)]
    resources: BTreeMap<String, RawEntry>,
    #[serde(default)]
    resource_templates: BTreeMap<String, RawEntry>,
    #[serde(default)]
    prompts: BTreeMap<String, RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    digest: String,
    definition: Value,
    #[serde(default)]
    findings: Vec<String>,
}

// === impl Lockfile ===

impl Lockfile {
    /// Reads a lockfile's text.
    pub fn parse(text: &str) -> Result<Lockfile, LockfileError> {
        let raw: RawLockfile = serde_json::from_str(text).map_err(|e| LockfileError {
            location: format!("line {} column {}", e.line(), e.column()),
            message: e
                .to_string()
                .split(" at line ")
                .next()
                .unwrap_or_default()
                .to_owned(),
        })?;
        let file_format = format_of(raw.version).ok_or_else(|| LockfileError {
            location: "version".into(),
            message: format!(
                "format version {} is not supported (this sluice reads versions 1 and {LOCKFILE_VERSION}); run `sluice lock` to rewrite it",
                raw.version
            ),
        })?;
        let mut lock = Lockfile::default();
        for (name, raw_up) in raw.upstreams {
            // Only a format-2 file marks an upstream kept from format 1.
            let format = match (file_format, raw_up.format) {
                (_, None) => file_format,
                (Format::V2, Some(1)) => Format::V1,
                (_, Some(other)) => {
                    return Err(LockfileError {
                        location: format!("upstreams.{name}.format"),
                        message: format!(
                            "{other} is not a format an upstream can be kept in (only 1, in a version {LOCKFILE_VERSION} file)"
                        ),
                    });
                }
            };
            let mut up = LockedUpstream {
                format,
                ..LockedUpstream::default()
            };
            let lists = [
                (ListKind::Tools, raw_up.tools),
                (ListKind::Resources, raw_up.resources),
                (ListKind::ResourceTemplates, raw_up.resource_templates),
                (ListKind::Prompts, raw_up.prompts),
            ];
            for (kind, entries) in lists {
                for (key, entry) in entries {
                    let at = format!("upstreams.{name}.{}.{key}", kind.field());
                    let checked = check_entry(kind, format, &key, entry).map_err(|message| {
                        LockfileError {
                            location: at,
                            message,
                        }
                    })?;
                    up.list_mut(kind).insert(key, checked);
                }
            }
            lock.upstreams.insert(name, up);
        }
        Ok(lock)
    }

    /// The file's text: pretty JSON, every map sorted, a final newline.
    pub fn render(&self) -> String {
        let mut upstreams = Map::new();
        for (name, up) in &self.upstreams {
            upstreams.insert(name.clone(), up.to_json());
        }
        let mut root = Map::new();
        root.insert("version".into(), LOCKFILE_VERSION.into());
        root.insert("upstreams".into(), Value::Object(upstreams));
        let mut text = serde_json::to_string_pretty(&Value::Object(root))
            .unwrap_or_else(|_| unreachable!("a JSON value always serializes"));
        text.push('\n');
        text
    }

    /// The upstreams still approved under format 1, whose `execution` and
    /// `icons` are not pinned until `sluice lock` approves them again.
    pub fn format_1_upstreams(&self) -> Vec<&str> {
        self.upstreams
            .iter()
            .filter(|(_, up)| up.format == Format::V1)
            .map(|(name, _)| name.as_str())
            .collect()
    }
}

/// The definition format of a file's `version`.
fn format_of(version: u64) -> Option<Format> {
    match version {
        1 => Some(Format::V1),
        LOCKFILE_VERSION => Some(Format::V2),
        _ => None,
    }
}

fn check_entry(
    kind: ListKind,
    format: Format,
    key: &str,
    entry: RawEntry,
) -> Result<LockedEntry, String> {
    if !entry.definition.is_object() {
        return Err("definition must be a JSON object".into());
    }
    if entry.definition.get(kind.key()).and_then(Value::as_str) != Some(key) {
        return Err(format!(
            "definition.{} must equal the entry's key {key:?}",
            kind.key()
        ));
    }
    let definition = definition::definition(kind, format, &entry.definition);
    let digest = definition::digest(kind, format, &definition);
    if digest != entry.digest {
        return Err(
            "digest does not match the definition (edited by hand?); review the change and run `sluice lock` to approve it"
                .into(),
        );
    }
    let mut findings = entry.findings;
    findings.sort();
    findings.dedup();
    Ok(LockedEntry {
        digest,
        definition,
        findings,
    })
}

// === impl LockedUpstream ===

impl LockedUpstream {
    /// Approves every entry of a complete catalog as it is.
    pub fn from_catalog(catalog: &UpstreamCatalog) -> Self {
        let mut up = LockedUpstream::default();
        for kind in ListKind::ALL {
            for entry in catalog.list(kind) {
                let Some(key) = entry.get(kind.key()).and_then(Value::as_str) else {
                    continue;
                };
                let definition = definition::definition(kind, up.format, entry);
                let digest = crate::canonical::digest(&definition);
                let entry = LockedEntry {
                    digest,
                    definition,
                    findings: Vec::new(),
                };
                up.list_mut(kind).insert(key.to_owned(), entry);
            }
        }
        up
    }

    /// Records `findings` as accepted on the entries they were found in.
    pub fn accept(&mut self, findings: &CatalogFindings) {
        for (id, found) in findings {
            if let Some(entry) = self.list_mut(id.kind).get_mut(&id.key) {
                entry.findings = found.iter().map(Finding::key).collect();
                entry.findings.sort();
                entry.findings.dedup();
            }
        }
    }

    /// The approved entries as a catalog (their definitions), for the scan
    /// of names across upstreams.
    pub fn catalog(&self) -> UpstreamCatalog {
        let mut out = UpstreamCatalog::default();
        for kind in ListKind::ALL {
            out.list_mut(kind)
                .extend(self.list(kind).values().map(|e| e.definition.clone()));
        }
        out
    }

    /// The approved entries of one list.
    pub fn list(&self, kind: ListKind) -> &BTreeMap<String, LockedEntry> {
        match kind {
            ListKind::Tools => &self.tools,
            ListKind::Resources => &self.resources,
            ListKind::ResourceTemplates => &self.resource_templates,
            ListKind::Prompts => &self.prompts,
        }
    }

    pub(crate) fn list_mut(&mut self, kind: ListKind) -> &mut BTreeMap<String, LockedEntry> {
        match kind {
            ListKind::Tools => &mut self.tools,
            ListKind::Resources => &mut self.resources,
            ListKind::ResourceTemplates => &mut self.resource_templates,
            ListKind::Prompts => &mut self.prompts,
        }
    }

    /// How many entries are approved, over the four lists.
    pub fn len(&self) -> usize {
        ListKind::ALL.iter().map(|k| self.list(*k).len()).sum()
    }

    /// Whether nothing is approved.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn to_json(&self) -> Value {
        let mut out = Map::new();
        if self.format == Format::V1 {
            out.insert("format".into(), 1.into());
        }
        for kind in ListKind::ALL {
            let mut entries = Map::new();
            for (key, entry) in self.list(kind) {
                let mut e = Map::new();
                e.insert("digest".into(), entry.digest.clone().into());
                e.insert("definition".into(), entry.definition.clone());
                if !entry.findings.is_empty() {
                    e.insert("findings".into(), entry.findings.clone().into());
                }
                entries.insert(key.clone(), Value::Object(e));
            }
            out.insert(kind.field().into(), Value::Object(entries));
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn catalog() -> UpstreamCatalog {
        UpstreamCatalog {
            tools: vec![
                json!({"name": "zeta", "description": "last", "inputSchema": {"type": "object", "properties": {}}, "_meta": {"x": 1}}),
                json!({"name": "alpha", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}),
            ],
            resources: vec![json!({"uri": "file:///a", "name": "a", "size": 3})],
            resource_templates: vec![json!({"uriTemplate": "file:///{path}", "name": "any"})],
            prompts: vec![json!({"name": "greet", "arguments": [{"name": "who"}]})],
        }
    }

    fn lock() -> Lockfile {
        let mut lock = Lockfile::default();
        lock.upstreams
            .insert("files".into(), LockedUpstream::from_catalog(&catalog()));
        lock
    }

    #[test]
    fn render_is_sorted_stable_and_reads_back() {
        let text = lock().render();
        assert!(text.ends_with("}\n"));
        assert!(text.find("\"alpha\"") < text.find("\"zeta\""), "{text}");
        assert!(!text.contains("_meta") && !text.contains("\"size\""));
        let back = Lockfile::parse(&text).expect("reads back");
        assert_eq!(back, lock());
        assert_eq!(back.render(), text);
        // The upstream's order does not matter.
        let mut reordered = catalog();
        reordered.tools.reverse();
        let mut other = Lockfile::default();
        other
            .upstreams
            .insert("files".into(), LockedUpstream::from_catalog(&reordered));
        assert_eq!(other.render(), text);
    }

    #[test]
    fn a_hand_edit_without_its_digest_is_refused() {
        let text = lock().render().replace("\"last\"", "\"something else\"");
        let err = Lockfile::parse(&text).expect_err("digest mismatch");
        assert_eq!(err.location, "upstreams.files.tools.zeta");
        assert!(err.message.contains("digest does not match"), "{err}");
    }

    #[test]
    fn accepted_findings_sit_beside_the_digest_and_read_back() {
        use crate::catalog::poisoning::scan_catalog;
        let catalog = UpstreamCatalog {
            tools: vec![
                json!({"name": "fetch", "description": "Fetches. See https://example.com/doc"}),
                json!({"name": "echo", "description": "Echoes."}),
            ],
            ..UpstreamCatalog::default()
        };
        let mut up = LockedUpstream::from_catalog(&catalog);
        up.accept(&scan_catalog(&catalog));
        let mut web = Lockfile::default();
        web.upstreams.insert("web".into(), up);
        let text = web.render();
        assert_eq!(text.matches("\"findings\"").count(), 1, "{text}");
        assert!(
            text.contains("\"findings\": [\n            \"url at description\"\n          ]"),
            "{text}"
        );
        let back = Lockfile::parse(&text).expect("reads back");
        assert_eq!(
            back.upstreams["web"].tools["fetch"].findings,
            ["url at description"]
        );
        assert_eq!(back.render(), text);
        // A lockfile from before findings were recorded still reads.
        assert!(Lockfile::parse(&lock().render()).is_ok());
    }

    #[test]
    fn bad_files_say_where() {
        let cases = [
            ("{", "line"),
            (r#"{"version": 3, "upstreams": {}}"#, "version"),
            (
                r#"{"version": 1, "upstreams": {"a": {"format": 1}}}"#,
                "upstreams.a.format",
            ),
            (
                r#"{"version": 2, "upstreams": {"a": {"format": 2}}}"#,
                "upstreams.a.format",
            ),
            (r#"{"version": 1, "upstreams": {}, "extra": 1}"#, "line"),
            (
                r#"{"version": 1, "upstreams": {"a": {"tools": {"t": {"digest": "sha256:00", "definition": {"name": "u"}}}}}}"#,
                "upstreams.a.tools.t",
            ),
            (
                r#"{"version": 1, "upstreams": {"a": {"tools": {"t": {"digest": "x", "definition": []}}}}}"#,
                "upstreams.a.tools.t",
            ),
        ];
        for (text, location) in cases {
            let err = Lockfile::parse(text).expect_err(text);
            assert!(err.location.starts_with(location), "{text}: {err}");
        }
        assert_eq!(
            Lockfile::parse(r#"{"version": 1}"#).expect("empty lock"),
            Lockfile::default()
        );
    }

    /// A tool as a format-1 sluice locked it: its digest covers neither
    /// `execution` nor `icons`, which the upstream sent all along.
    const FORMAT_1: &str = r#"{
      "version": 1,
      "upstreams": {
        "jobs": {
          "tools": {
            "run": {
              "digest": "sha256:DIGEST",
              "definition": {"description": "Runs a job.", "inputSchema": {"type": "object"}, "name": "run"}
            }
          }
        }
      }
    }"#;

    fn format_1() -> String {
        let def =
            json!({"description": "Runs a job.", "inputSchema": {"type": "object"}, "name": "run"});
        let digest = crate::canonical::digest(&def);
        FORMAT_1.replace("sha256:DIGEST", &digest)
    }

    fn live_jobs(task_support: &str) -> UpstreamCatalog {
        UpstreamCatalog {
            tools: vec![json!({
                "name": "run", "description": "Runs a job.", "inputSchema": {"type": "object"},
                "execution": {"taskSupport": task_support},
                "icons": [{"src": "https://jobs.example/run.png"}]
            })],
            ..UpstreamCatalog::default()
        }
    }

    #[test]
    fn a_format_1_lockfile_loads_and_its_upgrade_is_not_drift() {
        use crate::catalog::drift::diff;
        let lock = Lockfile::parse(&format_1()).expect("format 1 reads");
        assert_eq!(lock.format_1_upstreams(), ["jobs"]);
        let jobs = &lock.upstreams["jobs"];
        assert_eq!(jobs.format, Format::V1);
        // Compared on the fields it was approved on: nothing drifted, and
        // (until it is locked again) a task-support change is not caught.
        assert!(diff(jobs, &live_jobs("optional")).is_empty());
        assert!(diff(jobs, &live_jobs("required")).is_empty());
        // A change of what format 1 pins still is drift.
        let mut described = live_jobs("optional");
        described.tools[0]["description"] = json!("Runs a job, and mails it.");
        assert_eq!(diff(jobs, &described).changed[0].fields, ["description"]);
    }

    #[test]
    fn locking_again_pins_execution_and_icons() {
        use crate::catalog::drift::diff;
        let mut lock = Lockfile::parse(&format_1()).expect("format 1 reads");
        // A partial lock of another upstream keeps `jobs` in format 1,
        // marked, and the file reads back the same.
        lock.upstreams
            .insert("files".into(), LockedUpstream::from_catalog(&catalog()));
        let text = lock.render();
        assert!(text.contains("\"jobs\": {\n      \"format\": 1,"), "{text}");
        assert!(text.contains("\"version\": 2"), "{text}");
        assert_eq!(text.matches("\"format\"").count(), 1, "{text}");
        let back = Lockfile::parse(&text).expect("reads back");
        assert_eq!(back, lock);
        assert_eq!(back.format_1_upstreams(), ["jobs"]);
        // Locking `jobs` again approves it in format 2, where a change of
        // task support or icons is drift.
        let relocked = LockedUpstream::from_catalog(&live_jobs("optional"));
        assert_eq!(relocked.format, Format::V2);
        assert!(!relocked.to_json().to_string().contains("format"));
        assert_eq!(
            relocked.tools["run"].definition["execution"],
            json!({"taskSupport": "optional"})
        );
        assert!(diff(&relocked, &live_jobs("optional")).is_empty());
        assert_eq!(
            diff(&relocked, &live_jobs("required")).changed[0].fields,
            ["execution"]
        );
        let mut iconless = live_jobs("optional");
        iconless.tools[0].as_object_mut().map(|t| t.remove("icons"));
        assert_eq!(diff(&relocked, &iconless).changed[0].fields, ["icons"]);
    }
}
