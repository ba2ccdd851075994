#!/usr/bin/env python3
"""bbcheck beside the Python decoders on the same real logs, in one run.

Blackbox logs are read by orangebox (every frame of every log in the file) and DataFlash logs by
pymavlink's DFReader (every message); bbcheck runs `check` and `export --jsonl` (to /dev/null)
on the same files. Prints MiB/s per tool and format, and bbcheck's speed as a multiple of the
peer's.

Set-up (once; orangebox's install prints an entry-point error, the library works):
    python3 -m venv .venv
    .venv/bin/pip install pymavlink==2.4.50 orangebox
    cargo build --release
Run:
    .venv/bin/python bench/peers.py [CORPUS]        (CORPUS defaults to ../shared/corpus)
"""

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BBCHECK = ROOT / "target" / "release" / "bbcheck"


def best(runs, work):
    """Seconds of the fastest of `runs` calls of `work`."""
    fastest = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        work()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest


def bbcheck(*args):
    def run():
        subprocess.run(
            [BBCHECK, *map(str, args)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )

    return run


def orangebox_frames(path):
    from orangebox import Parser

    def run():
        parser = Parser.load(str(path))
        frames = 0
        for index in range(1, parser.reader.log_count + 1):
            parser.set_log_index(index)
            for _ in parser.frames():
                frames += 1
        return frames

    return run


def pymavlink_messages(path):
    from pymavlink import DFReader

    def run():
        reader = DFReader.DFReader_binary(str(path), zero_time_base=True)
        messages = 0
        while reader.recv_msg() is not None:
            messages += 1
        return messages

    return run


def main():
    corpus = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT.parent / "shared" / "corpus")
    if not BBCHECK.exists():
        sys.exit(f"{BBCHECK} is missing: run `cargo build --release` first")
    formats = [
        ("Blackbox", sorted((corpus / "real" / "blackbox").iterdir()), "orangebox", orangebox_frames),
        ("DataFlash", sorted((corpus / "real" / "ardupilot").iterdir()), "pymavlink", pymavlink_messages),
    ]
    for name, files, peer_name, peer in formats:
        size = sum(f.stat().st_size for f in files)
        totals = {"check": 0.0, "export": 0.0, peer_name: 0.0}
        for f in files:
            totals["check"] += best(3, bbcheck("check", f))
            totals["export"] += best(3, bbcheck("export", "--jsonl", f))
            try:
                totals[peer_name] += best(1, peer(f))
            except Exception as e:  # a peer that fails on a file is timed up to its failure
                print(f"  {peer_name} failed on {f.name}: {e}", file=sys.stderr)
        mib = size / (1 << 20)
        print(f"{name}: {len(files)} files, {mib:.1f} MiB")
        for tool, seconds in totals.items():
            print(f"  {tool:10} {mib / seconds:9.1f} MiB/s")
        print(f"  bbcheck check is {totals[peer_name] / totals['check']:.0f} x {peer_name}'s speed, "
              f"export --jsonl {totals[peer_name] / totals['export']:.0f} x")


if __name__ == "__main__":
    main()
