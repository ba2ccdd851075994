//! `export --parquet`: every table read back holds, row for row, what `export --jsonl` exports
//! (values, offsets, trust, events), typed as the log declares its fields, for every real log of
//! both formats; pyarrow and DuckDB read the tables; misuse is refused with nothing written.

use crate::common;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// A table read back: its schema's metadata, its column names and types, and its rows.
struct Read {
    metadata: HashMap<String, String>,
    columns: Vec<(String, DataType, HashMap<String, String>)>,
    rows: Vec<Vec<Value>>,
}

fn read_table(path: &Path) -> Read {
    let file = std::fs::File::open(path).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let schema = builder.schema().clone();
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
    let mut rows = Vec::new();
    for batch in &batches {
        for row in 0..batch.num_rows() {
            rows.push(batch.columns().iter().map(|c| cell(c, row)).collect());
        }
    }
    Read {
        metadata: owned(schema.metadata().iter()),
        columns: schema
            .fields()
            .iter()
            .map(|f| {
                (
                    f.name().clone(),
                    f.data_type().clone(),
                    owned(f.metadata().iter()),
                )
            })
            .collect(),
        rows,
    }
}

fn owned<'a>(pairs: impl Iterator<Item = (&'a String, &'a String)>) -> HashMap<String, String> {
    pairs.map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// One cell as JSON Lines writes such a value (a float32 in its shortest form, NaN as null).
fn cell(array: &ArrayRef, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    let float = |v: f64| serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number);
    match array.data_type() {
        DataType::Int8 => json!(array.as_primitive::<Int8Type>().value(row)),
        DataType::UInt8 => json!(array.as_primitive::<UInt8Type>().value(row)),
        DataType::Int16 => json!(array.as_primitive::<Int16Type>().value(row)),
        DataType::UInt16 => json!(array.as_primitive::<UInt16Type>().value(row)),
        DataType::Int32 => json!(array.as_primitive::<Int32Type>().value(row)),
        DataType::UInt32 => json!(array.as_primitive::<UInt32Type>().value(row)),
        DataType::Int64 => json!(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt64 => json!(array.as_primitive::<UInt64Type>().value(row)),
        DataType::Float32 => {
            let v = array.as_primitive::<Float32Type>().value(row);
            float(v.to_string().parse().unwrap_or(f64::NAN))
        }
        DataType::Float64 => float(array.as_primitive::<Float64Type>().value(row)),
        DataType::Utf8 => json!(array.as_string::<i32>().value(row)),
        DataType::Dictionary(..) => {
            let dictionary = array.as_dictionary::<Int8Type>();
            let key = dictionary.keys().value(row) as usize;
            json!(dictionary.values().as_string::<i32>().value(key))
        }
        DataType::List(_) => {
            let list = array.as_list::<i32>().value(row);
            Value::Array((0..list.len()).map(|i| cell(&list, i)).collect())
        }
        other => panic!("a column of type {other}"),
    }
}

fn jsonl(log: &Path, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--jsonl"];
    all.extend_from_slice(args);
    String::from_utf8(common::export(log, &all))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The Parquet files `export --parquet` writes for `log` into `dir`, by name after the stem.
fn tables(log: &Path, dir: &Path, args: &[&str]) -> BTreeMap<String, Read> {
    let _ = std::fs::remove_dir_all(dir);
    let mut all = vec!["--parquet", "-o", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    common::export(log, &all);
    let stem = log.file_stem().unwrap().to_string_lossy().into_owned();
    common::file_names(dir)
        .into_iter()
        .map(|name| {
            let table = name
                .strip_prefix(&format!("{stem}."))
                .and_then(|n| n.strip_suffix(".parquet"))
                .unwrap_or_else(|| panic!("{name}: not named after {stem}"))
                .to_owned();
            (table, read_table(&dir.join(&name)))
        })
        .collect()
}

/// The rows JSON Lines gives a Blackbox table: per frame its values, then its type (main),
/// offset and trust.
fn blackbox_rows(records: &[Value]) -> BTreeMap<String, Vec<Vec<Value>>> {
    let mut tables: BTreeMap<String, Vec<Vec<Value>>> = BTreeMap::new();
    for r in records {
        let session = r["session"].as_u64().unwrap_or(0);
        let kind = r["type"].as_str().unwrap();
        let table = match kind {
            "session" | "file" => continue,
            "I" | "P" => "main",
            "S" => "slow",
            "G" => "gps",
            "H" => "home",
            _ => "events",
        };
        let mut row: Vec<Value> = match table {
            "events" => vec![
                r["offset"].clone(),
                r["event"].clone(),
                r["name"].clone(),
                json!(r["data"].to_string()),
            ],
            _ => r["values"].as_array().unwrap().clone(),
        };
        if table == "main" {
            row.push(json!(kind));
        }
        if table != "events" {
            row.push(r["offset"].clone());
            row.push(r.get("trust").cloned().unwrap_or(json!("trusted")));
        }
        tables
            .entry(format!("{session:02}.{table}"))
            .or_default()
            .push(row);
    }
    tables
}

#[test]
fn blackbox_tables_hold_what_json_lines_exports() {
    let dir = common::TempDir::new("parquet-blackbox");
    let mut logs = common::real_logs("blackbox");
    logs.push(common::own_corpus().join("generated/demo.bbl"));
    let mut frames = 0;
    for log in &logs {
        let records = jsonl(log, &[]);
        let got = tables(log, &dir.join("out"), &[]);
        let want = blackbox_rows(&records);
        // Every table with rows is written (and each session's main table, rows or none).
        let written: Vec<&String> = got.keys().filter(|k| !got[*k].rows.is_empty()).collect();
        assert_eq!(
            written,
            want.keys().collect::<Vec<_>>(),
            "{}",
            log.display()
        );
        for (name, rows) in &want {
            assert!(
                got[name].rows == *rows,
                "{}: table {name} differs from JSON Lines",
                log.display()
            );
            frames += rows.len();
        }
        // Typed as the header declares: signed and unsigned 32 bits, the time 64; the header
        // lines as the file's metadata.
        for session in records.iter().filter(|r| r["type"] == "session") {
            let index = session["session"].as_u64().unwrap();
            let Some(main) = got.get(&format!("{index:02}.main")) else {
                continue;
            };
            let headers = session["headers"].as_object().unwrap();
            for (name, value) in headers {
                assert_eq!(
                    main.metadata.get(name).map(String::as_str),
                    value.as_str(),
                    "{}",
                    log.display()
                );
            }
            let names = session["fields"]["I"].as_array().unwrap();
            let signed: Vec<&str> = headers["Field I signed"]
                .as_str()
                .unwrap()
                .split(',')
                .collect();
            for (i, name) in names.iter().enumerate() {
                let (column, ty, _) = &main.columns[i];
                assert_eq!(Some(column.as_str()), name.as_str());
                let want = match (column.as_str(), signed.get(i)) {
                    ("time", _) => DataType::Int64,
                    (_, Some(&"1")) => DataType::Int32,
                    _ => DataType::UInt32,
                };
                assert_eq!(*ty, want, "{}: {column}", log.display());
            }
        }
    }
    assert!(frames > 0 || common::corpus().is_none());
}

/// The rows JSON Lines gives a DataFlash message (its stored values, session, offset, trust),
/// by offset.
fn dataflash_rows(records: &[Value]) -> BTreeMap<u64, (String, Vec<Value>)> {
    records
        .iter()
        .filter(|r| r["type"] == "message")
        .map(|r| {
            let mut row = r["values"].as_array().unwrap().clone();
            row.push(r["session"].clone());
            row.push(r["offset"].clone());
            row.push(r.get("trust").cloned().unwrap_or(json!("trusted")));
            let offset = r["offset"].as_u64().unwrap();
            (offset, (r["name"].as_str().unwrap().to_owned(), row))
        })
        .collect()
}

/// Whether two rows hold the same values, a float32 written in either of its shortest forms
/// (ryu and Rust's formatting can choose differently between two that read back alike).
fn same_row(a: &[Value], b: &[Value]) -> bool {
    let same = |a: &Value, b: &Value| match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_f64() || b.is_f64() => x == y || x as f32 == y as f32,
        _ => a == b,
    };
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
}

#[test]
fn dataflash_tables_hold_what_json_lines_exports() {
    let dir = common::TempDir::new("parquet-dataflash");
    let mut messages = 0;
    for log in common::real_logs("ardupilot") {
        let want = dataflash_rows(&jsonl(&log, &[]));
        let got = tables(&log, &dir.join("raw"), &["--raw"]);
        let mut seen = 0;
        for (name, table) in &got {
            let offset = table.columns.len() - 2;
            for row in &table.rows {
                let at = row[offset].as_u64().unwrap();
                let (kind, values) = &want[&at];
                assert_eq!(name.split('.').next(), Some(kind.as_str()));
                assert!(
                    same_row(values, row),
                    "{}: {name} at {at}: {row:?}, JSON Lines {values:?}",
                    log.display()
                );
                seen += 1;
            }
        }
        assert_eq!(seen, want.len(), "{}", log.display());
        messages += seen;

        // Scaled (the default): what the CSV export writes, with FMTU's units in the metadata.
        let scaled = tables(&log, &dir.join("scaled"), &[]);
        let csv_dir = dir.join("csv");
        let _ = std::fs::remove_dir_all(&csv_dir);
        common::export(&log, &["--csv", "-o", csv_dir.to_str().unwrap()]);
        let stem = log.file_stem().unwrap().to_string_lossy().into_owned();
        for (name, table) in scaled
            .iter()
            .filter(|(n, _)| ["ATT", "GPS"].contains(&n.as_str()))
        {
            let text = std::fs::read_to_string(csv_dir.join(format!("{stem}.{name}.csv"))).unwrap();
            let csv: Vec<Vec<f64>> = text
                .lines()
                .skip(1)
                .map(|l| {
                    l.split(',')
                        .map(|c| c.parse().unwrap_or(f64::NAN))
                        .collect()
                })
                .collect();
            assert_eq!(csv.len(), table.rows.len(), "{}: {name}", log.display());
            for (c, (column, ty, metadata)) in table.columns.iter().enumerate() {
                if matches!(metadata.get("format").map(String::as_str), Some("c" | "L")) {
                    assert_eq!(*ty, DataType::Float64, "{}: {name}.{column}", log.display());
                    for (row, cells) in table.rows.iter().zip(&csv) {
                        let v = row[c].as_f64().unwrap();
                        assert!((v - cells[c]).abs() <= 1e-9 * v.abs().max(1.0));
                    }
                }
            }
            let has_units = table.columns.iter().any(|(_, _, m)| m.contains_key("unit"));
            assert!(
                has_units || !text.contains('['),
                "{}: {name}",
                log.display()
            );
        }
    }
    assert!(messages > 0 || common::corpus().is_none());
}

#[test]
fn pyarrow_and_duckdb_read_the_tables_as_one_dataset() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let Some(python) = common::python("pyarrow.parquet, duckdb") else {
        return;
    };
    let dir = common::TempDir::new("parquet-python");
    let logs = [
        corpus.join("real/blackbox/betaflight-4.2.8-fc-blackbox-btfl_002.bbl"),
        common::own_corpus().join("generated/demo.bbl"),
    ];
    let mut main_frames = 0;
    for log in &logs {
        common::export(log, &["--parquet", "-o", dir.to_str().unwrap()]);
        main_frames += jsonl(log, &[])
            .iter()
            .filter(|r| r["type"] == "I" || r["type"] == "P")
            .count();
    }
    let script = r#"
import json, sys, duckdb, pyarrow.parquet as pq
d = sys.argv[1]
t = pq.read_table(d + "/demo.01.main.parquet")
rows = duckdb.connect().execute(f"select count(*) from read_parquet('{d}/*.main.parquet', union_by_name=true)").fetchall()[0][0]
print(json.dumps({
    "rows": rows,
    "time": str(t.schema.field("time").type),
    "trust": str(t.schema.field("trust").type),
    "firmware": t.schema.metadata[b"Firmware revision"].decode(),
}))
"#;
    let out = std::process::Command::new(python)
        .args(["-c", script, dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(read["rows"], json!(main_frames));
    assert_eq!(read["time"], "int64");
    assert_eq!(
        read["trust"],
        "dictionary<values=string, indices=int8, ordered=0>"
    );
    assert!(read["firmware"].as_str().unwrap().starts_with("Betaflight"));
}

#[test]
fn misuse_is_refused_and_nothing_is_written() {
    let dir = common::TempDir::new("parquet-misuse");
    let demo = common::own_corpus().join("generated/demo.bbl");
    let demo = demo.to_str().unwrap();
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    for args in [
        &["export", demo, "--parquet", "-o", "-"][..],
        &["export", demo, "--parquet", "-o", out, "--unit-vbat", "mV"],
        &["export", demo, "--parquet", "-o", out, "--combined"],
    ] {
        let run = common::bbcheck(args);
        assert_eq!(run.status.code(), Some(2), "{args:?}");
        assert!(!Path::new(out).exists(), "{args:?}");
    }
    // A file where the directory should be: a clear error, no partial file beside it.
    std::fs::write(dir.join("taken"), b"").unwrap();
    let taken = dir.join("taken");
    let run = common::bbcheck(&["export", demo, "--parquet", "-o", taken.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2));
    assert_eq!(common::file_names(&dir), ["taken"]);
}
