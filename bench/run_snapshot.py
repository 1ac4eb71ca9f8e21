#!/usr/bin/env python3
"""A PyTorch memory snapshot of 1 GB: `loupe import`'s time and peak
memory, `loupe analyze`'s time, the viewer's first frame and frame time
on the imported trace (under Xvfb), beside Python's own pickle.load of the
same file (what PyTorch's memory_viz does first). Rows for bench/run's
table.

    bench/run_snapshot.py BUILD_DIR [--size MB]

The snapshot is made from the real one in tests/fixtures/torch_memory
(PyTorch's own, of a CPU training run): its history repeated until the
file reaches the size, each copy's addresses moved past the previous
copy's, every entry a dict of its own with its own list of frames (as
PyTorch writes them), and one segment holding what the copies leave
allocated, so that the totals agree. It is written opcode by opcode,
never held in memory whole, to BUILD_DIR/bench (never committed).
"""
import gzip
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys

from measure import row, timed

build = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "build-release"
size_mb = int(sys.argv[sys.argv.index("--size") + 1]) if "--size" in sys.argv else 1024
here = os.path.dirname(os.path.abspath(__file__))
loupe = os.path.join(build, "bin", "loupe")
work = os.path.join(build, "bench")
source = os.path.join(here, "..", "tests", "fixtures", "torch_memory", "cpu_mlp_snapshot.pickle.gz")


class Writer:
    """Pickle protocol 2, as pickle.dump writes it for dicts, lists, str
    and int, strings shared through the memo."""

    def __init__(self, f):
        self.f, self.memo = f, {}
        f.write(b"\x80\x02")

    def value(self, v):
        if isinstance(v, dict):
            self.f.write(b"}(")
            for k, x in v.items():
                self.value(k)
                self.value(x)
            self.f.write(b"u")
        elif isinstance(v, list):
            self.f.write(b"]")
            for k in range(0, len(v), 1000):  # APPENDS in batches, as pickle.dump writes them
                self.f.write(b"(")
                for x in v[k:k + 1000]:
                    self.value(x)
                self.f.write(b"e")
        elif isinstance(v, str):
            self.text(v)
        elif v is None:
            self.f.write(b"N")
        else:
            self.integer(v)

    def text(self, s):
        index = self.memo.get(s)
        if index is not None:
            self.f.write(b"j" + struct.pack("<I", index))
            return
        data = s.encode()
        self.f.write(b"X" + struct.pack("<I", len(data)) + data)
        self.memo[s] = len(self.memo)
        self.f.write(b"r" + struct.pack("<I", self.memo[s]))

    def integer(self, n):
        if 0 <= n < 256:
            self.f.write(b"K" + bytes([n]))
        elif -2**31 <= n < 2**31:
            self.f.write(b"J" + struct.pack("<i", n))
        else:
            data = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
            self.f.write(b"\x8a" + bytes([len(data)]) + data)


def make(path, target_bytes):
    with gzip.open(source, "rb") as f:
        snapshot = pickle.load(f)  # ours: a fixture of this project
    entries = snapshot["device_traces"][-1]
    addresses = [e["addr"] for e in entries]
    span = max(addresses) - min(addresses) + 4096
    net = sum(e["size"] if e["action"] == "alloc" else -e["size"] if e["action"] == "free_completed" else 0
              for e in entries)
    held = sum(b["size"] for s in snapshot["segments"] for b in s["blocks"]
               if b["state"] in ("active_allocated", "active_pending_free"))
    copies = 0
    with open(path + ".part", "wb") as f:
        w = Writer(f)
        f.write(b"}(")
        w.text("device_traces")
        f.write(b"](]")  # one device, the host: its entries appended 1,000 at a time
        while f.tell() < target_bytes:
            for k in range(0, len(entries), 1000):
                f.write(b"(")
                for e in entries[k:k + 1000]:
                    w.value(dict(e, addr=e["addr"] + copies * span, frames=[dict(x) for x in e["frames"]]))
                f.write(b"e")
            copies += 1
        f.write(b"e")
        w.text("segments")
        w.value([{"device": 0, "address": 0, "total_size": held + (copies - 1) * net, "stream": 0,
                  "blocks": [{"size": held + (copies - 1) * net, "state": "active_allocated"}]}])
        f.write(b"u.")
    os.replace(path + ".part", path)
    return copies * len(entries)


os.makedirs(work, exist_ok=True)
path = os.path.join(work, f"snapshot-{size_mb}mb.pickle")
if not os.path.exists(path):
    make(path, size_mb * 2**20)
file_bytes = os.path.getsize(path)
label = f"PyTorch memory snapshot, {file_bytes / 2**20:.0f} MiB"
db = os.path.join(work, "snapshot-bench.db")
seconds, peak = timed([loupe, "import", path, "-o", db, "--quiet"])
row("snapshot", f"{label}: loupe import", f"{seconds:.1f} s", "<= 30 s", seconds <= 30)
row("snapshot", "  loupe import's peak memory / file", f"{peak / file_bytes:.2f}x ({peak / 2**20:.0f} MiB)", "<= 2x",
    peak / file_bytes <= 2)
seconds, _ = timed([loupe, "analyze", db, "--rules", "memory,leak"])
row("snapshot", "  loupe analyze --rules memory,leak", f"{seconds:.2f} s", "<= 3 s", seconds <= 3)
viewer, xvfb = os.path.join(build, "bin", "loupe-view"), shutil.which("xvfb-run")
if os.path.exists(viewer) and xvfb:
    out = subprocess.run([xvfb, "-a", "-s", "-screen 0 1920x1200x24", viewer, db, "--bench-frames", "100", "--size",
                          "1600x900"], check=True, capture_output=True, text=True).stdout
    for r in (json.loads(line) for line in out.splitlines() if line.startswith("{")):
        if r["metric"] == "first_frame":
            row("snapshot", "  loupe-view: time to first frame (load included)", f"{r['seconds']:.2f} s")
        elif r["metric"] == "frame":
            row("snapshot", f"  loupe-view: frame build CPU, {r['zoom']} zoom, p50 / p95",
                f"{r['cpu_ms_p50']:.2f} / {r['cpu_ms_p95']:.2f} ms", "p95 <= 16 ms", r["cpu_ms_p95"] <= 16)
seconds, peak = timed([sys.executable, "-c", "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))", path])
row("snapshot", "  Python's pickle.load of the same file (memory_viz's first step)",
    f"{seconds:.1f} s, {peak / 2**20:.0f} MiB")
os.remove(db)
