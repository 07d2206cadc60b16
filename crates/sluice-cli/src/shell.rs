//! What a shell user expects of a command: `sluice completions <shell>`
//! and `sluice man`, both generated from the one clap definition of the
//! command line, so they never disagree with `--help`.

use std::io::Write;

use clap::CommandFactory;

use crate::Cli;

/// Prints the completion script for `shell` to stdout.
pub(crate) fn completions(shell: clap_complete::Shell) {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "sluice", &mut std::io::stdout());
}

/// Prints the sluice(1) man page (roff) to stdout.
pub(crate) fn man() -> std::io::Result<()> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page)?;
    std::io::stdout().write_all(&page)
}
