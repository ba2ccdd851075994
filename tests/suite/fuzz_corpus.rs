//! The fuzzing corpus: Blackbox and DataFlash seed logs made by the generators, damaged copies of them made by every damage
//! model (with the truth about each change), and inputs that once broke a check. The committed seeds
//! and damaged copies are exactly what the generators make (set `BBCHECK_BLESS=1` to rewrite them
//! after a deliberate change), and every committed input passes the checks the fuzz targets make.

use crate::common;

use bbcheck::blackbox::codec::Encoding;
use bbcheck::testkit::blackbox::{Codes, FlightSpec, Layout, flight, flights};
use bbcheck::testkit::damage::{Model, damage};
use bbcheck::testkit::fuzzing::TARGETS;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// The damage-model seed the committed damaged copies use.
const DAMAGE_SEED: u64 = 1;

fn bless() -> bool {
    std::env::var("BBCHECK_BLESS").is_ok_and(|v| v == "1")
}

/// The seed logs, by file name: one flight per firmware layout (Betaflight 3.1, Betaflight 4.2,
/// INAV 9), three Betaflight sessions in one file (logging paused and resumed, erased flash between
/// sessions, time rolling over 2^32 µs), and the encodings no firmware layout uses: Elias delta
/// with TAG2_3SVARIABLE, and Elias gamma in a Data version 1 log of the original Cleanflight.
fn seeds() -> BTreeMap<String, Vec<u8>> {
    let bf3 = FlightSpec {
        seed: 11,
        ..FlightSpec::new(Layout::Betaflight3)
    };
    let bf4 = FlightSpec {
        seed: 12,
        iterations: 1024,
        ..FlightSpec::new(Layout::Betaflight4)
    };
    let inav = FlightSpec {
        seed: 13,
        iterations: 256,
        ..FlightSpec::new(Layout::Inav)
    };
    let session = FlightSpec {
        iterations: 512,
        ..FlightSpec::new(Layout::Betaflight4)
    };
    let sessions = [
        FlightSpec {
            seed: 14,
            start_time_us: 4_280_000_000,
            paused: Some(128..384),
            ..session.clone()
        },
        FlightSpec {
            seed: 15,
            start_time_us: 4_290_000_000,
            gps: false,
            ..session.clone()
        },
        FlightSpec {
            seed: 16,
            start_time_us: (1 << 32) - 60_000,
            ..session
        },
    ];
    let elias_delta = FlightSpec {
        seed: 17,
        iterations: 768,
        codes: Codes::EliasDelta,
        ..FlightSpec::new(Layout::Betaflight4)
    };
    let elias_gamma = FlightSpec {
        seed: 18,
        iterations: 512,
        codes: Codes::EliasGamma,
        data_version: 1,
        p_interval: "1/2".into(),
        start_time_us: (1 << 32) - 30_000,
        gps: true,
        ..FlightSpec::new(Layout::Betaflight3)
    };
    [
        ("betaflight3-p1of4", flight(&bf3)),
        ("betaflight4-gps-p4", flight(&bf4)),
        ("inav-gps-p1of2", flight(&inav)),
        ("betaflight4-3sessions-resume-rollover", flights(&sessions)),
        (
            "betaflight4-elias-delta-tag2-3svariable",
            flight(&elias_delta),
        ),
        ("cleanflight-v1-elias-gamma-rollover", flight(&elias_gamma)),
    ]
    .into_iter()
    .map(|(name, log)| (format!("{name}.bbl"), log))
    .collect()
}

/// A seed that is a text-mode copy (every CR turned into a LF) of a Betaflight 4 flight long
/// enough to read as one: it leads the fuzzer to the line-feed readings.
fn text_mode_seed() -> (String, Vec<u8>) {
    let spec = FlightSpec {
        seed: 19,
        iterations: 3072,
        ..FlightSpec::new(Layout::Betaflight4)
    };
    let copy = damage(&flight(&spec), Model::Newline, 0).data;
    ("betaflight4-text-mode-copy.bbl".to_owned(), copy)
}

/// The DataFlash seed logs: two synthetic ArduCopter flights.
fn dataflash_seeds() -> BTreeMap<String, Vec<u8>> {
    [("copter-1s.bin", 21, 1), ("copter-3s.bin", 22, 3)]
        .into_iter()
        .map(|(name, seed, seconds)| {
            (
                name.to_owned(),
                bbcheck::testkit::dataflash::flight(seed, seconds),
            )
        })
        .collect()
}

/// Every damage model applied to every seed (blocks written over the log to the Blackbox ones):
/// file name, damaged bytes and the truth as JSON.
fn damaged() -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let blackbox: Vec<_> = seeds().into_keys().collect();
    for (name, seed) in seeds().into_iter().chain(dataflash_seeds()) {
        let (stem, extension) = name.rsplit_once('.').expect("seed names have an extension");
        // Blocks written over a log are found in a Blackbox header.
        let written_over = match blackbox.contains(&name) {
            true => &Model::WRITTEN_OVER[..],
            false => &[],
        };
        for &model in Model::ALL.iter().chain(written_over) {
            let d = damage(&seed, model, DAMAGE_SEED);
            let file = format!("{stem}.{}.{DAMAGE_SEED}", model.name());
            let truth = serde_json::to_string_pretty(&d).unwrap() + "\n";
            files.insert(format!("{file}.{extension}"), d.data);
            files.insert(format!("{file}.truth.json"), truth.into_bytes());
        }
    }
    files
}

fn seeds_dir() -> PathBuf {
    common::own_corpus().join("seeds/blackbox")
}

fn dataflash_seeds_dir() -> PathBuf {
    common::own_corpus().join("seeds/dataflash")
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
        for (name, data) in seeds().into_iter().chain([text_mode_seed()]) {
            std::fs::write(seeds_dir().join(name), data).unwrap();
        }
        std::fs::create_dir_all(dataflash_seeds_dir()).unwrap();
        for (name, data) in dataflash_seeds() {
            std::fs::write(dataflash_seeds_dir().join(name), data).unwrap();
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
        assert!(data.len() < 24_000, "seed {name} is {} bytes", data.len());
        assert_committed(&seeds_dir(), &name, &data);
        let report = bbcheck::blackbox::decode(
            &name,
            &data,
            |_, _| {},
            &mut bbcheck::blackbox::sink::Discard,
        );
        assert!(report.is_clean(), "seed {name}: {:?}", report.corrupt_spans);
    }
    for (name, data) in dataflash_seeds() {
        assert!(data.len() < 24_000, "seed {name} is {} bytes", data.len());
        assert_committed(&dataflash_seeds_dir(), &name, &data);
        let report = bbcheck::dataflash::check(&name, &data);
        assert!(
            report.is_clean(),
            "seed {name}: {:?}",
            report.file.corrupt_spans
        );
    }
}

#[test]
fn a_seed_is_read_as_a_text_mode_copy() {
    write_if_blessing();
    let (name, data) = text_mode_seed();
    assert!(data.len() <= 65_536, "seed {name} is {} bytes", data.len());
    assert_committed(&seeds_dir(), &name, &data);
    let sessions = bbcheck::blackbox::sessions(&data);
    assert!(bbcheck::blackbox::copied_in_text_mode(&data, &sessions[0]));
}

#[test]
fn seeds_hold_every_encoding_in_both_data_versions() {
    let every = [
        Encoding::SignedVb,
        Encoding::UnsignedVb,
        Encoding::Neg14Bit,
        Encoding::EliasDeltaU32,
        Encoding::EliasDeltaS32,
        Encoding::Tag8_8Svb,
        Encoding::Tag2_3S32,
        Encoding::Tag8_4S16,
        Encoding::Null,
        Encoding::Tag2_3SVariable,
        Encoding::EliasGammaU32,
        Encoding::EliasGammaS32,
    ];
    let mut seen = std::collections::HashSet::new();
    let mut versions = std::collections::BTreeSet::new();
    for (name, data) in seeds() {
        let report = bbcheck::blackbox::decode(
            &name,
            &data,
            |_, _| {},
            &mut bbcheck::blackbox::sink::Discard,
        );
        for (session, decoded) in bbcheck::blackbox::sessions(&data)
            .iter()
            .zip(&report.sessions)
        {
            let header = &session.header;
            versions.insert(header.data_version);
            // An encoding counts when frames of a type that uses it were decoded.
            let frames = &decoded.frames;
            let defs = [
                (&header.i, frames.i),
                (&header.p, frames.p),
                (&header.s, frames.s),
                (&header.g, frames.g),
                (&header.h, frames.h),
            ];
            for (def, count) in defs {
                if let Some(def) = def.as_ref().filter(|_| count > 0) {
                    seen.extend(def.fields.iter().map(|f| f.encoding));
                }
            }
        }
    }
    for encoding in every {
        assert!(
            seen.contains(&encoding),
            "no seed decodes a frame with encoding {encoding:?} (id {})",
            encoding.id()
        );
    }
    assert_eq!(versions.into_iter().collect::<Vec<_>>(), [1, 2]);
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
    let mut seeds = inputs(&seeds_dir());
    assert!(!seeds.is_empty(), "corpus/seeds/blackbox holds no seed");
    let dataflash = inputs(&dataflash_seeds_dir());
    assert!(
        !dataflash.is_empty(),
        "corpus/seeds/dataflash holds no seed"
    );
    seeds.extend(dataflash);
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
