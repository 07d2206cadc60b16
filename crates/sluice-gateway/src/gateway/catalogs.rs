//! The one-shot catalog reads of `sluice lock` and `sluice check`.

use std::sync::Arc;

use sluice_core::boundary::redact::Redactor;
use sluice_core::catalog::{UpstreamCatalog, drift, redaction};
use sluice_core::config::Config;
use sluice_core::discovery::{CatalogRead, ReadProgress};
use tokio::sync::mpsc;

use super::{redactor, settings};
use crate::upstream;
use crate::vault::Vault;

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

/// What a progress line hears of [`read_catalogs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadEvent<'a> {
    /// The upstream answered another page: how far its read has got.
    Page(&'a str, ReadProgress),
    /// The upstream's read ended.
    Done(&'a str),
}

/// Reads the catalog of each named upstream once (all at once), as
/// `sluice lock` and `sluice check` need: connect, walk every list to its
/// end, disconnect. Results come in config order; `on_event` hears each
/// page and each end as they come (for a progress line). `vault` holds
/// the logins of `auth = "oauth"` upstreams.
pub async fn read_catalogs(
    config: &Config,
    vault: Option<Vault>,
    names: &[String],
    on_event: &mut dyn FnMut(ReadEvent<'_>),
) -> Vec<(
    String,
    Result<sluice_core::discovery::CatalogRead, drift::NotEstablished>,
)> {
    let redactor = Arc::new(redactor(config));
    let settings = settings(config, &redactor, vault, None);
    let (pages, mut paged) = mpsc::unbounded_channel::<(String, ReadProgress)>();
    let mut reads = tokio::task::JoinSet::new();
    for (i, up) in config
        .upstreams
        .iter()
        .filter(|u| names.contains(&u.name))
        .enumerate()
    {
        let (up, settings, pages) = (up.clone(), settings.clone(), pages.clone());
        reads.spawn(async move {
            let on_page = |progress| {
                let _ = pages.send((up.name.clone(), progress));
            };
            let read = upstream::read_once(&up, &settings, &on_page).await;
            (i, up.name.clone(), read)
        });
    }
    drop(pages);
    let mut out = Vec::new();
    loop {
        tokio::select! {
            Some((name, progress)) = paged.recv() => on_event(ReadEvent::Page(&name, progress)),
            done = reads.join_next() => match done {
                Some(Ok(read)) => {
                    on_event(ReadEvent::Done(&read.1));
                    out.push(read);
                }
                Some(Err(e)) => tracing::error!("a catalog read task failed: {e}"),
                None => break,
            },
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
