#!/usr/bin/env python3
"""Kills a recording process with SIGKILL or SIGTERM at random moments, many
times, and checks every trace it leaves: it must open, hold an unbroken
prefix of the events, and miss none emitted more than two flush intervals
before the kill (one for the flush, one for the commit's own time).

    bench/run_kill.py BUILD_DIR [RUNS]      (default 40 runs)

Prints bench/run's JSON rows. Uses the crash test's child program.
"""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

build = sys.argv[1] if len(sys.argv) > 1 else "build-release"
runs = int(sys.argv[2]) if len(sys.argv) > 2 else int(os.environ.get("LOUPE_KILL_RUNS", "40"))
# The child is a test program: a Release build without tests falls back on
# the test build (`make test`'s build/).
for candidate in (build, "build"):
    child_bin = os.path.join(candidate, "tests", "profiler", "crash_child")
    loupe = os.path.join(candidate, "bin", "loupe")
    if os.path.exists(child_bin):
        break
FLUSH_MS = 100


def row(*cells):
    print(json.dumps(list(cells)))


if not os.path.exists(child_bin):
    row("reliability", "kill tests", f"skipped: {child_bin} not built (tests are off in this build)")
    sys.exit(0)

rng = random.Random(42)
unreadable = broken = lost_beyond = 0
work = tempfile.mkdtemp(prefix="loupe-kill-")
for run in range(runs):
    path = os.path.join(work, f"k{run}.db")
    env = dict(os.environ, LOUPE_CRASH_PROGRESS="1")
    p = subprocess.Popen([child_bin, path, str(FLUSH_MS)], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + rng.uniform(0.3, 1.5)
    progress = []  # (seq, monotonic_ns)
    os.set_blocking(p.stdout.fileno(), False)
    while time.monotonic() < deadline:
        time.sleep(0.01)
        for line in p.stdout:
            parts = line.split()
            if parts and parts[0] == "progress":
                progress.append((int(parts[1]), int(parts[2])))
    sig = rng.choice([signal.SIGKILL, signal.SIGTERM])
    killed_at = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    p.send_signal(sig)
    p.wait()
    q = subprocess.run([loupe, "sql", path, "SELECT count(*), min(value), max(value) FROM counters", "--csv"],
                       capture_output=True, text=True)
    if q.returncode != 0:
        unreadable += 1
        continue
    count, lo, hi = q.stdout.strip().splitlines()[1].split(",")
    count = int(count)
    if count and (float(lo) != 0 or float(hi) != count - 1):
        broken += 1
    # Emitted before kill - 2 flush intervals, per the child's own report.
    bound = killed_at - 2 * FLUSH_MS * 1_000_000
    emitted = max((seq + 1 for seq, t in progress if t <= bound), default=0)
    lost_beyond += max(0, emitted - count)

row("reliability", f"kill tests: SIGKILL/SIGTERM at random moments", f"{runs} runs")
row("reliability", "kill tests: files that did not open", str(unreadable), "0", "met" if unreadable == 0 else "MISSED")
row("reliability", "kill tests: files not an unbroken prefix", str(broken), "0", "met" if broken == 0 else "MISSED")
row("reliability", "kill tests: events lost beyond the flush interval", str(lost_beyond), "0",
    "met" if lost_beyond == 0 else "MISSED")
