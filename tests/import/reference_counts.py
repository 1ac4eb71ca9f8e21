#!/usr/bin/env python3
"""Independent reference figures for the Kineto fixtures.

    tests/import/reference_counts.py [FIXTURES_DIR]

Counts, from the raw JSON and with Python's own parser and exact Decimal
arithmetic (never a float), the figures tests/import/kineto_reference_test.cpp
checks loupe's import against: device ops by kind, copy bytes per direction,
steps, launches, memory peaks and device busy time (the union of each
device's kernel, memcpy and memset intervals, in integer nanoseconds,
a copy's duration taken from Kineto's own bandwidth where it records one).
Prints one C++ initializer per fixture, the form the test holds them in.
It shares no code with the importer: a second, separate reading of the
same files.
"""
import gzip
import json
import os
import sys
from collections import defaultdict
from decimal import Decimal, ROUND_HALF_UP

FIXTURES = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/fixtures/kineto"
OPS = {"kernel", "gpu_memcpy", "gpu_memset"}
RUNTIME = {"cuda_runtime", "cuda_driver"}


def ns(text):
    """Microseconds as written -> integer nanoseconds, rounded once."""
    return int((Decimal(text) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def load(path):
    with gzip.open(path, "rb") as f:
        # Numbers stay as their decimal text: no float ever touches a time.
        return json.loads(f.read(), parse_float=Decimal, parse_int=Decimal)


def duration_ns(op):
    """A device op's duration. A copy's or set's "memory bandwidth (GB/s)"
    is Kineto's bytes over the nanoseconds CUPTI measured; the measured
    duration it gives back stands when it lies within the microsecond an
    older Kineto cut "dur" down to."""
    written = ns(str(op["dur"]))
    a = op.get("args", {})
    bw, size = a.get("memory bandwidth (GB/s)"), a.get("bytes")
    if not isinstance(bw, Decimal) or bw <= 0 or not isinstance(size, Decimal) or size <= 0:
        return written
    measured = int((size / bw).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    return max(written, measured) if measured < written + 1000 else written


def direction(name, args):
    token = name.split(" ")[1] if name.startswith("Memcpy ") else str(args.get("kind", ""))
    return {"HtoD": "HtoD", "DtoH": "DtoH", "DtoD": "DtoD", "PtoP": "PtoP", "HtoH": "HtoH"}.get(token, "?")


def union_ns(intervals):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def figures(path):
    doc = load(path)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") in OPS]
    runtime = [e for e in events if e.get("ph") == "X" and e.get("cat") in RUNTIME]
    runtime_by_corr = {}
    for e in runtime:
        c = e.get("args", {}).get("correlation")
        if c is not None:
            runtime_by_corr.setdefault(int(c), e)
    op_corrs = {int(e["args"]["correlation"]) for e in ops if "correlation" in e.get("args", {})}

    kinds = defaultdict(int)
    bytes_by_dir = defaultdict(int)
    busy = defaultdict(list)
    for e in ops:
        a = e.get("args", {})
        kinds[e["cat"]] += 1
        dev = int(a.get("device", e["pid"]))
        start = ns(str(e["ts"]))
        busy[dev].append((start, start + duration_ns(e)))
        if e["cat"] == "gpu_memcpy":
            b = a.get("bytes")
            if b is None:  # ROCm: the size is on the runtime call
                call = runtime_by_corr.get(int(a.get("correlation", -1)))
                b = call["args"].get("size", 0) if call else 0
            bytes_by_dir[direction(e["name"], a)] += int(b)

    steps = sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                and str(e.get("name", "")).startswith("ProfilerStep#"))
    # A call that started a device op is a launch; so is a kernel launch
    # call whose kernel the trace lacks.
    kernel_launch = ("LaunchKernel", "LaunchCooperativeKernel", "GraphLaunch")
    launches = sum(1 for e in runtime if int(e.get("args", {}).get("correlation", -1)) in op_corrs
                   or any(k in e.get("name", "") for k in kernel_launch))
    transfers = sum(1 for e in ops if e["cat"] == "gpu_memcpy"
                    and int(e["args"].get("correlation", -1)) in runtime_by_corr)
    # Host memory (Device Type 0) is a device "cpu" numbered after the
    # highest GPU id the trace names (deviceProperties, device ops, memory).
    peak = defaultdict(int)
    memory_events = 0
    memory = [e["args"] for e in events if e.get("ph") in ("i", "I") and e.get("name") == "[memory]"]
    gpu_ids = {int(d["id"]) for d in (doc.get("deviceProperties", []) if isinstance(doc, dict) else [])}
    gpu_ids |= set(busy) | {int(a["Device Id"]) for a in memory if int(a.get("Device Type", 1)) != 0}
    host = max(gpu_ids) + 1 if gpu_ids else 0
    for a in memory:
        device = host if int(a.get("Device Type", 1)) == 0 else int(a.get("Device Id", -1))
        if device < 0:
            continue
        memory_events += 1
        peak[device] = max(peak[device], int(a.get("Total Allocated", 0)))
    return {
        "kernels": kinds["kernel"], "memcpys": kinds["gpu_memcpy"], "memsets": kinds["gpu_memset"],
        "htod": bytes_by_dir["HtoD"], "dtoh": bytes_by_dir["DtoH"], "dtod": bytes_by_dir["DtoD"],
        "ptop": bytes_by_dir["PtoP"], "steps": steps, "launches": launches, "transfers": transfers,
        "memory_events": memory_events,
        "busy": sorted((d, union_ns(iv)) for d, iv in busy.items()),
        "peak": sorted(peak.items()),
    }


def cpp_pairs(pairs):
    return "{" + ", ".join(f"{{{a}, {b}}}" for a, b in pairs) + "}"


for name in sorted(os.listdir(FIXTURES)):
    if not name.endswith(".json.gz"):
        continue
    f = figures(os.path.join(FIXTURES, name))
    print(f'    {{"{name}", {f["kernels"]}, {f["memcpys"]}, {f["memsets"]}, {f["htod"]}, {f["dtoh"]}, '
          f'{f["dtod"]}, {f["ptop"]}, {f["steps"]}, {f["launches"]}, {f["transfers"]}, {f["memory_events"]}, '
          f'{cpp_pairs(f["busy"])}, {cpp_pairs(f["peak"])}}},')
