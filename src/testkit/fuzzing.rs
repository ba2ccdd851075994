//! Checks the fuzz targets in `fuzz/` call: each takes an input and panics only when an invariant
//! breaks.
//!
//! Every check reads raw bytes (see [`TARGETS`]); the round-trip target's log model is read from
//! them by [`LogModel::from_bytes`]. The module is compiled without the `fuzzing` feature too, so
//! that the tests replay the committed corpus through exactly what the fuzzers ran and a saved input
//! means the same thing to both; the feature adds only the `arbitrary` implementation the typed
//! target takes.

use crate::blackbox;
use crate::blackbox::codec::elias::{self, BitWriter};
use crate::blackbox::codec::varint::{self, MAX_VARINT_LEN};
use crate::blackbox::codec::{BitResult, CodecError, CodecResult, Encoding, sign_extend, tag};
use crate::blackbox::event::{AdjustmentValue, Event};
use crate::blackbox::evidence::p_frame_offset::p_offset_threshold;
use crate::blackbox::frame::{FrameKind, MAX_FRAME_LEN};
use crate::blackbox::header::{Firmware, Header, LOG_START_MARKER};
use crate::blackbox::predictor::normalise;
use crate::blackbox::sink::{Discard, EventFrame, Frame, Sink};
use crate::blackbox::writer::SessionWriter;

/// A check on one input.
pub type Check = fn(&[u8]);

/// Every fuzz target by name, with the check it makes on an input.
pub const TARGETS: [(&str, Check); 15] = [
    ("blackbox_check", blackbox_check),
    ("blackbox_library", blackbox_library),
    ("blackbox_export", blackbox_export),
    ("blackbox_parquet_mcap", blackbox_parquet_mcap),
    ("blackbox_parallel", blackbox_parallel),
    ("blackbox_roundtrip", blackbox_roundtrip_bytes),
    ("blackbox_salvage", blackbox_salvage),
    ("dataflash_check", dataflash_check),
    ("dataflash_export", dataflash_export),
    ("dataflash_parquet_mcap", dataflash_parquet_mcap),
    ("dataflash_roundtrip", dataflash_roundtrip),
    ("dataflash_salvage", dataflash_salvage),
    ("codec_varint", codec_varint),
    ("codec_tag", codec_tag),
    ("codec_elias", codec_elias),
];

/// Salvage any bytes: the output re-checks with no corrupt span, holds exactly the trusted frames
/// of the input (GPS frames a session would start with, which cannot follow a header, come after
/// its first other frame or event, or are dropped when there is none), and salvaging it again
/// changes nothing.
pub fn blackbox_salvage(data: &[u8]) {
    use crate::blackbox::frame::FrameKind;
    /// Frames per session.
    #[derive(Default, PartialEq, Debug)]
    struct Frames(Vec<Vec<(FrameKind, Vec<i64>)>>);
    impl crate::blackbox::sink::Sink for Frames {
        fn frame(&mut self, frame: &crate::blackbox::sink::Frame<'_>) {
            if let Some(session) = self.0.last_mut() {
                session.push((frame.kind, frame.values.to_vec()));
            }
        }
    }
    let decode = |bytes: &[u8]| {
        let mut frames = Frames::default();
        let report = blackbox::decode(
            "fuzz",
            bytes,
            |_, f: &mut Frames| f.0.push(Vec::new()),
            &mut frames,
        );
        (frames, report)
    };
    let salvage = |bytes: &[u8]| crate::blackbox::salvage::salvage("fuzz", bytes, None).1;
    let (trusted, _) = decode(data);
    let sessions = salvage(data);
    // GPS frames are dropped only where the session kept nothing else to write before them.
    let expected: Vec<_> = trusted
        .0
        .into_iter()
        .zip(&sessions)
        .map(|(frames, salvaged)| {
            assert_eq!(
                salvaged.summary.frames_undefinable, 0,
                "the rewritten header does not define trusted frames"
            );
            let gps = |k: &FrameKind| matches!(k, FrameKind::G | FrameKind::H);
            if salvaged.summary.gps_frames_dropped > 0 {
                assert!(frames.iter().all(|(k, _)| gps(k)));
                return Vec::new();
            }
            frames
        })
        .collect();
    let out: Vec<u8> = sessions.into_iter().flat_map(|s| s.bytes).collect();
    let again: Vec<u8> = salvage(&out).into_iter().flat_map(|s| s.bytes).collect();
    let (kept, report) = decode(&out);
    assert!(
        report.is_clean(),
        "salvaged output has corrupt spans: {:?}",
        report.corrupt_spans.first()
    );
    // GPS frames keep their order among themselves and the other frames among themselves; near
    // the start of a session a GPS frame may move behind the first other frame or event.
    type Record = (FrameKind, Vec<i64>);
    fn split(sessions: &[Vec<Record>]) -> Vec<[Vec<&Record>; 2]> {
        sessions
            .iter()
            .map(|frames| {
                let (g, other) = frames
                    .iter()
                    .partition(|(k, _)| matches!(k, FrameKind::G | FrameKind::H));
                [g, other]
            })
            .collect()
    }
    assert_eq!(
        split(&kept.0),
        split(&expected),
        "salvaged frames differ from the trusted ones"
    );
    assert_eq!(again, out, "salvage is not idempotent");
    // A main frame kept as suspect is suspect in the salvaged log too.
    let suspect = |bytes: &[u8]| {
        let mut s = MainFramesSuspect::default();
        blackbox::decode("fuzz", bytes, |_, _: &mut MainFramesSuspect| {}, &mut s);
        s.0
    };
    let (before, after) = (suspect(data), suspect(&out));
    let laundered = before.iter().zip(&after).position(|(&was, &is)| was && !is);
    assert_eq!(laundered, None, "a suspect main frame comes back trusted");
}

/// Read any bytes that lack a header with one from the header library: refused, or a choice
/// under which half of the bytes tried form trusted frames, no better than its runner-up's, and
/// whose written log accounts for every byte and carries the header it was given.
pub fn blackbox_library(data: &[u8]) {
    use crate::blackbox::{header::HEADER_FROM, library::HeaderLibrary};
    if !crate::blackbox::salvage::lacks_header(data, &mut |_| {}) {
        return;
    }
    let library = HeaderLibrary::builtin();
    let borrowed = crate::blackbox::salvage::borrow_from_library(data, &library, &mut |_| {});
    let Ok((borrowed, choice)) = borrowed else {
        return;
    };
    assert!(choice.trusted * 2 >= choice.probed && choice.runner_up <= choice.trusted);
    let mut bytes = Vec::new();
    borrowed.write_to(data, &mut bytes, |_| {}).unwrap();
    let report = blackbox::decode("fuzz", &bytes, |_, _| {}, &mut Discard);
    if let Err(e) = report.check_accounting() {
        panic!("byte accounting broken with a library header: {e}");
    }
    let sessions = blackbox::sessions(&bytes);
    for index in &borrowed.replaced {
        let header = &sessions[index - 1].header;
        assert!(
            header.get(HEADER_FROM).is_some(),
            "session {index} lost its provenance"
        );
    }
}

/// Per main frame decoded, whether it is suspect.
#[derive(Default)]
struct MainFramesSuspect(Vec<bool>);

impl crate::blackbox::sink::Sink for MainFramesSuspect {
    fn frame(&mut self, frame: &crate::blackbox::sink::Frame<'_>) {
        use crate::blackbox::frame::FrameKind;
        if matches!(frame.kind, FrameKind::I | FrameKind::P) {
            self.0.push(frame.trust == crate::report::Trust::Suspect);
        }
    }
}

/// Read any bytes as a DataFlash log: never panics, and every byte is accounted for once.
/// Blocks at a stride are found and taken out as for Blackbox.
pub fn dataflash_check(data: &[u8]) {
    let report = crate::dataflash::check("fuzz", data);
    if let Err(e) = report.file.check_accounting() {
        panic!("byte accounting broken: {e}");
    }
    check_periodic(data, &report.file, |data| {
        crate::dataflash::check("fuzz", data).file.corrupt_ranges()
    });
}

/// Accepted DataFlash messages: their bytes and trust, in file order.
#[derive(Default, PartialEq, Debug)]
struct DataflashMessages(Vec<(Vec<u8>, crate::report::Trust)>);

impl crate::dataflash::Sink for DataflashMessages {
    fn message(&mut self, message: &crate::dataflash::Message<'_>) {
        self.0.push((message.bytes.to_vec(), message.trust));
    }
}

fn dataflash_read(data: &[u8]) -> (DataflashMessages, crate::dataflash::DataflashReport) {
    let mut messages = DataflashMessages::default();
    let report = crate::dataflash::decode("fuzz", data, &mut messages);
    (messages, report)
}

/// Write a DataFlash log from a model the bytes describe (types with any format characters, and
/// messages of them with any bodies) and read it: every message comes back as written, and nothing
/// is damage. Logs a text-mode copy could have made (line feeds, no carriage return) are skipped.
pub fn dataflash_roundtrip(data: &[u8]) {
    use crate::dataflash::fmt::{Definition, FieldType, Format, HEADER};
    const CHARS: &[u8] = b"abBhHiIfdgnNZcCeELMqQ";
    let mut src = Source(data);
    let fmt_layout = Format::fmt();
    let mut log = Vec::new();
    let mut formats: Vec<Format> = Vec::new();
    for _ in 0..1 + src.byte() % 6 {
        // Type ids 1..=127: never FMT's own 0x80, and distinct.
        let type_id = 1 + src.byte() % 127;
        if formats.iter().any(|f| f.type_id == type_id) {
            continue;
        }
        let mut format = Vec::new();
        let mut size = 0usize;
        for _ in 0..src.byte() % 17 {
            let c = CHARS[usize::from(src.byte()) % CHARS.len()];
            let field = FieldType::from_char(c).expect("a format character");
            // The message length is one byte in FMT's layout.
            if size + field.size() + 3 > 255 {
                break;
            }
            size += field.size();
            format.push(c);
        }
        let name = format!("X{:02X}", type_id);
        let columns: Vec<String> = (0..format.len()).map(|i| format!("C{i}")).collect();
        let columns = columns.join(",");
        let definition = Definition {
            type_value: type_id.into(),
            length: (size + 3) as i128,
            name: name.as_bytes(),
            format: &format,
            columns: columns.as_bytes(),
        };
        let Ok((defined, None)) = Format::define(&definition, None) else {
            panic!("a valid definition is refused: {name} {format:?}");
        };
        log.extend(crate::dataflash::salvage::fmt_message(&fmt_layout, &defined).expect("fits"));
        formats.push(defined);
    }
    let mut written = Vec::new();
    while !src.is_empty() && written.len() < 2000 {
        let format = &formats[usize::from(src.byte()) % formats.len()];
        let start = log.len();
        log.extend_from_slice(&HEADER);
        log.push(format.type_id);
        for _ in 0..format.body_size {
            log.push(src.byte());
        }
        written.push(start);
    }
    // Read as the reader reads it: a log that looks like a text-mode copy is read as one.
    if crate::dataflash::reader::copied_in_text_mode(&log) {
        return;
    }
    let (messages, report) = dataflash_read(&log);
    if let Err(e) = report.file.check_accounting() {
        panic!("byte accounting broken: {e}");
    }
    assert!(
        report.is_clean(),
        "a valid log has corrupt spans: {:?}",
        report.file.corrupt_spans
    );
    let fmts = formats.len();
    assert_eq!(messages.0.len(), fmts + written.len(), "messages read back");
    for (i, &start) in written.iter().enumerate() {
        let end = written.get(i + 1).copied().unwrap_or(log.len());
        assert_eq!(messages.0[fmts + i].0, log[start..end], "message {i}");
    }
}

/// Salvage any bytes as a DataFlash log: the output re-checks with no corrupt span, holds exactly
/// the messages the input's check accepted (no donor, so no definition is added; at the end, the
/// message saying its line feeds stand as written and its FMT, when it needs them), and salvaging
/// it again changes nothing.
pub fn dataflash_salvage(data: &[u8]) {
    use crate::dataflash::fmt::Formats;
    let (accepted, _) = dataflash_read(data);
    let (_, salvaged) = crate::dataflash::salvage::salvage("fuzz", data, Formats::new());
    assert!(
        salvaged.summary.formats_added.is_empty(),
        "definitions added without a donor: {:?}",
        salvaged.summary.formats_added
    );
    let (mut kept, report) = dataflash_read(&salvaged.bytes);
    assert!(
        report.is_clean(),
        "salvaged output has corrupt spans: {:?}",
        report.file.corrupt_spans.first()
    );
    if salvaged.summary.line_feeds_marked {
        let marker = kept.0.split_off(kept.0.len().saturating_sub(2));
        assert!(
            marker.len() == 2
                && (crate::dataflash::reader::says_line_feeds_stand(&marker[1].0)
                    || crate::dataflash::reader::says_line_feeds_in_doubt(&marker[1].0)),
            "the line-feed marker is not the output's last message"
        );
    }
    assert_eq!(
        kept, accepted,
        "salvaged messages (or their trust) differ from the accepted ones"
    );
    let (_, again) = crate::dataflash::salvage::salvage("fuzz", &salvaged.bytes, Formats::new());
    assert_eq!(again.bytes, salvaged.bytes, "salvage is not idempotent");
}

/// Decode any bytes as a Blackbox log: never panics, and the report accounts for every byte once.
/// Any blocks recurring at a stride in them, or inferred from damage recurring at one, are found
/// without a panic, and taking them out removes exactly their bytes.
pub fn blackbox_check(data: &[u8]) {
    let report = blackbox::decode("fuzz", data, |_, _| {}, &mut Discard);
    if let Err(e) = report.check_accounting() {
        panic!("byte accounting broken: {e}");
    }
    let spans =
        |data: &[u8]| blackbox::decode("fuzz", data, |_, _| {}, &mut Discard).corrupt_ranges();
    check_periodic(data, &report, spans);
}

/// Blocks at a stride in `data` (read by `corrupt_spans`; `report` when read whole), recurring or
/// inferred from the damage, are looked for without a panic, and taking them out removes exactly
/// their bytes. (Inferring them reads the log many times: only where the damage could show them.)
fn check_periodic(
    data: &[u8],
    report: &crate::report::FileReport,
    corrupt_spans: impl Fn(&[u8]) -> Vec<(u64, u64)>,
) {
    let removes_their_bytes = |restored: &[u8], blocks: &crate::periodic::Blocks| {
        assert_eq!(
            restored.len() as u64 + blocks.count * blocks.length,
            data.len() as u64,
            "{blocks:?}"
        );
    };
    if report.corrupt_spans.len() as u64 >= crate::periodic::MIN_INFERRED {
        if let Some((restored, blocks)) = crate::periodic::restore(data, corrupt_spans) {
            removes_their_bytes(&restored, &blocks);
        }
    } else {
        for blocks in crate::periodic::find(data) {
            removes_their_bytes(&crate::periodic::remove(data, &blocks), &blocks);
        }
    }
}

/// Export any bytes as a Blackbox log: every JSON Lines record is one line of JSON, one per
/// session and per accepted frame and event; every row of the main and GPS CSV tables, written
/// with the blackbox_decode options the input's last bytes choose, has as many fields as the
/// table's header line.
pub fn blackbox_export(data: &[u8]) {
    let mut jsonl = Vec::new();
    let report = crate::blackbox::export::jsonl::write_jsonl(
        "fuzz",
        data,
        crate::report::Keep::All,
        &mut jsonl,
    )
    .expect("writing to memory");
    let mut kinds = std::collections::BTreeMap::<String, u64>::new();
    for line in lines(&jsonl) {
        let record: serde_json::Value = serde_json::from_slice(line).unwrap_or_else(|e| {
            panic!("not JSON ({e}): {}", String::from_utf8_lossy(line));
        });
        let kind = record["type"].as_str().expect("a record type");
        *kinds.entry(kind.to_owned()).or_default() += 1;
    }
    let mut counted = std::collections::BTreeMap::<String, u64>::new();
    for session in &report.sessions {
        let f = &session.frames;
        for (kind, n) in [
            ("session", 1),
            ("I", f.i),
            ("P", f.p),
            ("S", f.s),
            ("G", f.g),
            ("H", f.h),
            ("E", f.e),
        ] {
            if n > 0 {
                *counted.entry(kind.to_owned()).or_default() += n;
            }
        }
    }
    assert_eq!(kinds, counted, "JSON Lines records against the report");

    let mut tables = CsvTables {
        csv: crate::blackbox::export::csv::ReferenceCsv::with_options(csv_options(data)),
        ..CsvTables::default()
    };
    blackbox::decode(
        "fuzz",
        data,
        |session, tables: &mut CsvTables| {
            tables.settle();
            if tables.csv.start_session(session, data) {
                tables.csv.write_header(&mut tables.main);
            }
        },
        &mut tables,
    );
    tables.settle();
}

/// The blackbox_decode options (units, `--merge-gps`, `--datetime`) the last bytes of `data`
/// choose.
fn csv_options(data: &[u8]) -> crate::blackbox::export::csv::Options {
    use crate::blackbox::export::csv::{Options, Units};
    use clap::ValueEnum;
    let mut bits = data
        .iter()
        .rev()
        .take(8)
        .fold(0u64, |a, &b| a << 8 | u64::from(b));
    let mut pick = |n: u64| {
        let i = bits % n;
        bits /= n;
        i as usize
    };
    fn one<T: ValueEnum + Clone>(i: usize) -> T {
        let all = T::value_variants();
        all[i % all.len()].clone()
    }
    let mut choose = || pick(6);
    Options {
        units: Units {
            amperage: one(choose()),
            flags: one(choose()),
            frame_time: one(choose()),
            height: one(choose()),
            rotation: one(choose()),
            acceleration: one(choose()),
            gps_speed: one(choose()),
            vbat: one(choose()),
        },
        merge_gps: pick(2) == 1,
        datetime: pick(2) == 1,
    }
}

/// Export any bytes as a Blackbox log to Parquet and MCAP: every table is a Parquet file, each
/// recording an MCAP file, and each kind of table, and each frame channel, holds as many rows or
/// messages as the report counts frames (or events) of the kind.
pub fn blackbox_parquet_mcap(data: &[u8]) {
    use crate::blackbox::export::parquet::ParquetSink;
    let written = std::cell::RefCell::new(Vec::new());
    let mut sink = ParquetSink::new(
        |_| Ok(Vec::new()),
        |name, table| {
            written.borrow_mut().push((name.to_owned(), table));
            Ok(())
        },
        crate::report::Keep::All,
    )
    .expect("an encoding thread");
    let report = blackbox::decode(
        "fuzz",
        data,
        |session, sink: &mut ParquetSink<_, _, _>| sink.start_session(session),
        &mut sink,
    );
    sink.finish().expect("writing to memory");
    let mut rows = [0u64; 5];
    for (name, count) in parquet_rows(written.into_inner()) {
        let table = ["main", "slow", "gps", "home", "events"]
            .iter()
            .position(|t| name.ends_with(&format!(".{t}")))
            .unwrap_or_else(|| panic!("a table named {name}"));
        rows[table] += count;
    }
    let mut counted = [0u64; 5];
    for session in &report.sessions {
        let f = &session.frames;
        for (table, n) in [f.i + f.p, f.s, f.g, f.h, f.e].into_iter().enumerate() {
            counted[table] += n;
        }
    }
    assert_eq!(
        rows, counted,
        "Parquet rows (main, slow, GPS, home, events) against the report"
    );

    use crate::blackbox::export::mcap::McapSink;
    let recorded = std::cell::RefCell::new(Vec::new());
    let mut sink = McapSink::new(
        |_| Ok(std::io::Cursor::new(Vec::new())),
        |_, recording: std::io::Cursor<Vec<u8>>| {
            recorded.borrow_mut().push(recording.into_inner());
            Ok(())
        },
        crate::report::Keep::All,
    );
    blackbox::decode(
        "fuzz",
        data,
        |session, sink: &mut McapSink<_, _, _>| sink.start_session(session),
        &mut sink,
    );
    sink.finish().expect("writing to memory");
    let mut messages = [0u64; 4];
    for recording in recorded.into_inner() {
        for (topic, count) in mcap_messages(&recording) {
            if let Some(channel) = ["/main", "/slow", "/gps", "/home"]
                .iter()
                .position(|t| *t == topic)
            {
                messages[channel] += count;
            }
        }
    }
    assert_eq!(
        messages,
        counted[..4],
        "MCAP messages (main, slow, GPS, home) against the report"
    );
}

/// The messages of each topic of an MCAP recording, read back from its bytes (which must be a
/// whole MCAP file).
fn mcap_messages(recording: &[u8]) -> std::collections::BTreeMap<String, u64> {
    let mut topics = std::collections::BTreeMap::new();
    let stream = mcap::MessageStream::new(recording).expect("an MCAP file");
    for message in stream {
        let message = message.unwrap_or_else(|e| panic!("a broken MCAP file: {e}"));
        *topics.entry(message.channel.topic.clone()).or_default() += 1;
    }
    topics
}

/// Export any bytes as a DataFlash log to Parquet and MCAP: every table is a Parquet file and the
/// recording an MCAP file, holding a row (a message) per message JSON Lines exports.
pub fn dataflash_parquet_mcap(data: &[u8]) {
    let reached = std::sync::atomic::AtomicU64::new(0);
    let jsonl = dataflash_jsonl(data, &reached);
    let messages = lines(&jsonl)
        .filter(|line| line.starts_with(b"{\"type\":\"message\""))
        .count() as u64;
    let (_, tables) = crate::dataflash::export::parquet::write_parquet(
        "fuzz",
        data,
        &Default::default(),
        |_| Ok(Vec::new()),
        &reached,
    )
    .expect("writing to memory");
    let rows: u64 = parquet_rows(tables).into_iter().map(|(_, n)| n).sum();
    assert_eq!(rows, messages, "Parquet rows against JSON Lines messages");
    let (_, recording) = crate::dataflash::export::mcap::write_mcap(
        "fuzz",
        data,
        &Default::default(),
        std::io::Cursor::new(Vec::new()),
        &reached,
    )
    .expect("writing to memory");
    let recorded: u64 = mcap_messages(&recording.into_inner())
        .into_iter()
        .filter(|(topic, _)| {
            topic != crate::recording::LOG_TOPIC && topic != crate::recording::FIX_TOPIC
        })
        .map(|(_, n)| n)
        .sum();
    assert_eq!(
        recorded, messages,
        "MCAP messages against JSON Lines messages"
    );
}

/// The rows of each Parquet table, read back from its bytes (which must be a Parquet file).
fn parquet_rows(tables: Vec<(String, Vec<u8>)>) -> Vec<(String, u64)> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    tables
        .into_iter()
        .map(|(name, bytes)| {
            let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
                .and_then(|b| b.build())
                .unwrap_or_else(|e| panic!("{name}: not a Parquet file: {e}"));
            let rows = reader
                .map(|batch| batch.map(|b| b.num_rows() as u64))
                .sum::<Result<u64, _>>()
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, rows)
        })
        .collect()
}

/// The lines of `text`, each ending in a line feed, without it.
fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = (!text.is_empty()).then(|| {
        text.strip_suffix(b"\n")
            .expect("the last line ends in a line feed")
    });
    body.into_iter().flat_map(|b| b.split(|&c| c == b'\n'))
}

/// The JSON Lines export of `data` read as a DataFlash log.
fn dataflash_jsonl(data: &[u8], reached: &std::sync::atomic::AtomicU64) -> Vec<u8> {
    let mut jsonl = Vec::new();
    crate::dataflash::export::jsonl::write_jsonl(
        "fuzz",
        data,
        &Default::default(),
        &mut jsonl,
        reached,
    )
    .expect("writing to memory");
    jsonl
}

/// Export any bytes as a DataFlash log: every JSON Lines record is one line of JSON, and every
/// row of each CSV table has as many fields as its heading.
pub fn dataflash_export(data: &[u8]) {
    let reached = std::sync::atomic::AtomicU64::new(0);
    let jsonl = dataflash_jsonl(data, &reached);
    for line in lines(&jsonl) {
        if let Err(e) = serde_json::from_slice::<serde_json::Value>(line) {
            panic!("not JSON ({e}): {}", String::from_utf8_lossy(line));
        }
    }
    let (_, tables) = crate::dataflash::export::csv::write_csv(
        "fuzz",
        data,
        Default::default(),
        |_| Ok(Vec::new()),
        &reached,
    )
    .expect("writing to memory");
    for table in tables {
        // Fields per record: commas and line feeds outside quotes end them.
        let mut records = Vec::new();
        let (mut quoted, mut fields) = (false, 1);
        for &b in &table {
            match b {
                b'"' => quoted = !quoted,
                b',' if !quoted => fields += 1,
                b'\n' if !quoted => {
                    records.push(fields);
                    fields = 1;
                }
                _ => {}
            }
        }
        assert!(!quoted && fields == 1, "a table ends inside a record");
        assert!(
            records.windows(2).all(|w| w[0] == w[1]),
            "rows with other field counts than the heading: {records:?}"
        );
    }
}

/// The main and GPS CSV tables of one session, as `export --csv` writes them, and the session's
/// GPX points and event lines.
#[derive(Default)]
struct CsvTables {
    csv: crate::blackbox::export::csv::ReferenceCsv,
    main: Vec<u8>,
    gps: Vec<u8>,
    other: Vec<u8>,
}

impl CsvTables {
    /// Check the session's tables, and start the next one's.
    fn settle(&mut self) {
        self.csv.finish_session(&mut self.main);
        for table in [&self.main, &self.gps] {
            let mut rows = lines(table);
            let Some(header) = rows.next() else {
                continue;
            };
            let fields = |row: &[u8]| row.iter().filter(|&&b| b == b',').count();
            for row in rows {
                assert_eq!(
                    fields(row),
                    fields(header),
                    "row {:?} under header {:?}",
                    String::from_utf8_lossy(row),
                    String::from_utf8_lossy(header)
                );
            }
        }
        self.main.clear();
        self.gps.clear();
    }
}

impl Sink for CsvTables {
    fn frame(&mut self, frame: &Frame<'_>) {
        match frame.kind {
            FrameKind::S => self.csv.slow_frame(&mut self.main, frame),
            FrameKind::I | FrameKind::P => self.csv.write_main_row(&mut self.main, frame),
            FrameKind::G => {
                self.other.clear();
                self.csv.write_gpx_point(&mut self.other, frame);
                if self.csv.merges_gps() {
                    self.csv.merge_gps_frame(&mut self.main, frame);
                    return;
                }
                if self.gps.is_empty() {
                    self.csv.write_gps_header(&mut self.gps);
                }
                self.csv.write_gps_row(&mut self.gps, frame);
            }
            FrameKind::H => self.csv.home_frame(frame),
            FrameKind::E => {}
        }
    }

    fn event(&mut self, event: &EventFrame<'_>) {
        self.other.clear();
        self.csv.write_event(&mut self.other, event.event);
    }
}

/// Decode any bytes as a Blackbox log on two threads: sessions shared between them, or a session
/// split between them, give the report one thread gives.
pub fn blackbox_parallel(data: &[u8]) {
    let report = blackbox::decode("fuzz", data, |_, _| {}, &mut Discard);
    if report.sessions.len() > 1 {
        let shared = blackbox::decode_in_parallel("fuzz", data, 2, |_| Discard);
        assert_eq!(shared, report, "sessions on two threads");
    }
    // A later piece can only join at an accepted I frame: without two, pieces add nothing to test.
    if data.len() >= 512 && report.sessions.iter().any(|s| s.frames.i >= 2) {
        // Pieces of a third: a session over two thirds of the input is split in two.
        let piece = data.len() / 3;
        let (split, _) = blackbox::decode_in_pieces("fuzz", data, 2, piece, |_| Discard);
        assert_eq!(split, report, "sessions in pieces of {piece} bytes");
    }
}

// ---------------------------------------------------------------------------------------------
// Reading numbers from the fuzzer's bytes
// ---------------------------------------------------------------------------------------------

/// Reads the fuzzer's bytes as numbers; past the end every read is zero, so any input is usable.
struct Source<'a>(&'a [u8]);

impl Source<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn flag(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    /// A signed value of 0 to 32 significant bits, each width as likely: small values (which the
    /// compact layouts of the tag encodings exist for) come as often as large ones.
    fn value(&mut self) -> i32 {
        let width = u32::from(self.byte()) % 33;
        if width == 0 {
            return 0;
        }
        let mut bits = 0u32;
        for i in 0..width.div_ceil(8) {
            bits |= u32::from(self.byte()) << (8 * i);
        }
        sign_extend(bits, width)
    }
}

// ---------------------------------------------------------------------------------------------
// Round trip: a valid log model, written and decoded
// ---------------------------------------------------------------------------------------------

/// Encoding ids a field may have; 11 exists only where 10 is Elias gamma (original Cleanflight).
const ENCODINGS: [u32; 10] = [0, 1, 3, 4, 5, 6, 7, 8, 9, 10];
const ENCODINGS_GAMMA: [u32; 11] = [0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11];
/// Main fields at most: no code takes more than 8 bytes, so a frame stays within
/// [`MAX_FRAME_LEN`].
const MAX_MAIN_FIELDS: usize = 30;
/// S, G and H fields at most.
const MAX_OTHER_FIELDS: usize = 16;
/// Frame data stops growing past this (well below the 16 KiB from which data without a carriage
/// return reads as a text-mode copy): small logs keep the fuzzer fast.
const MAX_DATA: usize = 4 * 1024;
/// Records at most.
const MAX_RECORDS: usize = 500;

/// What a session holds after its header, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// An I, P, S, G or H frame with its values, normalised to 32 bits as the decoder gives them.
    Frame(FrameKind, Vec<i64>),
    Event(Event),
}

/// A valid single-session log: header lines (after the log start marker) and what follows them.
///
/// Whatever bytes it is read from, the model is one the decoder must accept whole: main frames
/// follow the header's I/P schedule with a steady loop time, the first frame is an I frame, every
/// value fits its encoding, GPS frames come after a home frame, and no frame is too long.
#[derive(Debug, Clone, PartialEq)]
pub struct LogModel {
    pub header: Vec<(String, String)>,
    pub records: Vec<Record>,
}

#[cfg(feature = "fuzzing")]
impl<'a> arbitrary::Arbitrary<'a> for LogModel {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(LogModel::from_bytes(u.bytes(u.len())?))
    }

    fn arbitrary_take_rest(u: arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(LogModel::from_bytes(u.take_rest()))
    }
}

/// One field of a frame layout; main fields have an I and a P predictor and encoding.
struct FieldLayout {
    name: String,
    signed: bool,
    predictor: [u32; 2],
    encoding: [u32; 2],
}

fn column<T: ToString>(items: impl Iterator<Item = T>) -> String {
    items.map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

/// Fields one code covers, for an encoding id.
fn group_size(id: u32, gamma: bool) -> usize {
    match id {
        7 => 3,
        10 if !gamma => 3,
        8 => 4,
        _ => 1,
    }
}

/// Give every field a grouped code covers that code's encoding, as firmware headers do.
fn settle_groups(fields: &mut [FieldLayout], column: usize, from: usize, gamma: bool) {
    let mut i = from;
    while i < fields.len() {
        let id = fields[i].encoding[column];
        let size = group_size(id, gamma);
        for f in fields.iter_mut().skip(i + 1).take(size - 1) {
            f.encoding[column] = id;
        }
        i += size;
    }
}

fn pick_encoding(src: &mut Source, gamma: bool) -> u32 {
    let ids: &[u32] = if gamma { &ENCODINGS_GAMMA } else { &ENCODINGS };
    ids[usize::from(src.byte()) % ids.len()]
}

/// A predictor valid at `index`: `motor[0]` prediction only after a `motor[0]` field.
fn pick_predictor(src: &mut Source, index: usize, motor0: Option<usize>) -> u32 {
    let p = u32::from(src.byte() % 12);
    if p == 5 && motor0.is_none_or(|m| m >= index) {
        0
    } else {
        p
    }
}

/// Layout of an S, G or H frame with `names`.
fn other_layout(src: &mut Source, names: Vec<String>, gamma: bool) -> Vec<FieldLayout> {
    let mut fields: Vec<FieldLayout> = names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let predictor = pick_predictor(src, i, None);
            let encoding = pick_encoding(src, gamma);
            FieldLayout {
                name,
                signed: src.flag(),
                predictor: [predictor; 2],
                encoding: [encoding; 2],
            }
        })
        .collect();
    settle_groups(&mut fields, 0, 0, gamma);
    fields
}

fn layout_lines(letter: &str, fields: &[FieldLayout], lines: &mut Vec<(String, String)>) {
    lines.extend([
        (
            format!("Field {letter} name"),
            column(fields.iter().map(|f| f.name.as_str())),
        ),
        (
            format!("Field {letter} signed"),
            column(fields.iter().map(|f| u8::from(f.signed))),
        ),
        (
            format!("Field {letter} predictor"),
            column(fields.iter().map(|f| f.predictor[0])),
        ),
        (
            format!("Field {letter} encoding"),
            column(fields.iter().map(|f| f.encoding[0])),
        ),
    ]);
}

/// Keep a residual within what an encoding can carry.
fn fit(encoding: Encoding, residual: i32) -> i32 {
    match encoding {
        Encoding::Null => 0,
        // Negated 14 bits: -8191..=8192.
        Encoding::Neg14Bit => sign_extend(residual as u32 & 0x3FFF, 14).wrapping_neg(),
        Encoding::Tag8_4S16 => i32::from(residual as i16),
        _ => residual,
    }
}

/// Builds a model record by record, predicting each frame's values as the writer, whose
/// prediction state it reads, will encode them.
struct Builder {
    header: Header,
    writer: SessionWriter,
    records: Vec<Record>,
    mains: usize,
    /// Per main field, the largest change between consecutive main frames since the last I frame.
    group_scale: Vec<i64>,
    /// Per main field, the smallest such largest change of any group so far (empty before the
    /// first group ends).
    quietest_group: Vec<i64>,
    home_written: bool,
    /// The iteration a logging-resume event announced: the next main frame is its I frame.
    resume_at: Option<u32>,
    loop_time_us: u64,
    /// The scheduler's jitter: at most a third of the loop time, so that any step is within the
    /// 2.5 × the time checks allow of the loop time learnt from any step before it (clean real
    /// logs step within 1.8 ×).
    max_jitter_us: u8,
    /// Iteration and (unwrapped) time the clock counts from.
    base_iteration: u32,
    base_time_us: u64,
}

impl Builder {
    fn data_len(&self) -> usize {
        self.writer.bytes().len() - self.header.data_start as usize
    }

    fn push(&mut self, record: Record) {
        let before = self.writer.bytes().len();
        match &record {
            Record::Frame(kind @ (FrameKind::I | FrameKind::P), values) => {
                self.writer.main(*kind, values)
            }
            Record::Frame(kind, values) => self.writer.other(*kind, values),
            Record::Event(event) => self.writer.event(event),
        }
        let len = self.writer.bytes().len() - before;
        assert!(
            len <= MAX_FRAME_LEN,
            "the model wrote a {len}-byte frame: {record:?}"
        );
        self.records.push(record);
    }

    fn main_frame(&mut self, src: &mut Source) {
        let i_interval = self.header.i_interval;
        let n = match (self.resume_at.take(), self.writer.last_iteration()) {
            (Some(n), _) => n,
            (None, None) => self.base_iteration,
            (None, Some(last)) => last + 1 + self.header.skipped_after(last),
        };
        let kind = if n % i_interval == 0 {
            FrameKind::I
        } else {
            FrameKind::P
        };
        let def = self
            .header
            .def(kind)
            .expect("the model defines main frames");
        if kind == FrameKind::I && self.writer.previous().is_some() {
            // A group ended.
            self.quietest_group.resize(def.len(), i64::MAX);
            for (i, quietest) in self.quietest_group.iter_mut().enumerate() {
                *quietest = (*quietest).min(self.group_scale.get(i).copied().unwrap_or(0));
            }
        }
        let ctx = self.writer.context(kind);
        let jitter = u64::from(src.byte() % (self.max_jitter_us + 1));
        let time = self.base_time_us + u64::from(n - self.base_iteration) * self.loop_time_us;
        let mut values = vec![0i64; def.len()];
        values[0] = i64::from(n);
        values[1] = i64::from((time + jitter) as u32);
        if kind == FrameKind::P {
            let predicted = def.fields[0].predictor.predict(0, &ctx, &values);
            assert_eq!(
                normalise(predicted, false),
                values[0],
                "the model's schedule disagrees with the loopIteration prediction"
            );
        }
        for i in 2..def.len() {
            let field = def.fields[i];
            let prediction = field.predictor.predict(i, &ctx, &values);
            let residual = match (kind, self.writer.previous()) {
                // Sensors move smoothly: an I frame's variable-byte value steps from the last
                // frame by no more than the group before it moved, nor by more than the
                // P-frame offset test allows for the quietest group of the flight (it looks at a
                // step that reaches its threshold).
                (FrameKind::I, Some(previous))
                    if matches!(field.encoding, Encoding::SignedVb | Encoding::UnsignedVb) =>
                {
                    let scale = self.group_scale.get(i).copied().unwrap_or(0);
                    let quiet_bound = self
                        .quietest_group
                        .get(i)
                        .map_or(i64::MAX, |&quietest| p_offset_threshold(quietest) - 1);
                    let bound = (scale + 2).min(quiet_bound);
                    let step = i64::from(src.value()).rem_euclid(2 * bound + 1) - bound;
                    let (low, high) = if field.signed {
                        (i64::from(i32::MIN), i64::from(i32::MAX))
                    } else {
                        (0, i64::from(u32::MAX))
                    };
                    let wanted = (previous[i] + step).clamp(low, high);
                    (wanted - prediction) as i32
                }
                _ => fit(field.encoding, src.value()),
            };
            values[i] = normalise(prediction + i64::from(residual), field.signed);
        }
        match (kind, self.writer.previous()) {
            (FrameKind::P, Some(previous)) => widen_scale(&mut self.group_scale, previous, &values),
            _ => self.group_scale.clear(),
        }
        self.mains += 1;
        self.push(Record::Frame(kind, values));
    }

    fn other_frame(&mut self, kind: FrameKind, src: &mut Source) {
        let def = self.header.def(kind).expect("the model defines the frame");
        let ctx = self.writer.context(kind);
        let mut values = vec![0i64; def.len()];
        for i in 0..def.len() {
            let field = def.fields[i];
            let prediction = field.predictor.predict(i, &ctx, &values);
            let residual = fit(field.encoding, src.value());
            values[i] = normalise(prediction + i64::from(residual), field.signed);
        }
        self.home_written |= kind == FrameKind::H;
        self.push(Record::Frame(kind, values));
    }

    fn event(&mut self, src: &mut Source) {
        // NaN is not equal to itself: the comparison of decoded events needs a number.
        let number = |bits: u32| {
            let v = f32::from_bits(bits);
            if v.is_nan() { 0.0 } else { v }
        };
        let event = match src.byte() % 9 {
            0 => Event::SyncBeep { time: src.u32() },
            1 => Event::AutotuneCycleStart {
                phase: src.byte(),
                cycle: src.byte() & 0x7F,
                rising: src.flag(),
                p: src.byte(),
                i: src.byte(),
                d: src.byte(),
            },
            2 => Event::AutotuneCycleResult {
                overshot: src.byte(),
                p: src.byte(),
                i: src.byte(),
                d: src.byte(),
            },
            3 => Event::AutotuneTargets {
                current_angle: src.u16() as i16,
                target_angle: src.byte() as i8,
                target_angle_at_peak: src.byte() as i8,
                first_peak_angle: src.u16() as i16,
                second_peak_angle: src.u16() as i16,
            },
            4 => Event::InflightAdjustment {
                function: src.byte() & 0x7F,
                value: if src.flag() {
                    AdjustmentValue::Float(number(src.u32()))
                } else {
                    AdjustmentValue::Int(src.value())
                },
            },
            5 => Event::Disarm { reason: src.u32() },
            6 => Event::GtuneCycleResult {
                axis: src.byte(),
                gyro_avg: src.value(),
                new_p: src.u16() as i16,
            },
            7 => Event::FlightMode {
                flags: src.u32(),
                last_flags: src.u32(),
            },
            // Event 40 means what the firmware that wrote the log means by it.
            _ if self.header.firmware == Firmware::Inav => Event::ImuFailure { code: src.u32() },
            _ => Event::TwitchTest {
                stage: src.byte(),
                value: number(src.u32()),
            },
        };
        self.push(Record::Event(event));
    }

    /// Logging paused and resumes at a later I frame, after some time.
    fn resume(&mut self, src: &mut Source) {
        let i_interval = self.header.i_interval;
        let last = self
            .writer
            .last_iteration()
            .expect("a main frame comes first");
        let n = (last / i_interval + 1 + u32::from(src.byte() % 4)) * i_interval;
        let pause_us = u64::from(src.u16()) * 16;
        self.base_time_us += u64::from(n - self.base_iteration) * self.loop_time_us + pause_us;
        self.base_iteration = n;
        self.resume_at = Some(n);
        self.push(Record::Event(Event::LoggingResume {
            iteration: n,
            time: self.base_time_us as u32,
        }));
    }
}

impl LogModel {
    /// Read a model from any bytes: the layout first, then records until the bytes run out.
    pub fn from_bytes(data: &[u8]) -> LogModel {
        let src = &mut Source(data);
        let data_version = 1 + u32::from(src.byte() & 1);
        let flavour = src.byte() % 4;
        let gamma = flavour == 2;
        let i_interval = 1 + u32::from(src.byte());
        let denom = 1 + u32::from(src.byte() % 64);
        let num = 1 + u32::from(src.byte()) % denom;
        // A bare number N means 1/N.
        let p_interval = if num == 1 && src.flag() {
            denom.to_string()
        } else {
            format!("{num}/{denom}")
        };
        let (minthrottle, vbatref, motor_min) = (src.u16(), src.u16(), src.u16());
        let loop_time_us = 16 + u64::from(src.u16()) % 3985;
        let start_time_us = u64::from(src.u32());
        let start_iteration = i_interval * u32::from(src.u16());
        let log_end = match src.byte() % 3 {
            0 => None,
            1 => Some(None),
            _ => Some(Some(src.u32())),
        };

        let mut lines: Vec<(String, String)> = vec![
            ("Data version".into(), data_version.to_string()),
            ("I interval".into(), i_interval.to_string()),
            ("P interval".into(), p_interval),
        ];
        let revision = match flavour {
            0 => Some("Betaflight 4.4.0 (fuzz) FUZZ"),
            1 => Some("INAV 7.1.0 (fuzz) FUZZ"),
            // A bare git hash: the original Cleanflight, where encoding 10 is Elias gamma.
            2 => Some("c49bd40"),
            _ => None,
        };
        if let Some(revision) = revision {
            lines.push(("Firmware type".into(), "Cleanflight".into()));
            lines.push(("Firmware revision".into(), revision.into()));
        }
        lines.extend([
            ("minthrottle".into(), minthrottle.to_string()),
            ("vbatref".into(), vbatref.to_string()),
            // The low end alone: with a highest output, motor values beyond twice it are damage,
            // and the model's motor[0] takes any value its encoding holds.
            ("motorOutput".into(), motor_min.to_string()),
        ]);

        // Main fields: loopIteration and time as every firmware writes them, then free fields.
        let main_count = 2 + usize::from(src.byte()) % (MAX_MAIN_FIELDS - 1);
        let motor_byte = usize::from(src.byte());
        let motor0 = (main_count > 2 && motor_byte & 1 == 1)
            .then(|| 2 + (motor_byte >> 1) % (main_count - 2));
        let mut main = vec![
            FieldLayout {
                name: "loopIteration".into(),
                signed: false,
                predictor: [0, 6],
                encoding: [1, 9],
            },
            FieldLayout {
                name: "time".into(),
                signed: false,
                predictor: [0, 2],
                encoding: [1, 0],
            },
        ];
        for i in 2..main_count {
            main.push(FieldLayout {
                name: if Some(i) == motor0 {
                    "motor[0]".into()
                } else {
                    format!("f{i}")
                },
                signed: src.flag(),
                predictor: [
                    pick_predictor(src, i, motor0),
                    pick_predictor(src, i, motor0),
                ],
                encoding: [pick_encoding(src, gamma), pick_encoding(src, gamma)],
            });
        }
        settle_groups(&mut main, 0, 2, gamma);
        settle_groups(&mut main, 1, 2, gamma);
        layout_lines("I", &main, &mut lines);
        lines.extend([
            (
                "Field P predictor".into(),
                column(main.iter().map(|f| f.predictor[1])),
            ),
            (
                "Field P encoding".into(),
                column(main.iter().map(|f| f.encoding[1])),
            ),
        ]);

        let slow_count = usize::from(src.byte()) % (MAX_OTHER_FIELDS + 1);
        let slow_names = (0..slow_count).map(|i| format!("s{i}")).collect();
        let slow = other_layout(src, slow_names, gamma);
        if !slow.is_empty() {
            layout_lines("S", &slow, &mut lines);
        }
        // GPS frames exist only with home frames: a G frame needs an H frame before it.
        let home_count = usize::from(src.byte()) % 5;
        let gps_count = if home_count > 0 {
            usize::from(src.byte()) % (MAX_OTHER_FIELDS + 1)
        } else {
            0
        };
        let home_names = (0..home_count)
            .map(|i| match i {
                0 | 1 => format!("GPS_home[{i}]"),
                _ => format!("h{i}"),
            })
            .collect();
        let home = other_layout(src, home_names, gamma);
        let gps_time = src.flag();
        let gps_names = (0..gps_count)
            .map(|i| match i {
                0 if gps_time => "time".to_owned(),
                _ => format!("g{i}"),
            })
            .collect();
        let gps = other_layout(src, gps_names, gamma);
        if !home.is_empty() {
            layout_lines("H", &home, &mut lines);
        }
        if !gps.is_empty() {
            layout_lines("G", &gps, &mut lines);
        }

        let writer = SessionWriter::new(&lines);
        let header = writer.header().clone();
        assert!(
            header.problems.is_empty() && header.i.is_some() && header.p.is_some(),
            "the model's header does not parse cleanly: {:?}\n{lines:?}",
            header.problems
        );
        let mut b = Builder {
            header,
            writer,
            records: Vec::new(),
            mains: 0,
            group_scale: Vec::new(),
            quietest_group: Vec::new(),
            home_written: false,
            resume_at: None,
            loop_time_us,
            max_jitter_us: (loop_time_us / 3).min(50) as u8,
            base_iteration: start_iteration,
            base_time_us: start_time_us,
        };
        // An H frame right after the header would read as a header line: an I frame comes first.
        b.main_frame(src);
        while !src.is_empty() && b.records.len() < MAX_RECORDS && b.data_len() < MAX_DATA {
            match src.byte() % 16 {
                9 | 10 if !slow.is_empty() => b.other_frame(FrameKind::S, src),
                11 if !home.is_empty() => b.other_frame(FrameKind::H, src),
                12 if !gps.is_empty() && b.home_written => b.other_frame(FrameKind::G, src),
                13 | 14 => b.event(src),
                15 => b.resume(src),
                _ => b.main_frame(src),
            }
        }
        // A lone I frame with nothing to corroborate it is not trusted.
        while b.mains < 2 {
            b.main_frame(src);
        }
        if let Some(disarm_reason) = log_end {
            b.push(Record::Event(Event::LogEnd { disarm_reason }));
        }
        LogModel {
            header: lines,
            records: b.records,
        }
    }

    /// The log: a session header and the records.
    pub fn write(&self) -> Vec<u8> {
        let mut w = SessionWriter::new(&self.header);
        for record in &self.records {
            match record {
                Record::Frame(kind @ (FrameKind::I | FrameKind::P), values) => {
                    w.main(*kind, values)
                }
                Record::Frame(kind, values) => w.other(*kind, values),
                Record::Event(event) => w.event(event),
            }
        }
        w.finish()
    }
}

/// Collects what the decoder trusts, in file order.
#[derive(Default)]
pub struct Collect(pub Vec<Record>);

impl Sink for Collect {
    fn frame(&mut self, frame: &Frame<'_>) {
        self.0
            .push(Record::Frame(frame.kind, frame.values.to_vec()));
    }
    fn event(&mut self, event: &EventFrame<'_>) {
        self.0.push(Record::Event(event.event.clone()));
    }
}

/// Write a valid log and decode it: every record comes back as written, and nothing is damage.
pub fn blackbox_roundtrip(model: &LogModel) {
    let log = model.write();
    if memchr::memmem::find_iter(&log, LOG_START_MARKER).count() != 1 {
        // Frame bytes that happen to spell the log start marker make a second session: not the
        // single-session log the model stands for.
        return;
    }
    let mut sink = Collect::default();
    let report = blackbox::decode("roundtrip", &log, |_, _| {}, &mut sink);
    if let Err(e) = report.check_accounting() {
        panic!("byte accounting broken: {e}");
    }
    assert!(
        report.corrupt_spans.is_empty(),
        "a valid log has corrupt spans: {:?}\nheader: {:?}",
        report.corrupt_spans,
        model.header
    );
    let got = sink.0;
    if got != model.records {
        let at = got
            .iter()
            .zip(&model.records)
            .position(|(g, w)| g != w)
            .unwrap_or(got.len().min(model.records.len()));
        panic!(
            "record {at} differs: wrote {:?}, decoded {:?} ({} written, {} decoded)\nheader: {:?}",
            model.records.get(at),
            got.get(at),
            model.records.len(),
            got.len(),
            model.header
        );
    }
}

/// [`blackbox_roundtrip`] of the model read from `data`.
pub fn blackbox_roundtrip_bytes(data: &[u8]) {
    blackbox_roundtrip(&LogModel::from_bytes(data));
}

// ---------------------------------------------------------------------------------------------
// Codecs: encode → decode is identity; decoding any bytes stays inside them
// ---------------------------------------------------------------------------------------------

/// Decoding walks over at most this much of an input (a code is at most 41 bytes).
const MAX_WALK: usize = 64;
/// Values to encode are read from at most this much of an input.
const MAX_VALUES_INPUT: usize = 512;

/// Bytes a decoder took: what it returns must be the end of its input.
fn taken(input: &[u8], rest: &[u8]) -> usize {
    assert!(
        rest.len() <= input.len(),
        "a decoder returned {} bytes of a {}-byte input",
        rest.len(),
        input.len()
    );
    if !rest.is_empty() {
        let end = &input[input.len() - rest.len()..];
        assert!(
            std::ptr::eq(rest.as_ptr(), end.as_ptr()),
            "a decoder returned bytes that are not the end of its input"
        );
    }
    input.len() - rest.len()
}

/// A failure must point inside the input, and complete-input decoders never ask for more.
fn failed_inside(input_len: usize, err: nom::Err<CodecError>) {
    match err {
        nom::Err::Error(e) | nom::Err::Failure(e) => assert!(
            e.remaining <= input_len,
            "an error {} bytes before the end of a {input_len}-byte input",
            e.remaining
        ),
        nom::Err::Incomplete(n) => panic!("a complete-input decoder asked for more: {n:?}"),
    }
}

/// Decode codes one after another from `data` until one fails: each takes 1 to `max` bytes.
fn walk<T>(
    data: &[u8],
    max: usize,
    decode: impl Fn(&[u8]) -> CodecResult<'_, T>,
    mut check: impl FnMut(T, usize),
) {
    assert!(decode(&[][..]).is_err(), "a code decoded from no bytes");
    let mut input = &data[..data.len().min(MAX_WALK)];
    while !input.is_empty() {
        match decode(input) {
            Ok((rest, value)) => {
                let n = taken(input, rest);
                assert!(
                    (1..=max).contains(&n),
                    "a code took {n} bytes (at most {max})"
                );
                check(value, n);
                input = rest;
            }
            Err(e) => return failed_inside(input.len(), e),
        }
    }
}

/// Any bytes, read as varints, decode within bounds, and what they decode to re-encodes to no more
/// bytes and decodes back; values encode and decode back, in sequence.
pub fn codec_varint(data: &[u8]) {
    walk(data, MAX_VARINT_LEN, varint::unsigned_vb, |v, n| {
        let mut out = Vec::new();
        varint::write_unsigned_vb(&mut out, v);
        assert!(out.len() <= n, "{v} re-encodes longer than it was read");
        assert_eq!(varint::unsigned_vb(&out), Ok((&[][..], v)));
    });
    walk(data, MAX_VARINT_LEN, varint::signed_vb, |v, n| {
        let mut out = Vec::new();
        varint::write_signed_vb(&mut out, v);
        assert!(out.len() <= n, "{v} re-encodes longer than it was read");
        assert_eq!(varint::signed_vb(&out), Ok((&[][..], v)));
    });
    walk(data, MAX_VARINT_LEN, varint::neg_14bit, |v, _| {
        assert!((-8191..=8192).contains(&v), "negated 14-bit value {v}");
        let mut out = Vec::new();
        varint::write_neg_14bit(&mut out, v);
        assert_eq!(varint::neg_14bit(&out), Ok((&[][..], v)));
    });

    let src = &mut Source(&data[..data.len().min(MAX_VALUES_INPUT)]);
    let mut values = Vec::new();
    while !src.is_empty() {
        values.push(src.value());
    }
    let mut out = Vec::new();
    for &v in &values {
        varint::write_unsigned_vb(&mut out, v as u32);
        varint::write_signed_vb(&mut out, v);
        varint::write_neg_14bit(&mut out, fit(Encoding::Neg14Bit, v));
    }
    let mut input = &out[..];
    for &v in &values {
        let (rest, u) = varint::unsigned_vb(input).expect("unsigned varint decodes");
        assert_eq!(u, v as u32, "unsigned varint");
        let (rest, s) = varint::signed_vb(rest).expect("signed varint decodes");
        assert_eq!(s, v, "signed varint");
        let (rest, n) = varint::neg_14bit(rest).expect("negated 14-bit decodes");
        assert_eq!(n, fit(Encoding::Neg14Bit, v), "negated 14-bit");
        input = rest;
    }
    assert!(
        input.is_empty(),
        "{} bytes left after the last code",
        input.len()
    );
}

/// A group of values written with one of the tag encodings.
#[derive(Debug)]
enum TagGroup {
    Svb(Vec<i32>),
    S32([i32; 3]),
    Variable([i32; 3]),
    S16V1([i32; 4]),
    S16V2([i32; 4]),
}

fn tag_decode<'a>(group: &TagGroup, input: &'a [u8]) -> CodecResult<'a, Vec<i32>> {
    Ok(match group {
        TagGroup::Svb(v) => {
            let (rest, got) = tag::tag8_8svb(input, v.len())?;
            (rest, got[..v.len()].to_vec())
        }
        TagGroup::S32(_) => tag::tag2_3s32(input).map(|(r, v)| (r, v.to_vec()))?,
        TagGroup::Variable(_) => tag::tag2_3svariable(input).map(|(r, v)| (r, v.to_vec()))?,
        TagGroup::S16V1(_) => tag::tag8_4s16_v1(input).map(|(r, v)| (r, v.to_vec()))?,
        TagGroup::S16V2(_) => tag::tag8_4s16_v2(input).map(|(r, v)| (r, v.to_vec()))?,
    })
}

fn tag_encode(group: &TagGroup, out: &mut Vec<u8>) {
    match group {
        TagGroup::Svb(v) => tag::write_tag8_8svb(out, v),
        TagGroup::S32(v) => tag::write_tag2_3s32(out, *v),
        TagGroup::Variable(v) => tag::write_tag2_3svariable(out, *v),
        TagGroup::S16V1(v) => tag::write_tag8_4s16_v1(out, *v),
        TagGroup::S16V2(v) => tag::write_tag8_4s16_v2(out, *v),
    }
}

fn tag_values(group: &TagGroup) -> Vec<i32> {
    match group {
        TagGroup::Svb(v) => v.clone(),
        TagGroup::S32(v) | TagGroup::Variable(v) => v.to_vec(),
        TagGroup::S16V1(v) | TagGroup::S16V2(v) => v.to_vec(),
    }
}

/// A decoded group written again decodes to the same values.
fn tag_reencodes(group: TagGroup) {
    let mut out = Vec::new();
    tag_encode(&group, &mut out);
    match tag_decode(&group, &out) {
        Ok((rest, got)) => {
            assert!(rest.is_empty(), "{group:?} re-encoded leaves bytes");
            assert_eq!(got, tag_values(&group), "{group:?} re-encoded");
        }
        Err(e) => panic!("{group:?} re-encoded does not decode: {e:?}"),
    }
}

/// Any bytes, read as each tag encoding, decode within bounds and re-encode to the same values;
/// groups of values encode and decode back, in sequence.
pub fn codec_tag(data: &[u8]) {
    for count in 1..=8 {
        walk(
            data,
            1 + 8 * MAX_VARINT_LEN,
            |input| tag::tag8_8svb(input, count),
            |v, _| {
                assert!(v[count..].iter().all(|&x| x == 0), "values past the group");
                tag_reencodes(TagGroup::Svb(v[..count].to_vec()));
            },
        );
    }
    walk(data, 13, tag::tag2_3s32, |v, _| {
        tag_reencodes(TagGroup::S32(v))
    });
    walk(data, 13, tag::tag2_3svariable, |v, _| {
        tag_reencodes(TagGroup::Variable(v))
    });
    let s16 = |v: &[i32; 4]| v.iter().all(|&x| i16::try_from(x).is_ok());
    walk(data, 9, tag::tag8_4s16_v1, |v, _| {
        assert!(s16(&v), "TAG8_4S16 value out of 16 bits: {v:?}");
        tag_reencodes(TagGroup::S16V1(v));
    });
    walk(data, 9, tag::tag8_4s16_v2, |v, _| {
        assert!(s16(&v), "TAG8_4S16 value out of 16 bits: {v:?}");
        tag_reencodes(TagGroup::S16V2(v));
    });

    let src = &mut Source(&data[..data.len().min(MAX_VALUES_INPUT)]);
    let mut groups = Vec::new();
    while !src.is_empty() {
        let kind = src.byte() % 5;
        let triple = |src: &mut Source| [src.value(), src.value(), src.value()];
        let quad = |src: &mut Source| [(); 4].map(|_| i32::from(src.value() as i16));
        groups.push(match kind {
            0 => {
                let count = 1 + usize::from(src.byte() % 8);
                TagGroup::Svb((0..count).map(|_| src.value()).collect())
            }
            1 => TagGroup::S32(triple(src)),
            2 => TagGroup::Variable(triple(src)),
            3 => TagGroup::S16V1(quad(src)),
            _ => TagGroup::S16V2(quad(src)),
        });
    }
    let mut out = Vec::new();
    for g in &groups {
        tag_encode(g, &mut out);
    }
    let mut input = &out[..];
    for g in &groups {
        let (rest, got) = tag_decode(g, input).unwrap_or_else(|e| panic!("{g:?}: {e:?}"));
        assert_eq!(got, tag_values(g), "{g:?}");
        input = rest;
    }
    assert!(
        input.is_empty(),
        "{} bytes left after the last group",
        input.len()
    );
}

/// The four bit-stream codes.
#[derive(Debug, Clone, Copy)]
enum Elias {
    DeltaU32,
    DeltaS32,
    GammaU32,
    GammaS32,
}

impl Elias {
    const ALL: [Elias; 4] = [
        Elias::DeltaU32,
        Elias::DeltaS32,
        Elias::GammaU32,
        Elias::GammaS32,
    ];

    /// Longest code in bits: delta 5 + 6 + 31, gamma 31 + 32, and one escape bit.
    fn max_bits(self) -> usize {
        match self {
            Elias::DeltaU32 | Elias::DeltaS32 => 43,
            Elias::GammaU32 | Elias::GammaS32 => 64,
        }
    }

    /// Decode one code; signed values come back as their `u32` bit pattern.
    fn decode(self, input: (&[u8], usize)) -> BitResult<'_, u32> {
        match self {
            Elias::DeltaU32 => elias::elias_delta_u32(input),
            Elias::DeltaS32 => elias::elias_delta_s32(input).map(|(r, v)| (r, v as u32)),
            Elias::GammaU32 => elias::elias_gamma_u32(input),
            Elias::GammaS32 => elias::elias_gamma_s32(input).map(|(r, v)| (r, v as u32)),
        }
    }

    fn encode(self, w: &mut BitWriter, out: &mut Vec<u8>, value: u32) {
        match self {
            Elias::DeltaU32 => elias::write_elias_delta_u32(w, out, value),
            Elias::DeltaS32 => elias::write_elias_delta_s32(w, out, value as i32),
            Elias::GammaU32 => elias::write_elias_gamma_u32(w, out, value),
            Elias::GammaS32 => elias::write_elias_gamma_s32(w, out, value as i32),
        }
    }
}

/// Bits before `rest` in `data`; `rest` must be a position inside `data`.
fn bit_position(data: &[u8], rest: (&[u8], usize)) -> usize {
    let bytes = taken(data, rest.0);
    assert!(rest.1 < 8, "bit offset {}", rest.1);
    assert!(
        !rest.0.is_empty() || rest.1 == 0,
        "a bit offset past the end of the input"
    );
    bytes * 8 + rest.1
}

/// Decode codes one after another from bit `start` of `data` until one fails.
fn walk_bits(data: &[u8], start: usize, code: Elias) {
    let mut input = (data, start);
    let mut pos = start;
    while !input.0.is_empty() {
        match code.decode(input) {
            Ok((rest, value)) => {
                let next = bit_position(data, rest);
                assert!(
                    next > pos && next - pos <= code.max_bits(),
                    "{code:?} took {} bits",
                    next.wrapping_sub(pos)
                );
                let mut w = BitWriter::default();
                let mut out = Vec::new();
                code.encode(&mut w, &mut out, value);
                w.flush(&mut out);
                assert_eq!(
                    code.decode((&out, 0)).map(|(_, v)| v),
                    Ok(value),
                    "{code:?} {value} re-encoded"
                );
                input = rest;
                pos = next;
            }
            Err(e) => return failed_inside(input.0.len(), e),
        }
    }
}

/// Any bits, read as each Elias code from two starting offsets, decode within bounds and re-encode
/// to the same values; values of all four codes encode into one stream and decode back.
pub fn codec_elias(data: &[u8]) {
    let walked = &data[..data.len().min(MAX_WALK)];
    let offset = usize::from(data.first().copied().unwrap_or(0) % 8);
    for code in Elias::ALL {
        assert!(
            code.decode((&[][..], 0)).is_err(),
            "{code:?} decoded from no bits"
        );
        walk_bits(walked, 0, code);
        if !walked.is_empty() {
            walk_bits(walked, offset, code);
        }
    }

    const EDGES: [u32; 8] = [
        0,
        1,
        u32::MAX - 2,
        u32::MAX - 1,
        u32::MAX,
        i32::MAX as u32,
        i32::MIN as u32,
        1 << 31 | 1,
    ];
    let src = &mut Source(&data[..data.len().min(MAX_VALUES_INPUT)]);
    let mut values = Vec::new();
    while !src.is_empty() {
        let b = src.byte();
        let code = Elias::ALL[usize::from(b & 3)];
        let value = if b & 4 != 0 {
            EDGES[usize::from(src.byte()) % EDGES.len()]
        } else {
            src.value() as u32
        };
        values.push((code, value));
    }
    let mut w = BitWriter::default();
    let mut out = Vec::new();
    for &(code, value) in &values {
        code.encode(&mut w, &mut out, value);
    }
    w.flush(&mut out);
    let mut input = (&out[..], 0usize);
    for &(code, value) in &values {
        let (rest, got) = code
            .decode(input)
            .unwrap_or_else(|e| panic!("{code:?} {value}: {e:?}"));
        assert_eq!(got, value, "{code:?}");
        input = rest;
    }
    let end = bit_position(&out, input);
    assert_eq!(end.div_ceil(8), out.len(), "bytes left after the last code");
    if let Some(&last) = input.0.first() {
        assert_eq!(last << input.1, 0, "padding bits are not zero");
    }
}

/// Widen `scale`, per field the largest change between consecutive main frames, by the change
/// from `previous` to `values`.
fn widen_scale(scale: &mut Vec<i64>, previous: &[i64], values: &[i64]) {
    scale.resize(values.len(), 0);
    for ((s, a), b) in scale.iter_mut().zip(previous).zip(values) {
        *s = (*s).max((b - a).abs());
    }
}
