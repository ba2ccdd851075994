//! `docs/check-report.schema.json` describes exactly what `bbcheck check --json` prints: every
//! report of the shipped and the real corpus validates against it, and the schema forbids
//! properties it does not name, so neither can drift from the other.

use crate::common;

use common::bbcheck;
use serde_json::Value;
use std::path::PathBuf;

fn schema() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/check-report.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The JSON type names a value has (an integer is also a number).
fn type_names(value: &Value) -> &'static [&'static str] {
    match value {
        Value::Null => &["null"],
        Value::Bool(_) => &["boolean"],
        Value::Number(n) if n.is_i64() || n.is_u64() => &["integer", "number"],
        Value::Number(_) => &["number"],
        Value::String(_) => &["string"],
        Value::Array(_) => &["array"],
        Value::Object(_) => &["object"],
    }
}

/// Validate `value` against `schema` with the keywords the report schema uses (`$ref` into
/// `$defs`, `type`, `enum`, `minimum`, `properties`, `required`, `additionalProperties`,
/// `items`), collecting every violation with its JSON path.
fn validate(root: &Value, schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.strip_prefix("#/$defs/").expect("local reference");
        validate(root, &root["$defs"][name], value, path, errors);
        return;
    }
    if let Some(types) = schema.get("type") {
        let allowed: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().map(|t| t.as_str().unwrap()).collect(),
            other => panic!("bad type keyword {other}"),
        };
        if !type_names(value).iter().any(|t| allowed.contains(t)) {
            errors.push(format!("{path}: {value} is not {allowed:?}"));
            return;
        }
    }
    if let Some(choices) = schema["enum"].as_array()
        && !choices.contains(value)
    {
        errors.push(format!("{path}: {value} is not one of {choices:?}"));
    }
    if let (Some(min), Some(n)) = (schema["minimum"].as_f64(), value.as_f64())
        && n < min
    {
        errors.push(format!("{path}: {n} < {min}"));
    }
    if let Value::Object(object) = value {
        for name in schema["required"].as_array().into_iter().flatten() {
            if !object.contains_key(name.as_str().unwrap()) {
                errors.push(format!("{path}: {name} missing"));
            }
        }
        for (name, item) in object {
            let item_path = format!("{path}.{name}");
            match (
                schema["properties"].get(name),
                schema.get("additionalProperties"),
            ) {
                (Some(property), _) => validate(root, property, item, &item_path, errors),
                (None, Some(Value::Bool(false))) => {
                    errors.push(format!("{item_path}: not in the schema"))
                }
                (None, Some(extra @ Value::Object(_))) => {
                    validate(root, extra, item, &item_path, errors)
                }
                (None, _) => {}
            }
        }
    }
    if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            validate(root, item_schema, item, &format!("{path}[{i}]"), errors);
        }
    }
}

fn errors_of(report: &Value) -> Vec<String> {
    let schema = schema();
    let mut errors = Vec::new();
    validate(&schema, &schema, report, "$", &mut errors);
    errors
}

/// Every report `check --json` prints for the files under `dir`.
fn reports(dir: &std::path::Path) -> Vec<Value> {
    let out = bbcheck(&["check", "--json", dir.to_str().unwrap()]);
    assert!(out.status.code().is_some_and(|c| c < 2), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn every_report_of_the_shipped_corpus_follows_the_schema() {
    let reports = reports(&common::own_corpus());
    assert!(reports.len() > 50);
    for report in &reports {
        let errors = errors_of(report);
        assert!(errors.is_empty(), "{}: {errors:#?}", report["path"]);
    }
    // Both verdicts, and both formats, were seen.
    for (key, value) in [
        ("verdict", "clean"),
        ("verdict", "damaged"),
        ("format", "blackbox"),
        ("format", "ardupilot-dataflash"),
    ] {
        assert!(reports.iter().any(|r| r[key] == value), "no {key} {value}");
    }
}

#[test]
fn every_report_of_the_real_corpus_follows_the_schema() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let reports = reports(&corpus.join("real"));
    assert!(reports.len() >= 19);
    for report in &reports {
        let errors = errors_of(report);
        assert!(errors.is_empty(), "{}: {errors:#?}", report["path"]);
    }
}

#[test]
fn the_schema_rejects_what_check_never_prints() {
    let damaged = common::own_corpus().join("damaged/betaflight3-p1of4.drop-bytes.1.bbl");
    let out = bbcheck(&["check", "--json", damaged.to_str().unwrap()]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(errors_of(&report).is_empty());

    let mut extra = report.clone();
    extra["sessions"][0]["surprise"] = Value::Bool(true);
    assert_eq!(
        errors_of(&extra),
        ["$.sessions[0].surprise: not in the schema"]
    );
    let mut reason = report.clone();
    reason["corrupt_spans"][0]["reason"] = "gremlins".into();
    assert_eq!(errors_of(&reason).len(), 1);
    let mut missing = report.clone();
    missing.as_object_mut().unwrap().remove("verdict");
    assert_eq!(errors_of(&missing), ["$: \"verdict\" missing"]);
    let mut negative = report;
    negative["size"] = (-1).into();
    assert_eq!(errors_of(&negative).len(), 1);
}
