//! `[catalog]`: how upstream catalogs are read, approved against the
//! lockfile and read again, and how the lists sluice serves are paged.

use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use super::boundary::MAX_TRANSPORT_MESSAGE_BYTES;
use super::diagnostics::Diagnostics;
use super::raw::RawCatalog;
use crate::catalog::drift::OnDrift;
use crate::discovery::WalkLimits;
use crate::envelope::DEFAULT_PAGE_BYTES;

/// `[catalog]`: how catalogs are read, approved and re-read.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogConfig {
    /// `lockfile`: the approved catalogs, relative to the config file's
    /// directory. Default `sluice.lock`.
    pub lockfile: PathBuf,
    /// `on_drift`: `"block"` (default) or `"warn"`.
    pub on_drift: OnDrift,
    /// `require_lock`: refuse to serve without a lockfile (default false:
    /// serve unpinned, and say so at start).
    pub require_lock: bool,
    /// `refresh_interval`: how often every catalog is read again, besides
    /// on `list_changed` (`0s`: only on `list_changed`). Default 5m.
    pub refresh_interval: Duration,
    /// `read_timeout`: the most one whole catalog read may take. Default 2m.
    pub read_timeout: Duration,
    /// `max_pages` and `max_items`: caps on one list's walk.
    pub limits: WalkLimits,
    /// `mode`: what `tools/list` shows.
    pub mode: CatalogMode,
    /// `page_bytes`: the byte cap of a page of sluice's own list tools.
    pub page_bytes: usize,
    /// `list_page_size`: rows in a page of the MCP lists (`tools/list`, ...).
    pub list_page_size: usize,
    /// `list_page_bytes`: the byte cap of a page of the MCP lists.
    pub list_page_bytes: usize,
}

/// `[catalog] mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogMode {
    /// `tools/list` shows every tool (paged).
    Full,
    /// `tools/list` shows the four meta-tools of progressive discovery.
    Progressive,
}

impl Default for CatalogConfig {
    fn default() -> Self {
        CatalogConfig {
            lockfile: PathBuf::from("sluice.lock"),
            on_drift: OnDrift::Block,
            require_lock: false,
            refresh_interval: Duration::from_secs(300),
            read_timeout: Duration::from_secs(120),
            limits: WalkLimits::default(),
            mode: CatalogMode::Full,
            page_bytes: DEFAULT_PAGE_BYTES,
            list_page_size: 500,
            list_page_bytes: 1_048_576,
        }
    }
}

pub(super) fn validate_catalog(
    raw: &RawCatalog,
    diags: &mut Diagnostics<'_>,
) -> Option<CatalogConfig> {
    let d = CatalogConfig::default();
    let lockfile = validate_lockfile(&raw.lockfile, &d, diags);
    let on_drift = diags.choice(
        &raw.on_drift,
        "catalog.on_drift",
        d.on_drift,
        &[("block", OnDrift::Block), ("warn", OnDrift::Warn)],
    );
    let secs = Duration::from_secs;
    let refresh_interval = diags.duration(
        &raw.refresh_interval,
        "catalog.refresh_interval",
        d.refresh_interval,
        (Duration::ZERO, secs(86_400)),
    );
    let read_timeout = diags.duration(
        &raw.read_timeout,
        "catalog.read_timeout",
        d.read_timeout,
        (secs(1), secs(3600)),
    );
    let limits = validate_walk_limits(raw, &d, diags);
    let mode = diags.choice(
        &raw.mode,
        "catalog.mode",
        d.mode,
        &[
            ("full", CatalogMode::Full),
            ("progressive", CatalogMode::Progressive),
        ],
    );
    let page_bytes = diags.integer(
        &raw.page_bytes,
        "catalog.page_bytes",
        d.page_bytes,
        (1_024, 1_048_576),
    );
    let list_page_size = diags.integer(
        &raw.list_page_size,
        "catalog.list_page_size",
        d.list_page_size,
        (1, 100_000),
    );
    let list_page_bytes = diags.integer(
        &raw.list_page_bytes,
        "catalog.list_page_bytes",
        d.list_page_bytes,
        (4_096, MAX_TRANSPORT_MESSAGE_BYTES),
    );
    Some(CatalogConfig {
        mode: mode?,
        page_bytes: page_bytes?,
        list_page_size: list_page_size?,
        list_page_bytes: list_page_bytes?,
        lockfile: lockfile?,
        on_drift: on_drift?,
        require_lock: raw.require_lock.unwrap_or(d.require_lock),
        refresh_interval: refresh_interval?,
        read_timeout: read_timeout?,
        limits: limits?,
    })
}

/// `lockfile`: a path, resolved against the config file's directory.
fn validate_lockfile(
    raw: &Option<Spanned<String>>,
    d: &CatalogConfig,
    diags: &mut Diagnostics<'_>,
) -> Option<PathBuf> {
    match raw {
        None => Some(d.lockfile.clone()),
        Some(s) if s.get_ref().trim().is_empty() => {
            diags.push(
                Some(s.span()),
                "catalog.lockfile",
                "must be a file path (relative to this file's directory), not empty".into(),
            );
            None
        }
        Some(s) => Some(PathBuf::from(s.get_ref())),
    }
}

/// `max_pages` and `max_items`: the caps on one list's walk.
fn validate_walk_limits(
    raw: &RawCatalog,
    d: &CatalogConfig,
    diags: &mut Diagnostics<'_>,
) -> Option<WalkLimits> {
    let max_pages = diags.integer(
        &raw.max_pages,
        "catalog.max_pages",
        d.limits.max_pages,
        (1, 1_000_000),
    );
    let max_items = diags.integer(
        &raw.max_items,
        "catalog.max_items",
        d.limits.max_items,
        (1, 10_000_000),
    );
    Some(WalkLimits {
        max_pages: max_pages?,
        max_items: max_items?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testing::{errors, parse};

    #[test]
    fn catalog_section() {
        let c = parse(
            r#"
[catalog]
lockfile = "locks/prod.lock"
on_drift = "warn"
require_lock = true
refresh_interval = "0s"
read_timeout = "30s"
max_pages = 50
max_items = 500
"#,
        )
        .expect("valid");
        assert_eq!(c.catalog.lockfile, PathBuf::from("locks/prod.lock"));
        assert_eq!(c.catalog.on_drift, OnDrift::Warn);
        assert!(c.catalog.require_lock);
        assert_eq!(c.catalog.refresh_interval, Duration::ZERO);
        assert_eq!(c.catalog.read_timeout, Duration::from_secs(30));
        assert_eq!(
            c.catalog.limits,
            WalkLimits {
                max_pages: 50,
                max_items: 500
            }
        );
        assert_eq!(parse("").expect("empty").catalog, CatalogConfig::default());
        let errs = errors(
            "[catalog]\non_drift = \"ignore\"\nmax_pages = 0\nread_timeout = \"2h\"\nlockfile = \"\"",
        );
        assert_eq!(errs.len(), 4, "{errs:#?}");
        assert!(errs.iter().any(
            |e| e.contains("catalog.on_drift") && e.contains("(allowed: \"block\", \"warn\")")
        ));
        assert!(
            errs.iter()
                .any(|e| e.contains("catalog.max_pages") && e.contains("1 to 1000000"))
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("catalog.read_timeout") && e.contains("out of range"))
        );
        assert!(errs.iter().any(|e| e.contains("catalog.lockfile")));
    }
}
