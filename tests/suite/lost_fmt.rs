//! A DataFlash log that lost the FMT messages of some types, without a donor to borrow them
//! from: every message whose FMT survived is read as in the intact log, the lost types' messages
//! are stepped over by the length their headers show (no corrupt span), and the file is damaged.

use crate::common;

use bbcheck::dataflash::{self, Message, Sink, fmt::Role};
use bbcheck::report::RegionKind;
use std::collections::BTreeMap;

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

#[test]
fn messages_beside_types_whose_fmt_is_lost_are_kept() {
    let (mut logs, mut kept, mut ceiling) = (0, 0, 0);
    for (name, data) in common::clean_real_logs() {
        if !name.starts_with("ardupilot/") {
            continue;
        }
        let (clean, _) = read(&data);
        // The three types with the most messages that one FMT defines.
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
        let lost: Vec<u8> = candidates.iter().take(3).map(|&(_, t)| t).collect();
        if lost.is_empty() {
            continue;
        }
        logs += 1;
        // The log without those FMT messages.
        let mut cut: Vec<(u64, usize)> = lost.iter().map(|t| fmts[t][0]).collect();
        cut.sort_unstable();
        let mut damaged = Vec::with_capacity(data.len());
        let mut at = 0;
        for &(offset, len) in &cut {
            damaged.extend_from_slice(&data[at..offset as usize]);
            at = offset as usize + len;
        }
        damaged.extend_from_slice(&data[at..]);

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
            // Salvage says what it leaves out, and writes a clean log of the others.
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
            assert!(said.contains("whose FMT is lost"), "{said}");
            let (salvaged, again) = read(&std::fs::read(&output).unwrap());
            assert!(again.is_clean());
            assert_eq!(salvaged.0.len(), expected.len());
        }
    }
    println!("{logs} logs, 3 FMTs lost each: {kept} of {ceiling} messages whose FMT survived kept");
}
