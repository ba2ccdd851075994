//! `bbcheck damage`: write a damaged copy of a log and a JSON sidecar saying what was changed.

use super::output::AtomicFile;
use super::{EXIT_CLEAN, Error, input, terminal};
use crate::testkit::damage::{self, Model};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Log to damage (never modified).
    input: PathBuf,
    /// Damaged copy to write; the truth goes to `<OUT>.truth.json`.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// Seed of the deterministic damage (a text-mode copy, `newline`, has one outcome and no
    /// use for it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How to damage it.
    #[arg(long, value_enum, default_value = "drop-runs")]
    model: Model,
}

pub fn run(args: &Args) -> Result<u8, Error> {
    let data = input::open_raw(&args.input)?;
    let same = std::fs::canonicalize(&args.input).ok() == std::fs::canonicalize(&args.output).ok();
    if same {
        return Err(Error::Usage(format!(
            "{}: refusing to write the damaged copy over its input",
            args.output.display()
        )));
    }
    let damaged = damage::damage(&data, args.model, args.seed);
    let mut truth_path = args.output.clone().into_os_string();
    truth_path.push(".truth.json");
    let truth_path = PathBuf::from(truth_path);
    let mut out = AtomicFile::create(&args.output)?;
    out.writer()
        .write_all(&damaged.data)
        .map_err(|e| Error::io(&args.output, e))?;
    let mut truth = AtomicFile::create(&truth_path)?;
    let record = serde_json::json!({
        "input": input::name(&args.input),
        "model": damaged.model,
        "seed": damaged.seed,
        "input_size": data.len(),
        "output_size": damaged.data.len(),
        "changes": damaged.changes,
    });
    serde_json::to_writer_pretty(truth.writer(), &record)
        .map_err(|e| Error::io(&truth_path, e.into()))?;
    out.commit()?;
    truth.commit()?;
    if !terminal::quiet() {
        println!(
            "wrote {}: {} change{} ({}), {} bytes; the truth in {}",
            args.output.display(),
            damaged.changes.len(),
            if damaged.changes.len() == 1 { "" } else { "s" },
            damaged.model.name(),
            damaged.data.len(),
            truth_path.display()
        );
    }
    Ok(EXIT_CLEAN)
}
