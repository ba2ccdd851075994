"""python/examples/fleet.py, the fleet example of the docs, on a local Dask cluster of two worker
processes over the real corpus: the same reports as `bbcheck check --json`, and its Parquet
outputs read by DuckDB as one dataset."""

import importlib.util
import json
import logging
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from dask.distributed import Client, LocalCluster

BIN = os.environ["BBCHECK_BIN"]
CORPUS = Path(os.environ["BBCHECK_CORPUS"]) / "real"
EXAMPLE = Path(__file__).parents[2] / "python" / "examples" / "fleet.py"


def load_example():
    spec = importlib.util.spec_from_file_location("fleet", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cluster(processes):
    """A client of a local cluster of two workers, processes or threads of this one, quiet."""
    return Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                               silence_logs=logging.CRITICAL, dashboard_address=":0"))


def test_a_fleet_on_two_dask_workers(tmp_path):
    fleet = load_example()
    dirs = [CORPUS / "blackbox", CORPUS / "ardupilot"]
    out = tmp_path / "fleet"
    with cluster(processes=True) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        reports = fleet.run(str(out), [str(d) for d in dirs], client)

    logs = [p for d in dirs for p in sorted(d.iterdir())]
    assert len(reports) == len(logs)
    for log, report in zip(logs, reports):
        expected = json.loads(subprocess.run([BIN, "check", "--json", log], capture_output=True).stdout)
        assert report["path"] == f"file://{log}"
        assert {**report, "path": str(log)} == expected, log

    lost, (frames, suspect) = fleet.summary(str(out))
    rows = fleet.flights(reports)
    assert sum(count for _, count, _, _ in lost) == len(rows) == sum(len(r["sessions"]) for r in reports)
    by_firmware = defaultdict(lambda: [0.0, 0.0])
    for row in rows:
        by_firmware[row["firmware"]][0] += row["flown_s"]
        by_firmware[row["firmware"]][1] += row["lost_s"]
    for name, _, flown, share in lost:
        assert flown == pytest.approx(by_firmware[name][0])
        assert share == pytest.approx(by_firmware[name][1] / by_firmware[name][0])
    assert any(share > 0 for _, _, _, share in lost), "the damaged logs lose flight time"
    main = sum(s["frames"]["I"] + s["frames"]["P"]
               for r in reports if r["format"] != "ardupilot-dataflash" for s in r["sessions"])
    assert frames == main > 0


def test_a_fleet_in_object_storage(tmp_path):
    # fsspec's in-memory filesystem stands in for object storage: shared by workers that are
    # threads of this process, foreign to bbcheck and DuckDB, which reach it as they would S3.
    import fsspec

    fleet = load_example()
    memory = fsspec.filesystem("memory")
    logs = [CORPUS / "blackbox" / "cleanflight-1.6.0-propwash-LOG00568.TXT",
            CORPUS / "ardupilot" / "ardupilot-plane-4.2.3-flightdata-center_0003.bin"]
    for log in logs:
        memory.pipe(f"/logs/{log.name}", log.read_bytes())
    memory.pipe("/logs/notes.txt", b"not a log\n")
    with cluster(processes=False) as client:
        reports = fleet.run("memory://fleet", ["memory://logs"], client)
    assert [r["path"] for r in reports] == [f"memory:///logs/{log.name}" for log in sorted(logs)]
    for log, report in zip(sorted(logs), reports):
        expected = json.loads(subprocess.run([BIN, "check", "--json", log], capture_output=True).stdout)
        assert {**report, "path": str(log)} == expected
    lost, (frames, suspect) = fleet.summary("memory://fleet")
    assert [name for name, _, _, _ in lost] == ["ArduPlane", "cleanflight"]
    assert frames == reports[1]["sessions"][0]["frames"]["I"] + reports[1]["sessions"][0]["frames"]["P"]
    assert len(memory.glob("/fleet/logs/*/*.main.parquet")) == 1
