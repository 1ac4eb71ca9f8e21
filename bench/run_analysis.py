#!/usr/bin/env python3
"""Analysis benchmarks on 10-million-event traces from `loupe synth`:
`loupe analyze` end to end (load included) and `loupe diff` of two such
traces, with their wall time and peak memory. Prints bench/run's JSON rows.

    bench/run_analysis.py BUILD_DIR
"""
import json
import os
import subprocess
import sys

from measure import row, timed

build = sys.argv[1]
loupe = os.path.join(build, "bin", "loupe")
bench = os.path.join(build, "bench")


def trace(seed):
    path = os.path.join(bench, "synth-10m.db" if seed == 1 else f"synth-10m-seed{seed}.db")
    if not os.path.exists(path):
        subprocess.run([loupe, "synth", "-o", path, "--events", "10000000", "--seed", str(seed), "--quiet"],
                       check=True)
    return path


a, b = trace(1), trace(2)
# Exit 1 is a check that failed on a synthetic trace, not a failed run.
secs, peak = timed([loupe, "analyze", a, "--format", "json"], exit_codes=(0, 1))
row("analysis", "loupe analyze, 10M events (load included)", f"{secs:.2f} s", "<= 5 s", "met" if secs <= 5 else "MISSED")
row("analysis", "loupe analyze, peak memory", f"{peak / 2**20:.0f} MiB", "", "")
out = subprocess.run([os.path.join(bench, "critical_path_bench"), a], check=True, capture_output=True, text=True)
cp = json.loads(out.stdout)
row("analysis", "critical path (graph + walk), 10M events, model loaded", f"{cp['seconds']:.2f} s", "", "")
row("analysis", "what-if replay, no change (graph + replay), 10M events", f"{cp['replay_seconds']:.2f} s", "", "")
both = cp["seconds"] + cp["replay_seconds"]
row("analysis", "critical path + what-if replay, 10M events (two graphs)", f"{both:.2f} s", "<= 2 s",
    "met" if both <= 2 else "MISSED")
secs, peak = timed([loupe, "diff", a, b], exit_codes=(0, 1))
row("analysis", "loupe diff, two 10M-event traces", f"{secs:.2f} s", "<= 10 s", "met" if secs <= 10 else "MISSED")
row("analysis", "loupe diff, peak memory", f"{peak / 2**20:.0f} MiB", "", "")
