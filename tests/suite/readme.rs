//! The `console` blocks of the README and of docs/ci.md are run as written and must print exactly
//! what they show: a pilot following the quick start sees the same output. The README's `python`
//! blocks then run in the same directory, with pyarrow, DuckDB and the Python package, and must
//! succeed.

use crate::common;

use common::TempDir;
use std::path::Path;
use std::process::Command;

/// A command of a `console` block and the standard output it shows.
struct Step {
    command: String,
    expected: String,
}

/// The `console` blocks of `text`, as steps.
fn console_blocks(text: &str) -> Vec<Vec<Step>> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "```console" {
            continue;
        }
        let mut steps: Vec<Step> = Vec::new();
        for line in lines.by_ref() {
            if line.trim() == "```" {
                break;
            }
            match line.strip_prefix("$ ") {
                Some(command) => steps.push(Step {
                    command: command.to_owned(),
                    expected: String::new(),
                }),
                None => {
                    let step = steps.last_mut().expect("a block starts with a command");
                    step.expected.push_str(line);
                    step.expected.push('\n');
                }
            }
        }
        blocks.push(steps);
    }
    blocks
}

/// The `python` blocks of `text`.
fn python_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "```python" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            blocks.push(block.join("\n"));
        }
    }
    blocks
}

/// A scratch directory holding the project's corpus (linked), where the commands run.
fn workdir(name: &str) -> TempDir {
    let dir = TempDir::new(&format!("doc-{name}"));
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    std::os::unix::fs::symlink(corpus, dir.join("corpus")).unwrap();
    dir
}

/// Run every step of the `console` blocks of `doc` (a path in the project) in a scratch
/// directory, asserting each prints what the document shows and succeeds (exit code 0 or 1).
fn run_console_blocks(doc: &str, at_least: usize) {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(doc)).unwrap();
    let blocks = console_blocks(&text);
    assert!(blocks.len() >= at_least, "{doc}: console blocks missing");
    let bin = Path::new(env!("CARGO_BIN_EXE_bbcheck")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dir = workdir(&doc.replace('/', "-"));
    for step in blocks.iter().flatten() {
        let out = Command::new("sh")
            .args(["-c", &step.command])
            .current_dir(&dir)
            .env("PATH", &path)
            .env_remove("NO_COLOR")
            .output()
            .unwrap();
        let shown = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            shown,
            step.expected,
            "{doc}: `{}` printed something else (stderr: {})",
            step.command,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.code().is_some_and(|c| c < 2),
            "{doc}: `{}` failed: {}",
            step.command,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let python = python_blocks(&text);
    if python.is_empty() {
        return;
    }
    let Some(interpreter) = common::python("pyarrow.parquet, duckdb, bbcheck") else {
        return;
    };
    for block in python {
        let out = Command::new(&interpreter)
            .args(["-c", &block])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{doc}: a python block failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_readme_shows_what_its_commands_print() {
    run_console_blocks("README.md", 3);
}

#[test]
fn the_ci_page_shows_what_its_commands_print() {
    run_console_blocks("docs/ci.md", 1);
}
