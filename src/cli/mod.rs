//! The `bbcheck` command line: argument parsing, one module per subcommand, exit codes.
//!
//! Exit codes: `check` exits 0 when every file is clean, 1 when damage was found; the commands that
//! produce output (`export`, `salvage`, `info`) exit 0 once it is written, damaged input or not,
//! unless `--fail-on-damage` asks for 1 on damage. 2 when a file could not be read or the arguments
//! are wrong.

pub mod calls;
pub mod check;
pub mod checked;
mod damage;
mod docs;
pub mod export;
mod hexdump;
mod html;
mod info;
mod input;
mod library;
mod output;
pub mod salvage;
mod terminal;
mod timeline;

use clap::{Parser, Subcommand};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Exit code: every file is clean.
pub const EXIT_CLEAN: u8 = 0;
/// Exit code: damage was found.
pub const EXIT_DAMAGED: u8 = 1;
/// Exit code: a file could not be read, or the arguments are wrong.
pub const EXIT_ERROR: u8 = 2;

/// The exit code of a command that produces output, once the output is written: 0, or 1 for a
/// damaged input when `fail_on_damage` asks for it.
fn exit_once_written(damaged: bool, fail_on_damage: bool) -> u8 {
    if damaged && fail_on_damage {
        EXIT_DAMAGED
    } else {
        EXIT_CLEAN
    }
}

/// What the exit codes mean, for `--help` and the manual page.
macro_rules! exit_status_text {
    () => {
        "check: 0 when every file is clean or only suspect, 1 when damage was found. export, \
         salvage, info: 0 once their output is written, damaged input or not (1 on damage with \
         --fail-on-damage). 2 when a file could not be read or the arguments are wrong, 130 when \
         interrupted (outputs being written are removed first)."
    };
}

/// What the environment changes, for `--help` and the manual page.
macro_rules! environment_text {
    () => {
        "Colour is used only on a terminal, and never when NO_COLOR is set, unless --color always or \
         never says otherwise."
    };
}
use {environment_text, exit_status_text};

/// Diagnose, salvage and export damaged flight logs.
#[derive(Debug, Parser)]
#[command(
    name = "bbcheck",
    version,
    about,
    disable_help_subcommand = true,
    after_help = concat!("Exit status: ", exit_status_text!(), "\n", environment_text!())
)]
pub struct Cli {
    /// Print only what is wrong: damage and errors (no progress bars, summaries or tables).
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
    /// When to colour the output: `auto` on a terminal unless NO_COLOR is set.
    #[arg(long, value_enum, global = true, default_value_t, value_name = "WHEN")]
    color: terminal::ColorChoice,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Report, per file and session, what decodes and which byte ranges are damaged.
    Check(check::Args),
    /// Write the decoded frames as JSON Lines (to standard output) or CSV files.
    Export(export::Args),
    /// Write the trusted frames of a (damaged) log as a clean log every decoder reads.
    Salvage(salvage::Args),
    /// Describe a log: firmware, board, craft, PID and rate settings, duration.
    Info(info::Args),
    /// Write a damaged copy of a log and a JSON sidecar with every change made.
    Damage(damage::Args),
    /// Add the format sets of DataFlash logs to a format library (as salvage lends from).
    Library(library::Args),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(docs::CompletionsArgs),
    /// Print the manual page, or write every page into a directory.
    Man(docs::ManArgs),
    /// Print the help of bbcheck or of one of its commands.
    Help(docs::HelpArgs),
}

/// A failure that stops work on a file.
#[derive(Debug)]
pub enum Error {
    /// The file could not be read or written.
    Io { path: PathBuf, source: io::Error },
    /// The file holds no log of a known format.
    NotALog { path: PathBuf, size: u64 },
    /// Format detection found neither a Blackbox nor a DataFlash log.
    UnknownFormat { path: PathBuf, size: u64 },
    /// Blackbox frame data without its header: the start of the log is lost (a damaged log, not
    /// an error: exit code 1).
    Headless {
        path: PathBuf,
        size: u64,
        /// The firmware whose layout, from bbcheck's header library, reads the data, if one does.
        fits: Option<String>,
    },
    /// Blackbox frame data without its header, and no header of the library fits it (a damaged
    /// log: exit code 1).
    NoHeaderFits { path: PathBuf, why: String },
    /// The arguments ask for something that cannot be done.
    Usage(String),
    /// Standard output was closed by the reader (not an error for the user).
    BrokenPipe,
}

impl Error {
    /// Inputs in which no file holds a log: empty directories, or files that are not logs
    /// (`skipped`), alike.
    pub fn no_log(inputs: &[PathBuf], skipped: usize) -> Error {
        let named: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
        let why = match skipped {
            0 => "no file".to_owned(),
            1 => "1 file, not a log".to_owned(),
            n => format!("{n} files, none a log"),
        };
        Error::Usage(format!("{}: no log found ({why})", named.join(", ")))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {source}", input::name(path)),
            Error::NotALog { path, size } => write!(
                f,
                "{}: offset 0: not a Blackbox log (no log start marker in {size} bytes)",
                input::name(path)
            ),
            Error::Headless { path, size, fits } => {
                let name = input::name(path);
                write!(
                    f,
                    "{name}: offset 0: Blackbox frame data without its header ({size} bytes, no \
                     log start marker): the start of the log is lost. "
                )?;
                match fits {
                    Some(firmware) => write!(
                        f,
                        "The layout of {firmware}, from bbcheck's header library, reads it: \
                         `bbcheck salvage {name} -o OUT` writes it with that header"
                    ),
                    None => write!(
                        f,
                        "No layout of bbcheck's header library reads it: `bbcheck salvage {name} \
                         -o OUT --header-from DONOR` reads it with the header of another log of \
                         the same flight controller and settings"
                    ),
                }
            }
            Error::NoHeaderFits { path, why } => write!(
                f,
                "{}: offset 0: Blackbox frame data without its header: {why}; nothing written. \
                 `--header-from DONOR` reads it with the header of another log of the same \
                 flight controller and settings",
                input::name(path)
            ),
            Error::UnknownFormat { path, size } => write!(
                f,
                "{}: offset 0: not a Blackbox log (no log start marker) nor a DataFlash log \
                 (no FMT message) in {size} bytes",
                input::name(path)
            ),
            Error::Usage(message) => write!(f, "{message}"),
            Error::BrokenPipe => write!(f, "broken pipe"),
        }
    }
}

impl Error {
    /// The exit code of a command that stopped on this error: 1 for a log whose header is lost
    /// (damage), 2 for the others.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Headless { .. } | Error::NoHeaderFits { .. } => EXIT_DAMAGED,
            _ => EXIT_ERROR,
        }
    }

    /// The error for Blackbox frame data without a header, `data`, saying whether a header of the
    /// library reads it.
    fn headless(path: PathBuf, data: &[u8]) -> Error {
        let library = crate::blackbox::library::HeaderLibrary::builtin();
        Error::Headless {
            path,
            size: data.len() as u64,
            fits: library.choose(data).map(|c| c.firmware),
        }
    }

    /// The error for a file read as Blackbox that holds no log start marker.
    fn not_a_blackbox_log(path: &Path, data: &[u8]) -> Error {
        let (path, size) = (path.to_owned(), data.len() as u64);
        if crate::blackbox::is_headless_frame_data(data) {
            Error::headless(path, data)
        } else {
            Error::NotALog { path, size }
        }
    }

    fn io(path: &Path, source: io::Error) -> Error {
        if source.kind() == io::ErrorKind::BrokenPipe {
            Error::BrokenPipe
        } else {
            Error::Io {
                path: path.to_owned(),
                source,
            }
        }
    }
}

/// Tell the user on standard error why work on a file stopped.
fn report_error(error: &Error) {
    let paint = terminal::Paint::stderr();
    eprintln!("{} {error}", paint.bad("bbcheck:"));
}

/// Which decoder reads a file (`--format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Decide from the content: a file starting with a DataFlash FMT header is DataFlash, one
    /// holding the Blackbox log start marker is Blackbox, one holding a consistent FMT message
    /// anywhere is DataFlash.
    #[default]
    Auto,
    /// Betaflight / INAV / Cleanflight Blackbox.
    Blackbox,
    /// ArduPilot DataFlash (`.bin`).
    Dataflash,
}

/// The format a file is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detected {
    Blackbox,
    Dataflash,
}

/// Decide how to read `data`: as `choice` says, or from its content.
fn detect(path: &Path, data: &[u8], choice: LogFormat) -> Result<Detected, Error> {
    use crate::{blackbox, dataflash};
    match choice {
        LogFormat::Blackbox => Ok(Detected::Blackbox),
        LogFormat::Dataflash => Ok(Detected::Dataflash),
        LogFormat::Auto if dataflash::starts_as_dataflash(data) => Ok(Detected::Dataflash),
        LogFormat::Auto if blackbox::is_blackbox(data) => Ok(Detected::Blackbox),
        LogFormat::Auto if dataflash::is_dataflash(data) => Ok(Detected::Dataflash),
        LogFormat::Auto if blackbox::is_headless_frame_data(data) => {
            Err(Error::headless(path.to_owned(), data))
        }
        LogFormat::Auto => Err(Error::UnknownFormat {
            path: path.to_owned(),
            size: data.len() as u64,
        }),
    }
}

/// Parse the arguments, run the command and return the exit code.
pub fn main() -> u8 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                EXIT_ERROR
            } else {
                EXIT_CLEAN
            };
            let _ = e.print();
            return code;
        }
    };
    terminal::set_quiet(cli.quiet);
    terminal::set_color(cli.color);
    output::clean_up_on_interrupt();
    let result = match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Salvage(args) => salvage::run(&args),
        Command::Info(args) => info::run(&args),
        Command::Damage(args) => damage::run(&args),
        Command::Library(args) => library::run(&args),
        Command::Completions(args) => docs::completions(&args),
        Command::Man(args) => docs::man(&args),
        Command::Help(args) => docs::help(&args),
    };
    match result {
        Ok(code) => code,
        Err(Error::BrokenPipe) => EXIT_CLEAN,
        Err(e) => {
            report_error(&e);
            e.exit_code()
        }
    }
}
