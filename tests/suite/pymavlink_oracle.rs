//! pymavlink, the reference Python reader, as an independent oracle for DataFlash salvage and
//! export: it reads every salvaged output of every real log and of damaged copies of them (one
//! seed per damage model) without skipping a byte, and counts the same messages per type as
//! `bbcheck check`; and the values `export --csv` writes are the ones it gives (scaled by the
//! format character), as mavlogdump's CSV writes them.
//!
//! The reader runs from `BBCHECK_PYTHON`, or `.venv/bin/python` in the project (which `.ci/run`
//! sets up: `python3 -m venv .venv && .venv/bin/pip install pymavlink==2.4.50`). Without it the
//! test is skipped, except under CI (`CI=true`), where it fails.

use crate::common;

use bbcheck::dataflash::{self, fmt::Formats};
use bbcheck::testkit::damage::{Model, damage};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A Python that imports pymavlink, if there is one.
fn python() -> Option<PathBuf> {
    common::python("pymavlink.DFReader")
}

/// The real DataFlash logs of the corpus, in name order, and a Python with pymavlink; `None`
/// (the test is skipped) without either.
fn real_logs_and_python() -> Option<(Vec<PathBuf>, PathBuf)> {
    let corpus = common::corpus()?;
    let python = python()?;
    let mut paths: Vec<_> = std::fs::read_dir(corpus.join("real/ardupilot"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    Some((paths, python))
}

/// Run `script` of `tests/oracle/` with `python` on `args`, and return what it printed; it must
/// succeed.
fn run_oracle(
    python: &Path,
    script: &str,
    args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>,
) -> Vec<u8> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/oracle")
        .join(script);
    let output = Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .expect("python runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

#[test]
fn pymavlink_reads_every_salvaged_log_whole() {
    let Some((paths, python)) = real_logs_and_python() else {
        return;
    };
    let dir = common::TempDir::new("oracle");
    // Salvage every real log and one damaged copy per model; remember what check counts.
    let mut expected = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let data = std::fs::read(path).unwrap();
        let mut inputs = vec![("real".to_owned(), data.clone())];
        for model in Model::ALL {
            inputs.push((model.name().to_owned(), damage(&data, model, 1).data));
        }
        for (case, input) in inputs {
            let (_, salvaged) = dataflash::salvage::salvage("oracle", &input, Formats::new());
            let report = dataflash::check("oracle", &salvaged.bytes);
            assert!(report.is_clean(), "{}: {case}", path.display());
            let out = dir.join(format!("{i}-{case}.bin"));
            std::fs::write(&out, &salvaged.bytes).unwrap();
            let name = format!("{} ({case})", path.file_name().unwrap().to_string_lossy());
            expected.push((out, name, report.dataflash.counts));
        }
    }
    let output = run_oracle(
        &python,
        "pymavlink_read.py",
        expected.iter().map(|(p, _, _)| p),
    );
    let lines: Vec<Value> = String::from_utf8(output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), expected.len());
    let mut failures = Vec::new();
    for ((_, name, counts), read) in expected.iter().zip(&lines) {
        let theirs: std::collections::BTreeMap<String, u64> =
            serde_json::from_value(read["counts"].clone()).unwrap();
        if &theirs != counts {
            failures.push(format!(
                "{name}: pymavlink counts {theirs:?}, ours {counts:?}"
            ));
        }
        if read["skipped"] != 0 || read["trailing"] != 0 {
            failures.push(format!(
                "{name}: pymavlink skipped {} bytes, {} left after the last message",
                read["skipped"], read["trailing"]
            ));
        }
    }
    println!(
        "pymavlink read {} salvaged logs ({} messages)",
        lines.len(),
        lines
            .iter()
            .map(|l| l["messages"].as_u64().unwrap())
            .sum::<u64>()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Whether two CSV cells hold the same value: the same text, or numbers equal (both NaN, or
/// equal as single-precision floats: pymavlink prints a float column's value widened to double,
/// bbcheck its shortest single-precision form).
fn same_cell(ours: &str, theirs: &str) -> bool {
    if ours == theirs {
        return true;
    }
    match (ours.parse::<f64>(), theirs.parse::<f64>()) {
        (Ok(a), Ok(b)) => a == b || a.is_nan() && b.is_nan() || a as f32 == b as f32,
        _ => false,
    }
}

#[test]
fn csv_values_are_the_ones_pymavlink_gives() {
    let Some((paths, python)) = real_logs_and_python() else {
        return;
    };
    let dir = common::TempDir::new("oracle-csv");
    let (mut cells, mut numbers) = (0u64, 0u64);
    for path in &paths {
        let out = dir.join(path.file_stem().unwrap());
        let exported = common::bbcheck(&[
            "export",
            "--csv",
            path.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(exported.status.code().unwrap() <= 1, "{}", path.display());
        let output = run_oracle(&python, "pymavlink_csv.py", [path]);
        // pymavlink's rows by type, in file order.
        let mut theirs: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for line in String::from_utf8_lossy(&output).lines() {
            let (name, values) = line.split_once('\t').unwrap();
            theirs
                .entry(name.to_owned())
                .or_default()
                .push(values.to_owned());
        }
        let stem = path.file_stem().unwrap().to_string_lossy();
        for (name, rows) in &theirs {
            let table = out.join(format!("{stem}.{name}.csv"));
            // Text and arrays hold commas of their own: only tables of plain values are compared
            // cell by cell.
            let Ok(text) = std::fs::read_to_string(&table) else {
                panic!("{}: no table for {name}", path.display());
            };
            if text.contains('"') || out.join(format!("{stem}.{name}.2.csv")).exists() {
                continue;
            }
            let ours: Vec<&str> = text.lines().skip(1).collect();
            assert_eq!(ours.len(), rows.len(), "{}: {name} rows", path.display());
            for (mine, row) in ours.iter().zip(rows) {
                for (a, b) in mine.split(',').zip(row.split(',')) {
                    cells += 1;
                    numbers += u64::from(a.parse::<f64>().is_ok());
                    assert!(
                        same_cell(a, b),
                        "{}: {name}: {a} vs pymavlink's {b} in\n{mine}\n{row}",
                        path.display()
                    );
                }
            }
        }
    }
    println!(
        "csv against pymavlink: {cells} cells alike ({numbers} numbers) in {} logs",
        paths.len()
    );
    assert!(numbers > 100_000, "the tables were compared");
}
