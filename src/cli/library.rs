//! `bbcheck library`: add the format sets of DataFlash logs to a format library, or the headers
//! of Blackbox logs to a header library: the files `salvage` lends definitions from
//! (`src/dataflash/formats.txt` and `src/blackbox/headers.txt` are the ones bbcheck ships).

use super::output::AtomicFile;
use super::{EXIT_CLEAN, Error, input, terminal};
use crate::blackbox::{self, library::HeaderLibrary};
use crate::dataflash::{self, library::Library};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// DataFlash logs whose FMT sets to add, one per firmware build (the log's first MSG), or
    /// Blackbox logs whose headers to add, one per frame layout.
    #[arg(required = true, value_name = "LOG")]
    logs: Vec<PathBuf>,
    /// The library file to add them to (created if missing; a build already in it is replaced).
    #[arg(long, value_name = "FILE")]
    to: PathBuf,
}

pub fn run(args: &Args) -> Result<u8, Error> {
    let first = input::open(&args.logs[0])?;
    if blackbox::is_blackbox(&first) {
        return run_blackbox(args);
    }
    let mut library = read(&args.to)?.map_or_else(Library::default, |t| Library::parse(&t));
    for log in &args.logs {
        let data = input::open(log)?;
        if !dataflash::is_dataflash(&data) {
            return Err(Error::Usage(format!(
                "{}: not a DataFlash log; the library holds DataFlash format sets (the first \
                 log named is one)",
                log.display()
            )));
        }
        let report = dataflash::check(&input::name(log), &data);
        let Some(build) = report.dataflash.firmware.as_deref() else {
            return Err(Error::Usage(format!(
                "{}: no MSG names the firmware build the format set belongs to",
                log.display()
            )));
        };
        let formats = dataflash::salvage::donor_formats(&data, &AtomicU64::new(0));
        library.add(build, &formats);
        if !terminal::quiet() {
            let count = library.builds[build].len();
            println!("{}: {count} definitions of {build}", log.display());
        }
    }
    write(&args.to, &library.text())
}

/// Add the header of every session of each Blackbox log to the header library `args.to`.
fn run_blackbox(args: &Args) -> Result<u8, Error> {
    let mut library =
        read(&args.to)?.map_or_else(HeaderLibrary::default, |t| HeaderLibrary::parse(&t));
    for log in &args.logs {
        let data = input::open(log)?;
        if !blackbox::is_blackbox(&data) {
            return Err(Error::Usage(format!(
                "{}: not a Blackbox log; the library holds Blackbox headers (the first log named \
                 is one)",
                log.display()
            )));
        }
        let (mut added, mut firmware) = (0, String::new());
        for bounds in blackbox::find_sessions(&data) {
            if let Some(entry) = library.add(&data, bounds.start, bounds.end) {
                added += 1;
                firmware = entry.firmware();
            }
        }
        if added > 0 && !terminal::quiet() {
            let layouts = library.entries.len();
            println!(
                "{}: {added} headers of {firmware}; {layouts} layouts",
                log.display()
            );
        }
        if added == 0 {
            eprintln!(
                "{}: left out: no session header defines I frames without a problem",
                log.display()
            );
        }
    }
    write(&args.to, &library.text())
}

/// The text of the library file `path`, or `None` when there is none yet.
fn read(path: &Path) -> Result<Option<String>, Error> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Write the library `text` to `path`, whole or not at all.
fn write(path: &Path, text: &str) -> Result<u8, Error> {
    let mut out = AtomicFile::create(path)?;
    out.writer()
        .write_all(text.as_bytes())
        .map_err(|e| Error::io(path, e))?;
    out.commit()?;
    Ok(EXIT_CLEAN)
}
