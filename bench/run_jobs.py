#!/usr/bin/env python3
"""A job's analysis at scale, on synthetic jobs of 1M events per rank
(`loupe synth --ranks`): `loupe analyze job/` on 16 and 64 ranks (time and
peak memory, to see both scale as they should: time linear in ranks, memory
independent of them), the same 64-rank job through Dask's LocalCluster (two
worker processes of one thread), and the throughput per core. Prints
bench/run's JSON rows.

    bench/run_jobs.py BUILD_DIR
"""
import json
import os
import resource
import subprocess
import sys
import time

from measure import row, timed

build = sys.argv[1]
cli = os.path.join(build, "bin", "loupe")
bench = os.path.join(build, "bench")
EVENTS = 1_000_000
CORES = os.cpu_count() or 1


def job(ranks):
    path = os.path.join(bench, f"job-{ranks}x1m")
    if not os.path.exists(os.path.join(path, "job.json")):
        subprocess.run([cli, "synth", "--ranks", str(ranks), "--events", str(EVENTS), "-o", path, "--quiet"],
                       check=True)
    return path


def per_core(seconds, ranks, cores):
    """Seconds per million events per core."""
    return seconds * cores / (ranks * EVENTS / 1e6)


def main():
    small, large = job(16), job(64)
    t16, m16 = timed([cli, "analyze", small])
    t64, m64 = timed([cli, "analyze", large])
    row("jobs", "loupe analyze, 64 ranks x 1M events", f"{t64:.1f} s", "", "")
    row("jobs", "  time per 1M events per core", f"{per_core(t64, 64, CORES):.2f} s ({CORES} cores)", "<= 1 s",
        "met" if per_core(t64, 64, CORES) <= 1 else "MISSED")
    ratio = t64 / t16
    row("jobs", "  time, 64 ranks over 16 ranks", f"{ratio:.2f} (16 ranks: {t16:.1f} s)", "~4 (linear)",
        "met" if 3.2 <= ratio <= 5 else "MISSED")
    row("jobs", "  peak memory, 64 ranks", f"{m64 / 2**20:.0f} MiB (16 ranks: {m16 / 2**20:.0f} MiB)",
        "independent of ranks", "met" if m64 <= 1.25 * m16 else "MISSED")

    import loupe.jobs  # .venv's package, as `make bench` installs it
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        start = time.monotonic()
        report = loupe.jobs.analyze(large, client=client)
        td = time.monotonic() - start
        worker_peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    local = json.loads(subprocess.run([cli, "analyze", large, "--format", "json"], check=True, capture_output=True,
                                      text=True).stdout)
    row("jobs", "Dask LocalCluster (2 workers), 64 ranks x 1M events", f"{td:.1f} s (local: {t64:.1f} s)", "", "")
    row("jobs", "  worker peak memory", f"{max(worker_peaks.values()) / 2**20:.0f} MiB", "", "")
    row("jobs", "  same report as the local run", "yes" if report.data == local else "NO", "identical",
        "met" if report.data == local else "MISSED")


# Dask's worker processes import this module again: the benchmark runs only
# in the process that started it.
if __name__ == "__main__":
    main()
