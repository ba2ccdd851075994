//! `bbcheck info`: what a log says about the craft and its flights: firmware, board, craft name,
//! PID and rate settings, duration, and (on request) every header line or parameter.

use super::{Detected, Error, LogFormat, exit_once_written, input, terminal};
use crate::blackbox::header::{Firmware, Header};
use crate::blackbox::{self, sink::Discard};
use crate::dataflash::fmt::Role;
use crate::dataflash::message::Text;
use crate::dataflash::{self, Message};
use crate::report::{FileReport, SessionReport};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Log file to describe (`-` reads standard input).
    file: PathBuf,
    /// Print one JSON document instead of text (it always holds every header line or
    /// parameter).
    #[arg(long)]
    json: bool,
    /// Also print every header line (Blackbox) or every parameter and MSG text (DataFlash).
    #[arg(long, conflicts_with = "json")]
    all: bool,
    /// Read the file as this format instead of deciding from its content.
    #[arg(long, value_enum, default_value_t)]
    format: LogFormat,
    /// Exit 1 when the log is damaged; without it `info` exits 0 once it has described it.
    #[arg(long)]
    fail_on_damage: bool,
}

/// Blackbox header lines that hold PID gains, in the order shown.
const BLACKBOX_PIDS: &[&str] = &[
    "rollPID",
    "pitchPID",
    "yawPID",
    "levelPID",
    "d_min",
    "d_max",
    "ff_weight",
    "feedforward_weight",
];

/// Blackbox header lines that shape the sticks' rates, in the order shown.
const BLACKBOX_RATES: &[&str] = &[
    "rates_type",
    "rc_rates",
    "rcRate",
    "rc_rate",
    "rcYawRate",
    "rc_expo",
    "rcExpo",
    "rcYawExpo",
    "rc_yaw_expo",
    "rates",
    "rate_limits",
    "thr_mid",
    "thrMid",
    "thr_expo",
    "thrExpo",
    "tpa_rate",
    "tpa_breakpoint",
];

/// Where an ArduPilot rate-controller gain (copter `ATC_RAT_*`, before 3.4 `RATE_*`; plane
/// `*_RATE_*`, before 4.1 `RLL2SRV_*` and `PTCH2SRV_*`) sorts: roll, pitch, yaw, each P, I, D,
/// FF; `None` for other parameters.
fn dataflash_pid_order(name: &str) -> Option<(usize, usize)> {
    const AXES: [&[&str]; 3] = [
        &["ATC_RAT_RLL_", "RLL_RATE_", "RATE_RLL_", "RLL2SRV_"],
        &["ATC_RAT_PIT_", "PTCH_RATE_", "RATE_PIT_", "PTCH2SRV_"],
        &["ATC_RAT_YAW_", "YAW_RATE_", "RATE_YAW_"],
    ];
    AXES.iter().enumerate().find_map(|(axis, prefixes)| {
        let gain = prefixes.iter().find_map(|p| name.strip_prefix(p))?;
        let gain = ["P", "I", "D", "FF"].iter().position(|g| *g == gain)?;
        Some((axis, gain))
    })
}

/// ArduPilot parameters that shape the sticks' rates.
fn is_dataflash_rate(name: &str) -> bool {
    name.starts_with("ACRO_") && (name.ends_with("_RATE") || name.ends_with("_EXPO"))
        || name.starts_with("ATC_RATE_") && name.ends_with("_MAX")
        || name == "ATC_INPUT_TC"
}

/// `rates_type` values as Betaflight names them.
fn rates_type_name(value: &str) -> Option<&'static str> {
    Some(match value.trim() {
        "0" => "BETAFLIGHT",
        "1" => "RACEFLIGHT",
        "2" => "KISS",
        "3" => "ACTUAL",
        "4" => "QUICK",
        _ => return None,
    })
}

/// A named setting as the log stores it.
#[derive(Debug, Serialize)]
struct Setting {
    name: String,
    value: String,
}

/// What `info` says about one file.
#[derive(Debug, Serialize)]
struct FileInfo {
    path: String,
    size: u64,
    format: &'static str,
    verdict: &'static str,
    sessions: Vec<SessionInfo>,
}

/// What `info` says about one session (Blackbox) or log (DataFlash).
#[derive(Debug, Serialize)]
struct SessionInfo {
    index: usize,
    start: u64,
    end: u64,
    /// Firmware as the log names it (Blackbox `Firmware revision`, DataFlash first MSG).
    firmware: Option<String>,
    /// Blackbox: `betaflight`, `inav`, `cleanflight` or `unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    firmware_kind: Option<Firmware>,
    firmware_date: Option<String>,
    board: Option<String>,
    craft_name: Option<String>,
    /// Wall-clock start as the flight controller recorded it (Blackbox `Log start datetime`).
    log_start: Option<String>,
    first_time_us: Option<u64>,
    last_time_us: Option<u64>,
    duration_us: Option<u64>,
    /// Blackbox main frames accepted (I and P).
    #[serde(skip_serializing_if = "Option::is_none")]
    main_frames: Option<u64>,
    /// Blackbox: the mean time between logged loop iterations.
    #[serde(skip_serializing_if = "Option::is_none")]
    loop_time_us: Option<f64>,
    /// Blackbox: the mean time between logged main frames (frames lost to damage counted), one
    /// loop in several when the log keeps fewer.
    #[serde(skip_serializing_if = "Option::is_none")]
    frame_interval_us: Option<f64>,
    corrupt_spans: usize,
    pids: Vec<Setting>,
    rates: Vec<Setting>,
    /// Blackbox: every header line, in file order.
    #[serde(skip_serializing_if = "Option::is_none")]
    headers: Option<Vec<Setting>>,
    /// DataFlash: every parameter (PARM), its last value in the log.
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<BTreeMap<String, f64>>,
    /// DataFlash: the text of MSG messages, in file order (at most [`MAX_MESSAGES`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    messages: Option<Vec<String>>,
}

/// MSG texts kept per DataFlash log.
const MAX_MESSAGES: usize = 200;
/// Parameters kept per DataFlash log (ArduPilot has about 1500).
const MAX_PARAMETERS: usize = 20_000;

impl SessionInfo {
    fn new(report: &SessionReport) -> SessionInfo {
        SessionInfo {
            index: report.index,
            start: report.start,
            end: report.end,
            firmware: report.firmware_revision.clone(),
            firmware_kind: None,
            firmware_date: None,
            board: None,
            craft_name: report.craft_name.clone(),
            log_start: None,
            first_time_us: report.first_time_us,
            last_time_us: report.last_time_us,
            duration_us: report.duration_us,
            main_frames: None,
            loop_time_us: None,
            frame_interval_us: None,
            corrupt_spans: report.corrupt_spans.len(),
            pids: Vec::new(),
            rates: Vec::new(),
            headers: None,
            parameters: None,
            messages: None,
        }
    }

    fn blackbox(report: &SessionReport, header: &Header) -> SessionInfo {
        let text = |name: &str| {
            header
                .get(name)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let pick = |names: &[&str]| {
            names
                .iter()
                .filter_map(|&name| {
                    header.get(name).map(|value| Setting {
                        name: name.to_owned(),
                        value: value.to_owned(),
                    })
                })
                .collect()
        };
        SessionInfo {
            firmware_kind: Some(header.firmware),
            firmware_date: text("Firmware date"),
            board: text("Board information"),
            // Flight controllers without a clock write the year 0.
            log_start: text("Log start datetime").filter(|t| !t.starts_with("0000-")),
            main_frames: Some(report.frames.i + report.frames.p),
            loop_time_us: report.loop_time_us,
            frame_interval_us: {
                let lost: u64 = report.corrupt_spans.iter().map(|c| c.frames_lost).sum();
                let logged = report.frames.i + report.frames.p + lost;
                report
                    .duration_us
                    .filter(|_| logged > 1)
                    .map(|d| d as f64 / (logged - 1) as f64)
            },
            pids: pick(BLACKBOX_PIDS),
            rates: pick(BLACKBOX_RATES),
            headers: Some(
                header
                    .lines
                    .iter()
                    .map(|l| Setting {
                        name: l.name.clone(),
                        value: l.value.clone(),
                    })
                    .collect(),
            ),
            ..SessionInfo::new(report)
        }
    }

    fn dataflash(
        report: &SessionReport,
        parameters: BTreeMap<String, f64>,
        messages: Vec<String>,
    ) -> SessionInfo {
        let setting = |(name, value): (&String, &f64)| Setting {
            name: name.clone(),
            value: value.to_string(),
        };
        let mut pids: Vec<_> = parameters
            .iter()
            .filter_map(|p| Some((dataflash_pid_order(p.0)?, setting(p))))
            .collect();
        pids.sort_by_key(|(order, _)| *order);
        let rates = parameters
            .iter()
            .filter(|(name, _)| is_dataflash_rate(name))
            .map(setting)
            .collect();
        SessionInfo {
            pids: pids.into_iter().map(|(_, s)| s).collect(),
            rates,
            parameters: Some(parameters.clone()),
            messages: Some(messages),
            ..SessionInfo::new(report)
        }
    }
}

impl FileInfo {
    fn new(report: &FileReport, sessions: Vec<SessionInfo>) -> FileInfo {
        FileInfo {
            path: report.path.clone(),
            size: report.size,
            format: report.format,
            verdict: report.verdict,
            sessions,
        }
    }
}

/// Collects, per DataFlash log, its parameters and MSG texts.
#[derive(Default)]
struct DataflashSettings {
    logs: Vec<(BTreeMap<String, f64>, Vec<String>)>,
}

impl dataflash::Sink for DataflashSettings {
    fn message(&mut self, message: &Message<'_>) {
        if self.logs.is_empty() {
            self.logs.push(Default::default());
        }
        let (parameters, messages) = self.logs.last_mut().expect("one log at least");
        match message.format.role {
            Role::Msg if messages.len() < MAX_MESSAGES => {
                if let Some(text) = message.fields().find_map(|v| v.as_text()) {
                    messages.push(Text::new(text).to_string());
                }
            }
            Role::Data if message.format.name == "PARM" => {
                let column = |name| message.format.columns.iter().position(|c| c == name);
                let (Some(n), Some(v)) = (column("Name"), column("Value")) else {
                    return;
                };
                let name = message.fields().nth(n).and_then(|v| v.as_text());
                let value = message.fields().nth(v).and_then(|v| v.as_float());
                if let (Some(name), Some(value)) = (name, value) {
                    let name = Text::new(name).to_string();
                    if parameters.len() < MAX_PARAMETERS || parameters.contains_key(&name) {
                        parameters.insert(name, shortest(value));
                    }
                }
            }
            _ => {}
        }
    }

    fn session(&mut self, _offset: u64) {
        self.logs.push(Default::default());
    }
}

/// A parameter value as ArduPilot stores it (a 32-bit float), without the digits widening it to
/// 64 bits would add (0.135, not 0.13500000536441803).
fn shortest(value: f64) -> f64 {
    let narrow = value as f32;
    if f64::from(narrow) == value {
        narrow.to_string().parse().unwrap_or(value)
    } else {
        value
    }
}

fn describe(path: &Path, data: &[u8], format: LogFormat) -> Result<FileInfo, Error> {
    let name = input::name(path);
    if super::detect(path, data, format)? == Detected::Dataflash {
        let mut settings = DataflashSettings::default();
        let report = dataflash::decode(&name, data, &mut settings);
        let mut logs = settings.logs.into_iter();
        let sessions = report
            .file
            .sessions
            .iter()
            .map(|s| {
                let (parameters, messages) = logs.next().unwrap_or_default();
                SessionInfo::dataflash(s, parameters, messages)
            })
            .collect();
        return Ok(FileInfo::new(&report.file, sessions));
    }
    if !blackbox::is_blackbox(data) {
        return Err(Error::not_a_blackbox_log(path, data));
    }
    let mut headers = Vec::new();
    let report = blackbox::decode(
        &name,
        data,
        |session, _: &mut Discard| headers.push(session.header.clone()),
        &mut Discard,
    );
    let sessions = report
        .sessions
        .iter()
        .zip(&headers)
        .map(|(s, h)| SessionInfo::blackbox(s, h))
        .collect();
    Ok(FileInfo::new(&report, sessions))
}

/// Seconds to the millisecond, and minutes when there are any: `192.512 s (3:12.512)`.
fn duration(us: u64) -> String {
    let ms = us.saturating_add(500) / 1000;
    let seconds = format!("{}.{:03} s", ms / 1000, ms % 1000);
    if ms < 60_000 {
        return seconds;
    }
    format!(
        "{seconds} ({}:{:02}.{:03})",
        ms / 60_000,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// `name value` pairs on lines under a label, wrapped before 100 columns.
fn write_settings(out: &mut impl Write, label: &str, settings: &[Setting]) -> io::Result<()> {
    let mut line = String::new();
    let mut first = true;
    for s in settings {
        let mut item = format!("{} {}", s.name, s.value);
        if s.name == "rates_type"
            && let Some(name) = rates_type_name(&s.value)
        {
            item = format!("{item} ({name})");
        }
        if !line.is_empty() && line.len() + 2 + item.len() > 84 {
            writeln!(out, "  {:12} {line}", if first { label } else { "" })?;
            first = false;
            line.clear();
        }
        if !line.is_empty() {
            line.push_str("  ");
        }
        line.push_str(&item);
    }
    if !line.is_empty() {
        writeln!(out, "  {:12} {line}", if first { label } else { "" })?;
    }
    Ok(())
}

fn write_human(out: &mut impl Write, info: &FileInfo, all: bool) -> io::Result<()> {
    let kind = match info.format {
        "blackbox" => "Blackbox log",
        _ => "ArduPilot DataFlash log",
    };
    let (unit, units) = match info.format {
        "blackbox" => ("session", "sessions"),
        _ => ("log", "logs"),
    };
    let n = info.sessions.len();
    writeln!(
        out,
        "{}: {kind}, {} bytes, {n} {}, {}",
        info.path,
        info.size,
        if n == 1 { unit } else { units },
        info.verdict
    )?;
    for s in &info.sessions {
        writeln!(out, "{unit} {} [{}..{})", s.index, s.start, s.end)?;
        let row = |out: &mut dyn Write, label: &str, value: &Option<String>| match value {
            Some(v) => writeln!(out, "  {label:12} {v}"),
            None => Ok(()),
        };
        let firmware = match (&s.firmware, &s.firmware_date) {
            (Some(f), Some(d)) => Some(format!("{f}, built {d}")),
            (f, _) => f.clone().or_else(|| Some("unknown".into())),
        };
        row(out, "firmware", &firmware)?;
        row(out, "board", &s.board)?;
        row(out, "craft", &s.craft_name)?;
        row(out, "started", &s.log_start)?;
        let mut duration = match s.duration_us {
            Some(d) => duration(d),
            None => "unknown (no timed frame)".into(),
        };
        if let Some(frames) = s.main_frames {
            duration.push_str(&format!(", {frames} main frames"));
        }
        if let Some(every) = s.frame_interval_us {
            duration.push_str(&format!(", one every {every:.1} µs"));
        }
        if let Some(l) = s.loop_time_us {
            duration.push_str(&format!(" (loop {l:.1} µs)"));
        }
        if s.corrupt_spans > 0 {
            duration.push_str(&format!(
                "; {} corrupt span(s): see bbcheck check",
                s.corrupt_spans
            ));
        }
        writeln!(out, "  {:12} {duration}", "duration")?;
        write_settings(out, "PIDs", &s.pids)?;
        write_settings(out, "rates", &s.rates)?;
        if let Some(parameters) = &s.parameters {
            writeln!(out, "  {:12} {}", "parameters", parameters.len())?;
        }
        if !all {
            continue;
        }
        if let Some(headers) = &s.headers {
            writeln!(out, "  headers:")?;
            for h in headers {
                writeln!(out, "    {}:{}", h.name, h.value)?;
            }
        }
        if let Some(messages) = &s.messages {
            writeln!(out, "  messages:")?;
            for m in messages {
                writeln!(out, "    {m}")?;
            }
        }
        if let Some(parameters) = &s.parameters {
            writeln!(out, "  parameters:")?;
            for (name, value) in parameters {
                writeln!(out, "    {name} {value}")?;
            }
        }
    }
    Ok(())
}

pub fn run(args: &Args) -> Result<u8, Error> {
    let data = input::open(&args.file)?;
    let info = describe(&args.file, &data, args.format)?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let written = if args.json {
        serde_json::to_writer(&mut out, &info)
            .map_err(io::Error::from)
            .and_then(|()| writeln!(out))
    } else if terminal::quiet() {
        // Only what is wrong: a line for a damaged log.
        match info.verdict {
            "damaged" => writeln!(
                out,
                "{}: damaged (bbcheck check {} lists where)",
                info.path, info.path
            ),
            _ => Ok(()),
        }
    } else {
        out.write_all(data.restored_note().as_bytes())
            .and_then(|()| write_human(&mut out, &info, args.all))
    };
    written
        .and_then(|()| out.flush())
        .map_err(|e| Error::io(Path::new("<stdout>"), e))?;
    // Values in doubt are not damage: a suspect log exits as a clean one.
    Ok(exit_once_written(
        info.verdict == "damaged",
        args.fail_on_damage,
    ))
}
