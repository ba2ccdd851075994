//! Parquet: per session, one table per frame kind, `NN.main` (I and P frames), `NN.slow`,
//! `NN.gps`, `NN.home` and `NN.events`, each created when its first row comes (`NN.main` at
//! the session's start). A frame's fields are 32-bit columns, signed or unsigned as the header
//! declares them, the `time` field 64 bits and monotonic; after them `type` (main: `I` or `P`),
//! `offset` (of the frame in the file) and `trust` (`trusted` or `suspect`). An event row holds
//! its offset, id, name and its data as JSON text. The session's header lines are the file's
//! key-value metadata.

use crate::blackbox::Session;
use crate::blackbox::frame::{FrameDef, FrameKind};
use crate::blackbox::sink::{EventFrame, Frame, Sink};
use crate::columnar::{Closing, Column, ColumnType, Encoder, Table};
use crate::report::Keep;
use std::io::{self, Write};

/// The tables of a session, in the order of [`TABLES`].
const TABLES: [&str; 5] = ["main", "slow", "gps", "home", "events"];
const EVENTS: usize = 4;

/// The table a frame kind's rows go to.
fn table_of(kind: FrameKind) -> Option<usize> {
    match kind {
        FrameKind::I | FrameKind::P => Some(0),
        FrameKind::S => Some(1),
        FrameKind::G => Some(2),
        FrameKind::H => Some(3),
        FrameKind::E => None,
    }
}

/// The layout of one table of a session: its columns, and which of them is the 64-bit time.
struct Layout {
    columns: Vec<Column>,
    /// How many of the columns are the frame's fields.
    fields: usize,
    time: Option<usize>,
    /// Whether rows carry a `type` column (I or P).
    typed: bool,
}

impl Layout {
    fn frames(def: &FrameDef, typed: bool) -> Layout {
        let time = def.index_of("time");
        let mut columns: Vec<Column> = def
            .names
            .iter()
            .zip(&def.fields)
            .enumerate()
            .map(|(i, (name, field))| {
                let ty = match (Some(i) == time, field.signed) {
                    (true, _) => ColumnType::I64,
                    (false, true) => ColumnType::I32,
                    (false, false) => ColumnType::U32,
                };
                Column::new(name.as_str(), ty)
            })
            .collect();
        if typed {
            columns.push(Column::new("type", ColumnType::Label));
        }
        columns.push(Column::new("offset", ColumnType::U64));
        columns.push(Column::new("trust", ColumnType::Label));
        Layout {
            columns,
            fields: def.names.len(),
            time,
            typed,
        }
    }

    fn events() -> Layout {
        Layout {
            columns: vec![
                Column::new("offset", ColumnType::U64),
                Column::new("event", ColumnType::U8),
                Column::new("name", ColumnType::Label),
                Column::new("data", ColumnType::Text),
            ],
            fields: 0,
            time: None,
            typed: false,
        }
    }
}

/// The session being written.
struct SessionTables<W: Write + Send + 'static> {
    index: usize,
    layouts: [Option<Layout>; 5],
    tables: [Option<Table<W>>; 5],
    metadata: Vec<(String, String)>,
}

/// Writes every session's tables, each to a writer `create` opens for its name (`NN.main`, …)
/// and hands to `close` once written. A session's tables are finished on their threads while the
/// next session decodes.
pub struct ParquetSink<W, F, C>
where
    W: Write + Send + 'static,
    F: FnMut(&str) -> io::Result<W>,
    C: FnMut(&str, W) -> io::Result<()>,
{
    create: F,
    close: C,
    keep: Keep,
    session: Option<SessionTables<W>>,
    /// The last session's tables, being finished, with their names.
    closing: Vec<(String, Closing<W>)>,
    error: Option<io::Error>,
    /// Declared after the tables, so that they are dropped before it waits for its thread.
    encoder: Encoder,
}

impl<W, F, C> ParquetSink<W, F, C>
where
    W: Write + Send + 'static,
    F: FnMut(&str) -> io::Result<W>,
    C: FnMut(&str, W) -> io::Result<()>,
{
    /// A sink writing the frames `keep` names (its encoding thread started).
    pub fn new(create: F, close: C, keep: Keep) -> io::Result<Self> {
        Ok(ParquetSink {
            create,
            close,
            keep,
            session: None,
            closing: Vec::new(),
            error: None,
            encoder: Encoder::new()?,
        })
    }

    /// Finish the session being written and start the tables of `session`.
    pub fn start_session(&mut self, session: &Session) {
        self.finish_session();
        let h = &session.header;
        let layout = |kind, typed| h.def(kind).map(|d| Layout::frames(d, typed));
        // A repeated header name keeps its last value, as the decoders read it.
        let mut metadata: Vec<(String, String)> = Vec::new();
        for line in &h.lines {
            metadata.retain(|(name, _)| *name != line.name);
            metadata.push((line.name.clone(), line.value.clone()));
        }
        self.session = Some(SessionTables {
            index: session.bounds.index,
            layouts: [
                layout(FrameKind::I, true),
                layout(FrameKind::S, false),
                layout(FrameKind::G, false),
                layout(FrameKind::H, false),
                Some(Layout::events()),
            ],
            tables: [None, None, None, None, None],
            metadata,
        });
        self.open(0);
    }

    /// The table `slot` of the session, opened on first use (`None` when the session has no such
    /// frames defined, or on an error).
    fn open(&mut self, slot: usize) -> Option<&mut Table<W>> {
        if self.error.is_some() {
            return None;
        }
        let session = self.session.as_mut()?;
        if session.tables[slot].is_none() {
            let layout = session.layouts[slot].as_ref()?;
            let name = format!("{:02}.{}", session.index, TABLES[slot]);
            let table = (self.create)(&name).and_then(|out| {
                Table::new(
                    out,
                    &layout.columns,
                    session.metadata.clone(),
                    &self.encoder,
                )
            });
            match table {
                Ok(table) => session.tables[slot] = Some(table),
                Err(e) => {
                    self.error = Some(e);
                    return None;
                }
            }
        }
        session.tables[slot].as_mut()
    }

    /// Hand the session's tables to their threads to finish, once those of the session before
    /// are finished and closed.
    pub fn finish_session(&mut self) {
        self.close_finished();
        let Some(session) = self.session.take() else {
            return;
        };
        for (slot, table) in session.tables.into_iter().enumerate() {
            let Some(table) = table else { continue };
            match table.close() {
                Ok(closing) => {
                    let name = format!("{:02}.{}", session.index, TABLES[slot]);
                    self.closing.push((name, closing));
                }
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
        }
    }

    /// Wait for the tables being finished, and close them.
    fn close_finished(&mut self) {
        for (name, closing) in std::mem::take(&mut self.closing) {
            let closed = closing.wait().and_then(|out| (self.close)(&name, out));
            if let Err(e) = closed {
                self.error.get_or_insert(e);
            }
        }
    }

    /// Finish and close the last session's tables; the first error met, if any.
    pub fn finish(mut self) -> io::Result<()> {
        self.finish_session();
        self.close_finished();
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn row(&mut self, slot: usize, fill: impl FnOnce(&mut Table<W>, &Layout)) {
        if self.open(slot).is_none() {
            return;
        }
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let (Some(table), Some(layout)) = (&mut session.tables[slot], &session.layouts[slot])
        else {
            return;
        };
        fill(table, layout);
        if let Err(e) = table.end_row() {
            self.error = Some(e);
        }
    }
}

impl<W, F, C> Sink for ParquetSink<W, F, C>
where
    W: Write + Send + 'static,
    F: FnMut(&str) -> io::Result<W>,
    C: FnMut(&str, W) -> io::Result<()>,
{
    fn frame(&mut self, frame: &Frame<'_>) {
        let Some(slot) = table_of(frame.kind) else {
            return;
        };
        if !self.keep.keeps(frame.trust) {
            return;
        }
        self.row(slot, |table, layout| {
            let values = &frame.values[..frame.values.len().min(layout.fields)];
            table.push_ints(values);
            for _ in values.len()..layout.fields {
                table.push_null();
            }
            if let (Some((t, time)), Some(column)) = (frame.time, layout.time)
                && t == column
            {
                table.replace_last_u64(column, time);
            }
            if layout.typed {
                table.push_text(frame.kind.as_str());
            }
            table.push_u64(frame.offset);
            table.push_text(frame.trust.as_str());
        });
    }

    fn event(&mut self, event: &EventFrame<'_>) {
        self.row(EVENTS, |table, _| {
            table.push_u64(event.offset);
            table.push_int(event.event.id().into());
            table.push_text(event.event.name());
            table.push_text(&event.event.data().to_string());
        });
    }
}
