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
