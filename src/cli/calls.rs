//! The commands as functions, for bindings in other languages (the Python package in `python/`):
//! the command line's arguments, the same work and results, in the calling process. A binding
//! calls [`silence`] once, so that no progress bar or note reaches its process's terminal.

use super::{Error, LogFormat, check, export, salvage, terminal};
use std::path::Path;

/// Parse `argv`, a command's arguments without its name, as the command line parses them.
fn parse<A: clap::Args + clap::FromArgMatches>(
    name: &'static str,
    argv: &[String],
) -> Result<A, Error> {
    let command = A::augment_args(clap::Command::new(name).no_binary_name(true));
    let matches = command
        .try_get_matches_from(argv)
        .map_err(|e| Error::Usage(e.render().to_string().trim_end().to_owned()))?;
    A::from_arg_matches(&matches).map_err(|e| Error::Usage(e.to_string()))
}

/// Print nothing on the terminal from now on (no progress bars, notes or tables): what the calls
/// return is what a binding gets.
pub fn silence() {
    terminal::set_quiet(true);
}

/// The report `check --json --format FORMAT PATH` prints (`format`: `auto`, `blackbox` or
/// `dataflash`).
pub fn check(path: &Path, format: &str) -> Result<String, Error> {
    let format = <LogFormat as clap::ValueEnum>::from_str(format, true)
        .map_err(|_| Error::Usage(format!("--format {format}: auto, blackbox or dataflash")))?;
    check::json_report(path, format)
}

/// `bbcheck export ARGV…`: writes its files, returns the exit code.
pub fn export(argv: &[String]) -> Result<u8, Error> {
    export::run(&parse::<export::Args>("export", argv)?)
}

/// `bbcheck salvage ARGV…`: writes the salvaged log, returns the exit code and what the command
/// prints (with `--json`, the summary).
pub fn salvage(argv: &[String]) -> Result<(u8, String), Error> {
    salvage::salvage(&parse::<salvage::Args>("salvage", argv)?)
}
