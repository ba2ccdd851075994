//! Input files: small ones read whole, large ones mapped. While a mapped file is worked on, the
//! pages away from where the work has reached are released, so resident memory stays bounded
//! whatever the file's size.

use super::Error;
use crate::blackbox::sink::{EventFrame, Frame, Sink};
use crate::dataflash;
use crate::periodic::{self, Blocks};
use crate::report::TextModeCopy;
use crate::textmode::{self, Conversion};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use memmap2::{Mmap, UncheckedAdvice};
use std::cell::Cell;
use std::io::{self, IsTerminal, Read};
use std::ops::Deref;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Files at least this large are mapped rather than read.
pub const MAP_FROM: u64 = 32 << 20;
/// Bytes kept resident on each side of the offset reached.
const WINDOW: usize = 4 << 20;
/// How often pages are released.
const TICK: Duration = Duration::from_millis(1);

/// The bytes of an input file.
pub enum Input {
    Read(Vec<u8>),
    Mapped(Mmap),
    /// The log as it was before a text-mode copy or a download changed it (see [`open`]).
    Restored(Vec<u8>, Restoration),
}

/// What was undone to read a file as the log it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restoration {
    pub text_mode_copy: Option<TextModeCopy>,
    pub insertions: Option<Blocks>,
}

impl Input {
    /// How the file was copied in text mode, when it is read restored.
    pub fn text_mode_copy(&self) -> Option<TextModeCopy> {
        match self {
            Input::Restored(_, restoration) => restoration.text_mode_copy,
            _ => None,
        }
    }

    /// What was undone to read the file, as lines to show a user (empty when nothing was).
    pub fn restored_note(&self) -> String {
        let mut note = String::new();
        if let Some(copy) = self.text_mode_copy() {
            note.push_str(&format!(
                "read as it was before a text-mode copy ({} bytes) turned every line feed into CR LF\n",
                copy.input_size
            ));
        }
        if let Some(blocks) = self.insertions() {
            note.push_str(&format!(
                "read without {} {}-byte blocks inserted every {} bytes\n",
                blocks.count, blocks.length, blocks.stride
            ));
        }
        note
    }

    /// The periodic insertions removed, when there were any.
    pub fn insertions(&self) -> Option<&Blocks> {
        match self {
            Input::Restored(_, restoration) => restoration.insertions.as_ref(),
            _ => None,
        }
    }
}

impl Deref for Input {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Input::Read(data) | Input::Restored(data, _) => data,
            Input::Mapped(map) => map,
        }
    }
}

/// How an input is named in reports and output: standard input as `<stdin>`.
pub fn name(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".into()
    } else {
        path.display().to_string()
    }
}

/// Open an input file as the log it holds; `-` is standard input. A Unix → Windows text-mode
/// copy, which lost nothing, is read as it was before the copy; blocks inserted at a fixed stride
/// (a download's chunk headers) are taken out when the log reads in step without them.
pub fn open(path: &Path) -> Result<Input, Error> {
    let input = open_raw(path)?;
    let mut restoration = Restoration::default();
    let mut restored = None;
    if textmode::is_crlf_copy(&input) {
        restoration.text_mode_copy = Some(TextModeCopy {
            conversion: Conversion::LfToCrLf,
            input_size: input.len() as u64,
        });
        restored = Some(textmode::restore_crlf(&input));
    }
    let log = restored.as_deref().unwrap_or(&input);
    if let Some((without, insertions)) = periodic::restore(log, corrupt_spans) {
        restoration.insertions = Some(insertions);
        restored = Some(without);
    }
    Ok(match restored {
        Some(data) => Input::Restored(data, restoration),
        None => input,
    })
}

/// The corrupt spans of `data` read as the log its content shows; all of it when it shows none
/// (taking bytes out must never make a log of it look better by losing its start).
fn corrupt_spans(data: &[u8]) -> Vec<(u64, u64)> {
    use crate::blackbox::{self, sink::Discard};
    let blackbox = blackbox::is_blackbox(data);
    let report =
        if dataflash::starts_as_dataflash(data) || !blackbox && dataflash::is_dataflash(data) {
            dataflash::check("", data).file
        } else if blackbox {
            blackbox::decode("", data, |_, _| {}, &mut Discard)
        } else {
            return vec![(0, data.len() as u64)];
        };
    report.corrupt_ranges()
}

/// Open an input file's bytes as they are; `-` is standard input (always read whole).
pub fn open_raw(path: &Path) -> Result<Input, Error> {
    if path == Path::new("-") {
        let mut data = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut data)
            .map_err(|e| Error::io(Path::new("<stdin>"), e))?;
        return Ok(Input::Read(data));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if size < MAP_FROM {
        let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        (&file)
            .read_to_end(&mut data)
            .map_err(|e| Error::io(path, e))?;
        return Ok(Input::Read(data));
    }
    // SAFETY: the map is read-only; bbcheck never writes its inputs. Another process truncating
    // the file while it is read is outside what any reader of a file can guard against.
    let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    Ok(Input::Mapped(map))
}

/// Run `work` on `input`, releasing the mapped pages more than [`WINDOW`] away from every offset
/// in `reached` (each updated by one thread of the work as it goes) while it runs, and showing the
/// furthest on `bar`. Work that does not say where it is leaves its offset at 0: pages released
/// under it are read again from the file.
pub fn bounded<T>(
    input: &Input,
    reached: &[AtomicU64],
    bar: &ProgressBar,
    work: impl FnOnce() -> T,
) -> T {
    let map = match input {
        Input::Mapped(map) => Some(map),
        Input::Read(_) | Input::Restored(..) => None,
    };
    if map.is_none() && bar.is_hidden() {
        return work();
    }
    // Drawn at once, so that even short work shows where it stands.
    bar.tick();
    let done = AtomicBool::new(false);
    let result = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut at = Vec::with_capacity(reached.len());
            for tick in 1u64.. {
                if done.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(TICK);
                at.clear();
                at.extend(reached.iter().map(|r| r.load(Ordering::Relaxed)));
                if let Some(map) = map {
                    release_outside(map, &mut at);
                }
                if tick % 100 == 0 {
                    bar.set_position(at.iter().copied().max().unwrap_or(0));
                }
            }
        });
        // Stops the ticker when the work ends, also by a panic (else the scope would wait for
        // it forever).
        let _stop = Stop(&done);
        let working = map.map(|map| Working(WORKING_MAP.with(|m| m.replace(map))));
        let result = work();
        drop(working);
        result
    });
    bar.finish_and_clear();
    result
}

/// Sets its flag when dropped.
struct Stop<'a>(&'a AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A progress bar over `total` bytes on standard error, only when it is a terminal and output is
/// not `--quiet`.
pub fn progress_bar(total: u64) -> ProgressBar {
    if !io::stderr().is_terminal() || super::terminal::quiet() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec}, {eta} left")
    {
        bar.set_style(style);
    }
    bar
}

/// Drop the pages of `map` outside [`WINDOW`] on either side of each offset in `reached` from
/// memory.
fn release_outside(map: &Mmap, reached: &mut [u64]) {
    reached.sort_unstable();
    let mut from = 0;
    for &at in reached.iter() {
        let at = usize::try_from(at).unwrap_or(usize::MAX).min(map.len());
        let low = at.saturating_sub(WINDOW).max(from);
        // SAFETY: the map is a shared, read-only file mapping: dropping its pages only makes the
        // next access read them again from the file, so every borrow of the bytes stays valid.
        // Failure only means the pages stay resident.
        unsafe {
            let _ = map.unchecked_advise_range(UncheckedAdvice::DontNeed, from, low - from);
        }
        from = from.max(at.saturating_add(WINDOW).min(map.len()));
    }
    // SAFETY: as above.
    unsafe {
        let _ = map.unchecked_advise_range(UncheckedAdvice::DontNeed, from, map.len() - from);
    }
}

/// A sink that notes the offset decoding has reached (for [`bounded`] and progress bars) and
/// passes everything on to `inner`.
pub struct Reached<'a, S> {
    pub inner: S,
    pub reached: &'a AtomicU64,
}

impl<S: Sink> Sink for Reached<'_, S> {
    fn frame(&mut self, frame: &Frame<'_>) {
        self.reached.store(frame.offset, Ordering::Relaxed);
        self.inner.frame(frame);
    }
    fn event(&mut self, event: &EventFrame<'_>) {
        self.reached.store(event.offset, Ordering::Relaxed);
        self.inner.event(event);
    }
    fn searched(&mut self, offset: usize) {
        release_searched(offset);
        self.inner.searched(offset);
    }
    fn started(&mut self, range: Range<usize>) {
        self.inner.started(range);
    }
    fn decoded(&mut self, report: &crate::report::SessionReport) {
        self.inner.decoded(report);
    }
}

/// A sink that counts the bytes its thread has decoded, for progress bars: where a session is
/// split between threads, the offset a thread has reached is not the work it has done.
pub struct Progress<'a, S> {
    pub inner: S,
    done: &'a AtomicU64,
    /// Bytes of the pieces decoded before the current one.
    before: u64,
    /// Where the current piece started and ends (it may decode further, into the next piece's
    /// bytes), and the last frame in it.
    start: u64,
    end: u64,
    last: u64,
}

impl<'a, S> Progress<'a, S> {
    pub fn new(inner: S, done: &'a AtomicU64) -> Self {
        Progress {
            inner,
            done,
            before: 0,
            start: 0,
            end: u64::MAX,
            last: 0,
        }
    }

    fn reach(&mut self, offset: u64) {
        self.last = offset.clamp(self.start, self.end);
        self.done
            .store(self.before + (self.last - self.start), Ordering::Relaxed);
    }
}

impl<S: Sink> Sink for Progress<'_, S> {
    fn frame(&mut self, frame: &Frame<'_>) {
        self.reach(frame.offset);
        self.inner.frame(frame);
    }
    fn event(&mut self, event: &EventFrame<'_>) {
        self.reach(event.offset);
        self.inner.event(event);
    }
    fn searched(&mut self, offset: usize) {
        self.inner.searched(offset);
    }
    fn started(&mut self, range: Range<usize>) {
        self.before += self.last - self.start;
        (self.start, self.end) = (range.start as u64, range.end as u64);
        self.last = self.start;
        self.inner.started(range);
    }
    fn decoded(&mut self, report: &crate::report::SessionReport) {
        self.inner.decoded(report);
    }
}

impl<S: dataflash::Sink> dataflash::Sink for Progress<'_, S> {
    fn message(&mut self, message: &dataflash::Message<'_>) {
        self.reach(message.offset);
        self.inner.message(message);
    }
    fn session(&mut self, offset: u64) {
        self.inner.session(offset);
    }
}

thread_local! {
    /// The mapped file [`bounded`] runs work on, on the thread that runs it (null otherwise).
    static WORKING_MAP: Cell<*const Mmap> = const { Cell::new(std::ptr::null()) };
}

/// Puts back the [`WORKING_MAP`] it replaced (that of an enclosing [`bounded`], or null) when the
/// work ends, panicking or not.
struct Working(*const Mmap);

impl Drop for Working {
    fn drop(&mut self) {
        WORKING_MAP.with(|m| m.set(self.0));
    }
}

/// The work searched the mapped file up to `offset`: release the pages behind it now. A search
/// runs at memory speed, far ahead of [`bounded`]'s releasing thread, which would leave the whole
/// file resident for a moment.
pub fn release_searched(offset: usize) {
    WORKING_MAP.with(|m| {
        let map = m.get();
        if !map.is_null() {
            // SAFETY: set only by `bounded`, on this thread, for as long as it borrows the map
            // and runs the work that calls this; cleared before it returns.
            let map = unsafe { &*map };
            release_outside(map, &mut [offset as u64]);
        }
    });
}

/// The files the paths name, each with whether it was found by walking a directory (a file found
/// that holds no log is skipped, not an error): directories are walked recursively in name order.
pub fn walk(paths: &[PathBuf]) -> Result<Vec<(PathBuf, bool)>, Error> {
    fn walk_dir(dir: &Path, out: &mut Vec<(PathBuf, bool)>) -> Result<(), Error> {
        let mut entries = std::fs::read_dir(dir)
            .and_then(|entries| {
                entries
                    .map(|e| e.map(|e| e.path()))
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(|e| Error::io(dir, e))?;
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk_dir(&path, out)?;
            } else if path.is_file() {
                out.push((path, true));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk_dir(path, &mut out)?;
        } else {
            out.push((path.clone(), false));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackbox::{self, sink::Discard};
    use crate::testkit::blackbox::{FlightSpec, Layout, flight};

    #[test]
    fn a_session_split_between_threads_counts_the_bytes_each_decoded() {
        // Long enough for the later piece to learn a field's held steps over two windows
        // before the pieces meet.
        let spec = FlightSpec {
            iterations: 200_000,
            ..FlightSpec::new(Layout::Betaflight4)
        };
        let data = flight(&spec);
        let sessions = blackbox::sessions(&data);
        let [session] = &sessions[..] else {
            panic!("one session")
        };
        let frames = session.bounds.end as u64 - session.header.data_start;
        let done = [AtomicU64::new(0), AtomicU64::new(0)];
        let reached = [AtomicU64::new(0), AtomicU64::new(0)];
        let (_, splits) = blackbox::decode_in_pieces("log", &data, 2, data.len() / 3, |w| {
            let reached = Reached {
                inner: Discard,
                reached: &reached[w],
            };
            Progress::new(reached, &done[w])
        });
        assert_eq!((splits.pieces, splits.joined), (1, 1));
        // The later piece started half-way: its offset is there, but it decoded only its half.
        let total: u64 = done.iter().map(|d| d.load(Ordering::Relaxed)).sum();
        assert!(total <= frames, "{total} of {frames} bytes");
        assert!(total >= frames - frames / 100, "{total} of {frames} bytes");
        for (d, r) in done.iter().zip(&reached) {
            assert!(d.load(Ordering::Relaxed) < frames * 3 / 4);
            assert!(r.load(Ordering::Relaxed) > data.len() as u64 / 3);
        }
    }
}
