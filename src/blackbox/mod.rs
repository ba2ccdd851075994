//! The Blackbox format written by Betaflight, Cleanflight and INAV.
//!
//! A file holds one or more sessions, each a text header followed by frames. [`decode`] finds the
//! sessions, parses each header and decodes its frames in file order.

pub mod codec;
pub mod csv;
pub mod decoder;
pub mod event;
pub mod frame;
pub(crate) mod group;
pub mod header;
mod ledger;
pub mod predictor;
pub mod salvage;
pub mod writer;

use crate::report::{FileReport, Region, RegionKind};
use decoder::{SessionBounds, SessionDecoder, Sink, Validation};
use header::{Header, LOG_START_MARKER};

/// Byte ranges of the sessions in `file`: each starts at a log start marker and runs to the next.
pub fn find_sessions(file: &[u8]) -> Vec<SessionBounds> {
    let starts: Vec<usize> = memchr::memmem::find_iter(file, LOG_START_MARKER).collect();
    starts
        .iter()
        .enumerate()
        .map(|(i, &start)| SessionBounds {
            index: i + 1,
            start,
            end: starts.get(i + 1).copied().unwrap_or(file.len()),
        })
        .collect()
}

/// Whether the bytes contain a Blackbox session at all.
pub fn is_blackbox(file: &[u8]) -> bool {
    memchr::memmem::find(file, LOG_START_MARKER).is_some()
}

/// One session, ready to decode.
#[derive(Debug, Clone)]
pub struct Session {
    pub bounds: SessionBounds,
    pub header: Header,
}

/// Parse the headers of every session in `file`.
pub fn sessions(file: &[u8]) -> Vec<Session> {
    find_sessions(file)
        .into_iter()
        .map(|bounds| Session {
            header: Header::parse(file, bounds.start, bounds.end),
            bounds,
        })
        .collect()
}

/// Whether `file`, whose first session is `first`, was copied in text mode (decided on that
/// session's data, unless salvage wrote it and checked its line feeds).
pub fn copied_in_text_mode(file: &[u8], first: &Session) -> bool {
    let data_start = (first.header.data_start as usize).min(file.len());
    !first.header.line_feeds_checked() && decoder::is_newline_converted(&file[data_start..])
}

/// Decode every session of `file`, passing accepted frames to `sink` (told which session each
/// belongs to by `on_session`), and report what was found.
pub fn decode<S: Sink>(
    path: &str,
    file: &[u8],
    on_session: impl FnMut(&Session, &mut S),
    sink: &mut S,
) -> FileReport {
    decode_with(Validation::Thorough, path, file, on_session, sink)
}

/// [`decode`] with a choice of validation rules.
pub fn decode_with<S: Sink>(
    validation: Validation,
    path: &str,
    file: &[u8],
    mut on_session: impl FnMut(&Session, &mut S),
    sink: &mut S,
) -> FileReport {
    // Headers are parsed one session at a time: a file of many sessions never holds them all.
    let bounds = find_sessions(file);
    let session = |bounds: SessionBounds| Session {
        header: Header::parse(file, bounds.start, bounds.end),
        bounds,
    };
    let mut regions = Vec::new();
    let first_start = bounds.first().map_or(file.len(), |b| b.start);
    if first_start > 0 {
        regions.push(Region {
            start: 0,
            end: first_start as u64,
            kind: RegionKind::NonLogData,
        });
    }
    // Whether the file was copied in text mode, decided on the first session's data.
    let mut text_mode = None;
    let reports = bounds
        .into_iter()
        .map(|b| {
            let session = session(b);
            let converted = *text_mode.get_or_insert_with(|| copied_in_text_mode(file, &session));
            on_session(&session, sink);
            SessionDecoder::new(file, &session.header, session.bounds, validation)
                .text_mode(converted)
                .run(sink)
        })
        .collect();
    FileReport::new(path.to_owned(), file.len() as u64, reports, regions)
}
