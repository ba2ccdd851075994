//! Bad input never panics and is always fully accounted for: truncations, dropped bytes, flipped
//! bytes and hostile shapes of the shipped log, each decoded in bounded time.

use crate::common;

use bbcheck::blackbox::sink::Discard;
use bbcheck::report::{FileReport, RegionKind};

fn check(data: &[u8]) -> FileReport {
    let report = bbcheck::blackbox::decode("input", data, |_, _| {}, &mut Discard);
    report
        .check_accounting()
        .unwrap_or_else(|e| panic!("accounting broken on {} bytes: {e}", data.len()));
    report
}

fn demo() -> Vec<u8> {
    std::fs::read(common::own_corpus().join("generated/demo.bbl")).unwrap()
}

#[test]
fn every_truncation_is_reported_and_never_panics() {
    let log = demo();
    for end in (0..log.len()).step_by(97) {
        let report = check(&log[..end]);
        // Whatever was cut, no trusted frame lies beyond the cut.
        for s in &report.sessions {
            assert!(s.regions.iter().all(|r| r.end <= end as u64));
        }
    }
}

#[test]
fn dropped_and_flipped_bytes_never_panic() {
    let log = demo();
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..300 {
        let mut damaged = log.clone();
        let at = (next() % damaged.len() as u64) as usize;
        match next() % 3 {
            0 => {
                let n = (1 + next() % 64) as usize;
                damaged.drain(at..(at + n).min(damaged.len()));
            }
            1 => damaged[at] ^= 1 << (next() % 8),
            _ => {
                let garbage: Vec<u8> = (0..(next() % 40)).map(|_| next() as u8).collect();
                damaged.splice(at..at, garbage);
            }
        }
        check(&damaged);
    }
}

#[test]
fn hostile_shapes_get_a_clear_result() {
    let marker = bbcheck::blackbox::header::LOG_START_MARKER;
    // A frame type byte and then the end of the file: logging stopped inside its first frame.
    let mut only_type = demo()[..1492].to_vec();
    only_type.push(b'I');
    let report = check(&only_type);
    assert!(report.is_clean());
    let last = report.sessions[0].regions.last().unwrap();
    assert_eq!((last.start, last.kind), (1492, RegionKind::CutShort));
    // 10 MiB of `I` bytes after a real header.
    let mut many_i = demo()[..1492].to_vec();
    many_i.extend(std::iter::repeat_n(b'I', 10 << 20));
    check(&many_i);
    // Headers and nothing else, many times over.
    let headers: Vec<u8> = demo()[..1492].repeat(200);
    let report = check(&headers);
    assert_eq!(report.sessions.len(), 200);
    assert!(report.is_clean());
    // A header declaring absurd field counts.
    let mut absurd = marker.to_vec();
    let names = vec!["x"; 100_000].join(",");
    let zeros = vec!["0"; 100_000].join(",");
    for (name, value) in [
        ("Field I name", &names),
        ("Field I predictor", &zeros),
        ("Field I encoding", &zeros),
    ] {
        absurd.extend_from_slice(format!("H {name}:{value}\n").as_bytes());
    }
    absurd.extend_from_slice(b"I\x00\x00\x00");
    let report = check(&absurd);
    assert!(!report.sessions[0].header_problems.is_empty());
    // Random bytes around a marker.
    let mut random: Vec<u8> = (0..10u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    random.splice(1000..1000, marker.iter().copied());
    check(&random);
}

#[test]
fn regression_inputs_stay_fixed() {
    let dir = common::own_corpus().join("regressions");
    for target in std::fs::read_dir(&dir).into_iter().flatten() {
        for file in std::fs::read_dir(target.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.file_name().is_some_and(|n| n != ".gitkeep") {
                check(&std::fs::read(&path).unwrap());
            }
        }
    }
}
