//! How to start a stdio child: what its upstream's config says, borrowed
//! for one spawn (`stdio`) and for finding its sandbox's paths (`sandbox`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use sluice_core::boundary::redact::Redactor;
use sluice_core::config::Rlimits;
use sluice_core::sandbox::Sandboxing;

/// How to start the child.
pub(crate) struct ChildSpec<'a> {
    pub(crate) command: &'a str,
    pub(crate) args: &'a [String],
    /// Beyond the `PATH` and `HOME` it inherits.
    pub(crate) env: &'a BTreeMap<String, String>,
    pub(crate) cwd: Option<&'a PathBuf>,
    pub(crate) rlimit: &'a Rlimits,
    pub(crate) sandbox: &'a Sandboxing,
    /// What the log says of the child (its arguments, its stderr) is
    /// redacted by these rules.
    pub(crate) redactor: &'a Arc<Redactor>,
}
