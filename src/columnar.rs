//! Parquet tables for `export --parquet`: typed Arrow columns filled a row at a time on the
//! caller's thread, and encoded (numbers by their deltas, zstd) and written on an [`Encoder`]'s
//! thread in batches, in row groups of at most [`ROW_GROUP_ROWS`] rows and the table's share of
//! [`ENCODER_MEMORY`], ended when the table waits [`IDLE_JOBS`] batches for its next: a table of
//! any length, or a hundred of them at once, is written in bounded memory and read back a row
//! group at a time.

use arrow_array::builder::{ArrayBuilder, Int16Builder, ListBuilder, StringBuilder};
use arrow_array::types::Int8Type;
use arrow_array::{
    ArrayRef, DictionaryArray, Float32Array, Float64Array, Int8Array, Int16Array, Int32Array,
    Int64Array, RecordBatch, StringArray, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;
use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Bytes of values (8 a number) a table gathers before handing them to be encoded: a batch is
/// this over the row's width, between [`MIN_BATCH_ROWS`] and [`MAX_BATCH_ROWS`] rows.
pub const BATCH_BYTES: usize = 512 << 10;
pub const MIN_BATCH_ROWS: usize = 64;
pub const MAX_BATCH_ROWS: usize = 8192;
/// Most rows in one row group.
pub const ROW_GROUP_ROWS: usize = 1 << 17;
/// Most bytes of a data page as it fills (each column of each open table has one).
pub const PAGE_BYTES: usize = 128 << 10;
/// Most memory the writers of an [`Encoder`]'s open tables hold together (their pages, encoded or
/// filling): each may hold its share, past which its row group ends. A log with a hundred
/// message types thus exports in tens of MiB, a Blackbox session in row groups of megabytes.
pub const ENCODER_MEMORY: usize = 32 << 20;
/// Most distinct words in a `Label` column (keys are 8-bit, and a reader takes at most 127);
/// past them, null.
pub const LABEL_WORDS: usize = 127;
/// Batches waiting for the encoding thread, at most: enough that the thread gathering rows rarely
/// waits for it (each holds half a MiB).
pub const QUEUED_JOBS: usize = 8;
/// The zstd level: on columns stored by their deltas, 3 gains nothing over 1 and costs time.
const ZSTD_LEVEL: i32 = 1;
/// Jobs after which a table not written to since ends its row group. An open row group holds a
/// writer for each column, with zstd contexts of about half a MiB; a DataFlash log's rarer
/// messages fill a batch only now and then, and would hold theirs for the whole export.
pub const IDLE_JOBS: u64 = 32;

/// The type of one column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    Text,
    /// Text from a small set of values (a frame kind, a trust level): dictionary-encoded, a
    /// category in pandas.
    Label,
    /// A list of 16-bit integers (DataFlash `a` fields).
    I16List,
}

impl ColumnType {
    fn data_type(self) -> DataType {
        match self {
            ColumnType::I8 => DataType::Int8,
            ColumnType::U8 => DataType::UInt8,
            ColumnType::I16 => DataType::Int16,
            ColumnType::U16 => DataType::UInt16,
            ColumnType::I32 => DataType::Int32,
            ColumnType::U32 => DataType::UInt32,
            ColumnType::I64 => DataType::Int64,
            ColumnType::U64 => DataType::UInt64,
            ColumnType::F32 => DataType::Float32,
            ColumnType::F64 => DataType::Float64,
            ColumnType::Text => DataType::Utf8,
            ColumnType::Label => {
                DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8))
            }
            ColumnType::I16List => {
                DataType::List(Arc::new(Field::new("item", DataType::Int16, true)))
            }
        }
    }
}

/// One column of a table: its name, type, and metadata (unit, multiplier, …).
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
    pub metadata: HashMap<String, String>,
}

impl Column {
    /// A column without metadata.
    pub fn new(name: impl Into<String>, ty: ColumnType) -> Column {
        Column {
            name: name.into(),
            ty,
            metadata: HashMap::new(),
        }
    }
}

/// The values of one column not yet encoded: numbers as they come (each column's array is
/// made from them in one pass per batch), text in Arrow's builders.
enum Values {
    Int(Vec<i64>),
    Float(Vec<f64>),
    Text(StringBuilder),
    /// Keys into the words met so far (at most [`LABEL_WORDS`]).
    Label {
        keys: Vec<i8>,
        words: Vec<String>,
    },
    I16List(ListBuilder<Int16Builder>),
}

/// One column's values not yet encoded, and which of them are null once one is.
struct Buffer {
    ty: ColumnType,
    values: Values,
    /// Per value, whether it is valid; `None` while every value is.
    valid: Option<Vec<bool>>,
}

impl Buffer {
    fn new(ty: ColumnType, rows: usize) -> Buffer {
        let values = match ty {
            ColumnType::F32 | ColumnType::F64 => Values::Float(Vec::with_capacity(rows)),
            ColumnType::Text => Values::Text(StringBuilder::new()),
            ColumnType::Label => Values::Label {
                keys: Vec::with_capacity(rows),
                words: Vec::new(),
            },
            ColumnType::I16List => Values::I16List(ListBuilder::new(Int16Builder::new())),
            _ => Values::Int(Vec::with_capacity(rows)),
        };
        Buffer {
            ty,
            values,
            valid: None,
        }
    }

    fn len(&self) -> usize {
        match &self.values {
            Values::Int(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Text(b) => b.len(),
            Values::Label { keys, .. } => keys.len(),
            Values::I16List(b) => b.len(),
        }
    }

    /// A null: a placeholder number marked invalid, or a builder's null.
    fn push_null(&mut self) {
        match &mut self.values {
            Values::Int(v) => {
                let valid = self.valid.get_or_insert_with(|| vec![true; v.len()]);
                valid.push(false);
                v.push(0);
            }
            Values::Float(v) => {
                let valid = self.valid.get_or_insert_with(|| vec![true; v.len()]);
                valid.push(false);
                v.push(0.0);
            }
            Values::Text(b) => b.append_null(),
            Values::Label { keys, .. } => {
                let valid = self.valid.get_or_insert_with(|| vec![true; keys.len()]);
                valid.push(false);
                keys.push(0);
            }
            Values::I16List(b) => b.append(false),
        }
    }

    /// Note that the value just pushed is valid (when an earlier one was not).
    #[inline]
    fn pushed(&mut self) {
        if let Some(valid) = &mut self.valid {
            valid.push(true);
        }
    }

    /// The values gathered as an array of the column's type; the buffer is emptied.
    fn finish(&mut self) -> ArrayRef {
        let valid = self.valid.take();
        let array: ArrayRef = match &mut self.values {
            Values::Int(v) => {
                let array = int_array(self.ty, v, valid.as_deref());
                v.clear();
                array
            }
            Values::Float(v) => {
                let array: ArrayRef = match (self.ty, valid.as_deref()) {
                    (ColumnType::F32, None) => {
                        Arc::new(Float32Array::from_iter_values(v.iter().map(|&x| x as f32)))
                    }
                    (ColumnType::F32, Some(ok)) => Arc::new(Float32Array::from_iter(
                        v.iter().zip(ok).map(|(&x, &ok)| ok.then_some(x as f32)),
                    )),
                    (_, None) => Arc::new(Float64Array::from_iter_values(v.iter().copied())),
                    (_, Some(ok)) => Arc::new(Float64Array::from_iter(
                        v.iter().zip(ok).map(|(&x, &ok)| ok.then_some(x)),
                    )),
                };
                v.clear();
                array
            }
            Values::Text(b) => Arc::new(b.finish()),
            Values::Label { keys, words } => {
                let keys_array = match valid.as_deref() {
                    None => Int8Array::from_iter_values(keys.iter().copied()),
                    Some(ok) => {
                        Int8Array::from_iter(keys.iter().zip(ok).map(|(&k, &ok)| ok.then_some(k)))
                    }
                };
                keys.clear();
                let words = Arc::new(StringArray::from_iter_values(words.iter()));
                // Every key was given for a word of the list.
                Arc::new(DictionaryArray::<Int8Type>::new(keys_array, words))
            }
            Values::I16List(b) => Arc::new(b.finish()),
        };
        array
    }
}

/// The array of an integer column of type `ty` from its values, null where `valid` says so.
fn int_array(ty: ColumnType, values: &[i64], valid: Option<&[bool]>) -> ArrayRef {
    macro_rules! array {
        ($array:ty, $native:ty) => {
            match valid {
                None => Arc::new(<$array>::from_iter_values(
                    values.iter().map(|&v| v as $native),
                )),
                Some(ok) => Arc::new(<$array>::from_iter(
                    values
                        .iter()
                        .zip(ok)
                        .map(|(&v, &ok)| ok.then_some(v as $native)),
                )),
            }
        };
    }
    match ty {
        ColumnType::I8 => array!(Int8Array, i8),
        ColumnType::U8 => array!(UInt8Array, u8),
        ColumnType::I16 => array!(Int16Array, i16),
        ColumnType::U16 => array!(UInt16Array, u16),
        ColumnType::I32 => array!(Int32Array, i32),
        ColumnType::U32 => array!(UInt32Array, u32),
        ColumnType::U64 => array!(UInt64Array, u64),
        _ => array!(Int64Array, i64),
    }
}

fn parquet_error(e: parquet::errors::ParquetError) -> io::Error {
    match e {
        parquet::errors::ParquetError::External(e) => match e.downcast::<io::Error>() {
            Ok(e) => *e,
            Err(e) => io::Error::other(e),
        },
        e => io::Error::other(e),
    }
}

/// Work for the encoding thread.
type Job = Box<dyn FnOnce() + Send>;

/// The thread that encodes and writes the batches of a set of tables, one job at a time in the
/// order given, while the tables' rows are gathered on the caller's thread. [`QUEUED_JOBS`] wait
/// at most. Dropping it waits for every job given; drop its tables first.
pub struct Encoder {
    jobs: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
    /// Tables opened and not yet closed.
    open: Arc<AtomicUsize>,
    row_groups: Arc<Mutex<RowGroups>>,
}

/// A table's row group, as the encoding thread ends it.
trait RowGroup: Send + Sync {
    /// End the row group being written, if there is one.
    fn end(&self);
}

impl<W: Write + Send> RowGroup for Mutex<Writing<W>> {
    fn end(&self) {
        let mut writing = lock(self);
        if let Writing::Open(writer) = &mut *writing
            && writer.in_progress_rows() > 0
            && let Err(e) = writer.flush()
        {
            *writing = Writing::Failed(parquet_error(e));
        }
    }
}

/// The tables whose row groups are open, with the job that last wrote to each (jobs counted on
/// the encoding thread, which alone uses this).
#[derive(Default)]
struct RowGroups {
    jobs: u64,
    open: Vec<(Arc<dyn RowGroup>, u64)>,
}

impl RowGroups {
    /// A job wrote to `table`, whose row group is now `open` or not: end those of the tables
    /// idle for [`IDLE_JOBS`] jobs.
    fn wrote(&mut self, table: &Arc<dyn RowGroup>, open: bool) {
        self.jobs += 1;
        self.forget(table);
        if open {
            self.open.push((table.clone(), self.jobs));
        }
        let jobs = self.jobs;
        self.open.retain(|(table, last)| {
            let idle = last + IDLE_JOBS <= jobs;
            if idle {
                table.end();
            }
            !idle
        });
    }

    /// `table` has no row group open any more.
    fn forget(&mut self, table: &Arc<dyn RowGroup>) {
        let same = |t: &Arc<dyn RowGroup>| std::ptr::addr_eq(Arc::as_ptr(t), Arc::as_ptr(table));
        self.open.retain(|(t, _)| !same(t));
    }
}

impl Encoder {
    /// Start the thread.
    pub fn new() -> io::Result<Encoder> {
        let (jobs, received) = sync_channel::<Job>(QUEUED_JOBS);
        let thread = std::thread::Builder::new()
            .name("parquet".into())
            .spawn(move || {
                for job in received {
                    job();
                }
            })?;
        Ok(Encoder {
            jobs: Some(jobs),
            thread: Some(thread),
            open: Arc::new(AtomicUsize::new(0)),
            row_groups: Arc::default(),
        })
    }
}

impl Drop for Encoder {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A table's writer, as the encoding thread leaves it.
enum Writing<W: Write + Send> {
    Open(Box<ArrowWriter<W>>),
    Failed(io::Error),
    Done,
}

type Shared<W> = Arc<Mutex<Writing<W>>>;

/// The value behind `mutex`, also when a thread panicked holding it (a table's writer then
/// reports the failure itself).
fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A Parquet table being written to `W`, a row at a time: each `push_*` call fills the next
/// column of the row, [`Table::end_row`] closes it. Batches of rows are encoded and written by an
/// [`Encoder`] while the next batch fills.
pub struct Table<W: Write + Send + 'static> {
    schema: SchemaRef,
    buffers: Vec<Buffer>,
    /// The column the next value goes to.
    next: usize,
    rows: usize,
    /// Rows in a batch.
    batch_rows: usize,
    jobs: SyncSender<Job>,
    state: Shared<W>,
    /// The encoder's count of open tables, this one among them until it closes.
    open: Arc<AtomicUsize>,
    row_groups: Arc<Mutex<RowGroups>>,
}

impl<W: Write + Send + 'static> Table<W> {
    /// Start a table of `columns` in `out`, with `metadata` (key, value) pairs for the file,
    /// encoded by `encoder`.
    pub fn new(
        out: W,
        columns: &[Column],
        metadata: Vec<(String, String)>,
        encoder: &Encoder,
    ) -> io::Result<Self> {
        let fields: Vec<Field> = columns
            .iter()
            .map(|c| Field::new(&c.name, c.ty.data_type(), true).with_metadata(c.metadata.clone()))
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(
            fields,
            metadata.into_iter().collect::<HashMap<_, _>>(),
        ));
        let level = ZstdLevel::try_new(ZSTD_LEVEL).map_err(parquet_error)?;
        // Numbers are stored by their deltas (version 2's encoding for them): flight data moves
        // by small steps, and counters and times by nearly constant ones, which a dictionary
        // of values stores worse and more slowly. Text keeps its dictionary.
        let mut properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(level))
            .set_writer_version(WriterVersion::PARQUET_2_0)
            .set_dictionary_enabled(false)
            // Minimum and maximum per column chunk (what a query skips row groups by), not per
            // page; values handed to the column writers a batch at a time.
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_write_batch_size(MAX_BATCH_ROWS)
            .set_data_page_row_count_limit(usize::MAX)
            .set_data_page_size_limit(PAGE_BYTES)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS));
        for column in columns {
            if matches!(column.ty, ColumnType::Text | ColumnType::Label) {
                let path = ColumnPath::new(vec![column.name.clone()]);
                properties = properties.set_column_dictionary_enabled(path, true);
            }
        }
        let properties = properties.build();
        let writer =
            ArrowWriter::try_new(out, schema.clone(), Some(properties)).map_err(parquet_error)?;
        let jobs = encoder.jobs.clone().ok_or_else(stopped)?;
        encoder.open.fetch_add(1, Ordering::Relaxed);
        let batch_rows =
            (BATCH_BYTES / (8 * columns.len().max(1))).clamp(MIN_BATCH_ROWS, MAX_BATCH_ROWS);
        Ok(Table {
            schema,
            buffers: columns
                .iter()
                .map(|c| Buffer::new(c.ty, batch_rows))
                .collect(),
            next: 0,
            rows: 0,
            batch_rows,
            jobs,
            state: Arc::new(Mutex::new(Writing::Open(Box::new(writer)))),
            open: encoder.open.clone(),
            row_groups: encoder.row_groups.clone(),
        })
    }

    /// The buffer of the next column, moving on to the one after (none past the last).
    #[inline]
    fn next_buffer(&mut self) -> Option<&mut Buffer> {
        let i = self.next;
        self.next += 1;
        self.buffers.get_mut(i)
    }

    /// An integer into the next column: an integer column wide enough for it (its type was
    /// chosen for the values it takes) or a float column.
    #[inline]
    pub fn push_int(&mut self, v: i64) {
        self.push_ints(&[v]);
    }

    /// Integers into the next columns, one each (see [`Table::push_int`]).
    #[inline]
    pub fn push_ints(&mut self, values: &[i64]) {
        let start = self.next.min(self.buffers.len());
        for (buffer, &v) in self.buffers[start..].iter_mut().zip(values) {
            match &mut buffer.values {
                Values::Int(values) => values.push(v),
                Values::Float(values) => values.push(v as f64),
                _ => {
                    buffer.push_null();
                    continue;
                }
            }
            buffer.pushed();
        }
        self.next += values.len();
    }

    /// Replace the last value given to integer column `column` by `v`, an unsigned 64-bit
    /// integer (as [`Table::push_u64`] takes it).
    pub fn replace_last_u64(&mut self, column: usize, v: u64) {
        if let Some(buffer) = self.buffers.get_mut(column)
            && let Values::Int(values) = &mut buffer.values
            && let Some(last) = values.last_mut()
        {
            *last = match buffer.ty {
                ColumnType::U64 => v as i64,
                _ => i64::try_from(v).unwrap_or(i64::MAX),
            };
        }
    }

    /// An unsigned 64-bit integer into the next column (a `U64` one; an `I64` one takes it up to
    /// `i64::MAX`).
    #[inline]
    pub fn push_u64(&mut self, v: u64) {
        let Some(buffer) = self.next_buffer() else {
            return;
        };
        match (&mut buffer.values, buffer.ty) {
            // The bits as they are: the array is made of them again as `u64`.
            (Values::Int(values), ColumnType::U64) => values.push(v as i64),
            (Values::Int(values), _) => values.push(i64::try_from(v).unwrap_or(i64::MAX)),
            _ => return buffer.push_null(),
        }
        buffer.pushed();
    }

    /// A float into the next column (a float column).
    #[inline]
    pub fn push_float(&mut self, v: f64) {
        let Some(buffer) = self.next_buffer() else {
            return;
        };
        match &mut buffer.values {
            Values::Float(values) => values.push(v),
            _ => return buffer.push_null(),
        }
        buffer.pushed();
    }

    /// Text into the next column (a `Text` or `Label` one).
    #[inline]
    pub fn push_text(&mut self, v: &str) {
        let Some(buffer) = self.next_buffer() else {
            return;
        };
        match &mut buffer.values {
            Values::Text(b) => b.append_value(v),
            Values::Label { keys, words } => {
                let key = match words.iter().position(|w| w == v) {
                    Some(key) => key,
                    None if words.len() < LABEL_WORDS => {
                        words.push(v.to_owned());
                        words.len() - 1
                    }
                    None => return buffer.push_null(),
                };
                keys.push(key as i8);
                buffer.pushed();
            }
            _ => buffer.push_null(),
        }
    }

    /// A list of 16-bit integers into the next column (an `I16List` one).
    #[inline]
    pub fn push_i16_list(&mut self, values: impl Iterator<Item = i16>) {
        let Some(buffer) = self.next_buffer() else {
            return;
        };
        match &mut buffer.values {
            Values::I16List(b) => {
                b.values().extend(values.map(Some));
                b.append(true);
            }
            _ => buffer.push_null(),
        }
    }

    /// No value in the next column.
    #[inline]
    pub fn push_null(&mut self) {
        if let Some(buffer) = self.next_buffer() {
            buffer.push_null();
        }
    }

    /// Close the row (columns not given a value are null); every batch of rows, encode
    /// them.
    pub fn end_row(&mut self) -> io::Result<()> {
        while self.next < self.buffers.len() {
            self.push_null();
        }
        self.next = 0;
        self.rows += 1;
        if self.rows.is_multiple_of(self.batch_rows) {
            self.encode()?;
        }
        Ok(())
    }

    /// Hand the rows gathered to the encoding thread.
    fn encode(&mut self) -> io::Result<()> {
        let failed = matches!(&*lock(&self.state), Writing::Failed(_));
        if failed {
            return Err(self.take_error());
        }
        if self.buffers.first().is_none_or(|b| b.len() == 0) {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = self.buffers.iter_mut().map(Buffer::finish).collect();
        let batch = RecordBatch::try_new(self.schema.clone(), columns).map_err(io::Error::other)?;
        let (state, open) = (self.state.clone(), self.open.clone());
        let row_groups = self.row_groups.clone();
        let job: Job = Box::new(move || {
            let mut writing = lock(&state);
            let mut row_group_open = false;
            if let Writing::Open(writer) = &mut *writing {
                let share = ENCODER_MEMORY / open.load(Ordering::Relaxed).max(1);
                let written =
                    writer
                        .write(&batch)
                        .and_then(|()| match writer.memory_size() > share {
                            true => writer.flush(),
                            false => Ok(()),
                        });
                row_group_open = writer.in_progress_rows() > 0;
                if let Err(e) = written {
                    *writing = Writing::Failed(parquet_error(e));
                }
            }
            drop(writing);
            let table: Arc<dyn RowGroup> = state;
            lock(&row_groups).wrote(&table, row_group_open);
        });
        self.jobs.send(job).map_err(|_| stopped())
    }

    /// The error the encoding thread met.
    fn take_error(&mut self) -> io::Error {
        match std::mem::replace(&mut *lock(&self.state), Writing::Done) {
            Writing::Failed(e) => e,
            _ => stopped(),
        }
    }

    /// Rows written so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Write the rows left and the file's footer; returns the writer.
    pub fn finish(self) -> io::Result<W> {
        self.close()?.wait()
    }

    /// Hand the rows left and the footer to the encoding thread, which writes them while the
    /// caller goes on.
    pub fn close(mut self) -> io::Result<Closing<W>> {
        self.encode()?;
        self.open.fetch_sub(1, Ordering::Relaxed);
        let (reply, result) = std::sync::mpsc::channel();
        let (state, row_groups) = (self.state.clone(), self.row_groups.clone());
        let job: Job = Box::new(move || {
            let table: Arc<dyn RowGroup> = state.clone();
            lock(&row_groups).forget(&table);
            let written = match std::mem::replace(&mut *lock(&state), Writing::Done) {
                Writing::Open(writer) => writer.into_inner().map_err(parquet_error),
                Writing::Failed(e) => Err(e),
                Writing::Done => Err(stopped()),
            };
            let _ = reply.send(written);
        });
        self.jobs.send(job).map_err(|_| stopped())?;
        Ok(Closing { result })
    }
}

fn stopped() -> io::Error {
    io::Error::other("the Parquet encoder stopped")
}

/// A table whose last rows are being encoded: [`Closing::wait`] for its writer.
pub struct Closing<W> {
    result: Receiver<io::Result<W>>,
}

impl<W> Closing<W> {
    /// Wait for the table's footer to be written; returns the writer.
    pub fn wait(self) -> io::Result<W> {
        self.result.recv().unwrap_or_else(|_| Err(stopped()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Int16Type, UInt32Type, UInt64Type};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    /// The batches of a table written to memory.
    fn read(bytes: Vec<u8>) -> Vec<RecordBatch> {
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
            .unwrap()
            .build()
            .unwrap();
        reader.map(Result::unwrap).collect()
    }

    #[test]
    fn any_names_nulls_and_many_words_read_back() {
        // Names as a damaged header can give them: empty, repeated, with dots and quotes.
        let columns = [
            Column::new("", ColumnType::U32),
            Column::new("a.b", ColumnType::U32),
            Column::new("a.b", ColumnType::F32),
            Column::new("\"x\"", ColumnType::Label),
            Column::new("big", ColumnType::U64),
            Column::new("list", ColumnType::I16List),
        ];
        let encoder = Encoder::new().unwrap();
        let mut table = Table::new(Vec::new(), &columns, vec![], &encoder).unwrap();
        let rows = 3 * MAX_BATCH_ROWS + 5;
        for row in 0..rows {
            table.push_ints(&[row as i64, 7]);
            match row % 3 {
                0 => table.push_null(),
                _ => table.push_float(0.5),
            }
            table.push_text(&format!("word {}", row % 200));
            table.push_u64(u64::MAX - row as u64);
            table.push_i16_list([-1, row as i16].into_iter());
            // Pushes past the last column go nowhere; a short row is filled with nulls.
            if row == 1 {
                table.push_int(1);
            }
            table.end_row().unwrap();
        }
        assert_eq!(table.rows(), rows);
        let batches = read(table.finish().unwrap());
        let got: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(got, rows);
        let first = &batches[0];
        assert_eq!(first.column(0).as_primitive::<UInt32Type>().value(9), 9);
        let floats = first.column(2).as_primitive::<Float32Type>();
        assert!(floats.is_null(0) && floats.value(1) == 0.5);
        let words = first.column(3).as_dictionary::<Int8Type>();
        // The first 127 distinct words have keys; the rest are null.
        assert!(words.is_valid(126) && words.is_null(127) && words.is_valid(200));
        let big = first.column(4).as_primitive::<UInt64Type>();
        assert_eq!(big.value(0), u64::MAX);
        let list = first.column(5).as_list::<i32>().value(3);
        assert_eq!(list.as_primitive::<Int16Type>().values(), &[-1, 3]);
    }

    #[test]
    fn a_table_left_idle_ends_its_row_group_and_reads_back_whole() {
        // A message written now and then beside a busy one: its column writers (and their zstd
        // contexts) go while it waits, its rows stay.
        let columns = [Column::new("v", ColumnType::I64)];
        let encoder = Encoder::new().unwrap();
        let mut busy = Table::new(Vec::new(), &columns, vec![], &encoder).unwrap();
        let mut rare = Table::new(Vec::new(), &columns, vec![], &encoder).unwrap();
        let batch = busy.batch_rows;
        let fill = |table: &mut Table<Vec<u8>>, rows: usize| {
            for row in 0..rows {
                table.push_int(row as i64);
                table.end_row().unwrap();
            }
        };
        for _ in 0..3 {
            fill(&mut rare, batch);
            fill(&mut busy, batch * (IDLE_JOBS as usize + 1));
        }
        let row_groups = |bytes: Vec<u8>| {
            let reader =
                ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes)).unwrap();
            let groups = reader.metadata().num_row_groups();
            let rows: usize = reader.build().unwrap().map(|b| b.unwrap().num_rows()).sum();
            (groups, rows)
        };
        let (busy, rare) = (busy.finish().unwrap(), rare.finish().unwrap());
        assert_eq!(row_groups(rare), (3, 3 * batch));
        let rows = 3 * batch * (IDLE_JOBS as usize + 1);
        assert_eq!(row_groups(busy), (rows.div_ceil(ROW_GROUP_ROWS), rows));
    }

    #[test]
    fn a_write_error_is_returned_and_nothing_panics() {
        /// Accepts the file's first bytes, then fails.
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                if self.0 < buf.len() {
                    return Err(io::Error::new(io::ErrorKind::StorageFull, "full"));
                }
                self.0 -= buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let columns = [Column::new("v", ColumnType::I64)];
        let encoder = Encoder::new().unwrap();
        let mut table = Table::new(Full(100), &columns, vec![], &encoder).unwrap();
        let mut failed = None;
        for row in 0..(1 << 20) {
            table.push_int(row * 7919 % 1_000_003);
            if let Err(e) = table.end_row() {
                failed = Some(e);
                break;
            }
        }
        let error = match failed {
            Some(e) => e,
            None => table.finish().err().expect("a full disk fails the table"),
        };
        assert_eq!(error.kind(), io::ErrorKind::StorageFull);
    }
}
