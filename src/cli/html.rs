//! `check --html`: one self-contained HTML page per checked file (inline CSS, inline script, no
//! fetches) with each session's timeline of flight time and file offsets, every corrupt span with
//! the bytes around it, and the events a pilot looks for.
//!
//! The page renders the checked report and the [`Timeline`] collected while the file decoded
//! (`check` decodes; this module only writes). It is bounded as the timeline is: at most
//! [`super::timeline::MAX_TIMELINES`] sessions are drawn and [`MAX_TABLE_SPANS`] spans listed
//! (the JSON report has them all).

use super::Error;
use super::checked::{Checked, verdict_tally};
use super::hexdump::write_span_bytes;
use super::output::AtomicFile;
use super::timeline::{Histogram, Marker, MarkerKind, Timeline};
use crate::blackbox::header::Firmware;
use crate::dataflash;
use crate::report::{
    CorruptSpan, DamageReason, FileReport, Region, RegionKind, SessionReport, seconds,
};
use serde::Serialize;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Corrupt spans listed (with their bytes) and drawn.
pub const MAX_TABLE_SPANS: usize = 2000;
/// Regions drawn per session.
const MAX_REGIONS: usize = 1000;

/// Where the pages go: one per input and, when they share a directory, its index page.
pub struct Pages {
    pub pages: Vec<PathBuf>,
    pub index: Option<PathBuf>,
}

/// The name of the page that lists the others in a directory of pages.
const INDEX: &str = "index.html";

/// Where each input's page goes. With one input that is not a directory, `target` is the page
/// (or, when it is an existing directory, the page goes into it); otherwise `target` is a
/// directory, created if missing, holding `<file name>.html` per input — `<file name>.2.html`,
/// `.3.html`, ... for later inputs whose name was taken — and `index.html`, which lists them.
/// Standard input is `stdin`.
pub fn page_paths(target: &Path, given: &[PathBuf], inputs: &[&Path]) -> Result<Pages, Error> {
    let single = given.len() == 1 && !given[0].is_dir();
    if single && !target.is_dir() {
        return Ok(Pages {
            pages: inputs.iter().map(|_| target.to_owned()).collect(),
            index: None,
        });
    }
    std::fs::create_dir_all(target).map_err(|e| Error::io(target, e))?;
    let mut taken = HashSet::new();
    if !single {
        taken.insert(INDEX.to_owned());
    }
    let pages = inputs
        .iter()
        .map(|path| {
            let name = if *path == Path::new("-") {
                "stdin".to_owned()
            } else {
                path.file_name()
                    .map_or_else(|| "log".to_owned(), |n| n.to_string_lossy().into_owned())
            };
            let mut page = format!("{name}.html");
            for n in 2.. {
                if taken.insert(page.clone()) {
                    break;
                }
                page = format!("{name}.{n}.html");
            }
            target.join(page)
        })
        .collect();
    Ok(Pages {
        pages,
        index: (!single).then(|| target.join(INDEX)),
    })
}

/// A checked file as the index page lists it.
pub struct Listed<'a> {
    pub path: &'a str,
    pub page: &'a Path,
    pub format: &'a str,
    pub size: u64,
    pub sessions: usize,
    pub spans: usize,
    /// `clean`, `suspect` or `damaged`.
    pub verdict: &'a str,
}

/// Write the index page of a directory of pages: one row per checked file, linking its page, and
/// how many files were skipped (not a log) or could not be read; whole or not at all.
pub fn write_index(
    index: &Path,
    files: &[Listed<'_>],
    skipped: usize,
    failed: usize,
) -> Result<(), Error> {
    let tally = verdict_tally(files.iter().map(|f| f.verdict));
    let mut html = String::with_capacity(1024 + 256 * files.len());
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>bbcheck: {} files</title><style>{STYLE}</style></head><body>\
         <header><h1>{} files checked</h1><p class=\"summary\">{tally}; \
         {skipped} skipped (not a log); {failed} unreadable</p></header><main><section>\
         <table class=\"files\"><thead><tr><th>file</th><th>format</th><th>bytes</th>\
         <th>sessions</th><th>corrupt spans</th><th>verdict</th></tr></thead><tbody>",
        files.len(),
        files.len(),
    );
    for f in files {
        let name = f.page.file_name().unwrap_or_default().to_string_lossy();
        let verdict = escape(f.verdict);
        let _ = write!(
            html,
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td><span class=\"verdict {verdict}\">{verdict}</span></td></tr>",
            escape(&percent_encode(&name)),
            escape(f.path),
            escape(f.format),
            f.size,
            f.sessions,
            f.spans,
        );
    }
    html.push_str("</tbody></table></section></main></body></html>\n");
    let mut out = AtomicFile::create(index)?;
    out.write_all(html.as_bytes())
        .map_err(|e| Error::io(index, e))?;
    out.commit()
}

/// A file name as a relative link: every byte but ASCII letters, digits and `-._~` as `%XX`.
fn percent_encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Write the page of a checked file to `page`, whole or not at all.
pub fn write(
    page: &Path,
    checked: &Checked,
    timeline: &Timeline,
    data: &[u8],
) -> Result<(), Error> {
    let mut out = AtomicFile::create(page)?;
    render(&mut out, checked, timeline, data).map_err(|e| Error::io(page, e))?;
    out.commit()
}

/// Text safe inside HTML elements and quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Every reason, in the order the legend lists them, with its colour.
const REASONS: [(DamageReason, &str); 16] = [
    (DamageReason::Garbage, "#d62728"),
    (DamageReason::FrameRejectedNextByte, "#ff7f0e"),
    (DamageReason::FrameTooLong, "#8c564b"),
    (DamageReason::BadEncoding, "#e377c2"),
    (DamageReason::ImplausibleIteration, "#9467bd"),
    (DamageReason::ImplausibleTime, "#b8a000"),
    (DamageReason::ImplausibleValue, "#bcbd22"),
    (DamageReason::StalePFrame, "#17becf"),
    (DamageReason::NoGpsHome, "#393b79"),
    (DamageReason::UnknownEvent, "#ad494a"),
    (DamageReason::UndefinedFrameType, "#7b4173"),
    (DamageReason::Truncated, "#222222"),
    (DamageReason::HeaderDamaged, "#e7ba52"),
    (DamageReason::SuspectGroup, "#ff9896"),
    (DamageReason::NewlineConverted, "#637939"),
    (DamageReason::WrittenOver, "#843c39"),
];

/// Region kinds with their colour and what the legend says of them.
const REGIONS: [(RegionKind, &str, &str, &str); 10] = [
    (RegionKind::Header, "header", "#b9c3cf", "session header"),
    (RegionKind::Frames, "frames", "#cfe8cf", "accepted frames"),
    (
        RegionKind::NonLogData,
        "non-log-data",
        "#d9d2e9",
        "data before the first session",
    ),
    (
        RegionKind::AfterLogEnd,
        "after-log-end",
        "#dddddd",
        "bytes after the log-end event",
    ),
    (
        RegionKind::ErasedFlash,
        "erased-flash",
        "#f3e3c3",
        "erased flash (0xFF)",
    ),
    (RegionKind::ZeroFill, "zero-fill", "#e8e8e8", "zero fill"),
    (
        RegionKind::CutShort,
        "cut-short",
        "#f4cccc",
        "the last frame or message, cut short where logging stopped",
    ),
    (
        RegionKind::OldData,
        "old-data",
        "#c9daf8",
        "an earlier log's messages after this one's end",
    ),
    (
        RegionKind::UndefinedType,
        "undefined-type",
        "#fce5cd",
        "messages of a type whose FMT is lost: intact, unreadable without one",
    ),
    (
        RegionKind::HeaderLost,
        "header-lost",
        "#f4cccc",
        "frame data whose header is lost with the start of the log: salvage reads it with one",
    ),
];

fn region_name(kind: RegionKind) -> &'static str {
    REGIONS
        .iter()
        .find(|r| r.0 == kind)
        .map_or("frames", |r| r.1)
}

#[derive(Serialize)]
struct HistData<'a> {
    origin: u64,
    width: u64,
    counts: &'a [u64],
    /// The count a full-height bar stands for.
    full: u64,
}

fn hist_data(histogram: &Histogram) -> Option<HistData<'_>> {
    histogram.used().map(|(origin, width, counts)| HistData {
        origin,
        width,
        counts,
        full: super::timeline::full_scale(counts),
    })
}

#[derive(Serialize)]
struct MarkerData {
    kind: &'static str,
    offset: u64,
    time: Option<u64>,
    label: String,
}

#[derive(Serialize)]
struct SpanData {
    start: u64,
    end: u64,
    reason: &'static str,
    session: usize,
    frames_lost: u64,
    iterations_lost: u64,
    time_start_us: Option<u64>,
    time_end_us: Option<u64>,
}

/// A suspect span as the page draws it.
#[derive(Serialize)]
struct SuspectData {
    start: u64,
    end: u64,
    session: usize,
    rule: &'static str,
    field: Option<String>,
    frames: u64,
    time_start_us: Option<u64>,
    time_end_us: Option<u64>,
}

#[derive(Serialize)]
struct SessionData<'a> {
    index: usize,
    start: u64,
    end: u64,
    first_time_us: Option<u64>,
    last_time_us: Option<u64>,
    bytes: Option<HistData<'a>>,
    frames: Option<HistData<'a>>,
    regions: Vec<(u64, u64, &'static str)>,
    regions_omitted: usize,
    markers: Vec<MarkerData>,
    markers_omitted: u64,
}

#[derive(Serialize)]
struct PageData<'a> {
    format: &'static str,
    size: u64,
    /// What a session's timed histogram counts.
    counted: &'static str,
    sessions: Vec<SessionData<'a>>,
    /// Regions outside every session.
    regions: Vec<(u64, u64, &'static str)>,
    spans: Vec<SpanData>,
    spans_total: usize,
    suspect: Vec<SuspectData>,
    colors: Vec<(&'static str, &'static str)>,
    region_colors: Vec<(&'static str, &'static str)>,
}

/// Names of the mode switches bit 0–2 of `flightModeFlags` hold in Betaflight and INAV (later
/// boxes differ between versions and are shown by number).
const BOXES: [&str; 3] = ["ARM", "ANGLE", "HORIZON"];

fn box_name(bit: u32, named: bool) -> String {
    match BOXES.get(bit as usize) {
        Some(name) if named => (*name).to_owned(),
        _ => format!("box {bit}"),
    }
}

/// The flags that changed, as `+NAME −NAME`, or the active ones when nothing came before.
fn mode_label(flags: u32, last: Option<u32>, named: bool) -> String {
    let list = |bits: u32, sign: &str| -> Vec<String> {
        (0..32)
            .filter(|b| bits >> b & 1 != 0)
            .map(|b| format!("{sign}{}", box_name(b, named)))
            .collect()
    };
    let parts = match last {
        None if flags == 0 => vec!["no mode switch on".to_owned()],
        None => list(flags, ""),
        Some(last) => {
            let mut parts = list(flags & !last, "+");
            parts.extend(list(last & !flags, "\u{2212}"));
            parts
        }
    };
    format!("{} (flags 0x{flags:x})", parts.join(" "))
}

/// ArduPilot's `MODE` numbers by vehicle, where they are stable across versions.
fn ardupilot_mode(vehicle: Option<&str>, mode: i64) -> Option<&'static str> {
    const COPTER: [&str; 28] = [
        "STABILIZE",
        "ACRO",
        "ALT_HOLD",
        "AUTO",
        "GUIDED",
        "LOITER",
        "RTL",
        "CIRCLE",
        "",
        "LAND",
        "",
        "DRIFT",
        "",
        "SPORT",
        "FLIP",
        "AUTOTUNE",
        "POSHOLD",
        "BRAKE",
        "THROW",
        "AVOID_ADSB",
        "GUIDED_NOGPS",
        "SMART_RTL",
        "FLOWHOLD",
        "FOLLOW",
        "ZIGZAG",
        "SYSTEMID",
        "AUTOROTATE",
        "AUTO_RTL",
    ];
    const PLANE: [&str; 25] = [
        "MANUAL",
        "CIRCLE",
        "STABILIZE",
        "TRAINING",
        "ACRO",
        "FBWA",
        "FBWB",
        "CRUISE",
        "AUTOTUNE",
        "",
        "AUTO",
        "RTL",
        "LOITER",
        "TAKEOFF",
        "AVOID_ADSB",
        "GUIDED",
        "",
        "QSTABILIZE",
        "QHOVER",
        "QLOITER",
        "QLAND",
        "QRTL",
        "QAUTOTUNE",
        "QACRO",
        "THERMAL",
    ];
    let names: &[&str] = match vehicle {
        Some("Copter") => &COPTER,
        Some("Plane") => &PLANE,
        _ => return None,
    };
    let name = *names.get(usize::try_from(mode).ok()?)?;
    (!name.is_empty()).then_some(name)
}

/// ArduPilot `EV` ids a pilot looks for (arming is shown as arm and disarm markers).
fn ardupilot_event(id: i64) -> Option<&'static str> {
    match id {
        15 => Some("auto-armed"),
        17 => Some("landed (maybe)"),
        18 => Some("landed"),
        25 => Some("home set"),
        28 => Some("took off (not landed)"),
        _ => None,
    }
}

fn marker_data(marker: &Marker, named: bool, vehicle: Option<&str>) -> MarkerData {
    let (kind, label) = match marker.kind {
        MarkerKind::Arm => ("arm", "arm".to_owned()),
        MarkerKind::Disarm {
            reason: Some(r), ..
        } => ("disarm", format!("disarm (reason {r})")),
        MarkerKind::Disarm {
            from_event: false, ..
        } => ("disarm", "disarm (ARM switch off)".to_owned()),
        MarkerKind::Disarm { .. } => ("disarm", "disarm".to_owned()),
        MarkerKind::Mode { flags, last } => ("mode", mode_label(flags, last, named)),
        MarkerKind::Resume => ("resume", "logging resumed".to_owned()),
        MarkerKind::LogEnd {
            disarm_reason: Some(r),
        } => ("end", format!("log end (disarm reason {r})")),
        MarkerKind::LogEnd { .. } => ("end", "log end".to_owned()),
        MarkerKind::Other(name) => ("other", name.replace('_', " ")),
        MarkerKind::DataflashMode(mode) => match ardupilot_mode(vehicle, mode) {
            Some(name) => ("mode", format!("mode {name} ({mode})")),
            None => ("mode", format!("mode {mode}")),
        },
        MarkerKind::DataflashEvent(id) => match ardupilot_event(id) {
            Some(name) => ("other", format!("{name} (EV {id})")),
            None => ("other", format!("EV {id}")),
        },
    };
    MarkerData {
        kind,
        offset: marker.offset,
        time: marker.time,
        label,
    }
}

fn regions_data(regions: &[Region]) -> (Vec<(u64, u64, &'static str)>, usize) {
    let kept = regions
        .iter()
        .take(MAX_REGIONS)
        .map(|r| (r.start, r.end, region_name(r.kind)))
        .collect();
    (kept, regions.len().saturating_sub(MAX_REGIONS))
}

fn page_data<'a>(
    file: &FileReport,
    timeline: &'a Timeline,
    counted: &'static str,
    vehicle: Option<&str>,
) -> PageData<'a> {
    let sessions = file
        .sessions
        .iter()
        .zip(&timeline.tracks)
        .map(|(s, track)| {
            let named = matches!(s.firmware, Firmware::Betaflight | Firmware::Inav);
            let (regions, regions_omitted) = regions_data(&s.regions);
            SessionData {
                index: s.index,
                start: s.start,
                end: s.end,
                first_time_us: s.first_time_us,
                last_time_us: s.last_time_us,
                bytes: hist_data(&track.bytes),
                frames: hist_data(&track.frames),
                regions,
                regions_omitted,
                markers: track
                    .markers
                    .iter()
                    .map(|m| marker_data(m, named, vehicle))
                    .collect(),
                markers_omitted: track.markers_omitted,
            }
        })
        .collect();
    let spans = file
        .corrupt_spans
        .iter()
        .take(MAX_TABLE_SPANS)
        .map(|c| SpanData {
            start: c.start,
            end: c.end,
            reason: c.reason.as_str(),
            session: c.session,
            frames_lost: c.frames_lost,
            iterations_lost: c.iterations_lost,
            time_start_us: c.time_start_us,
            time_end_us: c.time_end_us,
        })
        .collect();
    let suspect = file
        .suspect_spans
        .iter()
        .take(MAX_TABLE_SPANS)
        .map(|s| SuspectData {
            start: s.start,
            end: s.end,
            session: s.session,
            rule: s.evidence.rule.as_str(),
            field: s.evidence.field.clone(),
            frames: s.frames,
            time_start_us: s.time_start_us,
            time_end_us: s.time_end_us,
        })
        .collect();
    PageData {
        format: file.format,
        size: file.size,
        counted,
        sessions,
        regions: regions_data(&file.regions).0,
        spans,
        spans_total: file.corrupt_spans.len(),
        suspect,
        colors: REASONS.iter().map(|(r, c)| (r.as_str(), *c)).collect(),
        region_colors: REGIONS.iter().map(|r| (r.1, r.2)).collect(),
    }
}

fn duration(us: u64) -> String {
    if us < 1000 {
        format!("{us} µs")
    } else if us < 1_000_000 {
        format!("{:.1} ms", us as f64 / 1e3)
    } else {
        format!("{:.3} s", us as f64 / 1e6)
    }
}

fn bytes(n: u64) -> String {
    if n < 1 << 10 {
        format!("{n} B")
    } else if n < 1 << 20 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else if n < 1 << 30 {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.2} GiB", n as f64 / (1u64 << 30) as f64)
    }
}

/// The JSON of the page data, safe inside a `<script>` element.
fn script_json(data: &PageData<'_>) -> String {
    let json = serde_json::to_string(data).expect("page data serialises");
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// `write_span_bytes` output as HTML: bytes inside the span (marked `>`) highlighted.
fn hexdump_html(data: &[u8], span: &CorruptSpan) -> String {
    let (start, end) = (span.start as usize, (span.end as usize).min(data.len()));
    let mut text = Vec::new();
    if start < end {
        write_span_bytes(&mut text, data, start, end).expect("writing to memory cannot fail");
    }
    let text = String::from_utf8_lossy(&text);
    let mut out = format!(
        "<span class=\"skip\">span [0x{:x}..0x{:x}), {} bytes; offsets in hex</span>\n",
        span.start,
        span.end,
        span.end - span.start
    );
    // Lines are `    OOOOOOOO ` then 16 three-character cells (`>hh` inside the span), then the
    // ASCII column; other lines say how many bytes were left out.
    const HEX_START: usize = 13;
    const HEX_END: usize = HEX_START + 48;
    for line in text.lines() {
        let hex = line.get(HEX_START..HEX_END).filter(|_| {
            line.as_bytes()[..HEX_START]
                .iter()
                .skip(4)
                .take(8)
                .all(u8::is_ascii_hexdigit)
        });
        let Some(hex) = hex else {
            let _ = writeln!(out, "<span class=\"skip\">{}</span>", escape(line));
            continue;
        };
        out.push_str(&escape(&line[..HEX_START]));
        let cells: Vec<&str> = (0..16).map(|i| &hex[3 * i..3 * i + 3]).collect();
        let mut inside = false;
        for cell in cells {
            let marked = cell.starts_with('>');
            if marked != inside {
                out.push_str(if marked { "<mark>" } else { "</mark>" });
                inside = marked;
            }
            out.push(' ');
            out.push_str(&escape(&cell[1..]));
        }
        if inside {
            out.push_str("</mark>");
        }
        out.push_str(&escape(&line[HEX_END..]));
        out.push('\n');
    }
    out
}

const STYLE: &str = include_str!("html/page.css");
const SCRIPT: &str = include_str!("html/page.js");

/// The legend of colours and markers, and how arming is read.
fn write_legend(out: &mut String, file: &FileReport) {
    let present: HashSet<&str> = file
        .corrupt_spans
        .iter()
        .map(|c| c.reason.as_str())
        .collect();
    let dataflash = file.format == dataflash::report::FORMAT_NAME;
    out.push_str("<section id=\"legend\"><h2>Legend</h2><div class=\"legend-grid\">");
    out.push_str("<div><h3>Corrupt spans, by reason</h3><ul class=\"keys\">");
    for (reason, color) in REASONS {
        let name = reason.as_str();
        // Most reasons are Blackbox's: a DataFlash page names those it has.
        if dataflash && !present.contains(name) {
            continue;
        }
        let class = if present.contains(name) {
            "present"
        } else {
            "absent"
        };
        let _ = write!(
            out,
            "<li class=\"{class}\"><span class=\"sw\" style=\"background:{color}\"></span>{name}: {}</li>",
            reason.in_words()
        );
    }
    out.push_str("</ul></div><div><h3>Bytes that are not damage</h3><ul class=\"keys\">");
    for (kind, name, color, what) in REGIONS {
        let what = match kind {
            RegionKind::Frames if dataflash => "accepted messages",
            RegionKind::Header
            | RegionKind::NonLogData
            | RegionKind::AfterLogEnd
            | RegionKind::HeaderLost
                if dataflash =>
            {
                continue;
            }
            RegionKind::OldData | RegionKind::UndefinedType if !dataflash => continue,
            _ => what,
        };
        let _ = write!(
            out,
            "<li><span class=\"sw\" style=\"background:{color}\"></span>{name}: {what}</li>"
        );
    }
    if !dataflash {
        out.push_str(
            "<li><span class=\"sw\" style=\"background:#e0a030\"></span>suspect: frames kept, \
             values in doubt (drawn under the frames)</li>",
        );
    }
    out.push_str(
        "<li><span class=\"sw cover\"></span>bar height: share of the bucket's bytes in \
         accepted frames (offset) or frames per bucket (flight time)</li></ul></div>",
    );
    out.push_str(
        "<div><h3>Events</h3><ul class=\"keys\">\
         <li><span class=\"mk arm\">A</span>arm</li>\
         <li><span class=\"mk disarm\">D</span>disarm</li>\
         <li><span class=\"mk mode\">M</span>flight-mode change</li>\
         <li><span class=\"mk resume\">R</span>logging resumed</li>\
         <li><span class=\"mk end\">E</span>log end</li>\
         <li><span class=\"mk other\">\u{2022}</span>other event</li></ul>",
    );
    if dataflash {
        out.push_str(
            "<p class=\"note\">ArduPilot logs arming and disarming as <code>EV</code> messages \
             (10 armed, 11 disarmed) and mode changes as <code>MODE</code> messages, shown by \
             mode number.</p>",
        );
    } else {
        out.push_str(
            "<p class=\"note\">Betaflight and INAV do not log arming as an event. Their \
             <code>flightModeFlags</code> (S frames and flight-mode events) hold the mode \
             switches, the ARM switch in bit 0: <b>arm</b> is that bit turning on, or on when the \
             flags are first logged; <b>disarm</b> is the firmware's disarm event (with its \
             reason) or, without one, the bit turning off. Flight-mode changes come from \
             flight-mode events where the firmware writes them, otherwise from changes of the \
             S-frame flags; bits 1 and 2 are ANGLE and HORIZON, later bits are shown by number \
             because their meaning differs between versions. Cleanflight logs show mode changes \
             only. Events carry no time of their own: they are placed at the last main frame \
             before them (a logging resume at the next one).</p>",
        );
    }
    out.push_str("</div></div></section>");
}

/// A stretch of flight time between two times, either of which may be unknown, and how long it
/// is.
fn time_range(first: Option<u64>, last: Option<u64>) -> String {
    match (first, last) {
        (Some(a), Some(b)) => format!(
            "{} – {} ({})",
            seconds(a),
            seconds(b),
            duration(b.saturating_sub(a))
        ),
        (Some(a), None) => format!("after {}", seconds(a)),
        (None, Some(b)) => format!("before {}", seconds(b)),
        (None, None) => "—".to_owned(),
    }
}

/// A session's number, linking to its timeline when the page draws one.
fn session_link(s: &SessionReport, drawn: usize) -> String {
    if s.index <= drawn {
        format!("<a href=\"#session-{0}\">{0}</a>", s.index)
    } else {
        s.index.to_string()
    }
}

fn write_blackbox_sessions(out: &mut String, sessions: &[SessionReport], drawn: usize) {
    out.push_str(
        "<table class=\"sessions\"><thead><tr><th>#</th><th>bytes</th><th>firmware</th>\
         <th>craft</th><th>frames I / P / S / G / H / E</th><th>flight time</th>\
         <th>spans</th><th>ends</th></tr></thead><tbody>",
    );
    for s in sessions {
        let f = &s.frames;
        let (time, link) = (
            time_range(s.first_time_us, s.last_time_us),
            session_link(s, drawn),
        );
        let _ = write!(
            out,
            "<tr><td>{link}</td><td class=\"num\">[{}..{})</td><td>{}</td><td>{}</td>\
             <td class=\"num\">{} / {} / {} / {} / {} / {}</td><td>{time}</td>\
             <td class=\"num\">{}</td><td>{}</td></tr>",
            s.start,
            s.end,
            escape(s.firmware_revision.as_deref().unwrap_or("unknown")),
            escape(s.craft_name.as_deref().unwrap_or("")),
            f.i,
            f.p,
            f.s,
            f.g,
            f.h,
            f.e,
            s.corrupt_spans.len(),
            if s.log_end {
                "log-end event"
            } else {
                "cut short"
            },
        );
    }
    out.push_str("</tbody></table>");
}

fn write_dataflash_sessions(out: &mut String, sessions: &[SessionReport], drawn: usize) {
    out.push_str(
        "<table class=\"sessions\"><thead><tr><th>#</th><th>bytes</th><th>firmware</th>\
         <th>TimeUS</th><th>spans</th></tr></thead><tbody>",
    );
    for s in sessions {
        let (time, link) = (
            time_range(s.first_time_us, s.last_time_us),
            session_link(s, drawn),
        );
        let _ = write!(
            out,
            "<tr><td>{link}</td><td class=\"num\">[{}..{})</td><td>{}</td><td>{time}</td>\
             <td class=\"num\">{}</td></tr>",
            s.start,
            s.end,
            escape(s.firmware_revision.as_deref().unwrap_or("unknown")),
            s.corrupt_spans.len(),
        );
    }
    out.push_str("</tbody></table>");
}

/// One section per drawn session: a heading, the timeline (drawn by the script) and its events.
fn write_timelines(out: &mut String, file: &FileReport, data: &PageData<'_>) {
    for (s, d) in file.sessions.iter().zip(&data.sessions) {
        let mut title = format!("Session {}", s.index);
        if let Some(craft) = &s.craft_name {
            let _ = write!(title, " — {}", escape(craft));
        }
        let _ = write!(
            out,
            "<section class=\"session\" id=\"session-{0}\"><h3>{title}</h3>\
             <div class=\"timeline\" data-session=\"{0}\"></div>",
            s.index
        );
        if d.markers.is_empty() {
            out.push_str("</section>");
            continue;
        }
        let open = if d.markers.len() <= 24 { " open" } else { "" };
        let _ = write!(
            out,
            "<details class=\"events\"{open}><summary>{} event(s) on the timeline{}</summary>\
             <table><thead><tr><th>flight time</th><th>offset</th><th>event</th></tr></thead><tbody>",
            d.markers.len(),
            if d.markers_omitted > 0 {
                format!(" ({} more not kept)", d.markers_omitted)
            } else {
                String::new()
            }
        );
        for m in &d.markers {
            let _ = write!(
                out,
                "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td><span class=\"mk {}\"></span>{}</td></tr>",
                m.time.map_or_else(|| "—".to_owned(), seconds),
                m.offset,
                m.kind,
                escape(&m.label)
            );
        }
        out.push_str("</tbody></table></details></section>");
    }
}

/// The suspect spans: frames kept whose values a value rule doubts, with what it saw.
fn write_suspect_table(out: &mut String, file: &FileReport) {
    let total = file.suspect_spans.len();
    if total == 0 {
        return;
    }
    let (things, counted) = match file.format == dataflash::report::FORMAT_NAME {
        true => ("Messages", "messages"),
        false => ("Frames", "main frames"),
    };
    let _ = write!(
        out,
        "<section id=\"suspect\"><h2>Suspect spans ({total})</h2><p class=\"note\">{things} read \
         in step and kept in exports and salvage, whose values a value rule doubts \
         (<code>--drop-suspect</code> leaves them out).</p><table class=\"suspect\"><thead><tr>\
         <th>#</th><th>session</th><th>byte range</th><th>rule</th><th>field</th><th>offset</th>\
         <th>threshold</th><th>score</th><th>{counted}</th><th>flight time</th></tr></thead><tbody>"
    );
    for (i, span) in file.suspect_spans.iter().take(MAX_TABLE_SPANS).enumerate() {
        let e = &span.evidence;
        let _ = write!(
            out,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">[{}..{})</td>\
             <td class=\"rule\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{:.2}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            i + 1,
            span.session,
            span.start,
            span.end,
            e.rule.as_str(),
            escape(e.field.as_deref().unwrap_or("")),
            e.offset,
            e.threshold,
            e.score,
            span.frames,
            time_range(span.time_start_us, span.time_end_us),
        );
    }
    out.push_str("</tbody></table></section>");
}

fn write_span_table(out: &mut String, file: &FileReport, data: &[u8]) {
    let total = file.corrupt_spans.len();
    let _ = write!(
        out,
        "<section id=\"spans\"><h2>Corrupt spans ({total})</h2>"
    );
    if total == 0 {
        out.push_str("<p>None: every byte is in an accepted frame or a region that is not damage.</p></section>");
        return;
    }
    // DataFlash messages have no loop iteration to count.
    let blackbox = file.format != dataflash::report::FORMAT_NAME;
    let (thing, counted) = match blackbox {
        true => ("frame", "<th>frames lost</th><th>iterations lost</th>"),
        false => ("message", ""),
    };
    let _ = write!(
        out,
        "<p class=\"note\">Click a row for the bytes around the span (bytes inside it \
         highlighted). Flight time is flight-controller uptime: the last trusted {thing} before \
         the span and the first after it.</p>\
         <table class=\"spans\"><thead><tr><th>#</th><th>session</th><th>byte range</th>\
         <th>bytes</th><th>reason</th>{counted}<th>flight time affected</th></tr></thead><tbody>",
    );
    let columns = if blackbox { 8 } else { 6 };
    for (i, span) in file.corrupt_spans.iter().take(MAX_TABLE_SPANS).enumerate() {
        let time = time_range(span.time_start_us, span.time_end_us);
        let reason = span.reason.as_str();
        let color = REASONS
            .iter()
            .find(|r| r.0 == span.reason)
            .map_or("#000", |r| r.1);
        let lost = match blackbox {
            true => format!(
                "<td class=\"num\">{}</td><td class=\"num\">{}</td>",
                span.frames_lost, span.iterations_lost
            ),
            false => String::new(),
        };
        let _ = write!(
            out,
            "<tr class=\"span-row\" id=\"span-{i}\" tabindex=\"0\" data-span=\"{i}\" \
             data-start=\"{}\" data-end=\"{}\" data-reason=\"{reason}\"><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">[{}..{})</td><td class=\"num\">{}</td>\
             <td><span class=\"sw\" style=\"background:{color}\"></span>{reason}<br>\
             <span class=\"note\">{}</span></td>{lost}<td>{time}</td></tr>",
            span.start,
            span.end,
            i + 1,
            span.session,
            span.start,
            span.end,
            span.end - span.start,
            span.reason.in_words(),
        );
        let _ = write!(
            out,
            "<tr class=\"dump\" id=\"dump-{i}\" hidden><td colspan=\"{columns}\"><pre>{}</pre></td></tr>",
            hexdump_html(data, span)
        );
    }
    out.push_str("</tbody></table>");
    if total > MAX_TABLE_SPANS {
        let _ = write!(
            out,
            "<p class=\"note\">{} more spans are not listed or drawn; \
             <code>bbcheck check --json</code> lists them all.</p>",
            total - MAX_TABLE_SPANS
        );
    }
    out.push_str("</section>");
}

/// The whole page.
fn render(
    out: &mut impl Write,
    checked: &Checked,
    timeline: &Timeline,
    data: &[u8],
) -> io::Result<()> {
    let (file, counted, vehicle) = match checked {
        Checked::Blackbox(report) => (report, "main frames", None),
        Checked::Dataflash(report) => (
            &report.file,
            "messages with TimeUS",
            report.dataflash.vehicle.as_deref(),
        ),
    };
    let page_data = page_data(file, timeline, counted, vehicle);
    let drawn = page_data.sessions.len();
    let mut html = String::with_capacity(64 * 1024);
    let title = escape(&file.path);
    let format = match checked {
        Checked::Blackbox(_) => "Blackbox".to_owned(),
        Checked::Dataflash(report) => match &report.dataflash.vehicle {
            Some(v) => format!("ArduPilot DataFlash ({})", escape(v)),
            None => "ArduPilot DataFlash".to_owned(),
        },
    };
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>bbcheck: {title}</title><style>{STYLE}</style></head><body>\
         <script>{}</script>\
         <ul id=\"script-errors\" hidden></ul>\
         <header><h1>{title}</h1><p class=\"summary\"><span class=\"verdict {verdict}\">{verdict}</span> \
         {format} · {} ({} bytes) · {} session(s) · {} corrupt span(s){}</p>",
        ERROR_HANDLER,
        bytes(file.size),
        file.size,
        file.sessions.len(),
        file.corrupt_spans.len(),
        match file.suspect_spans.len() {
            0 => String::new(),
            n => format!(" · {n} suspect span(s)"),
        },
        verdict = file.verdict,
    );
    if let Checked::Dataflash(report) = checked {
        let df = &report.dataflash;
        let _ = write!(
            html,
            "<p class=\"meta\">firmware: {} · {} messages of {} types in {} bytes · {} formats defined",
            escape(df.firmware.as_deref().unwrap_or("unknown (no MSG message)")),
            df.messages,
            df.counts.len(),
            df.message_bytes,
            df.formats
        );
        if let Some(dropped) = df.logger_dropped.filter(|&d| d > 0) {
            let _ = write!(
                html,
                " · the logger dropped {dropped} messages before writing them"
            );
        }
        html.push_str("</p>");
    }
    html.push_str("</header>");
    html.push_str("<main><section id=\"overview\"><h2>File map</h2><div id=\"file-map\"></div>");
    match checked {
        Checked::Blackbox(_) => write_blackbox_sessions(&mut html, &file.sessions, drawn),
        Checked::Dataflash(_) => write_dataflash_sessions(&mut html, &file.sessions, drawn),
    }
    if file.sessions.len() > drawn {
        let _ = write!(
            html,
            "<p class=\"note\">Timelines are drawn for the first {drawn} of {} sessions.</p>",
            file.sessions.len()
        );
    }
    for problem in file.sessions.iter().flat_map(|s| &s.header_problems) {
        let _ = write!(html, "<p class=\"problem\">header: {}</p>", escape(problem));
    }
    html.push_str("</section>");
    write_legend(&mut html, file);
    html.push_str("<section id=\"timelines\"><h2>Timelines</h2>");
    write_timelines(&mut html, file, &page_data);
    html.push_str("</section>");
    write_span_table(&mut html, file, data);
    write_suspect_table(&mut html, file);
    let _ = write!(
        html,
        "</main><footer>Written by bbcheck check --html. Offsets are absolute byte offsets, \
         ranges half-open.</footer>\
         <script type=\"application/json\" id=\"bbcheck-data\">{}</script>\
         <script>{SCRIPT}</script></body></html>",
        script_json(&page_data)
    );
    html.push('\n');
    out.write_all(html.as_bytes())
}

/// Installed first: a script error is written into the page, where a reader (and a test) sees it.
const ERROR_HANDLER: &str = "window.onerror=function(m,s,l,c){var u=document.getElementById(\
'script-errors');if(!u)return false;var i=document.createElement('li');i.className='script-error';\
i.textContent='script error: '+m+' (line '+l+':'+c+')';u.appendChild(i);u.hidden=false;\
document.documentElement.setAttribute('data-script-errors',String(u.children.length));return false;};";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(escape("plain µs"), "plain µs");
    }

    #[test]
    fn mode_labels_name_the_switches_that_changed() {
        assert_eq!(mode_label(3, Some(1), true), "+ANGLE (flags 0x3)");
        assert_eq!(
            mode_label(0x80001, Some(0x1000_0003), true),
            "+box 19 \u{2212}ANGLE \u{2212}box 28 (flags 0x80001)"
        );
        assert_eq!(mode_label(1, None, true), "ARM (flags 0x1)");
        assert_eq!(mode_label(1, None, false), "box 0 (flags 0x1)");
    }

    #[test]
    fn hexdump_marks_the_bytes_inside_the_span() {
        let data: Vec<u8> = (0u8..=255).collect();
        let span = CorruptSpan {
            start: 52,
            end: 56,
            reason: DamageReason::Garbage,
            session: 1,
            frames_lost: 0,
            iterations_lost: 0,
            time_start_us: None,
            time_end_us: None,
        };
        let html = hexdump_html(&data, &span);
        assert!(html.contains("33<mark> 34 35 36 37</mark> 38"), "{html}");
        assert!(html.contains("span [0x34..0x38), 4 bytes"), "{html}");
        assert!(html.contains("00000020"), "{html}");
        // The ASCII column is escaped.
        assert!(html.contains("&lt;=&gt;"), "{html}");
    }

    #[test]
    fn several_inputs_get_distinct_pages_in_a_directory() {
        let dir = std::env::temp_dir().join(format!("bbcheck-html-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let given = [PathBuf::from("a/log.bbl"), PathBuf::from("b/log.bbl")];
        let inputs = [
            Path::new("a/log.bbl"),
            Path::new("b/log.bbl"),
            Path::new("-"),
        ];
        let pages = page_paths(&dir, &given, &inputs).unwrap();
        assert_eq!(
            pages.pages,
            [
                dir.join("log.bbl.html"),
                dir.join("log.bbl.2.html"),
                dir.join("stdin.html")
            ]
        );
        assert_eq!(pages.index, Some(dir.join("index.html")));
        assert!(dir.is_dir());
        // One file: the target is the page, unless it is a directory; no index either way.
        let one = [PathBuf::from("x.bbl")];
        let page = dir.join("report.html");
        let single = page_paths(&page, &one, &[Path::new("x.bbl")]).unwrap();
        assert_eq!((single.pages, single.index), (vec![page], None));
        let into = page_paths(&dir, &one, &[Path::new("x.bbl")]).unwrap();
        assert_eq!(
            (into.pages, into.index),
            (vec![dir.join("x.bbl.html")], None)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
