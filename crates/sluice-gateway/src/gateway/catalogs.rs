//! The one-shot catalog reads of `sluice lock` and `sluice check`.

use std::sync::Arc;

use sluice_core::boundary::redact::Redactor;
use sluice_core::catalog::{UpstreamCatalog, drift, redaction};
use sluice_core::config::Config;
use sluice_core::discovery::CatalogRead;

use super::{redactor, settings};
use crate::upstream;

/// Redacts the secrets out of a catalog read (before it is served, pinned
/// or locked), naming in the log each entry that held one.
pub(super) fn redact(upstream: &str, catalog: &mut UpstreamCatalog, redactor: &Redactor) {
    for entry in redaction::redact(catalog, redactor) {
        tracing::warn!(
            upstream,
            "{} {:?}: {} secret(s) redacted from its definition (served, pinned and locked redacted)",
            entry.list.method(),
            entry.name,
            entry.secrets
        );
    }
}

/// Reads the catalog of each named upstream once (all at once), as
/// `sluice lock` and `sluice check` need: connect, walk every list to its
/// end, disconnect. Results come in config order; `on_read` hears each
/// upstream's name as its read ends (for a progress line).
pub async fn read_catalogs(
    config: &Config,
    names: &[String],
    on_read: &mut dyn FnMut(&str),
) -> Vec<(
    String,
    Result<sluice_core::discovery::CatalogRead, drift::NotEstablished>,
)> {
    let redactor = Arc::new(redactor(config));
    let settings = settings(config, &redactor);
    let mut reads = tokio::task::JoinSet::new();
    for (i, up) in config
        .upstreams
        .iter()
        .filter(|u| names.contains(&u.name))
        .enumerate()
    {
        let (up, settings) = (up.clone(), settings.clone());
        reads.spawn(async move {
            (
                i,
                up.name.clone(),
                upstream::read_once(&up, &settings).await,
            )
        });
    }
    let mut out = Vec::new();
    while let Some(done) = reads.join_next().await {
        match done {
            Ok(read) => {
                on_read(&read.1);
                out.push(read);
            }
            Err(e) => tracing::error!("a catalog read task failed: {e}"),
        }
    }
    out.sort_by_key(|(i, _, _)| *i);
    out.into_iter()
        .map(|(_, name, mut read)| {
            if let Ok(CatalogRead::Complete(catalog)) = &mut read {
                redact(&name, catalog, &redactor);
            }
            (name, read)
        })
        .collect()
}
