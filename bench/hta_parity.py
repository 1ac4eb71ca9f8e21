#!/usr/bin/env python3
"""Holistic Trace Analysis (HTA) figures for the real Kineto fixtures, as
reference data for comparing loupe's analyses with HTA's.

    scripts/setup-python                      # once: .venv with HTA pinned
    .venv/bin/python bench/hta_parity.py [--out DIR] [FIXTURE.json.gz ...]

For each fixture (default: every *.json.gz in $LOUPE_FIXTURES_DIR, else
../shared/fixtures/kineto next to the repository), the trace is copied into
a folder of its own (HTA reads a folder of traces, one per rank) and loaded
with TraceAnalysis; HTA's figures are written to DIR/<fixture>.json
(default tests/reference/hta):

* temporal_breakdown: get_temporal_breakdown, idle/compute/non-compute
  time per rank;
* idle_time_breakdown: get_idle_time_breakdown, host_wait/kernel_wait/
  other idle time per stream;
* cuda_kernel_launch_stats: get_cuda_kernel_launch_stats, one row per
  correlation in HTA, summarised here as counts, sums, minima and maxima,
  and the counts HTA's charts show against its default cutoffs;
* queue_length: get_queue_length_summary, per stream statistics of the
  queue length time series;
* comm_comp_overlap: get_comm_comp_overlap, per rank.

Each figure records the exact call. Times are HTA's: microseconds, as the
trace's `ts` and `dur` are, after HTA rounds fractional timestamps inward
(start up, end down). A call that fails records its error instead of
figures. NaN in HTA's output is written as null. Output is deterministic:
keys sorted, rows sorted, values exactly as HTA gives them.
"""
import argparse
import gzip
import importlib.metadata
import json
import logging
import math
import os
import shutil
import sys
import tempfile
import warnings

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
venv = os.path.join(root, ".venv")
venv_python = os.path.join(venv, "bin", "python")

try:
    warnings.filterwarnings("ignore")
    import pandas as pd
    from hta.trace_analysis import TraceAnalysis
    hta_version = importlib.metadata.version("HolisticTraceAnalysis")
except ImportError as e:
    # Run again under the project's benchmark environment when it exists.
    if os.path.exists(venv_python) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(venv_python, [venv_python] + sys.argv)
    sys.exit(f"bench/hta_parity.py: HTA is not installed ({e}); run scripts/setup-python first")

# HTA's defaults, passed explicitly so that the recorded call is the whole truth.
CONSECUTIVE_KERNEL_DELAY = 30
RUNTIME_CUTOFF = 50
LAUNCH_DELAY_CUTOFF = 100
INCLUDE_MEMORY_EVENTS = True
INCLUDE_LAST_PROFILER_STEP = False


def plain(value):
    """A JSON value for a pandas/numpy scalar; NaN becomes None."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def records(df):
    return [{str(k): plain(v) for k, v in row.items()} for row in df.to_dict("records")]


def attempt(call, compute):
    """{"call": call, "result": compute()} or, when HTA raises, the error."""
    try:
        return {"call": call, "result": compute()}
    except Exception as e:  # noqa: BLE001 - HTA's failure is the recorded figure
        return {"call": call, "error": f"{type(e).__name__}: {e}".strip()}


def temporal_breakdown(analyzer):
    df = analyzer.get_temporal_breakdown(visualize=False)
    return sorted(records(df), key=lambda r: r["rank"])


def idle_time_breakdown(analyzer, rank):
    df, _ = analyzer.get_idle_time_breakdown(ranks=[rank], visualize=False,
                                             consecutive_kernel_delay=CONSECUTIVE_KERNEL_DELAY)
    rows = sorted(records(df), key=lambda r: (r["stream"], r["idle_category"]))
    streams = {}
    for r in rows:
        streams.setdefault(str(r["stream"]), {})[r["idle_category"]] = {
            "idle_time": r["idle_time"], "idle_time_ratio": r["idle_time_ratio"]}
    return streams


def column_summary(series):
    return {"sum": plain(series.sum()), "min": plain(series.min()), "max": plain(series.max())}


def launch_stats(analyzer, rank):
    df = analyzer.get_cuda_kernel_launch_stats(
        ranks=[rank], runtime_cutoff=RUNTIME_CUTOFF, launch_delay_cutoff=LAUNCH_DELAY_CUTOFF,
        include_memory_events=INCLUDE_MEMORY_EVENTS, visualize=False)[rank]
    if df.empty:
        return {"rows": 0}
    return {
        "rows": len(df),
        "distinct_correlations": int(df["correlation"].nunique()),
        "cpu_duration": column_summary(df["cpu_duration"]),
        "gpu_duration": column_summary(df["gpu_duration"]),
        "launch_delay": column_summary(df["launch_delay"]),
        # The three sets HTA's charts show (visualize_cuda_launch_kernel_info).
        "short_gpu_rows": int(((df["cpu_duration"] <= RUNTIME_CUTOFF)
                               & (df["gpu_duration"] < df["cpu_duration"])).sum()),
        "runtime_outlier_rows": int((df["cpu_duration"] > RUNTIME_CUTOFF).sum()),
        "launch_delay_outlier_rows": int((df["launch_delay"] > LAUNCH_DELAY_CUTOFF).sum()),
    }


def queue_length(analyzer, rank):
    df = analyzer.get_queue_length_summary(ranks=[rank])
    if df is None:
        return {}
    streams = {}
    for (r, stream), row in df.iterrows():
        streams[str(stream)] = {stat: plain(row[("queue_length", stat)])
                                for stat in ("count", "mean", "std", "min", "25%", "50%", "75%", "max")}
    return streams


def comm_comp_overlap(analyzer):
    df = analyzer.get_comm_comp_overlap(visualize=False)
    return sorted(records(df), key=lambda r: r["rank"])


def rounds_timestamps(path):
    """Whether HTA rounds this trace's times inward (trace_parser.py,
    round_down_time_stamps): it does when pandas reads the `ts` column as
    float64, that is when any event's ts is a float or missing."""
    with gzip.open(path, "rb") as f:
        doc = json.loads(f.read())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return any(isinstance(e.get("ts"), float) or "ts" not in e for e in events)


def loaded_facts(analyzer):
    """What HTA kept: its step names (two or more make it drop the last
    step, trace.py _filter_irrelevant_gpu_kernels) and, per rank, the events
    on a stream (stream != -1: what its breakdowns call GPU kernels) by
    category."""
    table = analyzer.t.symbol_table
    steps = sorted(k for k in table.get_sym_id_map() if "ProfilerStep" in k)
    names = table.get_sym_table()
    gpu = {}
    for rank, df in analyzer.t.get_all_traces().items():
        on_stream = df[df["stream"].ne(-1)]
        gpu[str(rank)] = {names[c]: int(n) for c, n in on_stream["cat"].value_counts().items()}
    return {"profiler_step_names": steps, "last_profiler_step_dropped": len(steps) >= 2,
            "events_on_a_stream_by_category": gpu}


def analyze(path):
    name = os.path.basename(path)
    out = {
        "fixture": name[: -len(".json.gz")],
        "hta_version": hta_version,
        "pandas_version": pd.__version__,
        "time_unit": "us",
        "timestamps_rounded_inward": rounds_timestamps(path),
    }
    folder = tempfile.mkdtemp(prefix="loupe-hta-parity-")
    try:
        shutil.copy(path, os.path.join(folder, name))
        load_call = (f"TraceAnalysis(trace_dir=<folder holding only {name}>, "
                     f"include_last_profiler_step={INCLUDE_LAST_PROFILER_STEP})")
        try:
            analyzer = TraceAnalysis(trace_dir=folder, include_last_profiler_step=INCLUDE_LAST_PROFILER_STEP)
        except Exception as e:  # noqa: BLE001
            out["load"] = {"call": load_call, "error": f"{type(e).__name__}: {e}".strip()}
            return out
        ranks = [int(r) for r in analyzer.t.get_ranks()]
        out["load"] = {"call": load_call, "ranks": ranks, **loaded_facts(analyzer)}
        out["temporal_breakdown"] = attempt("get_temporal_breakdown(visualize=False)",
                                            lambda: temporal_breakdown(analyzer))
        out["comm_comp_overlap"] = attempt("get_comm_comp_overlap(visualize=False)",
                                           lambda: comm_comp_overlap(analyzer))
        for key, call, compute in (
                ("idle_time_breakdown",
                 "get_idle_time_breakdown(ranks=[{r}], visualize=False, "
                 f"consecutive_kernel_delay={CONSECUTIVE_KERNEL_DELAY})", idle_time_breakdown),
                ("cuda_kernel_launch_stats",
                 f"get_cuda_kernel_launch_stats(ranks=[{{r}}], runtime_cutoff={RUNTIME_CUTOFF}, "
                 f"launch_delay_cutoff={LAUNCH_DELAY_CUTOFF}, include_memory_events={INCLUDE_MEMORY_EVENTS}, "
                 "visualize=False)", launch_stats),
                ("queue_length", "get_queue_length_summary(ranks=[{r}])", queue_length)):
            out[key] = {str(r): attempt(call.format(r=r), lambda r=r: compute(analyzer, r)) for r in ranks}
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main():
    default_fixtures = os.environ.get("LOUPE_FIXTURES_DIR", os.path.join(root, "..", "shared", "fixtures", "kineto"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fixtures", nargs="*", help="traces (.json.gz); default: every one in the fixtures folder")
    parser.add_argument("--out", default=os.path.join(root, "tests", "reference", "hta"))
    args = parser.parse_args()
    paths = args.fixtures or sorted(os.path.join(default_fixtures, n)
                                    for n in os.listdir(default_fixtures) if n.endswith(".json.gz"))
    logging.disable(logging.WARNING)  # HTA logs timings and temp paths at WARNING
    os.makedirs(args.out, exist_ok=True)
    for path in paths:
        result = analyze(path)
        target = os.path.join(args.out, result["fixture"] + ".json")
        with open(target, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True, allow_nan=False)
            f.write("\n")
        failed = sorted(k for k, v in result.items() if isinstance(v, dict)
                        and ("error" in v or any(isinstance(x, dict) and "error" in x for x in v.values())))
        print(f"{target}" + (f"  (HTA failed: {', '.join(failed)})" if failed else ""))


if __name__ == "__main__":
    main()
