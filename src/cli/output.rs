//! Output files that appear whole or not at all: written to a temporary file in the target
//! directory, renamed into place on commit, removed if dropped uncommitted or if the process is
//! interrupted.

use super::Error;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Bytes an output file gathers before each write to the system: output comes in rows of a few
/// hundred bytes, and every write costs a system call. A write of at least this many bytes goes
/// to the system without being copied.
pub const WRITE_BUFFER: usize = 1 << 20;

/// The exit code after an interruption (Ctrl-C, SIGTERM or SIGHUP), as shells report SIGINT.
pub const EXIT_INTERRUPTED: i32 = 130;

/// Temporary files not yet moved into place or removed. Creating, committing and removing one
/// hold the lock, so an interruption sees each file either pending or done.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn pending() -> MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// On an interruption, remove every temporary output file and exit with [`EXIT_INTERRUPTED`]:
/// no partial file is left behind, and no output file appears.
pub fn clean_up_on_interrupt() {
    // Without a handler (one is already set) the default action stands: the process ends.
    let _ = ctrlc::set_handler(|| {
        // The lock is held to the exit: no file is created or committed meanwhile.
        let pending = pending();
        for temp in pending.iter() {
            let _ = std::fs::remove_file(temp);
        }
        std::process::exit(EXIT_INTERRUPTED);
    });
}

/// Create the temporary file `temp`, registered for removal on an interruption.
fn create_pending(temp: &Path) -> io::Result<File> {
    let mut pending = pending();
    let file = File::create(temp)?;
    pending.push(temp.to_owned());
    Ok(file)
}

/// Move the temporary file `temp` to `path`, or remove it: either way it is no longer pending.
fn settle(temp: &Path, path: Option<&Path>) -> io::Result<()> {
    let mut pending = pending();
    pending.retain(|p| p != temp);
    match path {
        Some(path) => std::fs::rename(temp, path),
        None => std::fs::remove_file(temp),
    }
}

/// A file being written; it replaces `path` only when [`AtomicFile::commit`] is called.
pub struct AtomicFile {
    path: PathBuf,
    temp: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Start writing `path`, gathering [`WRITE_BUFFER`] bytes before each write.
    pub fn create(path: &Path) -> Result<AtomicFile, Error> {
        AtomicFile::with_buffer(path, WRITE_BUFFER)
    }

    /// Start writing `path`, gathering `buffer` bytes before each write (less than
    /// [`WRITE_BUFFER`] for writers that gather their own, many at a time).
    pub fn with_buffer(path: &Path, buffer: usize) -> Result<AtomicFile, Error> {
        let name = path
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        let temp = path.with_file_name(format!(".{name}.{}.partial", std::process::id()));
        let file = create_pending(&temp).map_err(|e| Error::io(&temp, e))?;
        Ok(AtomicFile {
            path: path.to_owned(),
            temp,
            writer: Some(BufWriter::with_capacity(buffer, file)),
        })
    }

    /// The writer.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer.as_mut().expect("not yet committed")
    }

    /// The path the file will have once committed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where it is written until then (removed if it is never committed).
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// Flush, sync and move the file into place.
    pub fn commit(self) -> Result<(), Error> {
        self.close()?.commit()
    }

    /// Flush, sync and close the file, leaving it to be moved into place by
    /// [`ClosedFile::commit`] (so that many finished files need no open descriptors).
    pub fn close(mut self) -> Result<ClosedFile, Error> {
        let writer = self.writer.take().expect("closed once");
        // The closed file owns the temporary file from here: it is removed on any error below.
        let closed = ClosedFile {
            path: self.path.clone(),
            temp: self.temp.clone(),
            committed: false,
        };
        let file = writer
            .into_inner()
            .map_err(|e| Error::io(&self.temp, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&self.temp, e))?;
        drop(file);
        Ok(closed)
    }
}

/// A complete file, closed, that replaces its path on [`ClosedFile::commit`] and is removed if
/// dropped uncommitted.
pub struct ClosedFile {
    path: PathBuf,
    temp: PathBuf,
    committed: bool,
}

impl ClosedFile {
    /// Move the file into place.
    pub fn commit(mut self) -> Result<(), Error> {
        let moved = settle(&self.temp, Some(&self.path));
        // Not pending any more: on failure the drop removes what is left.
        self.committed = moved.is_ok();
        moved.map_err(|e| Error::io(&self.path, e))
    }
}

impl Drop for ClosedFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = settle(&self.temp, None);
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

impl std::io::Seek for AtomicFile {
    fn seek(&mut self, to: std::io::SeekFrom) -> io::Result<u64> {
        self.writer().seek(to)
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = settle(&self.temp, None);
        }
    }
}
