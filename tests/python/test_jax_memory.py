"""JAX's arrays under loupe.capture(memory=True), on JAX's CPU backend:
what the trace holds live when the capture ends against jax.live_arrays()
taken by the test at that moment, an array deleted within a step as a
free, and the sample that keeps every step's predictions
(samples/python/jax_keep_outputs.py) found at its line with the growth its
shapes give, its fix with no finding.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from test_torch_leak import evidence, leak_findings, line_of
from test_torch_memory import format_bytes
from test_trace import CLI, run_cli, sql

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.normpath(os.path.join(HERE, "..", "..", "samples", "python", "jax_keep_outputs.py"))


def buffers(arrays):
    """The addresses of the arrays' buffers (each on one device here).
    Not through addressable_shards: its cache keeps arrays alive until the
    garbage collector runs."""
    return {a.unsafe_buffer_pointer() for a in arrays}


class LiveArraysAtTheEnd(unittest.TestCase):
    def test_the_trace_holds_what_jax_says_is_live(self):
        import jax
        import jax.numpy as jnp

        import loupe

        before = buffers(jax.live_arrays())
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "j.db")
            with loupe.capture(db, memory=True):
                kept = []
                for step in range(3):
                    with jax.profiler.StepTraceAnnotation("s", step_num=step):
                        kept.append(jnp.full((64, 64), float(step)))  # 16,384 B each, kept
                        dropped = jnp.ones((32, 32)) * step  # 4,096 B, dropped before the step ends
                        dropped_address = buffers([dropped]).pop()
                        del dropped
                live_at_end = buffers(jax.live_arrays())
            rows = sql(db, "SELECT kind, bytes, address FROM memory_events ORDER BY time, id")[1:]
            meta = dict(sql(db, "SELECT key, value FROM meta")[1:])
        live = {}
        for kind, size, address in rows:
            if kind == "0":
                live[int(address)] = int(size)
            else:
                live.pop(int(address), None)
        # An address live before the capture may be freed and used again
        # inside it: such addresses are left out of both sides.
        self.assertEqual(set(live) - before, live_at_end - before)
        self.assertTrue(buffers(kept) <= set(live))
        self.assertEqual([live[a] for a in buffers(kept)], [64 * 64 * 4] * 3)
        self.assertNotIn(dropped_address, live)
        self.assertIn("memory_sampled_at_step_ends", meta)


class SamplingKeepsNothingAlive(unittest.TestCase):
    def test_read_scalars_do_not_pile_up_across_steps(self):
        """Each step's loss, read by float() and then dropped, is gone at
        the next step's end: the sampling holds no buffer of its own."""
        import jax
        import jax.numpy as jnp

        import loupe

        @jax.jit
        def step(w):
            return w * 0.5, (w * w).mean()

        live_after = []
        with tempfile.TemporaryDirectory() as tmp:
            with loupe.capture(os.path.join(tmp, "j.db"), memory=True):
                w = jnp.ones((64, 64))
                for n in range(4):
                    with jax.profiler.StepTraceAnnotation("s", step_num=n):
                        w, loss = step(w)
                        float(loss)
                    live_after.append(len(buffers(jax.live_arrays())))
        self.assertEqual(live_after, live_after[:1] * 4)


class DeviceMemoryProfile(unittest.TestCase):
    """jax.profiler.device_memory_profile() imported: its total is the
    bytes of jax.live_arrays() taken beside it, and the test's own arrays
    are at their lines with their sizes."""

    def test_the_profile_holds_what_jax_says_is_live_at_its_lines(self):
        import jax
        import jax.numpy as jnp

        import loupe

        big = jnp.ones((256, 128))  # 131,072 B
        small = [jnp.zeros((32, 32)) for _ in range(3)]  # 4,096 B each
        big_line, small_line = line_of("big = jnp.ones((256, 128))", __file__), line_of("small = [jnp.zeros", __file__)
        with tempfile.TemporaryDirectory() as tmp:
            prof, db = os.path.join(tmp, "memory.prof"), os.path.join(tmp, "memory.db")
            # Arrays other tests left in reference cycles go first, and no
            # collection may free one between the two readings.
            import gc
            gc.collect()
            gc.disable()
            try:
                live = sum(a.nbytes for a in jax.live_arrays())
                jax.profiler.save_device_memory_profile(prof)
            finally:
                gc.enable()
            loupe.import_trace(prof, db)
            trace = loupe.open(db)
            events = trace.table("memory_events")
            sites = trace.table("callsites").set_index("id")
        self.assertEqual(int(events.bytes.sum()), live)
        by_line = {}
        for site, size in zip(events.callsite, events.bytes):
            if site and sites.file[site] == __file__:
                by_line.setdefault(int(sites.line[site]), []).append(int(size))
        self.assertEqual(by_line.get(big_line), [256 * 128 * 4])
        self.assertEqual(by_line.get(small_line), [32 * 32 * 4] * 3)
        self.assertEqual(trace.info["meta"]["memory_one_moment"], "0")
        del big, small


class KeptPredictions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dbs = {}
        for name, extra in (("mistake", []), ("fixed", ["--fixed"])):
            db = os.path.join(cls.tmp.name, f"{name}.db")
            subprocess.run([CLI, "capture", "--memory", "-o", db, "--", sys.executable, SAMPLE, *extra], check=True,
                           capture_output=True)
            cls.dbs[name] = db

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_list_of_predictions_is_found_at_its_line(self):
        [finding] = leak_findings(self.dbs["mistake"])
        # A step keeps one batch of predictions: 512 x 256 float32.
        growth = evidence(finding, "growth per step")["growth per step"]
        self.assertTrue(growth.startswith(format_bytes(512 * 256 * 4) + " (median)"), growth)
        line = line_of("w, loss, predictions = train_step(w, x, x)", SAMPLE)
        self.assertTrue(finding["title"].endswith(f"jax_keep_outputs.py:{line}"), finding["title"])

    def test_the_fix_has_no_finding(self):
        self.assertEqual(leak_findings(self.dbs["fixed"]), [])

    def test_the_peak_says_it_is_of_samples(self):
        report = json.loads(run_cli("analyze", self.dbs["mistake"], "--format", "json", "--rules", "memory").stdout)
        [finding] = report["findings"]
        self.assertIn("peak of the step-end samples", finding["title"])


if __name__ == "__main__":
    unittest.main()
