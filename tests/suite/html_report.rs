//! `check --html`: the page renders in a real headless browser without script errors, shows every
//! corrupt span, fetches nothing, escapes what comes from the file, and lands where the help says.

use crate::common;

use common::{TempDir, bbcheck};
use serde_json::Value;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The headless browser (`BBCHECK_CHROMIUM`, default `/usr/bin/chromium`), or `None` when it is
/// missing outside CI. Under CI (`CI` set) a missing browser fails the test.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("BBCHECK_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if path.is_file() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "chromium is missing at {} (set BBCHECK_CHROMIUM)",
            path.display()
        );
    }
    common::skipped(&format!(
        "no chromium at {} (apt-get install chromium, or set BBCHECK_CHROMIUM)",
        path.display()
    ));
    None
}

/// Run headless chromium on `page` with `extra` arguments, a fresh profile and no network
/// services; returns its standard output.
fn run_chromium(browser: &Path, dir: &Path, page: &Path, extra: &[String]) -> String {
    let profile = dir.join(format!("profile-{}", extra.len()));
    let _ = std::fs::remove_dir_all(&profile);
    let stdout_path = dir.join("chromium.out");
    let stderr_path = dir.join("chromium.err");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .stdin(Stdio::null())
        .stdout(File::create(&stdout_path).unwrap())
        .stderr(File::create(&stderr_path).unwrap())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(status.success(), "chromium failed: {status}\n{stderr}");
    let _ = std::fs::remove_dir_all(&profile);
    std::fs::read_to_string(&stdout_path).unwrap()
}

/// The page fetches nothing: no URL at all, no element or rule that loads a resource.
fn assert_self_contained(source: &str) {
    for needle in [
        "http://",
        "https://",
        "src=",
        "@import",
        "url(",
        "fetch(",
        "XMLHttpRequest",
        "<link",
        "<iframe",
        "<img",
        "<object",
        "<embed",
    ] {
        assert!(
            !source.contains(needle),
            "the page contains {needle:?}, which could fetch a resource"
        );
    }
    for (i, _) in source.match_indices("href=") {
        let target = &source[i + 5..];
        let target = target.trim_start_matches(['"', '\'']);
        assert!(
            target.starts_with('#'),
            "a link leaves the page: {}",
            &source[i..i + 40]
        );
    }
}

/// The page's script ran to its end and reported no error into the page.
fn assert_rendered(dom: &str) {
    let root = dom
        .find("<html")
        .map(|at| &dom[at..at + dom[at..].find('>').unwrap()])
        .expect("a root element");
    assert!(
        root.contains("data-rendered=\"ok\""),
        "the page's script did not finish: {root}"
    );
    let errors = dom
        .split("<li class=\"script-error\">")
        .skip(1)
        .map(|e| &e[..e.find("</li>").unwrap_or(e.len())])
        .collect::<Vec<_>>();
    assert!(errors.is_empty(), "script errors: {errors:?}");
    assert!(
        !root.contains("data-script-errors"),
        "script errors: {root}"
    );
}

/// Check `log` with `--html`, render the page in chromium and compare it with `check --json`.
fn check_page_in_browser(dir: &Path, log: &Path) {
    let json = bbcheck(&["check", "--json", s(log)]);
    assert_eq!(json.status.code(), Some(1), "the log is damaged");
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    let spans = report["corrupt_spans"].as_array().unwrap();
    assert!(!spans.is_empty());

    let page = dir.join("report.html");
    let text = bbcheck(&["check", s(log)]);
    let with_page = bbcheck(&["check", s(log), "--html", s(&page)]);
    assert_eq!(with_page.status.code(), Some(1), "exit code as check's");
    assert_eq!(with_page.stdout, text.stdout, "text output unchanged");
    let source = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&source);

    let Some(browser) = chromium() else { return };
    let dom = run_chromium(&browser, dir, &page, &["--dump-dom".to_owned()]);
    assert_rendered(&dom);
    for (i, span) in spans.iter().enumerate() {
        let (start, end) = (
            span["start"].as_u64().unwrap(),
            span["end"].as_u64().unwrap(),
        );
        let reason = span["reason"].as_str().unwrap();
        let attrs = format!("data-start=\"{start}\" data-end=\"{end}\" data-reason=\"{reason}\"");
        // The table row, with its byte range and reason as text.
        let row = format!(
            "<tr class=\"span-row\" id=\"span-{i}\" tabindex=\"0\" data-span=\"{i}\" {attrs}>"
        );
        let at = dom
            .find(&row)
            .unwrap_or_else(|| panic!("span {i} [{start}..{end}) {reason} is not in the table"));
        let cells = &dom[at..at + dom[at..].find("</tr>").unwrap()];
        assert!(cells.contains(&format!("[{start}..{end})")), "{cells}");
        assert!(cells.contains(reason), "{cells}");
        // And in words.
        if reason == "frame-rejected-next-byte" {
            assert!(
                cells.contains("the next frame does not start where this one ends"),
                "{cells}"
            );
        }
        // Its hexdump, embedded and hidden until the row is clicked.
        assert!(dom.contains(&format!("<tr class=\"dump\" id=\"dump-{i}\" hidden=\"\">")));
        // Drawn by the script on the session's offset track and the file map.
        let drawn = format!("class=\"span\" data-span=\"{i}\" {attrs}");
        assert!(dom.contains(&drawn), "span {i} is not drawn: {drawn}");
        assert!(dom.contains(&format!("class=\"span map\" data-span=\"{i}\" {attrs}")));
    }
    // Suspect spans in their own table, with the rule that doubts them.
    for span in report["suspect_spans"].as_array().unwrap() {
        let range = format!(
            "[{}..{})",
            span["start"].as_u64().unwrap(),
            span["end"].as_u64().unwrap()
        );
        let rule = span["evidence"]["rule"].as_str().unwrap();
        let table = &dom[dom
            .find("<section id=\"suspect\">")
            .expect("no suspect table")..];
        let at = table
            .find(&range)
            .unwrap_or_else(|| panic!("{range} not listed"));
        let row = &table[at..at + table[at..].find("</tr>").unwrap()];
        assert!(row.contains(rule), "{row}");
        // Drawn in its own colour on the session's offset track.
        let drawn = format!(
            "class=\"suspect\" data-start=\"{}\" data-end=\"{}\" data-rule=\"{rule}\"",
            span["start"], span["end"]
        );
        assert!(dom.contains(&drawn), "not drawn: {drawn}");
    }
    let sessions = report["sessions"].as_array().unwrap();
    for session in sessions {
        let index = session["index"].as_u64().unwrap();
        let timeline = format!("<div class=\"timeline\" data-session=\"{index}\"><svg");
        assert!(
            dom.contains(&timeline),
            "session {index} has no drawn timeline"
        );
    }

    let png = dir.join("report.png");
    run_chromium(
        &browser,
        dir,
        &page,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1280,2000".to_owned(),
        ],
    );
    let image = std::fs::read(&png).expect("the screenshot is written");
    assert_eq!(&image[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(image[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(image[20..24].try_into().unwrap());
    assert_eq!((width, height), (1280, 2000));
    // A blank page compresses to a few kilobytes; the drawn page holds text and timelines.
    assert!(image.len() > 40_000, "screenshot of {} bytes", image.len());
}

#[test]
fn blackbox_page_renders_every_span_in_a_headless_browser() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = TempDir::new("html-blackbox");
    let log = dir.join("LOG00037.damaged.bbl");
    let source = corpus.join("real/blackbox/betaflight-4.2.0-fc-blackbox-LOG00037.BFL");
    let out = bbcheck(&[
        "damage",
        s(&source),
        "-o",
        s(&log),
        "--seed",
        "2",
        "--model",
        "drop-bytes",
    ]);
    assert_eq!(out.status.code(), Some(0));
    check_page_in_browser(&dir, &log);
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    // The firmware logs the ARM switch in flightModeFlags and a disarm event at the end.
    assert!(page.contains("\"kind\":\"arm\""), "no arm marker");
    assert!(page.contains("disarm (reason 4)"), "no disarm marker");
}

#[test]
fn real_damaged_log_page_renders_in_a_headless_browser() {
    // Hand-edited by the blackbox-log authors to hold corrupted frames (MANIFEST.tsv).
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = TempDir::new("html-edited");
    let log = corpus.join("real/blackbox/betaflight-4.2.11-blackbox-log-error-recovery-edited.bbl");
    check_page_in_browser(&dir, &log);
}

#[test]
fn suspect_spans_render_in_their_own_table() {
    let dir = TempDir::new("html-suspect");
    let log = common::own_corpus().join("damaged/betaflight3-p1of4.bit-flips.1.bbl");
    let report = bbcheck(&["check", "--json", s(&log)]);
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert!(!report["suspect_spans"].as_array().unwrap().is_empty());
    check_page_in_browser(&dir, &log);
}

#[test]
fn dataflash_page_renders_every_span_in_a_headless_browser() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = TempDir::new("html-dataflash");
    let log = dir.join("sample.damaged.bin");
    let source = corpus.join("real/ardupilot/ardupilot-copter-3.6.4-log-diagnosis-sample.bin");
    let out = bbcheck(&["damage", s(&source), "-o", s(&log), "--model", "drop-runs"]);
    assert_eq!(out.status.code(), Some(0));
    check_page_in_browser(&dir, &log);
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    // ArduPilot's EV messages: armed and disarmed.
    assert!(page.contains("\"kind\":\"arm\"") && page.contains("\"kind\":\"disarm\""));
}

fn demo() -> PathBuf {
    common::own_corpus().join("generated/demo.bbl")
}

fn no_partial_files(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".partial"), "{name} left behind");
    }
}

#[test]
fn several_files_write_one_page_each_into_a_directory() {
    let dir = TempDir::new("html-several");
    for sub in ["a", "b"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::copy(demo(), dir.join(sub).join("demo.bbl")).unwrap();
    }
    let damaged = common::own_corpus().join("damaged/copter-3s.drop-runs.1.bin");
    let out_dir = dir.join("pages");
    let files = [
        dir.join("a/demo.bbl"),
        dir.join("b/demo.bbl"),
        damaged.clone(),
    ];
    let mut args: Vec<&str> = vec!["check"];
    args.extend(files.iter().map(|f| s(f)));
    let text = bbcheck(&args);
    args.extend(["--html", s(&out_dir)]);
    let out = bbcheck(&args);
    assert_eq!(out.status.code(), Some(1), "one file is damaged");
    assert_eq!(out.stdout, text.stdout);
    let mut pages: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    // Same names: the later file gets `.2`; the index lists them all.
    assert_eq!(
        pages,
        [
            "copter-3s.drop-runs.1.bin.html",
            "demo.bbl.2.html",
            "demo.bbl.html",
            "index.html"
        ]
    );
    let index = std::fs::read_to_string(out_dir.join("index.html")).unwrap();
    // It fetches nothing; its links lead to the pages beside it.
    for needle in ["http", "src=", "url(", "@import", "<link", "<script"] {
        assert!(!index.contains(needle), "the index contains {needle:?}");
    }
    assert!(index.contains("<h1>3 files checked</h1>"), "{index}");
    assert!(index.contains("2 clean, 1 damaged; 0 skipped (not a log); 0 unreadable"));
    for (file, page, verdict) in [
        (&files[0], "demo.bbl.html", "clean"),
        (&files[1], "demo.bbl.2.html", "clean"),
        (&damaged, "copter-3s.drop-runs.1.bin.html", "damaged"),
    ] {
        let row = format!("<tr><td><a href=\"{page}\">{}</a></td>", s(file));
        let at = index.find(&row).unwrap_or_else(|| panic!("no row {row}"));
        let end = at + index[at..].find("</tr>").unwrap();
        assert!(index[at..end].contains(&format!("verdict {verdict}")));
    }
    let first = std::fs::read_to_string(out_dir.join("demo.bbl.html")).unwrap();
    assert!(first.contains(&format!("<h1>{}</h1>", s(&files[0]))));
    let second = std::fs::read_to_string(out_dir.join("demo.bbl.2.html")).unwrap();
    assert!(second.contains(&format!("<h1>{}</h1>", s(&files[1]))));
    let df = std::fs::read_to_string(out_dir.join("copter-3s.drop-runs.1.bin.html")).unwrap();
    assert!(df.contains("ArduPilot DataFlash") && df.contains("Corrupt spans (5)"));
    // No loop iterations to count in DataFlash, and no Blackbox-only reason in its legend.
    assert!(!df.contains("iterations lost") && !df.contains("</span>stale-p-frame:"));

    // A directory: pages for its logs only, in a directory that is created.
    let searched = dir.join("searched");
    std::fs::create_dir_all(&searched).unwrap();
    std::fs::copy(demo(), searched.join("flight.bbl")).unwrap();
    std::fs::write(searched.join("notes.txt"), "not a log").unwrap();
    let out_dir = dir.join("deep/pages");
    let out = bbcheck(&["check", s(&searched), "--html", s(&out_dir)]);
    assert_eq!(out.status.code(), Some(0));
    let pages: Vec<_> = std::fs::read_dir(&out_dir).unwrap().collect();
    assert_eq!(pages.len(), 2);
    assert!(out_dir.join("flight.bbl.html").is_file());
    let index = std::fs::read_to_string(out_dir.join("index.html")).unwrap();
    assert!(index.contains("1 clean, 0 damaged; 1 skipped (not a log); 0 unreadable"));

    // A log named like the index gets a page of another name, and links are percent-encoded.
    let odd = dir.join("odd");
    std::fs::create_dir_all(&odd).unwrap();
    std::fs::copy(demo(), odd.join("index")).unwrap();
    std::fs::copy(demo(), odd.join("a #1.bbl")).unwrap();
    let out_dir = dir.join("odd-pages");
    let out = bbcheck(&["check", s(&odd), "--html", s(&out_dir)]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out_dir.join("index.2.html").is_file());
    assert!(out_dir.join("a #1.bbl.html").is_file());
    let index = std::fs::read_to_string(out_dir.join("index.html")).unwrap();
    assert!(index.contains("href=\"index.2.html\""), "{index}");
    assert!(index.contains("href=\"a%20%231.bbl.html\""), "{index}");
    no_partial_files(&out_dir);
}

#[test]
fn one_file_writes_the_page_named_or_into_a_directory_named() {
    let dir = TempDir::new("html-one");
    let page = dir.join("clean.html");
    let out = bbcheck(&["check", s(&demo()), "--html", s(&page)]);
    assert_eq!(out.status.code(), Some(0), "a clean log still exits 0");
    let source = std::fs::read_to_string(&page).unwrap();
    assert!(source.contains("<span class=\"verdict clean\">clean</span>"));
    assert!(source.contains("Corrupt spans (0)"));
    assert_self_contained(&source);
    // An existing directory named: the page goes in it.
    let out = bbcheck(&["check", s(&demo()), "--html", s(&dir)]);
    assert_eq!(out.status.code(), Some(0));
    assert!(dir.join("demo.bbl.html").is_file());
    no_partial_files(&dir);
    // A page that cannot be written is an error, and nothing is left.
    let missing = dir.join("no/such/dir/page.html");
    let out = bbcheck(&["check", s(&demo()), "--html", s(&missing)]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("page.html"), "{stderr}");
    assert!(!dir.join("no").exists());
}

#[test]
fn text_from_the_file_is_escaped() {
    let dir = TempDir::new("html-escape");
    let hostile = "<script>alert(1)</script>\"'&<b>";
    let data = bbcheck::testkit::blackbox::demo_log();
    let from = b"H Craft name:synthetic-1\n";
    let at = data
        .windows(from.len())
        .position(|w| w == from)
        .expect("the demo log names its craft");
    let mut log = data[..at].to_vec();
    log.extend_from_slice(format!("H Craft name:{hostile}\n").as_bytes());
    log.extend_from_slice(&data[at + from.len()..]);
    let path = dir.join("hostile.bbl");
    std::fs::write(&path, &log).unwrap();
    let json = bbcheck(&["check", "--json", s(&path)]);
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        report["sessions"][0]["craft_name"], hostile,
        "the craft name is read"
    );
    let page = dir.join("page.html");
    bbcheck(&["check", s(&path), "--html", s(&page)]);
    let source = std::fs::read_to_string(&page).unwrap();
    let escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;&lt;b&gt;";
    assert!(source.contains(escaped), "the craft name is shown escaped");
    assert!(!source.contains(hostile), "raw markup from the file");
    assert!(
        !source.contains("<script>alert"),
        "raw markup from the file"
    );
    // Only the page's own three scripts: the error handler, the data and the drawing.
    assert_eq!(source.matches("<script").count(), 3);
    assert_eq!(source.matches("</script>").count(), 3);

    if let Some(browser) = chromium() {
        let dom = run_chromium(&browser, &dir, &page, &["--dump-dom".to_owned()]);
        assert_rendered(&dom);
        assert!(dom.contains("Session 1 — &lt;script&gt;alert(1)&lt;/script&gt;"));
    }
}

#[test]
fn a_note_of_regions_not_drawn_stands_below_the_axis_labels() {
    // A session with more regions than a timeline draws: the note saying so gets a line of its
    // own under the offset axis, not on its labels.
    use bbcheck::testkit::blackbox::{FlightSpec, Layout, flight};
    let mut data = flight(&FlightSpec {
        iterations: 400_000,
        ..FlightSpec::new(Layout::Betaflight4)
    });
    // A byte of garbage every 1500 bytes of frame data: a corrupt span and the frames between.
    let start = data.len() / 50;
    for at in (start..data.len()).step_by(1500).rev() {
        data.insert(at, 0x21);
    }
    let dir = TempDir::new("html-regions-note");
    let log = dir.join("many-regions.bbl");
    std::fs::write(&log, &data).unwrap();
    let page = dir.join("many-regions.html");
    bbcheck(&["check", "--html", s(&page), s(&log)]);
    let source = std::fs::read_to_string(&page).unwrap();
    assert!(!source.contains("\"regions_omitted\":0"), "too few regions");
    let Some(browser) = chromium() else { return };
    let dom = run_chromium(&browser, &dir, &page, &["--dump-dom".to_owned()]);
    let at = dom.find("aria-label=\"session 1 timeline\"").unwrap();
    let svg = &dom[dom[..at].rfind("<svg").unwrap()..at + dom[at..].find("</svg>").unwrap()];
    let number = |text: &str, key: &str| -> f64 {
        let from = text.find(key).unwrap() + key.len();
        text[from..].split('"').next().unwrap().parse().unwrap()
    };
    let height: f64 = svg
        .split("viewBox=\"0 0 ")
        .nth(1)
        .and_then(|v| v.split(['"', ' ']).nth(1))
        .unwrap()
        .parse()
        .unwrap();
    let texts: Vec<(f64, &str)> = svg
        .split("<text ")
        .skip(1)
        .map(|t| (number(t, "y=\""), t))
        .collect();
    let (note_y, _) = texts
        .iter()
        .find(|(_, t)| t.contains("more regions not drawn"))
        .expect("the note");
    let lowest_other = texts
        .iter()
        .filter(|(_, t)| !t.contains("more regions not drawn"))
        .map(|(y, _)| *y)
        .fold(0.0, f64::max);
    assert!(*note_y >= lowest_other + 12.0, "{note_y} vs {lowest_other}");
    assert!(*note_y <= height, "{note_y} beyond {height}");
}
