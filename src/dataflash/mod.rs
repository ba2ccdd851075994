//! The ArduPilot DataFlash binary log (`.bin`), written by ArduPilot and by small flight
//! controllers that use its format.
//!
//! A log is a sequence of messages `A3 95 <type> <body>` with no length field and no checksum: each
//! type's length and field layout come from a FMT message read earlier in the file. [`fmt`] holds
//! the format characters and FMT/FMTU/UNIT/MULT parsing, [`message`] unpacks one message, [`reader`]
//! decides which messages are accepted (pymavlink's sequential rules), [`report`] turns a scan into
//! the shared report, and [`export`] writes it as JSON Lines or CSV.

pub mod evidence;
pub mod export;
pub mod fmt;
pub mod library;
pub mod message;
pub mod reader;
pub mod report;
pub mod salvage;
pub mod undefined;

pub use message::Message;
pub use reader::{Rules, Scan, Sink, scan, scan_with};
pub use report::DataflashReport;

/// `A3 95 80`: the header of a FMT message, with which every DataFlash log starts.
pub const FMT_HEADER: [u8; 3] = [fmt::HEADER[0], fmt::HEADER[1], fmt::FMT_TYPE];

/// Whether the file starts with a FMT message.
pub fn starts_as_dataflash(file: &[u8]) -> bool {
    file.starts_with(&FMT_HEADER)
}

/// Whether the file holds, anywhere, a FMT message that defines a type consistently: a name of
/// printable ASCII, known format characters and a length that fits them. Three bytes `A3 95 80`
/// alone occur by chance in other data (about once in 16 MB of random bytes).
pub fn is_dataflash(file: &[u8]) -> bool {
    memchr::memmem::find_iter(file, &FMT_HEADER).any(|at| {
        let Some(body) = file.get(at + FMT_HEADER.len()..) else {
            return false;
        };
        let Ok((_, definition)) = fmt::fmt_body(body) else {
            return false;
        };
        let name = fmt::cut_at_nul(definition.name);
        !name.is_empty()
            && name.iter().all(u8::is_ascii_graphic)
            && matches!(
                fmt::Format::define(&definition, None),
                Ok((_, None | Some(fmt::ProblemKind::ColumnCount { .. })))
            )
    })
}

/// Read `file` by the thorough rules and report what was found; every accepted message also goes
/// to `sink`.
pub fn decode<S: Sink>(path: &str, file: &[u8], sink: &mut S) -> DataflashReport {
    decode_with(Rules::Thorough, fmt::Formats::new(), path, file, sink)
}

/// Read `file` by `rules`, starting from the format table `formats`, and report what was found;
/// every accepted message also goes to `sink`.
pub fn decode_with<S: Sink>(
    rules: Rules,
    formats: fmt::Formats,
    path: &str,
    file: &[u8],
    sink: &mut S,
) -> DataflashReport {
    let mut observer = report::Observer::default();
    let scan = reader::scan_with(file, rules, formats, &mut (&mut observer, sink));
    report::build(path, file, scan, observer)
}

/// Read `file` and report what was found.
pub fn check(path: &str, file: &[u8]) -> DataflashReport {
    decode(path, file, &mut reader::Discard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_needs_a_consistent_fmt() {
        let mut fmt = vec![0xA3, 0x95, 0x80, 0x40, 7];
        fmt.extend_from_slice(b"TST\0I\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0");
        fmt.extend_from_slice(&[0; 64]);
        let mut file = vec![7u8; 100];
        file.extend_from_slice(&fmt);
        assert!(is_dataflash(&file));
        assert!(!starts_as_dataflash(&file));
        assert!(starts_as_dataflash(&fmt));
        // Wrong length, unknown character, unprintable name, cut short.
        for (at, byte) in [(104, 8), (109, b'x'), (105, 1)] {
            let mut bad = file.clone();
            bad[at] = byte;
            assert!(!is_dataflash(&bad), "byte {at}");
        }
        assert!(!is_dataflash(&file[..150]));
    }
}
