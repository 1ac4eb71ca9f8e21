#!/usr/bin/env python3
"""The Python package on a 10-million-event trace from `loupe synth`:
`loupe.open` plus one table as a DataFrame against `pandas.read_sql` of the
same table, measured in turn in this process, and what each step costs.
Prints bench/run's JSON rows; needs the package (`make python`).

    bench/run_python.py BUILD_DIR
"""
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time

import pandas as pd

import loupe

build = sys.argv[1]
cli = os.path.join(build, "bin", "loupe")
path = os.path.join(build, "bench", "synth-10m.db")
if not os.path.exists(path):
    subprocess.run([cli, "synth", "-o", path, "--events", "10000000", "--quiet"], check=True)
TABLE = "device_ops"
ROUNDS = 3


def row(*cells):
    print(json.dumps(list(cells)))


def with_loupe():
    start = time.monotonic()
    trace = loupe.open(path)
    opened = time.monotonic()
    frame = trace.table(TABLE)
    return time.monotonic() - start, opened - start, len(frame)


def with_read_sql():
    start = time.monotonic()
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        frame = pd.read_sql(f"SELECT * FROM {TABLE}", connection)
    return time.monotonic() - start, len(frame)


ours, opens, theirs = [], [], []
for _ in range(ROUNDS):  # in turn, so that a slower spell of the machine hits both
    seconds, open_seconds, rows = with_loupe()
    ours.append(seconds)
    opens.append(open_seconds)
    sql_seconds, sql_rows = with_read_sql()
    theirs.append(sql_seconds)
    if rows != sql_rows:
        raise SystemExit(f"{TABLE}: loupe has {rows} rows, SQLite {sql_rows}")
ratios = [t / o for o, t in zip(ours, theirs)]
row("python", f"loupe.open + table('{TABLE}') ({rows:,} rows of 10M events)", f"{statistics.median(ours):.2f} s")
row("python", "  of which loupe.open (meta, strings, small tables)", f"{statistics.median(opens):.2f} s")
row("python", f"pandas.read_sql of {TABLE}", f"{statistics.median(theirs):.2f} s")
row("python", "read_sql time / loupe time (median of rounds)", f"{statistics.median(ratios):.1f}x", ">= 10x",
    statistics.median(ratios) >= 10)

start = time.monotonic()
trace = loupe.open(path)
total = sum(len(trace.table(t)) for t in loupe.event_tables())
row("python", f"loupe.open + every event table as DataFrames ({total:,} rows)", f"{time.monotonic() - start:.2f} s")
