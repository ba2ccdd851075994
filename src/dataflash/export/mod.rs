//! What a DataFlash log is exported as: CSV per message type ([`csv`]), JSON Lines
//! ([`jsonl`]), Parquet per message type ([`parquet`]) and an MCAP recording ([`mcap`]).

pub mod csv;
pub mod jsonl;
pub mod mcap;
pub mod parquet;

use crate::dataflash::fmt::Format;

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
