#!/usr/bin/env python3
"""What-if predictions against real fixes: for each pitfall sample whose fix
the replay can express, its mistake is recorded and `loupe whatif` predicts
the mean step after the change; its fixed variant, recorded beside it, gives
the mean step measured (by the same definition: the unchanged replay of its
trace). Rounds alternate mistake and fix; the error is (predicted - fixed) /
fixed, per round, and its median. Prints bench/run's JSON rows.

    bench/run_whatif.py BUILD_DIR [--rounds N] [--size ci|full]

On this project's CPU device the samples' "device" is a worker thread that
shares the machine's cores with the host, so a fix that changes what the
host does also changes how fast the kernels run: the replay, which keeps
each kernel's recorded time, cannot foresee that (docs/analyses.md,
"What-if").
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from measure import row

build = sys.argv[1]
rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
size = sys.argv[sys.argv.index("--size") + 1] if "--size" in sys.argv else "full"
loupe = os.path.join(build, "bin", "loupe")
samples_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples")


def mistake_line(sample):
    """The line the sample marks as its mistake, as FILE:LINE."""
    with open(os.path.join(samples_dir, sample + ".cpp"), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if "MISTAKE" in line and not line.lstrip().startswith("//"):
                return f"{sample}.cpp:{number}"
    raise SystemExit(f"{sample}.cpp marks no MISTAKE line")


# (sample, the change its fix makes, as `loupe whatif` options)
CASES = [
    ("host_sync", lambda: ["--async-copies-at", mistake_line("host_sync")]),
    ("jit_in_loop", lambda: ["--drop-recompiles"]),
    ("ragged_batches", lambda: ["--drop-recompiles"]),
    ("input_pipeline", lambda: ["--remove-host-gaps"]),
]


def record(sample, variant, path):
    subprocess.run([os.path.join(build, "bin", sample), "--variant", variant, "--size", size, "--out", path],
                   check=True, capture_output=True)


def whatif(path, options):
    out = subprocess.run([loupe, "whatif", path, "--format", "json", *options], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


with tempfile.TemporaryDirectory() as tmp:
    for sample, change in CASES:
        errors, lines = [], []
        for r in range(rounds):
            mistake, fixed = os.path.join(tmp, f"{sample}-m{r}.db"), os.path.join(tmp, f"{sample}-f{r}.db")
            record(sample, "mistake", mistake)
            record(sample, "fixed", fixed)
            p = whatif(mistake, change())
            f = whatif(fixed, [])
            measured = f["mean_step_measured_ns"]
            errors.append((p["mean_step_predicted_ns"] - measured) / measured)
            lines.append(f"{p['mean_step_measured_ns'] / 1e3:.0f}->{p['mean_step_predicted_ns'] / 1e3:.0f}"
                         f" vs {measured / 1e3:.0f} us")
        median = statistics.median(errors)
        shown = " ".join(re.sub(r"\s+", " ", line) for line in lines)
        row("what-if", f"{sample} {' '.join(change())}: mistake -> predicted vs fixed ({shown})",
            f"{median * 100:+.0f}% (rounds {', '.join(f'{e * 100:+.0f}%' for e in errors)})", "<= 10%",
            "met" if abs(median) <= 0.10 else "MISSED")
