//! `bbcheck library`: add the format sets of DataFlash logs to a format library, the file that
//! `salvage` lends definitions from (`src/dataflash/formats.txt` is the one bbcheck ships).

use super::output::AtomicFile;
use super::{EXIT_CLEAN, Error, input, terminal};
use crate::dataflash::{self, library::Library};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// DataFlash logs whose FMT sets to add, one per firmware build (the log's first MSG).
    #[arg(required = true, value_name = "LOG")]
    logs: Vec<PathBuf>,
    /// The library file to add them to (created if missing; a build already in it is replaced).
    #[arg(long, value_name = "FILE")]
    to: PathBuf,
}

pub fn run(args: &Args) -> Result<u8, Error> {
    let mut library = match std::fs::read_to_string(&args.to) {
        Ok(text) => Library::parse(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Library::default(),
        Err(e) => return Err(Error::io(&args.to, e)),
    };
    for log in &args.logs {
        let data = input::open(log)?;
        if !dataflash::is_dataflash(&data) {
            return Err(Error::Usage(format!(
                "{}: not a DataFlash log; the library holds DataFlash format sets",
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
    let mut out = AtomicFile::create(&args.to)?;
    out.writer()
        .write_all(library.text().as_bytes())
        .map_err(|e| Error::io(&args.to, e))?;
    out.commit()?;
    Ok(EXIT_CLEAN)
}
