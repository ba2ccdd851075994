//! How output meets the terminal: colour only on a terminal and never when `NO_COLOR` is set
//! (unless `--color` says otherwise), and `--quiet`, which leaves only what is wrong.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// When to colour output (`--color`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set.
    #[default]
    Auto,
    Always,
    Never,
}

static COLOR: AtomicU8 = AtomicU8::new(ColorChoice::Auto as u8);

/// Colour as `--color` asks.
pub fn set_color(choice: ColorChoice) {
    COLOR.store(choice as u8, Ordering::Relaxed);
}

/// Print only damage and errors: no progress bars, summaries or tables.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Whether `NO_COLOR` asks for no colour (set and not empty, as no-color.org defines it).
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Colours for one output stream: none unless it is a terminal and `NO_COLOR` is not set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paint {
    on: bool,
}

impl Paint {
    /// Colours for standard output.
    pub fn stdout() -> Paint {
        Paint::when(std::io::stdout().is_terminal())
    }

    /// Colours for standard error.
    pub fn stderr() -> Paint {
        Paint::when(std::io::stderr().is_terminal())
    }

    fn when(terminal: bool) -> Paint {
        let on = match COLOR.load(Ordering::Relaxed) {
            c if c == ColorChoice::Always as u8 => true,
            c if c == ColorChoice::Never as u8 => false,
            _ => terminal && !no_color(),
        };
        Paint { on }
    }

    fn wrap(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Damage and errors.
    pub fn bad(self, text: &str) -> String {
        self.wrap("1;31", text)
    }

    /// Values in doubt: suspect spans and verdicts.
    pub fn doubt(self, text: &str) -> String {
        self.wrap("33", text)
    }

    /// A clean verdict.
    pub fn good(self, text: &str) -> String {
        self.wrap("32", text)
    }

    /// What a line is about: a file name or location.
    pub fn strong(self, text: &str) -> String {
        self.wrap("1", text)
    }
}
