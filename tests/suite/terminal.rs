//! Terminal conventions: colour only on a terminal and never with `NO_COLOR`, `--quiet`, errors on
//! standard error, a closed pipe is not an error; completions and manual pages from the CLI.

use crate::common;

use common::{TempDir, bbcheck};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn demo() -> PathBuf {
    common::own_corpus().join("generated/demo.bbl")
}

fn damaged() -> PathBuf {
    common::own_corpus().join("damaged/betaflight3-p1of4.drop-bytes.1.bbl")
}

/// Run `bbcheck args` with its output on a pseudo-terminal (util-linux `script`), returning what
/// the terminal showed.
fn on_terminal(args: &[&str], no_color: Option<&str>) -> String {
    let mut command = env!("CARGO_BIN_EXE_bbcheck").to_string();
    for a in args {
        command.push_str(&format!(" '{a}'"));
    }
    let mut script = Command::new("script");
    script.args(["-qec", &command, "/dev/null"]);
    script.env_remove("NO_COLOR");
    if let Some(v) = no_color {
        script.env("NO_COLOR", v);
    }
    let out = script.output().expect("util-linux script runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const ESCAPE: char = '\x1b';

/// Whether `text` holds a colour or emphasis escape (SGR: `ESC [ digits;… m`); a progress bar's
/// cursor movements are not colour.
fn has_colour(text: &str) -> bool {
    text.split(ESCAPE).skip(1).any(|rest| {
        rest.strip_prefix('[').is_some_and(|codes| {
            let end = codes.find(|c: char| !c.is_ascii_digit() && c != ';');
            end.is_some_and(|e| e > 0 && codes[e..].starts_with('m'))
        })
    })
}

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let damaged = damaged();
    let args = ["check", damaged.to_str().unwrap()];
    let shown = on_terminal(&args, None);
    assert!(
        shown.contains(&format!("{ESCAPE}[1;31mdamaged{ESCAPE}[0m")),
        "no colour on a terminal: {shown:?}"
    );
    let shown = on_terminal(&args, Some("1"));
    assert!(shown.contains("damaged ["), "{shown}");
    assert!(!has_colour(&shown), "colour despite NO_COLOR: {shown:?}");
    // An empty NO_COLOR does not count (no-color.org).
    assert!(has_colour(&on_terminal(&args, Some(""))));
    // Piped: no colour, whatever the environment.
    let piped = bbcheck(&args);
    assert!(!String::from_utf8_lossy(&piped.stdout).contains(ESCAPE));
    assert!(!String::from_utf8_lossy(&piped.stderr).contains(ESCAPE));
    // Errors are coloured on a terminal too, and plain with NO_COLOR.
    let missing = ["check", "/nonexistent/flight.bbl"];
    assert!(on_terminal(&missing, None).contains(&format!("{ESCAPE}[1;31mbbcheck:")));
    assert!(!has_colour(&on_terminal(&missing, Some("1"))));
    // --color decides over both: always even piped, never even on a terminal.
    let always = bbcheck(&["check", "--color", "always", damaged.to_str().unwrap()]);
    assert!(has_colour(&String::from_utf8_lossy(&always.stdout)));
    let never = ["check", "--color", "never", damaged.to_str().unwrap()];
    assert!(!has_colour(&on_terminal(&never, None)));
}

#[test]
fn errors_go_to_standard_error_only() {
    let out = bbcheck(&["check", "/nonexistent/flight.bbl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let error = String::from_utf8(out.stderr).unwrap();
    assert!(
        error.starts_with("bbcheck: /nonexistent/flight.bbl: "),
        "{error}"
    );
}

#[test]
fn quiet_leaves_only_what_is_wrong() {
    let demo = demo();
    let damaged = damaged();
    let out = bbcheck(&["check", "-q", demo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "{:?}", out.stdout);
    assert!(out.stderr.is_empty());

    let out = bbcheck(&[
        "--quiet",
        "check",
        demo.to_str().unwrap(),
        damaged.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let prefix = format!("{}:", damaged.display());
    assert!(!text.is_empty());
    for line in text.lines() {
        assert!(
            line.starts_with(&prefix)
                && (line.contains(": damaged [") || line.contains(": suspect [")),
            "not a damage or suspect line: {line}"
        );
    }
    let all = bbcheck(&["check", "--json", damaged.to_str().unwrap()]);
    let report: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    let count = |key: &str| report[key].as_array().unwrap().len();
    assert_eq!(
        text.lines().count(),
        count("corrupt_spans") + count("suspect_spans")
    );
    let spans = count("corrupt_spans");

    let dir = TempDir::new("term-quiet");
    let output = dir.join("salvaged.bbl");
    let out = bbcheck(&[
        "salvage",
        "-q",
        damaged.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
    assert!(output.is_file());
    // info says nothing of a clean log, one line of a damaged one.
    let info = |path: &std::path::Path| {
        let out = bbcheck(&["info", "-q", path.to_str().unwrap()]);
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(info(&demo), "");
    assert_eq!(info(&damaged).lines().count(), 1);
    assert!(info(&damaged).starts_with(&format!("{}: damaged", damaged.display())));
    // Without --quiet salvage says what it wrote.
    let out = bbcheck(&[
        "salvage",
        damaged.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(&format!("wrote {}: 1 session, ", output.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("damaged bytes in {spans} spans")),
        "{text}"
    );
}

#[test]
fn a_reader_that_stops_early_is_not_an_error() {
    // Many more lines than a pipe buffer holds, so the writer meets the closed pipe.
    let mut child = Command::new(env!("CARGO_BIN_EXE_bbcheck"))
        .args(["export", "--jsonl", demo().to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("{\"type\":\"session\""), "{first}");
    // The pipe's reading end is closed here.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut child = Command::new(env!("CARGO_BIN_EXE_bbcheck"))
        .args(["check", common::own_corpus().to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.code().is_some(), "killed by a signal");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn completion_scripts_load_and_know_every_subcommand() {
    let out = bbcheck(&["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8(out.stdout).unwrap();
    for sub in [
        "check",
        "export",
        "salvage",
        "info",
        "damage",
        "completions",
        "man",
    ] {
        assert!(script.contains(sub), "{sub} missing");
    }
    let dir = TempDir::new("term-completions");
    let path = dir.join("bbcheck.bash");
    std::fs::write(&path, &script).unwrap();
    let loaded = Command::new("bash")
        .args([
            "-c",
            &format!("source {} && complete -p bbcheck", path.display()),
        ])
        .output()
        .unwrap();
    let registered = String::from_utf8_lossy(&loaded.stdout);
    assert!(
        registered.contains(" -F _bbcheck ") && registered.trim_end().ends_with(" bbcheck"),
        "{registered}"
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = bbcheck(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("hexdump"),
            "{shell}"
        );
    }
}

/// Render a manual page with groff, when it is installed, and return its warnings.
fn groff_warnings(page: &Path) -> Option<String> {
    let out = Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
        .arg(page)
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn manual_pages_cover_every_subcommand_and_its_options() {
    let dir = TempDir::new("term-man");
    let out = bbcheck(&["man", "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let main = std::fs::read_to_string(dir.join("bbcheck.1")).unwrap();
    assert!(main.contains(".TH bbcheck 1"), "{main}");
    assert!(main.contains(".SH \"EXIT STATUS\""), "{main}");
    assert!(main.contains("NO_COLOR"), "{main}");
    for (sub, option) in [
        ("check", "hexdump"),
        ("export", "jsonl"),
        ("salvage", "header\\-from"),
        ("info", "all"),
        ("damage", "model"),
        ("completions", "SHELL"),
        ("man", "output\\-dir"),
    ] {
        let page = dir.join(format!("bbcheck-{sub}.1"));
        let text = std::fs::read_to_string(&page).unwrap();
        assert!(text.contains(&format!(".TH bbcheck-{sub} 1")), "{text}");
        assert!(text.contains(&format!("bbcheck {sub}")), "{text}");
        assert!(text.contains(option), "{sub}: {option} missing");
        assert!(
            main.contains(&format!("bbcheck\\-{sub}(1)")),
            "{sub} not listed"
        );
        if let Some(warnings) = groff_warnings(&page) {
            assert!(warnings.is_empty(), "{sub}: {warnings}");
        }
    }
    // Without a directory the main page goes to standard output.
    let out = bbcheck(&["man"]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), main);
}

#[test]
fn progress_bars_only_on_a_terminal_and_never_when_quiet() {
    let dir = TempDir::new("term-progress");
    let output = dir.join("salvaged.bbl");
    let demo = demo();
    let args = [
        "salvage",
        demo.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
    ];
    let bar = |text: &str| text.contains('█') || text.contains('░');
    let shown = on_terminal(&args, None);
    assert!(bar(&shown), "no progress bar on a terminal: {shown:?}");
    // The summary comes after the bar is cleared, on a line of its own.
    let summary = format!("wrote {}: 2 sessions, 2012 main frames", output.display());
    assert!(
        shown.lines().any(|l| l
            .trim_start_matches(|c: char| c != 'w')
            .starts_with(&summary)),
        "{shown:?}"
    );
    let quiet: Vec<&str> = ["-q"].into_iter().chain(args).collect();
    assert!(!bar(&on_terminal(&quiet, None)));
    let piped = bbcheck(&args);
    assert!(piped.stderr.is_empty());
    assert_eq!(
        String::from_utf8(piped.stdout).unwrap(),
        format!("{summary}\n")
    );
}
