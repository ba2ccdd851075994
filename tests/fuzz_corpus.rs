//! The fuzzing corpus: seed logs made by the generator, damaged copies of them made by every damage
//! model (with the truth about each change), and inputs that once broke a check. The committed seeds
//! and damaged copies are exactly what the generators make (set `BBCHECK_BLESS=1` to rewrite them
//! after a deliberate change), and every committed input passes the checks the fuzz targets make.

mod common;

use bbcheck::blackbox::decoder::{EventFrame, Frame, Sink};
use bbcheck::blackbox::frame::FrameKind;
use bbcheck::blackbox::writer::SessionWriter;
use bbcheck::damage::{Model, damage};
use bbcheck::fuzzing::TARGETS;
use bbcheck::synth::{FlightSpec, flight};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// The damage-model seed the committed damaged copies use.
const DAMAGE_SEED: u64 = 1;

fn bless() -> bool {
    std::env::var("BBCHECK_BLESS").is_ok_and(|v| v == "1")
}

/// Re-encodes every frame and event a decoder passes it.
struct Rewrite(SessionWriter);

impl Sink for Rewrite {
    fn frame(&mut self, frame: &Frame<'_>) {
        match frame.kind {
            FrameKind::I | FrameKind::P => self.0.main(frame.kind, frame.values),
            kind => self.0.other(kind, frame.values),
        }
    }
    fn event(&mut self, event: &EventFrame<'_>) {
        self.0.event(event.event);
    }
}

/// The same flight written in another Data version (which lays TAG8_4S16 out differently).
fn in_data_version(log: &[u8], version: u32) -> Vec<u8> {
    let sessions = bbcheck::blackbox::sessions(log);
    assert_eq!(sessions.len(), 1, "one flight");
    let lines: Vec<(String, String)> = sessions[0]
        .header
        .lines
        .iter()
        .filter(|l| l.name != "Product")
        .map(|l| {
            let value = if l.name == "Data version" {
                version.to_string()
            } else {
                l.value.clone()
            };
            (l.name.clone(), value)
        })
        .collect();
    let mut rewrite = Rewrite(SessionWriter::new(&lines));
    let report = bbcheck::blackbox::decode("seed", log, |_, _| {}, &mut rewrite);
    assert!(report.is_clean(), "{:?}", report.corrupt_spans);
    rewrite.0.finish()
}

/// The seed logs, by file name: small flights in both Data versions, with and without GPS, with
/// P intervals `8` and `1/2`, and with time rolling over 2^32 µs.
fn seeds() -> BTreeMap<String, Vec<u8>> {
    let base = FlightSpec {
        iterations: 1700,
        i_interval: 256,
        p_interval: "8".into(),
        ..FlightSpec::default()
    };
    let rollover = FlightSpec {
        iterations: 400,
        i_interval: 32,
        p_interval: "1/2".into(),
        start_time_us: (1 << 32) - 20_000,
        gps: false,
        ..FlightSpec::default()
    };
    let specs = [
        (
            "v2-gps-p8",
            2,
            FlightSpec {
                seed: 11,
                ..base.clone()
            },
        ),
        (
            "v2-rollover-p1of2",
            2,
            FlightSpec {
                seed: 12,
                ..rollover.clone()
            },
        ),
        (
            "v1-gps-p1of2",
            1,
            FlightSpec {
                seed: 13,
                start_time_us: (1 << 32) - 300_000,
                gps: true,
                ..rollover
            },
        ),
        (
            "v1-rollover-p8",
            1,
            FlightSpec {
                seed: 14,
                start_time_us: (1 << 32) - 100_000,
                gps: false,
                ..base
            },
        ),
    ];
    specs
        .into_iter()
        .map(|(name, version, spec)| {
            let log = flight(&spec);
            let log = if version == 2 {
                log
            } else {
                in_data_version(&log, version)
            };
            (format!("{name}.bbl"), log)
        })
        .collect()
}

/// Every damage model applied to every seed: file name, damaged bytes and the truth as JSON.
fn damaged() -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for (name, seed) in seeds() {
        let stem = name.trim_end_matches(".bbl");
        for model in Model::ALL {
            let d = damage(&seed, model, DAMAGE_SEED);
            let file = format!("{stem}.{}.{DAMAGE_SEED}", model.name());
            let truth = serde_json::to_string_pretty(&d).unwrap() + "\n";
            files.insert(format!("{file}.bbl"), d.data);
            files.insert(format!("{file}.truth.json"), truth.into_bytes());
        }
    }
    files
}

fn seeds_dir() -> PathBuf {
    common::own_corpus().join("seeds/blackbox")
}

fn damaged_dir() -> PathBuf {
    common::own_corpus().join("damaged")
}

/// With `BBCHECK_BLESS=1`, write the generated files (once, before any test reads them); the
/// damaged directory holds exactly the generated files.
fn write_if_blessing() {
    static BLESSED: Once = Once::new();
    BLESSED.call_once(|| {
        if !bless() {
            return;
        }
        std::fs::create_dir_all(seeds_dir()).unwrap();
        for (name, data) in seeds() {
            std::fs::write(seeds_dir().join(name), data).unwrap();
        }
        let _ = std::fs::remove_dir_all(damaged_dir());
        std::fs::create_dir_all(damaged_dir()).unwrap();
        for (name, data) in damaged() {
            std::fs::write(damaged_dir().join(name), data).unwrap();
        }
    });
}

/// The committed file `dir/name` holds `data`.
fn assert_committed(dir: &Path, name: &str, data: &[u8]) {
    let path = dir.join(name);
    let committed = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (BBCHECK_BLESS=1 writes it)", path.display()));
    assert!(
        committed == data,
        "{} differs from what the generator makes (BBCHECK_BLESS=1 rewrites it)",
        path.display()
    );
}

/// Input files of a directory: everything but `.gitkeep` and the damage truth files.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.is_file())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name != ".gitkeep" && !name.ends_with(".truth.json")
        })
        .collect();
    files.sort();
    files
}

#[test]
fn seeds_are_what_the_generator_makes() {
    write_if_blessing();
    for (name, data) in seeds() {
        assert!(data.len() < 20_000, "seed {name} is {} bytes", data.len());
        assert_committed(&seeds_dir(), &name, &data);
        let report = bbcheck::blackbox::decode(
            &name,
            &data,
            |_, _| {},
            &mut bbcheck::blackbox::decoder::Discard,
        );
        assert!(report.is_clean(), "seed {name}: {:?}", report.corrupt_spans);
    }
}

#[test]
fn damaged_copies_are_what_the_damage_models_make() {
    write_if_blessing();
    let expected = damaged();
    for (name, data) in &expected {
        assert_committed(&damaged_dir(), name, data);
    }
    let mut committed: Vec<String> = std::fs::read_dir(damaged_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    committed.sort();
    let generated: Vec<String> = expected.into_keys().collect();
    assert_eq!(
        committed, generated,
        "corpus/damaged holds files the generator does not make (BBCHECK_BLESS=1 rewrites it)"
    );
}

#[test]
fn every_corpus_input_passes_the_fuzz_checks() {
    write_if_blessing();
    let seeds = inputs(&seeds_dir());
    assert!(!seeds.is_empty(), "corpus/seeds/blackbox holds no seed");
    // The fuzz runs start every target from the seeds; the damaged copies are decoder input.
    for path in seeds.iter().chain(&inputs(&damaged_dir())) {
        let data = std::fs::read(path).unwrap();
        for (target, check) in TARGETS {
            eprintln!("{target}: {}", path.display());
            check(&data);
        }
    }
    for (target, check) in TARGETS {
        let dir = common::own_corpus().join("regressions").join(target);
        assert!(
            dir.is_dir(),
            "{} is missing: every fuzz target keeps its regression inputs",
            dir.display()
        );
        let files = inputs(&dir);
        assert!(
            !files.is_empty(),
            "{} holds no input: every fuzz target keeps at least one",
            dir.display()
        );
        for path in files {
            eprintln!("{target}: {}", path.display());
            check(&std::fs::read(&path).unwrap());
        }
    }
}

#[test]
fn pseudo_random_inputs_pass_every_check() {
    // A few hundred inputs of every size, for when no fuzzer runs.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..300 {
        let len = (next() % if round % 10 == 0 { 8192 } else { 512 }) as usize;
        let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        for (_, check) in TARGETS {
            check(&data);
        }
    }
}
