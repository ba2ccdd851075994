//! A DataFlash log that lost the FMT messages of some types, without a donor to borrow them
//! from: every message whose FMT survived is read as in the intact log, the lost types' messages
//! are stepped over by the length their headers show (no corrupt span), and the file is damaged.

use crate::common;

use bbcheck::dataflash::{self, Message, Sink, fmt::Role, library::Library};
use bbcheck::report::RegionKind;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

/// Accepted messages: offset, bytes, and for a FMT message the type it defines.
#[derive(Default)]
struct Collect(Vec<(u64, Vec<u8>, Option<u8>)>);

impl Sink for Collect {
    fn message(&mut self, m: &Message<'_>) {
        let defines = (m.format.role == Role::Fmt).then(|| m.bytes[3]);
        self.0.push((m.offset, m.bytes.to_vec(), defines));
    }
}

fn read(data: &[u8]) -> (Collect, dataflash::DataflashReport) {
    let mut messages = Collect::default();
    let report = dataflash::decode("log", data, &mut messages);
    (messages, report)
}

/// A log without the FMT messages of its three most frequent types that one FMT defines.
struct Lost {
    damaged: Vec<u8>,
    types: Vec<u8>,
    /// The intact log's messages, and messages per type.
    clean: Collect,
    counts: BTreeMap<u8, u64>,
}

fn lose_fmts(data: &[u8]) -> Option<Lost> {
    let (clean, _) = read(data);
    let mut fmts: BTreeMap<u8, Vec<(u64, usize)>> = BTreeMap::new();
    let mut counts: BTreeMap<u8, u64> = BTreeMap::new();
    for (offset, bytes, defines) in &clean.0 {
        if let Some(t) = defines {
            fmts.entry(*t).or_default().push((*offset, bytes.len()));
        }
        *counts.entry(bytes[2]).or_default() += 1;
    }
    let mut candidates: Vec<(u64, u8)> = fmts
        .iter()
        .filter(|(t, defs)| defs.len() == 1 && **t != 0x80)
        .map(|(t, _)| (counts.get(t).copied().unwrap_or(0), *t))
        .filter(|&(n, _)| n >= 16)
        .collect();
    candidates.sort_unstable_by(|a, b| b.cmp(a));
    let types: Vec<u8> = candidates.iter().take(3).map(|&(_, t)| t).collect();
    if types.is_empty() {
        return None;
    }
    let mut cut: Vec<(u64, usize)> = types.iter().map(|t| fmts[t][0]).collect();
    cut.sort_unstable();
    let mut damaged = Vec::with_capacity(data.len());
    let mut at = 0;
    for &(offset, len) in &cut {
        damaged.extend_from_slice(&data[at..offset as usize]);
        at = offset as usize + len;
    }
    damaged.extend_from_slice(&data[at..]);
    Some(Lost {
        damaged,
        types,
        clean,
        counts,
    })
}

#[test]
fn messages_beside_types_whose_fmt_is_lost_are_kept() {
    let (mut logs, mut kept, mut ceiling) = (0, 0, 0);
    for (name, data) in common::clean_real_logs() {
        if !name.starts_with("ardupilot/") {
            continue;
        }
        let Some(Lost {
            damaged,
            types: lost,
            clean,
            counts,
        }) = lose_fmts(&data)
        else {
            continue;
        };
        logs += 1;

        let expected: Vec<&Vec<u8>> = clean
            .0
            .iter()
            .filter(|(_, bytes, defines)| {
                !lost.contains(&bytes[2]) && !defines.is_some_and(|t| lost.contains(&t))
            })
            .map(|(_, bytes, _)| bytes)
            .collect();
        let (got, report) = read(&damaged);
        let got: Vec<&Vec<u8>> = got.0.iter().map(|(_, bytes, _)| bytes).collect();
        ceiling += expected.len();
        kept += got
            .iter()
            .zip(&expected)
            .take_while(|(g, e)| g == e)
            .count();
        assert_eq!(got, expected, "{name}: lost FMTs of types {lost:?}");
        assert!(report.file.corrupt_spans.is_empty(), "{name}");
        assert_eq!(report.file.verdict, "damaged", "{name}");
        let mut undefined: Vec<(u8, u64)> = report
            .dataflash
            .undefined_types
            .iter()
            .map(|u| (u.type_id, u.messages))
            .collect();
        undefined.sort_unstable();
        let mut truth: Vec<(u8, u64)> = lost.iter().map(|t| (*t, counts[t])).collect();
        truth.sort_unstable();
        assert_eq!(undefined, truth, "{name}");
        let unreadable: u64 = report
            .file
            .sessions
            .iter()
            .flat_map(|s| &s.regions)
            .filter(|r| r.kind == RegionKind::UndefinedType)
            .map(|r| r.end - r.start)
            .sum();
        let lost_bytes: u64 = report
            .dataflash
            .undefined_types
            .iter()
            .map(|u| u.messages * u.length as u64)
            .sum();
        assert_eq!(unreadable, lost_bytes, "{name}");
        assert_eq!(report.file.check_accounting(), Ok(()), "{name}");
        if logs == 1 {
            // Salvage takes the lost definitions from the format library, which holds this
            // log's build: every message of the intact log is written, and it says so.
            let dir = common::TempDir::new("lost-fmt");
            let (input, output) = (dir.join("in.bin"), dir.join("out.bin"));
            std::fs::write(&input, &damaged).unwrap();
            let out = common::bbcheck(&[
                "salvage",
                input.to_str().unwrap(),
                "-o",
                output.to_str().unwrap(),
            ]);
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(said.contains("from the format library"), "{said}");
            let (salvaged, again) = read(&std::fs::read(&output).unwrap());
            assert!(again.is_clean());
            let data_messages = |c: &Collect| -> Vec<Vec<u8>> {
                c.0.iter()
                    .filter(|(_, _, defines)| defines.is_none())
                    .map(|(_, bytes, _)| bytes.clone())
                    .collect()
            };
            assert_eq!(data_messages(&salvaged), data_messages(&clean), "{name}");
        }
    }
    println!("{logs} logs, 3 FMTs lost each: {kept} of {ceiling} messages whose FMT survived kept");
}

#[test]
fn the_format_library_holds_every_corpus_build_as_its_log_defines_it() {
    // `bbcheck library` made the library from these logs; adding a build is that one command.
    let library = Library::builtin();
    let mut builds = 0;
    for (name, data) in common::clean_real_logs() {
        if !name.starts_with("ardupilot/") {
            continue;
        }
        let report = dataflash::check(&name, &data);
        let build = report.dataflash.firmware.expect("a firmware MSG");
        let mut own = Library::default();
        own.add(
            &build,
            &dataflash::salvage::donor_formats(&data, &AtomicU64::new(0)),
        );
        assert_eq!(
            library.builds.get(&build),
            own.builds.get(&build),
            "{name}: {build}"
        );
        builds += 1;
    }
    if builds > 0 {
        assert_eq!(library.builds.len(), builds, "builds no corpus log has");
    }
}

#[test]
fn a_library_without_the_logs_build_lends_only_what_every_build_agrees_on() {
    // Held out: each log's lost FMTs from the other builds alone. A definition is lent only
    // where every build defining the type byte at the length the headers show agrees, and it is
    // then the log's own: the values of the lost types read as in the intact log.
    let (mut lost_messages, mut recovered, mut wrong) = (0, 0, 0);
    for (name, data) in common::clean_real_logs() {
        if !name.starts_with("ardupilot/") {
            continue;
        }
        let Some(lost) = lose_fmts(&data) else {
            continue;
        };
        let truth = dataflash::salvage::donor_formats(&data, &AtomicU64::new(0));
        let mut library = Library::builtin();
        let report = dataflash::check(&name, &lost.damaged);
        let build = report.dataflash.firmware.clone();
        // With its own build, every lost type is defined.
        let own = library.lend(build.as_deref(), &report.dataflash.undefined_types);
        assert!(own.undefined.is_empty(), "{name}: {:?}", own.undefined);
        library.builds.remove(build.as_deref().unwrap_or_default());
        let lent = library.lend(build.as_deref(), &report.dataflash.undefined_types);
        for &t in &lost.types {
            let Some(given) = lent.formats.get(t) else {
                continue;
            };
            let own = truth.get(t).unwrap();
            let same = (
                &given.name,
                &given.format,
                &given.columns,
                given.declared_length,
            ) == (&own.name, &own.format, &own.columns, own.declared_length);
            wrong += usize::from(!same);
            recovered += lost.counts[&t];
        }
        let (_, salvaged) = dataflash::salvage::salvage(&name, &lost.damaged, lent.formats);
        let (got, again) = read(&salvaged.bytes);
        assert!(again.is_clean(), "{name}");
        let read_lost = got.0.iter().filter(|(_, b, _)| lost.types.contains(&b[2]));
        let expected: u64 = lost
            .types
            .iter()
            .filter(|t| !lent.undefined.contains(t))
            .map(|t| lost.counts[t])
            .sum();
        assert_eq!(read_lost.count() as u64, expected, "{name}");
        lost_messages += lost.types.iter().map(|t| lost.counts[t]).sum::<u64>();
    }
    println!(
        "held out: {recovered} of {lost_messages} messages of lost types read, {wrong} definitions wrong"
    );
    assert_eq!(wrong, 0);
}
