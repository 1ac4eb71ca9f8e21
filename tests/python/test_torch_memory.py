"""PyTorch memory snapshots through `loupe import`, against what Python's own
pickle reads from the same file: the entries by action, the running total
the importer rebuilds and its peak, what was held before the first entry,
and the bytes live at the peak by the innermost frame of the user's code.
A snapshot recorded here by this PyTorch imports the same way, and a
pickle that would run code is refused without running it.

The fixture is tests/fixtures/torch_memory/cpu_mlp_snapshot.pickle.gz
(record_cpu_snapshot.py beside it says how it was made); it is ours, so
reading it with pickle.load here is safe.
"""
import gzip
import json
import os
import pickle
import subprocess
import sys
import tempfile
import unittest

from test_trace import run_cli, sql

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "torch_memory")
SNAPSHOT = os.path.join(FIXTURES, "cpu_mlp_snapshot.pickle.gz")
LIBRARIES = ("torch/", "<", "nn.Module")


def load(path):
    with gzip.open(path, "rb") as f:
        return pickle.load(f)


def python_line(frame):
    """"file:line" of a profile's frame ("train.py(12): step", file
    "none"); "" for one that names no Python line (a built-in's)."""
    name = frame["name"]
    if ".py(" not in name or "): " not in name:
        return ""
    file, rest = name.split(".py(", 1)
    return f"{file}.py:{rest.split('): ', 1)[0]}"


def user_site(frames):
    """The innermost frame of the user's code and the Python frames that
    called it, "a.py:7 < b.py:4", four at most and then " < …", as an
    engineer reads a stack (frames are listed innermost first)."""
    lines = [python_line(f) for f in frames]
    first = next((k for k, f in enumerate(frames) if lines[k] and not f["name"].startswith(LIBRARIES)), None)
    if first is None:
        return ""
    stack = [line for line in lines[first:] if line]
    return " < ".join(stack[:4]) + (" < …" if len(stack) > 4 else "")


class Expected:
    """Device 0's figures, computed from the raw snapshot."""

    def __init__(self, snapshot):
        entries = snapshot["device_traces"][0]
        self.actions = {}
        for e in entries:
            self.actions[e["action"]] = self.actions.get(e["action"], 0) + 1
        held = sum(b["size"] for s in snapshot["segments"] if s["device"] == 0 for b in s["blocks"]
                   if b["state"] in ("active_allocated", "active_pending_free"))
        delta = {"alloc": 1, "free_completed": -1}
        changes = [delta.get(e["action"], 0) * e["size"] for e in entries]
        self.before = held - sum(changes)
        kept = [(e, c) for e, c in zip(entries, changes) if e["action"] in delta]
        totals, running = [], self.before
        for _, c in kept:
            running += c
            totals.append(running)
        self.peak = max(totals)
        peak_at = totals.index(self.peak)
        live = {}
        for e, _ in kept[:peak_at + 1]:
            if e["action"] == "alloc":
                live[e["addr"]] = (e["size"], user_site(e["frames"]))
            else:
                live.pop(e["addr"], None)
        self.live_by_site = {}
        for size, site in live.values():
            self.live_by_site[site] = self.live_by_site.get(site, 0) + size


class ImportedSnapshot(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.expected = Expected(load(SNAPSHOT))
        cls.db = os.path.join(cls.tmp.name, "snapshot.db")
        run_cli("import", SNAPSHOT, "-o", cls.db, "--quiet")

    def test_every_alloc_and_completed_free_is_a_memory_event(self):
        rows = dict(sql(self.db, "SELECT k.name, count(*) FROM memory_events m "
                                 "JOIN memory_event_kinds k ON k.id = m.kind GROUP BY k.name")[1:])
        self.assertEqual(int(rows["alloc"]), self.expected.actions["alloc"])
        self.assertEqual(int(rows["free"]), self.expected.actions["free_completed"])
        meta = dict(sql(self.db, "SELECT key, value FROM meta")[1:])
        self.assertEqual(meta["source_format"], "torch_memory_snapshot")
        self.assertEqual(int(meta["source_events"]), sum(self.expected.actions.values()))

    def test_a_snapshot_made_from_a_profile_has_the_host_last_and_no_reserved_memory(self):
        # _profile_to_snapshot puts the host after the CUDA devices (none
        # here), and its one segment per device spans the blocks' addresses.
        snapshot = load(SNAPSHOT)
        stacks = [e["frames"] for trace in snapshot["device_traces"] for e in trace if e.get("frames")]
        self.assertEqual({f["filename"] for frames in stacks for f in frames}, {"none"})
        host = len(snapshot["device_traces"]) - 1
        self.assertEqual(sql(self.db, "SELECT id, name, kind FROM devices")[1:], [[str(host), "cpu", "0"]])
        self.assertEqual(sql(self.db, "SELECT max(reserved) FROM memory_events")[1:], [["0"]])
        meta = dict(sql(self.db, "SELECT key, value FROM meta")[1:])
        self.assertIn("the last device is the host", meta["snapshot_made_from"])

    def test_the_running_total_starts_from_what_was_held_before_and_peaks_where_pickle_says(self):
        first, peak = sql(self.db, "SELECT (SELECT allocated - bytes FROM memory_events ORDER BY time, id LIMIT 1), "
                                   "max(allocated) FROM memory_events")[1]
        self.assertEqual(int(first), self.expected.before)
        self.assertEqual(int(peak), self.expected.peak)

    def test_the_bytes_live_at_the_peak_by_user_frame(self):
        report = json.loads(run_cli("analyze", self.db, "--format", "json", "--rules", "memory").stdout)
        [finding] = report["findings"]
        evidence = {e["name"]: e["value"] for e in finding["evidence"]}
        listed = {k[len("live at peak: "):]: v for k, v in evidence.items() if k.startswith("live at peak: ")}
        self.assertTrue(listed)
        for site, value in listed.items():
            key = "" if site == "unknown call site" else site
            self.assertIn(key, self.expected.live_by_site, site)
            self.assertTrue(value.startswith(format_bytes(self.expected.live_by_site[key]) + " in "), (site, value))


def format_bytes(n):
    """loupe's byte format (profiler/src/text/units.cpp), to compare its text."""
    if abs(n) < 1024:
        return f"{n} B"
    if abs(n) < 1024 ** 2:
        return f"{n / 1024:.1f} KiB"
    if abs(n) < 1024 ** 3:
        return f"{n / 1024 ** 2:.1f} MiB"
    return f"{n / 1024 ** 3:.2f} GiB"


class RecordedHere(unittest.TestCase):
    def test_a_snapshot_this_pytorch_makes_imports(self):
        with tempfile.TemporaryDirectory() as tmp:
            path, db = os.path.join(tmp, "s.pickle.gz"), os.path.join(tmp, "s.db")
            subprocess.run([sys.executable, os.path.join(FIXTURES, "record_cpu_snapshot.py"), path], check=True,
                           capture_output=True)
            expected = Expected(load(path))
            run_cli("import", path, "-o", db, "--quiet")
            [[allocs, peak]] = sql(db, "SELECT count(*) FILTER (WHERE kind = 0), max(allocated) FROM memory_events")[1:]
            self.assertEqual(int(allocs), expected.actions["alloc"])
            self.assertEqual(int(peak), expected.peak)


class Evil:
    """Unpickling this runs a shell command."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class Refused(unittest.TestCase):
    def test_a_pickle_that_would_run_code_is_refused_unrun(self):
        with tempfile.TemporaryDirectory() as tmp:
            marker, path = os.path.join(tmp, "ran"), os.path.join(tmp, "evil.pickle")
            with open(path, "wb") as f:
                pickle.dump({"segments": [], "device_traces": [[Evil(marker)]]}, f)
            result = run_cli("import", path, "-o", os.path.join(tmp, "o.db"), check=False)
            self.assertNotEqual(result.returncode, 0)
            self.assertIn("never runs", result.stderr)
            self.assertFalse(os.path.exists(marker))
            self.assertFalse(os.path.exists(os.path.join(tmp, "o.db")))


def import_pickle(tmp, snapshot):
    """Imports `snapshot` pickled by Python; (exit code, stderr, database)."""
    path, db = os.path.join(tmp, "s.pickle"), os.path.join(tmp, "s.db")
    with open(path, "wb") as f:
        pickle.dump(snapshot, f)
    result = run_cli("import", path, "-o", db, "--quiet", check=False)
    return result.returncode, result.stderr, db


def entry(action, addr, size, **more):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "frames": [], **more}


class Malformed(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_a_pickle_of_something_else_is_named_and_refused(self):
        code, err, _ = import_pickle(self.tmp.name, {"weights": [1.0, 2.0]})
        self.assertEqual(code, 2)
        self.assertIn("a pickle file, but none loupe imports (PyTorch memory snapshot: a pickle", err)

    def test_an_entry_that_is_not_a_record_is_named(self):
        code, err, _ = import_pickle(self.tmp.name, {"segments": [], "device_traces": [[entry("alloc", 1, 8), 7]]})
        self.assertEqual(code, 2)
        self.assertIn("PyTorch memory snapshot: device_traces[0][1]: not a dict", err)

    def test_impossible_sizes_are_skipped_and_counted(self):
        entries = [entry("alloc", 1, 2 ** 62 + 1), entry("alloc", 2, -5), entry("alloc", 3, 100),
                   entry("alloc", 4, 2 ** 70)]
        code, err, db = import_pickle(self.tmp.name, {"segments": [], "device_traces": [entries]})
        self.assertEqual(code, 0, err)
        self.assertEqual(sql(db, "SELECT count(*), max(bytes) FROM memory_events")[1], ["1", "100"])
        meta = dict(sql(db, "SELECT key, value FROM meta")[1:])
        self.assertEqual(meta["skipped_events"], "3")

    def test_times_out_of_order_are_moved_up_and_counted(self):
        entries = [entry("alloc", 1, 10, time_us=2000), entry("alloc", 2, 10, time_us=1000),
                   entry("free_completed", 1, 10, time_us=3000)]
        code, err, db = import_pickle(self.tmp.name, {"segments": [], "device_traces": [entries]})
        self.assertEqual(code, 0, err)
        # Times from the first entry: 2000 us, then 1000 moved up to 2000, then 3000.
        self.assertEqual(sql(db, "SELECT time, allocated FROM memory_events ORDER BY id")[1:],
                         [["0", "10"], ["0", "20"], ["1000000", "10"]])
        meta = dict(sql(db, "SELECT key, value FROM meta")[1:])
        self.assertEqual(meta["snapshot_entries_moved_forward"], "1")

    def test_a_history_without_times_is_told_by_the_order_of_its_entries(self):
        # No time_us (PyTorch before 2.1): the peak, 30 B, is after the
        # second entry, and there is no window of time to state.
        entries = [entry("alloc", 1, 10), entry("alloc", 2, 20), entry("free_completed", 1, 10)]
        code, err, db = import_pickle(self.tmp.name, {"segments": [], "device_traces": [entries]})
        self.assertEqual(code, 0, err)
        report = run_cli("analyze", db, "--rules", "memory").stdout
        self.assertIn("no times recorded, only the order of the events", report)
        self.assertIn("device 0 (cuda:0): peak 30 B at entry 2", report)
        self.assertNotIn("active window", report)

    def test_a_free_of_a_block_from_before_the_history_is_held_before_it(self):
        # The segments hold 50 B in use at the end; the history frees a
        # 100 B block it never saw allocated: 150 B were held before it.
        segments = [{"device": 0, "address": 0, "total_size": 1024, "stream": 0,
                     "blocks": [{"size": 50, "state": "active_allocated"}, {"size": 974, "state": "inactive"}]}]
        entries = [entry("free_completed", 9, 100), entry("oom", 0, 4096, device_free=0)]
        code, err, db = import_pickle(self.tmp.name, {"segments": segments, "device_traces": [entries]})
        self.assertEqual(code, 0, err)
        self.assertEqual(sql(db, "SELECT k.name, bytes, allocated, reserved FROM memory_events m "
                                 "JOIN memory_event_kinds k ON k.id = m.kind ORDER BY m.id")[1:],
                         [["free", "100", "50", "1024"], ["oom", "4096", "50", "1024"]])

    def test_a_stack_ten_thousand_frames_deep_names_its_innermost_user_frame(self):
        frames = [{"filename": "torch/nn/functional.py", "line": 1, "name": "linear"}] * 5000 + \
                 [{"filename": "train.py", "line": 12, "name": "step"}] + \
                 [{"filename": "train.py", "line": 40, "name": "main"}] * 4999
        code, err, db = import_pickle(self.tmp.name, {"segments": [], "device_traces": [[
            entry("alloc", 1, 64, frames=frames)]]})
        self.assertEqual(code, 0, err)
        self.assertEqual(sql(db, "SELECT s.text, c.line FROM memory_events m JOIN callsites c ON c.id = m.callsite "
                                 "JOIN strings s ON s.id = c.file")[1:], [["train.py", "12"]])


if __name__ == "__main__":
    unittest.main()


class AllocatorHistoryIntoACapture(unittest.TestCase):
    """On a GPU, loupe.capture(memory=True) reads the CUDA caching
    allocator's own history when it stops (torch.cuda.memory._snapshot())
    and adds it at the entries' times. The same path, fed here the
    fixture's snapshot with times given by the test: entries before the
    capture began are left out (their blocks are held before it), the rest
    land at their times, and the last total is what the segments hold."""

    def test_the_history_lands_at_its_times_with_its_totals(self):
        import time

        import loupe
        from loupe import _core

        snapshot = load(SNAPSHOT)
        entries = snapshot["device_traces"][0]
        early = 40  # entries "before the capture", 1 ms apart, ending 1 s before it
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "h.db")
            with loupe.capture(db):
                since, wall = time.monotonic_ns(), time.time_ns()
                for k, e in enumerate(entries):
                    e["time_us"] = (wall - 1_000_000_000 - (early - k) * 1_000_000) // 1000 if k < early \
                        else wall // 1000 + k
                devices = _core.torch_snapshot(pickle.dumps(snapshot, protocol=4), wall - since, since)
                stop = time.monotonic_ns()
            rows = sql(db, "SELECT m.device, m.time, m.kind, m.bytes, m.allocated, s.text FROM memory_events m "
                           "LEFT JOIN callsites c ON c.id = m.callsite LEFT JOIN strings s ON s.id = c.file "
                           "ORDER BY m.time, m.id")[1:]
            origin = int(dict(sql(db, "SELECT key, value FROM meta")[1:])["origin_monotonic_ns"])
        self.assertEqual(devices, [0])
        kept = [e for e in entries[early:] if e["action"] in ("alloc", "free_completed")]
        self.assertEqual(len(rows), len(kept))
        self.assertEqual([int(r[3]) for r in rows], [e["size"] for e in kept])
        self.assertTrue(all(since <= int(r[1]) + origin <= stop for r in rows))
        held_at_end = sum(b["size"] for s in snapshot["segments"] if s["device"] == 0 for b in s["blocks"]
                          if b["state"] in ("active_allocated", "active_pending_free"))
        self.assertEqual(int(rows[-1][4]), held_at_end)
        self.assertTrue(any(r[5] and r[5].endswith("record_cpu_snapshot.py") for r in rows))
