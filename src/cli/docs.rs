//! `bbcheck completions` and `bbcheck man`: shell completion scripts and manual pages, generated
//! from the command-line definition so they never drift from it.

use super::output::AtomicFile;
use super::{Cli, EXIT_CLEAN, Error, environment_text, exit_status_text};
use clap::CommandFactory;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write `bbcheck.1` and one page per subcommand (`bbcheck-check.1` …) into this directory,
    /// instead of printing `bbcheck.1` on standard output.
    #[arg(long, short = 'o')]
    output_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct HelpArgs {
    /// The command to describe (all of bbcheck when none).
    command: Option<String>,
}

/// Print the help of bbcheck, or of `args.command`.
pub fn help(args: &HelpArgs) -> Result<u8, Error> {
    let mut cli = Cli::command();
    cli.build();
    let text = match &args.command {
        None => cli.render_long_help(),
        Some(name) => match cli.find_subcommand_mut(name) {
            Some(command) => command.render_long_help(),
            None => {
                return Err(Error::Usage(format!(
                    "no command named {name}: see bbcheck help"
                )));
            }
        },
    };
    io::stdout()
        .write_all(text.to_string().as_bytes())
        .map_err(|e| Error::io(Path::new("<stdout>"), e))?;
    Ok(EXIT_CLEAN)
}

/// Print the completion script for a shell.
pub fn completions(args: &CompletionsArgs) -> Result<u8, Error> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "bbcheck", &mut script);
    io::stdout()
        .write_all(&script)
        .map_err(|e| Error::io(Path::new("<stdout>"), e))?;
    Ok(EXIT_CLEAN)
}

/// Print the main manual page, or write every page into a directory.
pub fn man(args: &ManArgs) -> Result<u8, Error> {
    let command = Cli::command();
    let Some(dir) = &args.output_dir else {
        let mut page = Vec::new();
        render(&command, true, &mut page).map_err(|e| Error::io(Path::new("<stdout>"), e))?;
        io::stdout()
            .write_all(&page)
            .map_err(|e| Error::io(Path::new("<stdout>"), e))?;
        return Ok(EXIT_CLEAN);
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut pages = vec![("bbcheck".to_owned(), command.clone(), true)];
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("bbcheck-{}", sub.get_name());
        // Each page is titled and cross-referenced by its full name.
        let page = sub
            .clone()
            .display_name(name.clone())
            .bin_name(format!("bbcheck {}", sub.get_name()));
        pages.push((name, page, false));
    }
    for (name, page, main) in pages {
        let path = dir.join(format!("{name}.1"));
        let mut file = AtomicFile::create(&path)?;
        render(&page, main, file.writer()).map_err(|e| Error::io(&path, e))?;
        file.commit()?;
    }
    Ok(EXIT_CLEAN)
}

/// Write a manual page; the main page also explains exit codes and the environment.
fn render(command: &clap::Command, main: bool, out: &mut dyn Write) -> io::Result<()> {
    let man = clap_mangen::Man::new(command.clone())
        .source(concat!("bbcheck ", env!("CARGO_PKG_VERSION")));
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    if command.has_subcommands() {
        man.render_subcommands_section(out)?;
    }
    if main {
        writeln!(out, ".SH \"EXIT STATUS\"\n{}", exit_status_text!())?;
        writeln!(
            out,
            ".SH ENVIRONMENT\n.TP\nNO_COLOR\n{}",
            environment_text!()
        )?;
        man.render_version_section(out)?;
    }
    Ok(())
}
