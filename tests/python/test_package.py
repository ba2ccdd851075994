"""The Python package against the command line: `check` gives the report `bbcheck check --json`
prints, `frames` and `messages` the frames and messages of `export --jsonl` (and pymavlink's
values), `salvage` the same bytes and summary as `bbcheck salvage`; errors are `bbcheck.Error`
with the command line's message; the work runs with the interpreter released.

Run by tests/suite/python_package.rs with BBCHECK_BIN (the command line) and BBCHECK_CORPUS.
"""

import concurrent.futures
import json
import os
import subprocess
import threading
from pathlib import Path

import pyarrow
import pytest
from pymavlink import DFReader

import bbcheck

BIN = os.environ["BBCHECK_BIN"]
CORPUS = Path(os.environ["BBCHECK_CORPUS"]) / "real"
BLACKBOX = sorted((CORPUS / "blackbox").iterdir())
DATAFLASH = sorted((CORPUS / "ardupilot").iterdir())
# Three sessions, suspect frames in a damaged one, GPS frames; a damaged Cleanflight log.
BUCKSAW = CORPUS / "blackbox" / "betaflight-4.5.3-bucksaw-btfl_005.bbl"
CLEANFLIGHT = CORPUS / "blackbox" / "cleanflight-1.6.0-propwash-LOG00568.TXT"
PLANE = CORPUS / "ardupilot" / "ardupilot-plane-4.2.3-flightdata-center_0003.bin"


def command(*args):
    return subprocess.run([BIN, *map(str, args)], capture_output=True, check=False)


def jsonl(path, *args):
    out = command("export", path, "--jsonl", *args)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.mark.parametrize("path", BLACKBOX + DATAFLASH, ids=lambda p: p.name)
def test_check_is_the_reports_json(path):
    out = command("check", "--json", path)
    assert out.returncode in (0, 1), out.stderr
    assert bbcheck.check(path) == json.loads(out.stdout)


def test_check_of_a_damaged_copy(tmp_path):
    damaged = tmp_path / "damaged.bbl"
    assert command("damage", BUCKSAW, "-o", damaged, "--model", "drop-bytes", "--seed", "3").returncode == 0
    report = bbcheck.check(damaged)
    assert report["verdict"] == "damaged" and report["corrupt_spans"]
    assert report == json.loads(command("check", "--json", damaged).stdout)


def frame_rows(records, kind):
    kinds = {"main": ("I", "P"), "slow": ("S",), "gps": ("G",), "home": ("H",)}[kind]
    rows = []
    for r in records:
        if r["type"] in kinds:
            rows.append((r["session"], r["offset"], r["type"], r.get("trust", "trusted"), r["values"]))
    return rows


@pytest.mark.parametrize("kind", ["main", "gps", "slow"])
def test_frames_are_those_of_json_lines(kind):
    table = bbcheck.frames(BUCKSAW, kind=kind)
    expected = frame_rows(jsonl(BUCKSAW), kind)
    assert table.num_rows == len(expected) > 0
    assert table.column_names[0] == "session"
    columns = table.to_pydict()
    fields = [n for n in table.column_names if n not in ("session", "type", "offset", "trust")]
    got = [
        (columns["session"][i], columns["offset"][i],
         columns["type"][i] if kind == "main" else {"gps": "G", "slow": "S"}[kind],
         columns["trust"][i], [columns[f][i] for f in fields])
        for i in range(table.num_rows)
    ]
    assert got == expected


def test_frames_of_one_session_keep_its_header():
    table = bbcheck.frames(BUCKSAW, session=2)
    assert set(table.column("session").to_pylist()) == {2}
    metadata = table.schema.metadata
    assert b"Firmware revision" in metadata and b"Field I name" in metadata
    assert table.schema.field("time").type == pyarrow.int64()
    assert table.schema.field("loopIteration").type == pyarrow.uint32()


def test_suspect_frames_are_marked_or_dropped():
    trust = bbcheck.frames(CLEANFLIGHT).column("trust").to_pylist()
    dropped = bbcheck.frames(CLEANFLIGHT, drop_suspect=True)
    assert dropped.column("trust").to_pylist() == ["trusted"] * dropped.num_rows
    assert dropped.num_rows == trust.count("trusted")


def test_a_kind_the_log_lacks_is_an_empty_table():
    table = bbcheck.frames(CLEANFLIGHT, kind="gps")
    assert table.num_rows == 0


def test_events():
    table = bbcheck.frames(BUCKSAW, kind="events")
    events = [(r["session"], r["offset"], r["name"], r["data"])
              for r in jsonl(BUCKSAW) if r["type"] == "E"]
    columns = table.to_pydict()
    got = [(s, o, n, json.loads(d)) for s, o, n, d in
           zip(columns["session"], columns["offset"], columns["name"], columns["data"])]
    assert got == events and len(events) > 3


def pymavlink_values(path, type, column):
    reader = DFReader.DFReader_binary(str(path), zero_time_base=False)
    values = []
    while (message := reader.recv_match(type=type)) is not None:
        values.append(getattr(message, column))
    return values


@pytest.mark.parametrize("path", DATAFLASH[:4] + [PLANE], ids=lambda p: p.name)
def test_messages_are_scaled_as_pymavlink_reads_them(path):
    for type, column in (("ATT", "Roll"), ("GPS", "Lat")):
        table = bbcheck.messages(path, type)
        expected = pymavlink_values(path, type, column)
        if not expected:
            continue
        assert table.column(column).to_pylist() == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_messages_stored_and_their_units():
    scaled = bbcheck.messages(PLANE, "ATT")
    raw = bbcheck.messages(PLANE, "ATT", raw=True)
    field = scaled.schema.field("Roll")
    assert field.metadata[b"unit"] == b"deg" and field.metadata[b"format"] == b"c"
    assert raw.column("Roll").to_pylist() == [
        round(v * 100) for v in scaled.column("Roll").to_pylist()]
    assert bbcheck.messages(PLANE, "NOSUCHTYPE").num_rows == 0


def test_salvage_writes_what_the_command_writes(tmp_path):
    ours, theirs = tmp_path / "ours.bbl", tmp_path / "theirs.bbl"
    summary = bbcheck.salvage(CLEANFLIGHT, ours)
    out = command("salvage", CLEANFLIGHT, "-o", theirs, "--json")
    assert out.returncode == 0, out.stderr
    assert ours.read_bytes() == theirs.read_bytes()
    expected = json.loads(out.stdout)
    expected["outputs"][0]["path"] = str(ours)
    assert summary == expected
    assert summary["dropped"], "the damaged log loses a span"


def test_errors_name_the_file_and_write_nothing(tmp_path):
    not_a_log = tmp_path / "notes.txt"
    not_a_log.write_text("hello\n")
    with pytest.raises(bbcheck.Error, match=r"notes\.txt: offset 0: not a Blackbox log") as e:
        bbcheck.check(not_a_log)
    assert e.value.exit_code == 2
    with pytest.raises(bbcheck.Error, match="No such file"):
        bbcheck.frames(tmp_path / "missing.bbl")
    with pytest.raises(bbcheck.Error, match="there is no session 9"):
        bbcheck.salvage(BUCKSAW, tmp_path / "out.bbl", session=9)
    with pytest.raises(bbcheck.Error):
        bbcheck.messages(BUCKSAW, "ATT")
    with pytest.raises(ValueError):
        bbcheck.frames(BUCKSAW, kind="motors")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_export_writes_the_commands_files(tmp_path):
    bbcheck.export(BUCKSAW, tmp_path / "ours", "parquet")
    assert command("export", BUCKSAW, "--parquet", "-o", tmp_path / "theirs").returncode == 0
    ours = sorted(p.name for p in (tmp_path / "ours").iterdir())
    assert ours == sorted(p.name for p in (tmp_path / "theirs").iterdir())
    assert f"{BUCKSAW.stem}.01.main.parquet" in ours


def test_the_interpreter_runs_while_a_log_is_read(tmp_path):
    # A log read for long enough that a thread held back by the interpreter lock would show.
    big = tmp_path / "big.bbl"
    big.write_bytes(BUCKSAW.read_bytes() * 20)
    counted, running = [0], threading.Event()
    done = threading.Event()

    def count():
        running.set()
        while not done.is_set():
            counted[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    running.wait()
    before = counted[0]
    report = bbcheck.check(big)
    during = counted[0] - before
    done.set()
    counter.join()
    assert len(report["sessions"]) == 60
    assert during > 10_000, f"the counting thread ran {during} times while the log was read"


def test_threads_give_the_same_reports():
    paths = BLACKBOX + DATAFLASH
    alone = [bbcheck.check(p) for p in paths]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert list(pool.map(bbcheck.check, paths)) == alone
