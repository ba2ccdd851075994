"""Check and export a fleet's flight logs on a Dask cluster, then ask DuckDB about all flights.

    python fleet.py OUT LOGS...                       # a local cluster of two worker processes
    python fleet.py OUT LOGS... --scheduler tcp://scheduler:8786

Each worker checks a log (`bbcheck.check`) and exports its Parquet tables (`bbcheck.export`)
into OUT/<the log's path from the folder holding its LOGS>/ (OUT/blackbox/a.bbl/ for a.bbl in
LOGS .../blackbox); OUT/sessions.parquet gets a row per flight (session) of every log. LOGS and
OUT are paths or fsspec URLs: with `s3fs` installed on the client and the workers,
`s3://bucket/logs` and `s3://bucket/fleet` run the same code on a real cluster: each worker
copies its log to a local scratch file, which bbcheck maps, and uploads the tables; DuckDB reads
them through the same filesystem. Files that hold no log are skipped.
"""

import argparse
import os
import posixpath
import tempfile

import duckdb
import fsspec
from fsspec.implementations.local import LocalFileSystem
import pyarrow
import pyarrow.parquet
from dask.distributed import Client, LocalCluster

import bbcheck


def process(url, out_url):
    """Check the log at `url` and export its Parquet tables under `out_url`; its report, or None
    when the file holds no log. Runs on a worker."""
    fs, path = fsspec.core.url_to_fs(url)
    out_fs, out = fsspec.core.url_to_fs(out_url)
    with tempfile.TemporaryDirectory(prefix="fleet-") as scratch:
        local = path
        if not isinstance(fs, LocalFileSystem):
            local = os.path.join(scratch, posixpath.basename(path))
            fs.get(path, local)
        try:
            report = bbcheck.check(local)
        except bbcheck.Error:
            return None
        tables = os.path.join(scratch, "tables")
        bbcheck.export(local, tables, "parquet")
        out_fs.makedirs(out, exist_ok=True)
        for name in sorted(os.listdir(tables)):
            out_fs.put(os.path.join(tables, name), posixpath.join(out, name))
    report["path"] = url
    return report


def firmware(session):
    """A session's firmware family: Betaflight, INAV, … or the ArduPilot vehicle."""
    if session["firmware"] != "unknown":
        return session["firmware"]
    return (session["firmware_revision"] or "unknown").split(" ")[0]


def flights(reports):
    """One row per session: the log, its firmware, how long it flew, and the flight time its
    corrupt spans cost."""
    rows = []
    for report in reports:
        for session in report["sessions"]:
            lost = sum(
                span["time_end_us"] - span["time_start_us"]
                for span in report["corrupt_spans"]
                if span["session"] == session["index"]
                and span.get("time_start_us") is not None
                and span.get("time_end_us") is not None
            )
            rows.append({
                "path": report["path"],
                "format": report["format"],
                "session": session["index"],
                "firmware": firmware(session),
                "revision": session["firmware_revision"],
                "verdict": report["verdict"],
                "flown_s": (session["duration_us"] or 0) / 1e6,
                "lost_s": lost / 1e6,
            })
    return rows


def logs(urls):
    """Every file under each of `urls`, with the directory its tables go to: its path from the
    folder holding that URL (`blackbox/a.bbl` for a file found under `.../blackbox`, `a.bbl` for
    the file `.../a.bbl` itself)."""
    found = []
    for url in urls:
        fs, root = fsspec.core.url_to_fs(url)
        parent = posixpath.dirname(root.rstrip("/"))
        # `find` gives a file itself as well as every file under a folder.
        for path in sorted(fs.find(root)):
            found.append((fs.unstrip_protocol(path), posixpath.relpath(path, parent)))
    return found


def run(out_url, log_urls, client):
    """Process every log on the cluster of `client`; write OUT/sessions.parquet and return the
    reports."""
    found = logs(log_urls)
    futures = client.map(
        process,
        [url for url, _ in found],
        [posixpath.join(out_url, relative) for _, relative in found],
    )
    reports = [r for r in client.gather(futures) if r is not None]
    table = pyarrow.Table.from_pylist(flights(reports))
    out_fs, out = fsspec.core.url_to_fs(out_url)
    out_fs.makedirs(out, exist_ok=True)
    with out_fs.open(posixpath.join(out, "sessions.parquet"), "wb") as f:
        pyarrow.parquet.write_table(table, f)
    return reports


def summary(out_url):
    """The share of flight time lost per firmware, and the frames of every flight: DuckDB over the
    Parquet files (those in object storage read through the same fsspec filesystem)."""
    db = duckdb.connect()
    out_fs, _ = fsspec.core.url_to_fs(out_url)
    if not isinstance(out_fs, LocalFileSystem):
        db.register_filesystem(out_fs)
    lost = db.execute(f"""
        SELECT firmware, count(*) AS flights, sum(flown_s) AS flown_s,
               sum(lost_s) / sum(flown_s) AS share_lost
        FROM read_parquet('{out_url}/sessions.parquet')
        GROUP BY firmware ORDER BY firmware""").fetchall()
    frames = db.execute(f"""
        SELECT count(*) AS frames, count(*) FILTER (WHERE trust = 'suspect') AS suspect
        FROM read_parquet('{out_url}/**/*.main.parquet', union_by_name = true)""").fetchall()[0]
    return lost, frames


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", help="directory or URL for the tables")
    parser.add_argument("logs", nargs="+", help="log files or directories (paths or URLs)")
    parser.add_argument("--scheduler", help="address of a running Dask scheduler")
    args = parser.parse_args(argv)
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        client = Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=True))
    with client:
        reports = run(args.out, args.logs, client)
    lost, (frames, suspect) = summary(args.out)
    print(f"{len(reports)} logs, {frames} main frames ({suspect} suspect)")
    print(f"{'firmware':12} {'flights':>7} {'flown s':>9} {'lost %':>7}")
    for name, count, flown, share in lost:
        print(f"{name:12} {count:7} {flown:9.1f} {100 * (share or 0):7.3f}")


if __name__ == "__main__":
    main()
