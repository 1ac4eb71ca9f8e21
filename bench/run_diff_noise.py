#!/usr/bin/env python3
"""`loupe diff` over several runs a side, on real runs: an A/A comparison
(two sets of runs of the same program) must not fail, and a planted
slowdown must. Each repetition records host_sync's fixed variant R times
at --batch B (A), R more times at B (A'), and R times with 4.5% more rows
(S: 5 to 6% more step time, as measured), interleaved (A, A', S, A, A', S, ...) so
that a slow spell of the machine falls on every side alike; then
`loupe diff --base A --head A' --fail-on step_time:+T%` and the same
against S. Prints bench/run's JSON rows, for R = 3:
how many A/A comparisons failed and how many slowdowns were caught, out
of the repetitions, the slowdown measured (the median over repetitions
of S's median step over A's) and the A/A's median |change|, which is the
run-to-run noise the test faces.

Twice: with each run pinned to one core (`taskset -c 1`, as pyperf and
Google Benchmark advise for timing: on this two-core machine the host's
and the CPU device's threads then never trade cores), the target's rows;
and unpinned, where the scheduler's placement of those two threads makes
whole runs several percent slower or faster.

    bench/run_diff_noise.py BUILD_DIR [--reps N] [--batch B] [--threshold T]

The samples' matrix products run on one BLAS thread, as in the tests
(tests/e2e/sample_run.h): products on every core make a busy two-core
machine's runs vary many times more.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

from measure import row


def option(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


build = sys.argv[1]
reps = option("--reps", 20)
batch = option("--batch", 512)
threshold = option("--threshold", 3.0)
planted = round(batch * 1.045)
loupe = os.path.join(build, "bin", "loupe")
env = dict(os.environ, LOUPE_CPU_BLAS_THREADS="1")


def record(path, rows, pinned):
    subprocess.run(["taskset", "-c", "1"] * pinned + [os.path.join(build, "bin", "host_sync"), "--variant", "fixed", "--size", "ci", "--hidden", "256",
                    "--batch", str(rows), "--out", path], check=True, capture_output=True, env=env)


def diff(base, head):
    """(failed, the step_time row) of `loupe diff --base ... --head ...`."""
    out = subprocess.run([loupe, "diff", "--no-cache", "--format", "json", "--fail-on", f"step_time:+{threshold:g}%",
                          "--base", *base, "--head", *head], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        raise SystemExit(out.stderr)
    step = next(r for r in json.loads(out.stdout)["metrics"] if r["name"] == "step_time")
    return out.returncode == 1, step


def repetitions(runs, pinned, tmp):
    aa_failed, caught, slowdowns, aa_p, slow_p, aa_change = 0, 0, [], [], [], []
    for rep in range(reps):
        sides = {"a": [], "a2": [], "s": []}
        for i in range(runs):
            for side, rows in (("a", batch), ("a2", batch), ("s", planted)):
                path = os.path.join(tmp, f"{rep}-{side}-{i}.db")
                record(path, rows, pinned)
                sides[side].append(path)
        failed, step = diff(sides["a"], sides["a2"])
        aa_failed += failed
        aa_p.append(step["p_value"])
        aa_change.append(abs(step["delta_fraction"]))
        failed, step = diff(sides["a"], sides["s"])
        print(f"{runs} {pinned}: slowdown {step['delta_fraction'] * 100:+.1f}% p {step['p_value']:.4f}", file=sys.stderr)
        caught += failed
        slow_p.append(step["p_value"])
        slowdowns.append(step["delta_fraction"])
        for paths in sides.values():
            for p in paths:
                os.remove(p)
    rule = f"--fail-on step_time:+{threshold:g}%"
    how = f"{runs} runs a side, {'pinned' if pinned else 'unpinned'}, {rule}"
    row("diff", f"A/A, {how}: failed (median |change| {statistics.median(aa_change) * 100:.1f}%, "
        f"p median {statistics.median(aa_p):.2f})", f"{aa_failed} of {reps}", "0" if pinned else "",
        ("met" if aa_failed == 0 else "MISSED") if pinned else "")
    caught_target = reps - reps // 20
    row("diff", f"slowdown (--batch {batch} -> {planted}: {statistics.median(slowdowns) * 100:+.1f}% median step), "
        f"{how}: caught (p median {statistics.median(slow_p):.3f})", f"{caught} of {reps}",
        f">= {caught_target}" if pinned else "", ("met" if caught >= caught_target else "MISSED") if pinned else "")


with tempfile.TemporaryDirectory() as directory:
    for pin in (True, False):
        repetitions(3, pin, directory)
