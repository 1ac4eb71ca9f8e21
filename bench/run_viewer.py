#!/usr/bin/env python3
"""Viewer benchmarks on a 10-million-event trace from `loupe synth`, under
Xvfb: time from starting `loupe-view` until its first frame is on screen,
and the CPU time to build one frame at the widest zoom (the whole trace),
a mid zoom (1/100 of it) and a narrow zoom (1/10,000), p50 and p95 over 200
frames, each frame nudged by a pixel so that nothing is reused. Prints
bench/run's JSON rows.

    bench/run_viewer.py BUILD_DIR
"""
import json
import os
import shutil
import subprocess
import sys

build = sys.argv[1]
loupe = os.path.join(build, "bin", "loupe")
viewer = os.path.join(build, "bin", "loupe-view")
bench = os.path.join(build, "bench")
FRAMES = 200


def row(*cells):
    print(json.dumps(list(cells)))


if not os.path.exists(viewer):
    row("viewer", "skipped", "loupe-view was not built (GUI packages missing: scripts/setup)", "", "")
    sys.exit(0)
xvfb = shutil.which("xvfb-run")
if xvfb is None:
    row("viewer", "skipped", "xvfb-run is not installed (scripts/setup installs xvfb)", "", "")
    sys.exit(0)

os.makedirs(bench, exist_ok=True)
trace = os.path.join(bench, "synth-10m.db")
if not os.path.exists(trace):
    subprocess.run([loupe, "synth", "-o", trace, "--events", "10000000", "--quiet"], check=True)

out = subprocess.run([xvfb, "-a", "-s", "-screen 0 1920x1200x24", viewer, trace, "--bench-frames", str(FRAMES),
                      "--size", "1600x900"], check=True, capture_output=True, text=True).stdout
results = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
for r in results:
    if r["metric"] == "first_frame":
        s = r["seconds"]
        row("viewer", f"time to first frame, {r['events'] / 1e6:.0f}M events (load included)", f"{s:.2f} s", "<= 3 s",
            "met" if s <= 3 else "MISSED")
        row("viewer", "  of which: reading the trace / building tracks",
            f"{r['read_seconds']:.2f} / {r['tracks_seconds']:.2f} s", "", "")
for r in results:
    if r["metric"] == "frame":
        p50, p95 = r["cpu_ms_p50"], r["cpu_ms_p95"]
        row("viewer", f"frame build CPU, {r['zoom']} zoom ({r['span_ns'] / 1e9:.3g} s in view), p50 / p95 of {r['frames']}",
            f"{p50:.2f} / {p95:.2f} ms", "p95 <= 8 ms", "met" if p95 <= 8 else "MISSED")
