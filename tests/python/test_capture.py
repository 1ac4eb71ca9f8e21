"""Recording real JAX and PyTorch programs (on the CPU here, on the GPU in
scripts/gpu-check) with loupe.capture and with `loupe capture -- python`,
judged by the CLI: `loupe analyze` for the findings and `loupe sql` for the
rows.

What is expected is known from the programs, not from loupe. Both train on
the batch sizes they list, calling the compiled function at the line
marked `loupe-test: compiles` and reading the loss back once per step at
the line marked `loupe-test: host sync`; padded to one size, each compiles
once. JAX's jit compiles once per new size: 32 at step 0; 40, 48 and 56
after warm-up. Dynamo compiles for 32, then, when 40 fails the size guard,
once more with the batch dimension dynamic (its "automatic dynamic
shapes"), which every later size fits.
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from test_trace import CLI, run_cli, sql

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
PROGRAM = os.path.join(PROGRAMS, "jax_train.py")
TORCH_PROGRAM = os.path.join(PROGRAMS, "torch_train.py")
SIZES = [32, 32, 40, 32, 48, 40, 56, 32]
LATE_SIZES = [40, 48, 56]  # first seen after step 0, the warm-up step


def marked_line(mark, program=PROGRAM):
    with open(program) as f:
        lines = [n for n, text in enumerate(f, 1) if f"loupe-test: {mark}" in text]
    assert len(lines) == 1, mark
    return lines[0]


def python(code, *args, env=None):
    """Runs `code` in a fresh interpreter of this environment."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          env=env, timeout=300)


def capture_in_process(out, *args, program=PROGRAM):
    """The program run inside `with loupe.capture(out)`."""
    code = """
        import runpy, sys, loupe
        out, program = sys.argv[1], sys.argv[2]
        sys.argv = sys.argv[2:]
        with loupe.capture(out):
            runpy.run_path(program, run_name="__main__")
    """
    result = python(code, out, program, *args)
    assert result.returncode == 0, result.stderr
    return result


def capture_with_cli(out, *args, program=PROGRAM):
    result = subprocess.run([CLI, "capture", "-o", out, "--", sys.executable, program, *args], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result


def findings(path, rule):
    report = json.loads(run_cli("analyze", path, "--format", "json").stdout)
    return [f for f in report["findings"] if f["rule"] == rule]


def evidence(finding, name):
    return [e["value"] for e in finding["evidence"] if e["name"] == name]


def check_recompile(test, path, program, function, after_warm_up):
    """Checks that `path` has one recompile finding: `function` of `program`,
    compiled once at warm-up and `after_warm_up` times after it for shape
    changes, called from the program's line marked `compiles`. Returns the
    finding's reasons."""
    [f] = findings(path, "recompile")
    times = "1 time" if after_warm_up == 1 else f"{after_warm_up} times"
    test.assertIn(f"`{function} ({os.path.basename(program)}:", f["title"])
    test.assertIn(f"recompiled {times} after warm-up (shape change)", f["title"])
    test.assertEqual(evidence(f, "compiles"), [f"{after_warm_up + 1} in all, {after_warm_up} after warm-up"])
    test.assertEqual(evidence(f, "called at"), [f"{program}:{marked_line('compiles', program)} (x{after_warm_up})"])
    return evidence(f, "reason")


class JaxCapture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.ragged = os.path.join(cls.tmp.name, "ragged.db")
        cls.ragged_cli = os.path.join(cls.tmp.name, "ragged-cli.db")
        cls.bucketed = os.path.join(cls.tmp.name, "bucketed.db")
        cls.bucketed_cli = os.path.join(cls.tmp.name, "bucketed-cli.db")
        cls.output = capture_in_process(cls.ragged).stdout
        cls.cli_output = capture_with_cli(cls.ragged_cli)
        capture_in_process(cls.bucketed, "--bucket")
        capture_with_cli(cls.bucketed_cli, "--bucket")

    def test_ragged_batches_recompile_with_jaxs_reasons_and_the_calling_line(self):
        for path in (self.ragged, self.ragged_cli):
            with self.subTest(path=os.path.basename(path)):
                reasons = " ".join(check_recompile(self, path, PROGRAM, "train_step", after_warm_up=3))
                for size in LATE_SIZES:  # JAX's own words for each new size
                    self.assertIn(f"now f32[{size},16] and before f32[32,16]", reasons)

    def test_compile_rows_carry_signature_phases_and_function_identity(self):
        rows = sql(self.ragged, "SELECT sig.text, c.trace_ns, c.optimize_ns, c.codegen_ns, c.dur, c.function_object, "
                   "cs.line FROM compiles c JOIN strings fn ON fn.id = c.function JOIN strings sig ON "
                   "sig.id = c.signature JOIN callsites cs ON cs.id = c.callsite WHERE fn.text LIKE 'train_step%' "
                   "ORDER BY c.start")[1:]
        sizes = [32, *LATE_SIZES]
        self.assertEqual([r[0] for r in rows], [f"f32[16], f32[{n},16], f32[{n}], f32[{n}]" for n in sizes])
        for signature, trace, lower, codegen, dur, function_object, line in rows:
            self.assertGreater(int(trace), 0)
            self.assertGreater(int(lower), 0)
            self.assertGreater(int(codegen), 0)
            self.assertGreaterEqual(int(dur), int(trace) + int(lower) + int(codegen))
            self.assertEqual(int(line), marked_line("compiles"))
        self.assertEqual(len({r[5] for r in rows}), 1, "one jitted function object")
        self.assertNotEqual(rows[0][5], "0")

    def test_bucketed_batches_compile_once(self):
        for path in (self.bucketed, self.bucketed_cli):
            with self.subTest(path=os.path.basename(path)):
                self.assertEqual(findings(path, "recompile"), [])
                [[count]] = sql(path, "SELECT count(*) FROM compiles c JOIN strings fn ON fn.id = c.function "
                                "WHERE fn.text LIKE 'train_step%'")[1:]
                self.assertEqual(count, "1")

    def test_each_float_of_the_loss_is_a_host_sync_at_its_line(self):
        line = marked_line("host sync")
        for path in (self.ragged, self.ragged_cli):
            with self.subTest(path=os.path.basename(path)):
                rows = sql(path, "SELECT k.name, t.synchronous, t.implicit, t.bytes, cs.line FROM transfers t "
                           "JOIN copy_kinds k ON k.id = t.direction JOIN callsites cs ON cs.id = t.callsite")[1:]
                self.assertEqual(rows, [["DtoH", "1", "1", "4", str(line)]] * len(SIZES))
        [f] = findings(self.ragged, "transfer")
        self.assertIn(f"synchronous device-to-host read at {PROGRAM}:{line} every step", f["title"])

    def test_steps_come_from_step_trace_annotations(self):
        rows = sql(self.ragged, "SELECT number FROM steps ORDER BY start")[1:]
        self.assertEqual([int(r[0]) for r in rows], list(range(len(SIZES))))

    def test_the_program_runs_as_without_loupe(self):
        plain = subprocess.run([sys.executable, PROGRAM], capture_output=True, text=True, timeout=300)
        self.assertEqual(self.output, plain.stdout)
        self.assertEqual(plain.stderr, "")
        self.assertNotIn("TRACING CACHE MISS", self.cli_output.stderr, "JAX's explanations stay out of its log")
        self.assertIn("loupe: recorded", self.cli_output.stderr)


def torch_state():
    """(None, whether CUDA is there) where PyTorch imports, else (why not, False)."""
    probe = python("import torch; print(torch.cuda.is_available())")
    if probe.returncode != 0:
        return f"PyTorch cannot be imported here: {probe.stderr.strip().splitlines()[-1:]}", False
    return None, probe.stdout.strip() == "True"


class TorchCapture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.why_not, cls.cuda = torch_state()
        if cls.why_not:
            raise unittest.SkipTest(cls.why_not)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.ragged = os.path.join(cls.tmp.name, "ragged.db")
        cls.ragged_cli = os.path.join(cls.tmp.name, "ragged-cli.db")
        cls.bucketed = os.path.join(cls.tmp.name, "bucketed.db")
        cls.output = capture_in_process(cls.ragged, program=TORCH_PROGRAM).stdout
        capture_with_cli(cls.ragged_cli, program=TORCH_PROGRAM)
        capture_in_process(cls.bucketed, "--bucket", program=TORCH_PROGRAM)

    def test_ragged_batches_recompile_with_dynamos_reason_and_the_calling_line(self):
        for path in (self.ragged, self.ragged_cli):
            with self.subTest(path=os.path.basename(path)):
                [reason] = check_recompile(self, path, TORCH_PROGRAM, "loss_fn", after_warm_up=1)
                self.assertIn("tensor 'x' size mismatch at index 0. expected 32, actual 40", reason)

    def test_compile_rows_carry_input_shapes_and_phases(self):
        rows = sql(self.ragged, "SELECT sig.text, c.trace_ns, c.dur FROM compiles c JOIN strings fn ON "
                   "fn.id = c.function JOIN strings sig ON sig.id = c.signature WHERE fn.text LIKE 'loss_fn%' "
                   "ORDER BY c.start")[1:]
        self.assertEqual(len(rows), 2)
        self.assertIn("x[32,16]", rows[0][0])
        self.assertNotIn("x[32,16]", rows[1][0], "the second compile has the batch dimension dynamic")
        for _, trace, dur in rows:
            self.assertGreater(int(trace), 0)
            self.assertGreaterEqual(int(dur), int(trace))

    def test_bucketed_batches_compile_once(self):
        self.assertEqual(findings(self.bucketed, "recompile"), [])
        [[count]] = sql(self.bucketed, "SELECT count(*) FROM compiles c JOIN strings fn ON fn.id = c.function "
                        "WHERE fn.text LIKE 'loss_fn%'")[1:]
        self.assertEqual(count, "1")

    def test_each_float_of_the_loss_is_a_host_sync_at_its_line_on_a_gpu(self):
        rows = sql(self.ragged, "SELECT k.name, t.synchronous, t.implicit, t.bytes, cs.line FROM transfers t "
                   "JOIN copy_kinds k ON k.id = t.direction JOIN callsites cs ON cs.id = t.callsite "
                   f"WHERE cs.line = {marked_line('host sync', TORCH_PROGRAM)}")[1:]
        # On the CPU a tensor's value is the host's already: no sync to record.
        expected = [["DtoH", "1", "1", "4", str(marked_line("host sync", TORCH_PROGRAM))]] * len(SIZES)
        self.assertEqual(rows, expected if self.cuda else [])

    def test_the_program_prints_as_without_loupe(self):
        plain = subprocess.run([sys.executable, TORCH_PROGRAM], capture_output=True, text=True, timeout=300)
        self.assertEqual(self.output, plain.stdout)


class TorchProfilerSteps(unittest.TestCase):
    def test_steps_are_the_profilers_steps(self):
        why_not, _ = torch_state()
        if why_not:
            self.skipTest(why_not)
        program = os.path.join(PROGRAMS, "torch_profiler_steps.py")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "steps.db")
            capture_in_process(out, program=program)
            numbers = [int(r[0]) for r in sql(out, "SELECT number FROM steps ORDER BY start")[1:]]
        # Five prof.step() calls after start(): PyTorch's own trace has
        # ProfilerStep#0 to #5, the last from the fifth step() to stop().
        self.assertEqual(numbers, [0, 1, 2, 3, 4, 5])


class CaptureErrors(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_a_capture_inside_a_capture_is_refused(self):
        code = """
            import sys, loupe
            with loupe.capture(sys.argv[1]):
                try:
                    with loupe.capture(sys.argv[2]):
                        pass
                except loupe.CaptureError as e:
                    print(e)
        """
        a, b = os.path.join(self.tmp.name, "a.db"), os.path.join(self.tmp.name, "b.db")
        result = python(code, a, b)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(),
                         f"a capture is already recording to {a}: loupe.capture cannot be nested; stop that one first")
        self.assertFalse(os.path.exists(b))
        self.assertTrue(os.path.exists(a))

    def test_an_unwritable_path_is_refused_before_recording(self):
        code = """
            import loupe
            try:
                loupe.capture("/nonexistent-dir/run.db").start()
            except loupe.FileError as e:
                print(e)
        """
        result = python(code)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("/nonexistent-dir/run.db", result.stdout)

    def test_a_framework_that_is_not_installed_is_skipped_silently(self):
        code = """
            import sys
            sys.modules["jax"] = None  # as if JAX were not installed
            import loupe
            with loupe.capture(sys.argv[1]):
                with loupe.step(0):
                    pass
        """
        out = os.path.join(self.tmp.name, "nojax.db")
        result = python(code, out)
        self.assertEqual((result.returncode, result.stderr), (0, ""))
        self.assertEqual(sql(out, "SELECT number FROM steps")[1:], [["0"]])

    def test_loupe_capture_of_a_python_without_the_package_records_nothing_and_says_so(self):
        base = getattr(sys, "_base_executable", "")
        if not base or base == sys.executable:
            self.skipTest("no interpreter without the loupe package")
        out = os.path.join(self.tmp.name, "bare.db")
        result = subprocess.run([CLI, "capture", "-o", out, "--", base, "-c", "print('ran')"], capture_output=True,
                                text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, "ran\n")
        self.assertIn("nothing was recorded", result.stderr)

    def test_a_capture_inside_loupe_capture_records_into_the_outer_trace(self):
        program = os.path.join(self.tmp.name, "inner.py")
        with open(program, "w") as f:
            f.write("import loupe\nwith loupe.capture('inner.db'):\n    with loupe.step(3):\n        pass\n")
        out = os.path.join(self.tmp.name, "outer.db")
        result = subprocess.run([CLI, "capture", "-o", out, "--", sys.executable, program], capture_output=True,
                                text=True, timeout=120, cwd=self.tmp.name)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"already recorded into {out} by `loupe capture`", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "inner.db")))
        self.assertEqual(sql(out, "SELECT number FROM steps")[1:], [["3"]])


if __name__ == "__main__":
    unittest.main()
