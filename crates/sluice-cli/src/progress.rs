//! The progress line of `sluice lock` and `sluice check` while catalogs
//! are read: on a terminal only (stderr), so that a hanging upstream does
//! not look like a hung sluice for up to `read_timeout`; nothing at all
//! when stderr is a pipe or a file, so scripts read what they always did.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Which upstreams are still being read, and how many are done.
pub(crate) struct ReadProgress {
    bar: Option<ProgressBar>,
    reading: Vec<String>,
}

impl ReadProgress {
    /// Shows the line, for reads of `names`, when stderr is a terminal.
    pub(crate) fn start(names: &[String]) -> ReadProgress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(
                Some(names.len() as u64),
                ProgressDrawTarget::stderr(),
            );
            // A fixed template: its only error would be a typo in it.
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} reading catalogs {pos}/{len} {elapsed}: {msg}",
            ) {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        let progress = ReadProgress {
            bar,
            reading: names.to_vec(),
        };
        progress.show();
        progress
    }

    /// `name`'s read ended.
    pub(crate) fn done(&mut self, name: &str) {
        self.reading.retain(|n| n != name);
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
        self.show();
    }

    /// Clears the line before the report is printed.
    pub(crate) fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }

    fn show(&self) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("still reading {}", self.reading.join(", ")));
        }
    }
}
