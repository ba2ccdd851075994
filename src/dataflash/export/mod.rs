//! What a DataFlash log is exported as: CSV per message type ([`csv`]), JSON Lines
//! ([`jsonl`]), Parquet per message type ([`parquet`]) and an MCAP recording ([`mcap`]).

pub mod csv;
pub mod jsonl;
pub mod mcap;
pub mod parquet;

use crate::dataflash::fmt::{Format, Formats};
use crate::dataflash::message::Message;
use crate::dataflash::reader::{Noting, Rules, Sink, scan_with};
use crate::dataflash::report::{DataflashReport, Observer, build};
use csv::Selection;
use std::io;
use std::sync::atomic::AtomicU64;

/// How an export writes the messages its selection takes.
pub(crate) trait WriteMessages {
    fn message(&mut self, message: &Message<'_>) -> io::Result<()>;
    /// A session starts at `offset` (see [`Sink::session`]).
    fn session(&mut self, _offset: u64) -> io::Result<()> {
        Ok(())
    }
}

/// Decode `data` by the thorough rules and write the messages `selection` takes with `writer`,
/// telling `reached` how far the scan is: the writer and the file's `check` report, or the
/// first write error.
pub(crate) fn export<T: WriteMessages>(
    path: &str,
    data: &[u8],
    writer: T,
    selection: &Selection,
    reached: &AtomicU64,
) -> io::Result<(T, DataflashReport)> {
    let mut sink = Exporting {
        writer,
        observer: Observer::default(),
        selection,
        error: None,
    };
    let scan = scan_with(
        data,
        Rules::Thorough,
        Formats::new(),
        &mut (&mut sink, &mut Noting(reached)),
    );
    match sink.error {
        Some(e) => Err(e),
        None => Ok((sink.writer, build(path, data, scan, sink.observer))),
    }
}

/// The sink of an export: every message goes to the report's observer, and those `selection`
/// takes to `writer`, until a write fails (the first error is kept).
struct Exporting<'s, T> {
    writer: T,
    observer: Observer,
    selection: &'s Selection,
    error: Option<io::Error>,
}

impl<T: WriteMessages> Sink for Exporting<'_, T> {
    fn message(&mut self, message: &Message<'_>) {
        self.observer.message(message);
        if self.error.is_none()
            && self.selection.takes(message)
            && let Err(e) = self.writer.message(message)
        {
            self.error = Some(e);
        }
    }

    fn session(&mut self, offset: u64) {
        self.observer.session(offset);
        if self.error.is_none()
            && let Err(e) = self.writer.session(offset)
        {
            self.error = Some(e);
        }
    }
}

/// One name per field of `format`: its FMT's column names, fields past them named `fieldN` by
/// their 1-based position (a damaged FMT can name fewer columns than it has fields, or more).
pub(crate) fn column_names(format: &Format) -> impl Iterator<Item = String> + '_ {
    (0..format.fields.len()).map(|i| {
        format
            .columns
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("field{}", i + 1))
    })
}

/// A message type's name, format characters and columns: a type redefined with another layout
/// gets a table of its own.
pub(crate) type Key = (String, String, Vec<String>);

/// Whether messages of `format` go in the table of `key`.
pub(crate) fn holds(key: &Key, format: &Format) -> bool {
    let (name, characters, columns) = key;
    *name == format.name && *characters == format.format && *columns == format.columns
}

pub(crate) fn key_of(format: &Format) -> Key {
    (
        format.name.clone(),
        format.format.clone(),
        format.columns.clone(),
    )
}

/// The name of the table of `key`, the tables before it being `earlier`: the type's name, or
/// `NAME.2`… for a type redefined with another layout.
pub(crate) fn table_name<'k>(key: &Key, earlier: impl Iterator<Item = &'k Key>) -> String {
    match earlier.filter(|k| k.0 == key.0).count() {
        0 => key.0.clone(),
        same_name => format!("{}.{}", key.0, same_name + 1),
    }
}
