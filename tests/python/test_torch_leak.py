"""The leak sample (samples/python/torch_eval_leak.py), run here on
PyTorch's CPU backend under `loupe capture --memory`: the leak finding's
growth per step against the program's own torch.profiler trace of the same
run (the `Total Allocated` of its [memory] events at each ProfilerStep's
end), the lines it names against the sample's source, and its fix with no
finding. The same run's Kineto trace, imported, gives the same growth.
"""
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import unittest

from test_torch_memory import format_bytes
from test_trace import CLI, run_cli

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.normpath(os.path.join(HERE, "..", "..", "samples", "python", "torch_eval_leak.py"))


def line_of(text, path=SAMPLE):
    """The number of the line of `path` (the sample) holding `text`."""
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if text in line:
                return number
    raise AssertionError(f"{text!r} is not in {path}")


def growth_per_step(kineto_json):
    """The median growth of Total Allocated between consecutive step ends
    after the first, read from the raw trace with json alone."""
    opener = gzip.open if kineto_json.endswith(".gz") else open
    with opener(kineto_json, "rt") as f:
        events = json.load(f)["traceEvents"]
    memory = sorted((e["ts"], e["args"]["Total Allocated"]) for e in events if e.get("name") == "[memory]")
    ends = sorted(e["ts"] + e["dur"] for e in events if e.get("name", "").startswith("ProfilerStep#"))
    at_ends = [[total for ts, total in memory if ts <= end][-1] for end in ends]
    return statistics.median(b - a for a, b in zip(at_ends[1:], at_ends[2:]))


def leak_findings(db):
    report = json.loads(run_cli("analyze", db, "--format", "json", "--rules", "leak").stdout)
    return report["findings"]


def evidence(finding, prefix):
    return {e["name"]: e["value"] for e in finding["evidence"] if e["name"].startswith(prefix)}


class EvalLoopLeak(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.runs = {}
        for name, extra in (("leak", []), ("fixed", ["--fixed"])):
            db, trace = (os.path.join(cls.tmp.name, f"{name}.{ext}") for ext in ("db", "json"))
            subprocess.run([CLI, "capture", "--memory", "-o", db, "--", sys.executable, SAMPLE, trace, *extra],
                           check=True, capture_output=True)
            cls.runs[name] = (db, trace)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_leak_grows_as_the_programs_own_trace_says(self):
        db, trace = self.runs["leak"]
        expected = growth_per_step(trace)
        self.assertGreater(expected, 100_000)  # the graph of each step: ~197 KB
        [finding] = leak_findings(db)
        self.assertEqual(finding["severity"], "warning")
        growth = evidence(finding, "growth per step")["growth per step"]
        self.assertTrue(growth.startswith(format_bytes(expected) + " (median)"), (growth, expected))

    def test_the_leak_names_the_lines_that_allocated_what_outlives_each_step(self):
        [finding] = leak_findings(self.runs["leak"][0])
        forward = f"torch_eval_leak.py:{line_of('loss = torch.nn.functional.mse_loss')}"
        inputs = f"torch_eval_leak.py:{line_of('x, y = torch.randn')}"
        self.assertIn(f"most of what outlives its step was allocated at {SAMPLE}:", finding["title"])
        self.assertTrue(finding["title"].endswith(forward), finding["title"])
        sites = evidence(finding, "allocated at ")
        self.assertTrue(any(name.endswith(inputs) for name in sites), sites)
        self.assertIn("loss.item()", finding["suggestion"])

    def test_the_fix_has_no_finding(self):
        self.assertEqual(leak_findings(self.runs["fixed"][0]), [])

    def test_the_programs_own_trace_imported_shows_the_same_growth(self):
        db, trace = self.runs["leak"]
        imported = os.path.join(self.tmp.name, "imported.db")
        run_cli("import", trace, "-o", imported, "--quiet")
        [finding] = leak_findings(imported)
        growth = evidence(finding, "growth per step")["growth per step"]
        self.assertTrue(growth.startswith(format_bytes(growth_per_step(trace)) + " (median)"), growth)


class RecordedStorages(unittest.TestCase):
    """loupe.capture(memory=True) in this process: a storage allocated
    inside the capture is an alloc at its data_ptr with this file's line;
    one held from before is in the running total from the start, and its
    release a free of its bytes."""

    def test_allocations_frees_and_what_was_held_before(self):
        import loupe
        import torch

        held = torch.zeros(1000)  # 4,000 B, from before the capture
        held_address = held.untyped_storage().data_ptr()
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "m.db")
            with loupe.capture(db, memory=True):
                made = torch.ones(256) * 2  # line_of: the multiplication allocates 1,024 B
                made_address = made.untyped_storage().data_ptr()
                view = made[10:]  # a view: no allocation
                made.add_(1)  # in place: no allocation
                del held
                del made, view
            rows = run_cli("sql", db, "SELECT e.kind, e.bytes, e.address, e.allocated, c.line, s.text "
                           "FROM memory_events e LEFT JOIN callsites c ON c.id = e.callsite "
                           "LEFT JOIN strings s ON s.id = c.file ORDER BY e.time", "--csv").stdout.splitlines()[1:]
        events = [row.split(",") for row in rows]
        line = line_of("made = torch.ones(256) * 2", __file__)
        ours = [e for e in events if int(e[2]) in (held_address, made_address)]
        # torch.ones(256) (freed at once, an intermediate) and the product.
        allocs = [e for e in ours if e[0] == "0"]
        self.assertEqual([(int(e[1]), int(e[2]), int(e[4])) for e in allocs], [(1024, made_address, line)])
        self.assertTrue(allocs[0][5].endswith("test_torch_leak.py"), allocs[0])
        frees = [(int(e[1]), int(e[2])) for e in ours if e[0] == "1"]
        self.assertEqual(sorted(frees), sorted([(4000, held_address), (1024, made_address)]))
        # Held from the start: the first event's total less its own bytes.
        kind, size, _, total = events[0][:4]
        before = int(total) - (int(size) if kind == "0" else -int(size))
        self.assertGreaterEqual(before, 4000)


def make_ones(n):
    import torch

    return torch.ones(n)  # line_of: the helper's allocation


class RecordedStacks(unittest.TestCase):
    """A storage allocated in a helper carries the whole stack: the
    helper's line, then the line that called it, then the callers above."""

    def test_an_allocation_in_a_helper_names_its_caller(self):
        import loupe

        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "s.db")
            with loupe.capture(db, memory=True):
                kept = make_ones(300)  # line_of: the call of the helper
            [site] = run_cli("sql", db, "SELECT callsite FROM memory_events WHERE kind = 0 AND bytes = 1200",
                             "--csv").stdout.splitlines()[1:]
            stack = []
            site = int(site)
            while site:
                [row] = run_cli("sql", db, f"SELECT c.line, c.parent, f.text FROM callsites c JOIN strings f "
                                           f"ON f.id = c.function WHERE c.id = {site}", "--csv").stdout.splitlines()[1:]
                line, site, function = row.split(",")
                stack.append((int(line), function))
                site = int(site)
        del kept
        self.assertEqual(stack[0], (line_of("return torch.ones(n)  # line_of", __file__), "make_ones"))
        self.assertEqual(stack[1], (line_of("kept = make_ones(300)", __file__),
                                    "test_an_allocation_in_a_helper_names_its_caller"))
        self.assertGreater(len(stack), 2)  # unittest's own frames above


class RecordedCategories(unittest.TestCase):
    """A training step recorded live: at the peak (inside Adam's step), the
    gradients and Adam's state by category, against what PyTorch itself
    holds (each parameter's .grad, the tensors of the optimizer's state)."""

    def test_gradients_and_optimizer_state_at_the_peak(self):
        import loupe
        import torch

        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "c.db")
            with loupe.capture(db, memory=True):
                for step in range(3):
                    with loupe.step(step):
                        x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
                        opt.zero_grad(set_to_none=True)
                        torch.nn.functional.cross_entropy(model(x), y).backward()
                        opt.step()
            report = json.loads(run_cli("analyze", db, "--format", "json", "--rules", "memory").stdout)
        grads = sum(p.grad.untyped_storage().nbytes() for p in model.parameters())
        state = sum(t.untyped_storage().nbytes() for s in opt.state.values() for t in s.values()
                    if isinstance(t, torch.Tensor))
        params = sum(p.untyped_storage().nbytes() for p in model.parameters())
        [finding] = report["findings"]
        at_peak = evidence(finding, "at peak: ")
        self.assertTrue(at_peak["at peak: gradient"].startswith(format_bytes(grads) + ": "), at_peak)
        self.assertTrue(at_peak["at peak: optimizer state"].startswith(format_bytes(state) + ": "), at_peak)
        before = evidence(finding, "allocated before")["allocated before the trace began"]
        self.assertGreaterEqual(parse_bytes(before.split(" (")[0]), params * 0.99)  # the parameters, at least


def parse_bytes(text):
    number, unit = text.split()
    return float(number) * {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}[unit]


if __name__ == "__main__":
    unittest.main()
