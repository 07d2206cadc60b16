//! A submitted approval form, checked: which entries it approves.
//!
//! The drift page has one form per entry (`target=entry`, its upstream,
//! list and key), one per upstream (`target=upstream`) and one for
//! everything (`target=all`); each may tick "accept findings", as
//! `sluice lock --accept-findings`.

use super::{Approval, Refusal};
use crate::catalog::drift::EntryId;
use crate::catalog::locking::LockScope;
use crate::discovery::ListKind;

/// What a form approves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalTarget {
    /// One entry.
    Entry,
    /// One upstream's whole read.
    Upstream,
    /// Every upstream's read.
    All,
}

impl ApprovalTarget {
    /// The form's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalTarget::Entry => "entry",
            ApprovalTarget::Upstream => "upstream",
            ApprovalTarget::All => "all",
        }
    }
}

/// The fields of an approval form, as submitted.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApprovalForm<'a> {
    /// `target`: `entry`, `upstream` or `all`.
    pub target: Option<&'a str>,
    /// `upstream`.
    pub upstream: Option<&'a str>,
    /// `list`: `tools`, `resources`, `resourceTemplates` or `prompts`.
    pub list: Option<&'a str>,
    /// `key`: the entry's name or URI.
    pub key: Option<&'a str>,
    /// `accept_findings` was ticked.
    pub accept_findings: bool,
}

impl ApprovalForm<'_> {
    /// What the form approves, among the `configured` upstreams.
    pub fn approval(&self, configured: &[String]) -> Result<Approval, Refusal> {
        let bad = |why: &str| Refusal::BadForm(why.to_owned());
        let target = [
            ApprovalTarget::Entry,
            ApprovalTarget::Upstream,
            ApprovalTarget::All,
        ]
        .into_iter()
        .find(|t| Some(t.as_str()) == self.target)
        .ok_or_else(|| bad("target must be entry, upstream or all"))?;
        let upstream = || {
            let name = self.upstream.ok_or_else(|| bad("no upstream named"))?;
            configured
                .iter()
                .find(|c| *c == name)
                .cloned()
                .ok_or_else(|| bad("no such upstream is configured"))
        };
        let (scope, upstreams) = match target {
            ApprovalTarget::All => (LockScope::All, Vec::new()),
            ApprovalTarget::Upstream => (LockScope::Upstreams, vec![upstream()?]),
            ApprovalTarget::Entry => {
                let name = upstream()?;
                let kind = ListKind::ALL
                    .into_iter()
                    .find(|k| Some(k.field()) == self.list)
                    .ok_or_else(|| {
                        bad("list must be tools, resources, resourceTemplates or prompts")
                    })?;
                let key = self
                    .key
                    .filter(|k| !k.is_empty())
                    .ok_or_else(|| bad("no entry named"))?;
                let id = EntryId {
                    kind,
                    key: key.to_owned(),
                };
                (LockScope::Entry(name.clone(), id), vec![name])
            }
        };
        Ok(Approval {
            scope,
            upstreams,
            accept_findings: self.accept_findings,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn configured() -> Vec<String> {
        vec!["files".into(), "time".into()]
    }

    #[test]
    fn each_target_becomes_its_scope() {
        let all = ApprovalForm {
            target: Some("all"),
            ..ApprovalForm::default()
        };
        assert_eq!(
            all.approval(&configured()).unwrap(),
            Approval {
                scope: LockScope::All,
                upstreams: vec![],
                accept_findings: false
            }
        );
        let up = ApprovalForm {
            target: Some("upstream"),
            upstream: Some("time"),
            accept_findings: true,
            ..ApprovalForm::default()
        };
        assert_eq!(
            up.approval(&configured()).unwrap(),
            Approval {
                scope: LockScope::Upstreams,
                upstreams: vec!["time".into()],
                accept_findings: true
            }
        );
        let entry = ApprovalForm {
            target: Some("entry"),
            upstream: Some("files"),
            list: Some("resourceTemplates"),
            key: Some("file:///{path}"),
            accept_findings: false,
        };
        let approval = entry.approval(&configured()).unwrap();
        assert_eq!(
            approval.scope,
            LockScope::Entry(
                "files".into(),
                EntryId {
                    kind: ListKind::ResourceTemplates,
                    key: "file:///{path}".into()
                }
            )
        );
        assert_eq!(approval.upstreams, ["files"]);
    }

    #[test]
    fn a_form_that_names_nothing_known_is_refused() {
        let cases = [
            (
                ApprovalForm::default(),
                "target must be entry, upstream or all",
            ),
            (
                ApprovalForm {
                    target: Some("upstream"),
                    upstream: Some("nope"),
                    ..ApprovalForm::default()
                },
                "no such upstream is configured",
            ),
            (
                ApprovalForm {
                    target: Some("entry"),
                    upstream: Some("time"),
                    list: Some("tool"),
                    key: Some("x"),
                    ..ApprovalForm::default()
                },
                "list must be tools, resources, resourceTemplates or prompts",
            ),
            (
                ApprovalForm {
                    target: Some("entry"),
                    upstream: Some("time"),
                    list: Some("tools"),
                    key: Some(""),
                    ..ApprovalForm::default()
                },
                "no entry named",
            ),
        ];
        for (form, why) in cases {
            assert_eq!(
                form.approval(&configured()),
                Err(Refusal::BadForm(why.into()))
            );
        }
    }
}
