//! The progress line of `sluice lock` and `sluice check` while catalogs
//! are read (each upstream still reading, with its pages and entries so
//! far): on a terminal only (stderr), so that a hanging upstream does
//! not look like a hung sluice for up to `read_timeout`; nothing at all
//! when stderr is a pipe or a file, so scripts read what they always did.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sluice_core::discovery;
use sluice_gateway::gateway::ReadEvent;

/// Which upstreams are still being read, how far each has got, and how
/// many are done.
pub(crate) struct ReadProgress {
    bar: Option<ProgressBar>,
    /// In config order, with the pages and entries read so far.
    reading: Vec<(String, discovery::ReadProgress)>,
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
            reading: names
                .iter()
                .map(|n| (n.clone(), discovery::ReadProgress::default()))
                .collect(),
        };
        progress.show();
        progress
    }

    /// What the reads said: a page of one, or the end of one.
    pub(crate) fn heard(&mut self, event: ReadEvent<'_>) {
        match event {
            ReadEvent::Page(name, so_far) => {
                if let Some((_, progress)) = self.reading.iter_mut().find(|(n, _)| n == name) {
                    *progress = so_far;
                }
            }
            ReadEvent::Done(name) => {
                self.reading.retain(|(n, _)| n != name);
                if let Some(bar) = &self.bar {
                    bar.inc(1);
                }
            }
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
            bar.set_message(still_reading(&self.reading));
        }
    }
}

/// `still reading fx (3 pages, 120 entries), gy (0 pages, 0 entries)`.
fn still_reading(reading: &[(String, discovery::ReadProgress)]) -> String {
    let each: Vec<String> = reading
        .iter()
        .map(|(name, p)| format!("{name} ({} pages, {} entries)", p.pages, p.items))
        .collect();
    format!("still reading {}", each.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_each_upstream_with_its_pages_and_entries() {
        let reading = [
            (
                "fx".to_owned(),
                discovery::ReadProgress {
                    pages: 3,
                    items: 120,
                },
            ),
            ("gy".to_owned(), discovery::ReadProgress::default()),
        ];
        assert_eq!(
            still_reading(&reading),
            "still reading fx (3 pages, 120 entries), gy (0 pages, 0 entries)"
        );
    }
}
