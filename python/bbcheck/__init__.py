"""Diagnose, salvage and export damaged flight logs: Betaflight, INAV, Cleanflight and their
forks' Blackbox logs, ArduPilot DataFlash logs.

    import bbcheck
    report = bbcheck.check("LOG00001.BFL")           # what `bbcheck check --json` prints
    main = bbcheck.frames("LOG00001.BFL", session=1)  # I and P frames as a pyarrow.Table
    att = bbcheck.messages("00000042.BIN", "ATT")    # ATT messages as a pyarrow.Table
    bbcheck.salvage("damaged.bbl", "salvaged.bbl")   # the trusted frames, as a clean log

Each call does its work with the interpreter released, so threads check and read files in
parallel. Tables are those of `bbcheck export --parquet`: columns typed as the log declares them,
then `offset` (of the frame or message in the file) and `trust` (`trusted` or `suspect`).
A log that cannot be read raises `bbcheck.Error`, whose message names the file and the offset.
"""

import json
import os
import re
import tempfile

import pyarrow
import pyarrow.parquet

from bbcheck._native import Error
from bbcheck import _native

__all__ = ["Error", "check", "frames", "messages", "salvage", "export"]

KINDS = ("main", "slow", "gps", "home", "events")


def check(path, format="auto"):
    """The report of `bbcheck check --json` for one file, as a dict: its verdict, sessions,
    corrupt and suspect spans and the flight time they cost. `format`: "auto", "blackbox" or
    "dataflash"."""
    return json.loads(_native.check(os.fspath(path), format))


def export(path, directory, format="parquet", *, session=None, drop_suspect=False, raw=False,
           types=None):
    """Write the files `bbcheck export --parquet` (or "csv", "mcap") writes for one log into
    `directory` (created if missing); nothing is written when the log cannot be read."""
    if format not in ("parquet", "csv", "mcap"):
        raise ValueError(f"format {format!r}: parquet, csv or mcap")
    options = _options(session=session, drop_suspect=drop_suspect, raw=raw, types=types)
    _native.export([f"--{format}", "-o", os.fspath(directory), os.fspath(path), *options])


def _options(**options):
    """Command-line options from keyword arguments: `drop_suspect=True` is `--drop-suspect`,
    `session=2` is `--session 2`, a list is comma-separated; None and False give nothing."""
    args = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(value)]
        elif value is not None and value is not False:
            args += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return args


def _tables(path, args, wanted=re.compile(r".*")):
    """The Parquet tables `export` writes for `path` with `args` whose file name matches `wanted`,
    read into memory, by the match."""
    with tempfile.TemporaryDirectory(prefix="bbcheck-") as directory:
        _native.export(["--parquet", "-o", directory, os.fspath(path), *args])
        return [
            (match, pyarrow.parquet.read_table(os.path.join(directory, name)))
            for name in sorted(os.listdir(directory))
            if (match := wanted.search(name))
        ]


def _with_session(table, session):
    return table.add_column(0, "session", pyarrow.repeat(pyarrow.scalar(session, pyarrow.uint16()),
                                                         table.num_rows))


def frames(path, session=None, kind="main", *, drop_suspect=False):
    """The frames of a Blackbox log as a pyarrow.Table: `kind` "main" (I and P frames), "slow",
    "gps", "home" or "events"; of one session (from 1) or of all, a `session` column first.
    Suspect frames are kept (their `trust` says so) unless `drop_suspect`. One session's table
    keeps its header lines as the schema's metadata; a log without such frames gives an empty
    table."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}: one of {', '.join(KINDS)}")
    args = _options(format="blackbox", session=session, drop_suspect=drop_suspect)
    wanted = re.compile(rf"\.(\d+)\.{kind}\.parquet$")
    found = [_with_session(table, int(match.group(1)))
             for match, table in _tables(path, args, wanted)]
    if not found:
        return pyarrow.table({"session": pyarrow.array([], pyarrow.uint16())})
    if len(found) == 1:
        return found[0]
    return pyarrow.concat_tables(
        [t.replace_schema_metadata(None) for t in found], promote_options="default")


def messages(path, type, *, raw=False, drop_suspect=False):
    """The messages of one type of a DataFlash log as a pyarrow.Table, values scaled as pymavlink
    shows them (stored as written with `raw`), then `session`, `offset` and `trust`; each column's
    metadata holds its format character, unit and multiplier. A type the log redefines gives the
    rows of both layouts; one the log lacks, an empty table."""
    args = _options(types=type, raw=raw, drop_suspect=drop_suspect)
    found = [table for _, table in _tables(path, args)]
    if not found:
        return pyarrow.table({})
    if len(found) == 1:
        return found[0]
    return pyarrow.concat_tables(found, promote_options="default")


def salvage(src, dst, *, session=None, split=False, drop_suspect=False, header_from=None,
            fmt_from=None):
    """Write the trusted frames (and suspect ones, unless `drop_suspect`) of the log `src` to
    `dst` as a clean log, as `bbcheck salvage` does; returns its JSON summary as a dict. `dst` is
    written whole or not at all; `src` is never changed."""
    options = _options(session=session, split=split, drop_suspect=drop_suspect,
                       header_from=header_from, fmt_from=fmt_from)
    _code, printed = _native.salvage([os.fspath(src), "-o", os.fspath(dst), "--json", *options])
    return json.loads(printed)
