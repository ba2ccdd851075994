//! Output files that appear whole or not at all: written to a temporary file in the target
//! directory, renamed into place on commit, removed if dropped uncommitted.

use super::Error;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file being written; it replaces `path` only when [`AtomicFile::commit`] is called.
pub struct AtomicFile {
    path: PathBuf,
    temp: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Start writing `path`.
    pub fn create(path: &Path) -> Result<AtomicFile, Error> {
        let name = path
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        let temp = path.with_file_name(format!(".{name}.{}.partial", std::process::id()));
        let file = File::create(&temp).map_err(|e| Error::io(&temp, e))?;
        Ok(AtomicFile {
            path: path.to_owned(),
            temp,
            writer: Some(BufWriter::new(file)),
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
        std::fs::rename(&self.temp, &self.path).map_err(|e| Error::io(&self.path, e))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for ClosedFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
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

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}
