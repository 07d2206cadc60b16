//! The one-shot catalog reads of `sluice lock` and `sluice check`.

use sluice_core::catalog::drift;
use sluice_core::config::Config;

use super::settings;
use crate::upstream;

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
    let settings = settings(config);
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
        .map(|(_, name, read)| (name, read))
        .collect()
}
