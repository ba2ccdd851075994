//! A library of ArduPilot format definitions, by firmware build, for logs that lost the FMT of a
//! type and have no donor log to borrow it from (`salvage`, `--fmt-from auto`).
//!
//! A firmware build writes the same FMT set in every log. The library holds the sets of the
//! builds it was made from ([`LIBRARY`], written by `bbcheck library`), one definition a line:
//!
//! ```text
//! firmware ArduCopter V3.6.7 (38b8af17)
//! 128 89 FMT BBnNZ Type,Length,Name,Format,Columns
//! ```
//!
//! A type without FMT gets a definition when its headers' spacing shows the same length as the
//! definition of its type byte: the log's own build's when the library has it, otherwise the
//! one every build in the library that defines that type byte at that length agrees on. Builds
//! that disagree leave the type undefined.

use super::fmt::{Definition, Format, Formats};
use super::reader::UndefinedType;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The library shipped with bbcheck.
pub const LIBRARY: &str = include_str!("formats.txt");

/// One definition as the library keeps it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub type_id: u8,
    /// The message length, header included.
    pub length: u8,
    pub name: String,
    pub format: String,
    pub columns: String,
}

impl Entry {
    /// The format this entry defines.
    fn format(&self) -> Option<Format> {
        let definition = Definition {
            type_value: i128::from(self.type_id),
            length: i128::from(self.length),
            name: self.name.as_bytes(),
            format: self.format.as_bytes(),
            columns: self.columns.as_bytes(),
        };
        match Format::define(&definition, None) {
            Ok((format, None)) => Some(format),
            _ => None,
        }
    }

    /// The entry for a format read from a log, when it can be written on one line.
    fn of(format: &Format) -> Option<Entry> {
        let entry = Entry {
            type_id: format.type_id,
            length: u8::try_from(format.declared_length).ok()?,
            name: format.name.clone(),
            format: format.format.clone(),
            columns: format.columns.join(","),
        };
        let plain = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic());
        let columns_plain = entry.columns.is_empty() || plain(&entry.columns);
        (plain(&entry.name) && plain(&entry.format) && columns_plain && entry.format().is_some())
            .then_some(entry)
    }
}

/// Format sets by firmware build (the text of the log's first MSG, as `check` reports it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Library {
    pub builds: BTreeMap<String, Vec<Entry>>,
}

/// Where a borrowed definition came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The log's own firmware build.
    SameBuild,
    /// Other builds, which all define the type byte so at that length.
    Agreeing(Vec<String>),
}

/// What the library gives a log: definitions for some of its types without FMT, and the types
/// it cannot define.
#[derive(Debug, Clone)]
pub struct Lent {
    pub formats: Formats,
    /// Each type defined: its name and where the definition came from.
    pub defined: Vec<(String, Source)>,
    /// Types the library has no definition for at the length their headers show, or
    /// disagreeing ones.
    pub undefined: Vec<u8>,
}

impl Library {
    /// The library shipped with bbcheck.
    pub fn builtin() -> Library {
        Library::parse(LIBRARY)
    }

    /// Read a library's text; lines it cannot read are left out.
    pub fn parse(text: &str) -> Library {
        let mut library = Library::default();
        let mut build: Option<&mut Vec<Entry>> = None;
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("firmware ") {
                build = Some(library.builds.entry(name.to_owned()).or_default());
                continue;
            }
            let mut words = line.split(' ');
            let (Some(t), Some(l), Some(name), Some(format)) =
                (words.next(), words.next(), words.next(), words.next())
            else {
                continue;
            };
            let (Ok(type_id), Ok(length)) = (t.parse(), l.parse()) else {
                continue;
            };
            let entry = Entry {
                type_id,
                length,
                name: name.to_owned(),
                format: format.to_owned(),
                columns: words.next().unwrap_or_default().to_owned(),
            };
            if let Some(entries) = build.as_deref_mut()
                && entry.format().is_some()
            {
                entries.push(entry);
            }
        }
        library
    }

    /// The library's text, builds and definitions in order.
    pub fn text(&self) -> String {
        let mut text = String::from(
            "# ArduPilot format definitions by firmware build, written by `bbcheck library`.\n",
        );
        for (build, entries) in &self.builds {
            let _ = writeln!(text, "firmware {build}");
            for e in entries {
                let _ = writeln!(
                    text,
                    "{} {} {} {} {}",
                    e.type_id, e.length, e.name, e.format, e.columns
                );
            }
        }
        text
    }

    /// Add (or replace) the set of `build`, from a log's format table.
    pub fn add(&mut self, build: &str, formats: &Formats) {
        let mut entries: Vec<Entry> = formats.iter().filter_map(Entry::of).collect();
        entries.sort();
        self.builds.insert(build.to_owned(), entries);
    }

    /// Definitions for the types of a log (of firmware `build`) that have no FMT, each at the
    /// length its headers show.
    pub fn lend(&self, build: Option<&str>, undefined: &[UndefinedType]) -> Lent {
        let mut lent = Lent {
            formats: Formats::new(),
            defined: Vec::new(),
            undefined: Vec::new(),
        };
        for u in undefined {
            let fits = |e: &&Entry| e.type_id == u.type_id && usize::from(e.length) == u.length;
            let own = build
                .and_then(|b| self.builds.get(b))
                .and_then(|entries| entries.iter().find(fits));
            let chosen = match own {
                Some(entry) => Some((entry, Source::SameBuild)),
                None => {
                    let mut candidates = self
                        .builds
                        .iter()
                        .flat_map(|(b, entries)| entries.iter().filter(fits).map(move |e| (b, e)));
                    candidates.next().and_then(|(b, first)| {
                        let mut builds = vec![b.clone()];
                        for (b, e) in candidates {
                            if e != first {
                                return None;
                            }
                            builds.push(b.clone());
                        }
                        Some((first, Source::Agreeing(builds)))
                    })
                }
            };
            match chosen.and_then(|(e, source)| Some((e.format()?, source))) {
                Some((format, source)) => {
                    lent.defined.push((format.name.clone(), source));
                    lent.formats.install(format);
                }
                None => lent.undefined.push(u.type_id),
            }
        }
        lent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn undefined(type_id: u8, length: usize) -> UndefinedType {
        UndefinedType {
            type_id,
            first: 0,
            length,
            messages: 100,
        }
    }

    const TEXT: &str = "# a library\n\
        firmware ArduCopter V1 (aa)\n\
        200 12 TST QB TimeUS,Value\n\
        201 7 ONE I Value\n\
        firmware ArduCopter V2 (bb)\n\
        200 12 TST QB TimeUS,Value\n\
        201 7 TWO f Value\n\
        bad line\n";

    #[test]
    fn the_text_reads_back_as_written() {
        let library = Library::parse(TEXT);
        assert_eq!(library.builds.len(), 2);
        assert_eq!(library.builds["ArduCopter V1 (aa)"].len(), 2);
        assert_eq!(Library::parse(&library.text()), library);
    }

    #[test]
    fn the_own_build_is_taken_else_only_what_every_build_agrees_on() {
        let library = Library::parse(TEXT);
        let types = [undefined(200, 12), undefined(201, 7), undefined(202, 9)];
        let own = library.lend(Some("ArduCopter V2 (bb)"), &types);
        assert_eq!(own.formats.get(201).unwrap().name, "TWO");
        assert_eq!(own.defined[1], ("TWO".to_owned(), Source::SameBuild));
        assert_eq!(own.undefined, [202]);
        let other = library.lend(Some("ArduCopter V3 (cc)"), &types);
        assert_eq!(other.formats.get(200).unwrap().columns, ["TimeUS", "Value"]);
        let both = vec![
            "ArduCopter V1 (aa)".to_owned(),
            "ArduCopter V2 (bb)".to_owned(),
        ];
        assert_eq!(other.defined, [("TST".to_owned(), Source::Agreeing(both))]);
        // V1 and V2 disagree on type 201; nothing defines 202.
        assert_eq!(other.undefined, [201, 202]);
        // A length the headers do not show is no match.
        assert_eq!(library.lend(None, &[undefined(200, 13)]).undefined, [200]);
    }
}
