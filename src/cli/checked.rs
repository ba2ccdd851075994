//! The report of a checked file, whatever its format: what `check` prints and the HTML page
//! draws.

use crate::dataflash::DataflashReport;
use crate::report::FileReport;

/// The report of a checked file, by format.
pub enum Checked {
    Blackbox(FileReport),
    Dataflash(Box<DataflashReport>),
}

impl Checked {
    /// The file's report, whatever its format.
    pub fn file_mut(&mut self) -> &mut FileReport {
        match self {
            Checked::Blackbox(report) => report,
            Checked::Dataflash(report) => &mut report.file,
        }
    }

    pub fn is_clean(&self) -> bool {
        match self {
            Checked::Blackbox(report) => report.is_clean(),
            Checked::Dataflash(report) => report.is_clean(),
        }
    }
}

/// How many of `verdicts` are clean, suspect (named only when there are any) and damaged, as the
/// summary of several files says it.
pub fn verdict_tally<'a>(verdicts: impl Iterator<Item = &'a str>) -> String {
    let (mut clean, mut suspect, mut damaged) = (0, 0, 0);
    for verdict in verdicts {
        match verdict {
            "clean" => clean += 1,
            "suspect" => suspect += 1,
            _ => damaged += 1,
        }
    }
    match suspect {
        0 => format!("{clean} clean, {damaged} damaged"),
        _ => format!("{clean} clean, {suspect} suspect, {damaged} damaged"),
    }
}
