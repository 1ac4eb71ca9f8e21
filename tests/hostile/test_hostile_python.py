"""The Python side under hostile conditions (docs/reliability.md): a program
that forks under a capture, errors that quote a stranger's strings, and a
user's own sitecustomize under `loupe capture`. Each test failed before its
fix."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import unittest

CLI = os.environ["LOUPE_CLI"]


def run(args, env=None, timeout=120):
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)


def python(code, *args, env=None, timeout=120):
    return run([sys.executable, "-c", textwrap.dedent(code), *args], env=env, timeout=timeout)


def spans(trace):
    with sqlite3.connect(f"file:{trace}?mode=ro", uri=True) as db:
        return [name for (name,) in db.execute(
            "SELECT s.text FROM host_spans h JOIN strings s ON s.id = h.name ORDER BY h.start")]


# The parent records a span, forks, and the child leaves the capture it
# inherited every way a program can: the `with` block, atexit, a
# multiprocessing worker. The child also records a span, which must not
# reach the parent's trace, and may then start a capture of its own.
FORKING = """
    import multiprocessing, os, sys, time
    import loupe
    from loupe import _core

    def mark(name):
        now = time.monotonic_ns()
        _core.span(name, "user", now, now + 1000, 0)

    def worker(x):
        mark("in a pool worker")
        return x * 2

    def main(out, own):
        mark("parent before fork")
        pid = os.fork()
        if pid == 0:
            mark("child inherited")
            with loupe.capture(own):
                mark("child's own")
            sys.exit(0)  # atexit and the enclosing `with` (if any) run in the child
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        with multiprocessing.get_context("fork").Pool(2) as pool:
            assert pool.map(worker, range(4)) == [0, 2, 4, 6]
        mark("parent after fork")
"""


class ForkUnderCapture(unittest.TestCase):
    """Defect 5: the forked child stopped the capture it inherited (atexit,
    or leaving the `with` block) and never exited."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "parent.db")
        self.own = os.path.join(self.tmp.name, "child.db")

    def tearDown(self):
        self.tmp.cleanup()

    def check(self):
        self.assertEqual(spans(self.out), ["parent before fork", "parent after fork"])
        self.assertEqual(spans(self.own), ["child's own"], "the child records only when it asks")

    def test_with_loupe_capture(self):
        code = FORKING + """
    with loupe.capture(sys.argv[1]):
        main(sys.argv[1], sys.argv[2])
    """
        result = python(code, self.out, self.own, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.check()

    def test_under_loupe_capture(self):
        program = os.path.join(self.tmp.name, "forking.py")
        with open(program, "w") as f:
            f.write(textwrap.dedent(FORKING + """
    main(None, sys.argv[1])
    """))
        result = run([CLI, "capture", "-o", self.out, "--", sys.executable, program, self.own], timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.check()


class SafeErrors(unittest.TestCase):
    """Defect 14: a JobError carried raw terminal escapes from a trace's
    name, and an index with invalid UTF-8 raised UnicodeDecodeError."""

    def test_errors_are_printable_and_of_loupes_classes(self):
        import loupe
        import loupe.jobs

        with tempfile.TemporaryDirectory() as tmp:
            job = os.path.join(tmp, "job")
            result = run([CLI, "synth", "--ranks", "2", "--events", "500", "-o", job, "-q"])
            self.assertEqual(result.returncode, 0, result.stderr)
            index_path = os.path.join(job, "job.json")
            with open(index_path) as f:
                index = json.load(f)
            index["ranks"][0]["trace"] = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J/evil"
            with open(index_path, "w") as f:
                json.dump(index, f)
            with self.assertRaises(loupe.JobError) as raised:
                loupe.jobs.analyze(job)
            message = str(raised.exception)
            self.assertNotIn("\x1b", message)
            self.assertIn("\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J/evil", message)

            with open(index_path, "wb") as f:
                f.write(b'{"format": "loupe job", "version": 1, "world_size": 2, "backend": "\xff\xfe", "ranks": []}')
            with self.assertRaises(loupe.JobError) as raised:
                loupe.jobs.analyze(job)
            self.assertIn("\\xff", str(raised.exception))


class UserSitecustomize(unittest.TestCase):
    """Defect 15: `loupe capture -- python` swallowed the ImportError of the
    user's own sitecustomize, which plain Python reports."""

    def test_a_broken_sitecustomize_is_reported_as_python_reports_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "sitecustomize.py"), "w") as f:
                f.write("import a_module_that_does_not_exist_anywhere\n")
            env = dict(os.environ, PYTHONPATH=tmp)
            plain = run([sys.executable, "-c", "pass"], env=env)
            self.assertIn("a_module_that_does_not_exist_anywhere", plain.stderr)
            captured = run([CLI, "capture", "-o", os.path.join(tmp, "t.db"), "--", sys.executable, "-c", "pass"],
                           env=env)
            self.assertEqual(captured.returncode, 0, captured.stderr)
            self.assertIn("Error in sitecustomize", captured.stderr)
            self.assertIn("No module named 'a_module_that_does_not_exist_anywhere'", captured.stderr)


if __name__ == "__main__":
    unittest.main()
