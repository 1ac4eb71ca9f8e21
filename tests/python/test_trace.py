"""loupe.open and its DataFrames against `loupe sql` on the same file, and
the analyses, budgets, diffs and imports against the CLI's own output.

The CLI (LOUPE_CLI, set by ctest) is the independent side: `loupe sql`
reads the file with SQLite, not through the model the package uses.
"""
import csv
import io
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np
import pandas as pd

import loupe

CLI = os.environ.get("LOUPE_CLI", "loupe")
FIXTURES = os.environ.get("LOUPE_FIXTURES_DIR", "")

# Which enumeration table names each enumerated column (docs/trace-format.md).
ENUM_TABLES = {
    ("host_spans", "kind"): "span_kinds",
    ("instants", "kind"): "span_kinds",
    ("device_ops", "kind"): "device_op_kinds",
    ("device_ops", "copy_kind"): "copy_kinds",
    ("transfers", "direction"): "copy_kinds",
    ("transfers", "host_memory"): "host_memory_kinds",
    ("memory_events", "kind"): "memory_event_kinds",
    ("compiles", "kind"): "compile_kinds",
}


def run_cli(*args, check=True):
    result = subprocess.run([CLI, *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"loupe {' '.join(args)} failed: {result.stderr}")
    return result


def sql(path, query):
    """Rows of `loupe sql --csv` as lists of strings, header first."""
    return list(csv.reader(io.StringIO(run_cli("sql", path, query, "--csv").stdout)))


class Workdir(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.synth = os.path.join(cls.tmp.name, "synth.db")
        run_cli("synth", "-o", cls.synth, "--events", "20000", "--seed", "7", "-q")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()


class Tables(Workdir):
    def test_every_event_table_matches_loupe_sql(self):
        trace = loupe.open(self.synth)
        strings = dict(sql(self.synth, "SELECT id, text FROM strings")[1:])
        for table in loupe.event_tables():
            with self.subTest(table=table):
                frame = trace.table(table)
                rows = sql(self.synth, f"SELECT * FROM {table}")
                header, rows = rows[0], rows[1:]
                self.assertEqual(list(frame.columns), [c for c in header if c != "id"])
                self.assertEqual(len(frame), len(rows))
                expected = pd.DataFrame(rows, columns=header).drop(columns="id")
                for column in frame.columns:
                    expected[column] = self.readable(table, column, frame[column].dtype, expected[column], strings)
                # `loupe sql` prints a REAL with 15 significant digits: those compare as numbers.
                reals = [c for c in frame.columns if frame[c].dtype == np.float64]
                key = [c for c in frame.columns if c not in reals]
                got = frame.astype({c: str for c in key}).sort_values(key, kind="stable").reset_index(drop=True)
                want = expected.sort_values(key, kind="stable").reset_index(drop=True)
                pd.testing.assert_frame_equal(got[key], want[key].astype(str))
                for column in reals:
                    np.testing.assert_allclose(got[column], want[column].astype(float), rtol=1e-14, err_msg=column)

    def readable(self, table, column, dtype, raw, strings):
        """What the DataFrame should show for a column of raw SQL values."""
        enum = ENUM_TABLES.get((table, column))
        if enum:
            names = dict(sql(self.synth, f"SELECT id, name FROM {enum}")[1:])
            return raw.map(names)
        if isinstance(dtype, pd.CategoricalDtype):
            return raw.map(strings)
        if dtype == np.bool_:
            return raw.map({"0": "False", "1": "True"})
        return raw

    def test_columns_have_their_types(self):
        spans = loupe.open(self.synth).table("host_spans")
        self.assertEqual(spans["start"].dtype, np.int64)
        self.assertEqual(spans["dur"].dtype, np.int64)
        self.assertIsInstance(spans["name"].dtype, pd.CategoricalDtype)
        self.assertIsInstance(spans["kind"].dtype, pd.CategoricalDtype)
        transfers = loupe.open(self.synth).table("transfers")
        self.assertEqual(transfers["synchronous"].dtype, np.bool_)

    def test_small_tables_match_loupe_sql(self):
        trace = loupe.open(self.synth)
        for table in loupe.small_tables:
            with self.subTest(table=table):
                frame = trace.table(table)
                rows = sql(self.synth, f"SELECT count(*) FROM {table}")
                self.assertEqual(len(frame), int(rows[1][0]))
            with self.subTest(columns=table):
                # Every column of the file's table, by name: the module
                # misses none.
                frame = trace.table(table)
                columns = [row[1] for row in sql(self.synth, f"PRAGMA table_info({table})")[1:]]
                self.assertEqual(sorted(frame.columns), sorted(columns))
        devices = trace.table("devices")
        raw = sql(self.synth, "SELECT d.id, d.name, k.name FROM devices d JOIN device_kinds k ON k.id = d.kind")[1:]
        self.assertEqual([[str(i), n, k] for i, n, k in zip(devices["id"], devices["name"], devices["kind"])], raw)

    def test_info_matches_the_meta_table(self):
        info = loupe.open(self.synth).info
        meta = dict(sql(self.synth, "SELECT key, value FROM meta")[1:])
        self.assertEqual(info["meta"], meta)
        self.assertEqual(info["producer"], meta["producer"])

    def test_a_table_read_alone_is_the_table_of_the_whole_trace(self):
        trace = loupe.open(self.synth)
        alone = trace.table("device_ops")
        trace.analyze()  # reads the whole trace
        pd.testing.assert_frame_equal(alone, trace.table("device_ops"))

    def test_an_unknown_table_is_refused_naming_the_tables(self):
        with self.assertRaisesRegex(ValueError, r"no event table 'kernels' \(tables: host_spans, "):
            loupe.open(self.synth).table("kernels")


class Analyses(Workdir):
    def test_analyze_is_loupe_analyze_json(self):
        cli = json.loads(run_cli("analyze", self.synth, "--format", "json", "--set", "min_gap=50us").stdout)
        self.assertEqual(loupe.open(self.synth).analyze(min_gap="50us"), cli)
        self.assertTrue(cli["findings"])

    def test_rules_and_numeric_thresholds(self):
        cli = json.loads(run_cli("analyze", self.synth, "--format", "json", "--rules", "idle-gap",
                                 "--set", "idle_warning=0.2").stdout)
        self.assertEqual(loupe.open(self.synth).analyze(rules=["idle-gap"], idle_warning=0.2), cli)

    def test_bad_thresholds_and_rules_give_the_clis_message(self):
        trace = loupe.open(self.synth)
        with self.assertRaisesRegex(ValueError, "unknown analysis parameter 'min_gaps'"):
            trace.analyze(min_gaps="1us")
        with self.assertRaisesRegex(ValueError, "unknown rule 'idle'"):
            trace.analyze(rules=["idle"])
        with self.assertRaisesRegex(ValueError, "must be a number"):
            trace.analyze(min_gap=True)

    def test_check_is_loupe_check(self):
        budget = os.path.join(self.tmp.name, "budget.toml")
        with open(budget, "w") as f:
            f.write("idle_fraction_max = 0.05\nstep_time_max = \"1000s\"\n")
        results = loupe.open(self.synth).check(budget)
        cli = run_cli("check", self.synth, "--budget", budget, check=False).stdout.splitlines()
        verdicts = [line.split()[:2] for line in cli if line.startswith(("pass", "FAIL"))]
        self.assertEqual([["pass" if r.passed else "FAIL", r.key] for r in results], verdicts)
        as_dict = loupe.open(self.synth).check({"idle_fraction_max": 0.05, "step_time_max": "1000s"})
        self.assertEqual([(r.key, r.passed, r.actual) for r in as_dict], [(r.key, r.passed, r.actual) for r in results])

    def test_a_malformed_budget_raises_budget_error(self):
        with self.assertRaisesRegex(loupe.BudgetError, "idle_fraction"):
            loupe.open(self.synth).check({"idle_fraction": 0.1})
        with self.assertRaises(loupe.Error):
            loupe.open(self.synth).check(os.path.join(self.tmp.name, "missing.toml"))

    def test_diff_is_loupe_diff_json(self):
        other = os.path.join(self.tmp.name, "other.db")
        run_cli("synth", "-o", other, "--events", "20000", "--seed", "8", "-q")
        cli = json.loads(run_cli("diff", self.synth, other, "--format", "json").stdout)
        self.assertEqual(loupe.diff(self.synth, other), cli)

    def test_diff_of_several_runs_and_of_a_step_is_loupe_diffs(self):
        other = os.path.join(self.tmp.name, "other.db")
        run_cli("synth", "-o", other, "--events", "20000", "--seed", "8", "-q")
        cli = json.loads(run_cli("diff", "--base", self.synth, other, "--head", other, self.synth,
                                 "--format", "json").stdout)
        self.assertEqual(loupe.diff([self.synth, other], [other, self.synth]), cli)
        self.assertEqual((cli["runs"]["base"], cli["runs"]["head"]), (2, 2))
        self.assertEqual(cli["runs"]["base_step_time"], cli["runs"]["head_step_time"][::-1])
        step = json.loads(run_cli("diff", self.synth, other, "--step", "1", "--format", "json").stdout)
        self.assertEqual(loupe.diff(self.synth, other, step=1), step)
        with self.assertRaises(ValueError):
            loupe.diff([], other)


class Errors(Workdir):
    def expect_cli_message(self, exception, call, *cli_args):
        stderr = run_cli(*cli_args, check=False).stderr.strip()
        self.assertTrue(stderr.startswith("loupe: "), stderr)
        with self.assertRaises(exception) as raised:
            call()
        self.assertEqual(str(raised.exception), stderr[len("loupe: "):])

    def test_a_missing_trace(self):
        path = os.path.join(self.tmp.name, "missing.db")
        self.expect_cli_message(loupe.TraceError, lambda: loupe.open(path), "analyze", path)

    def test_a_corrupt_trace(self):
        path = os.path.join(self.tmp.name, "corrupt.db")
        with open(self.synth, "rb") as f:
            data = bytearray(f.read())
        data[100:4096] = b"\x5a" * (4096 - 100)
        with open(path, "wb") as f:
            f.write(data)
        self.expect_cli_message(loupe.TraceError, lambda: loupe.open(path), "analyze", path)

    def test_not_a_trace(self):
        path = os.path.join(self.tmp.name, "notes.txt")
        with open(path, "w") as f:
            f.write("not a trace\n")
        self.expect_cli_message(loupe.TraceError, lambda: loupe.open(path), "analyze", path)

    def test_errors_are_loupe_errors(self):
        self.assertTrue(issubclass(loupe.TraceError, loupe.Error))
        self.assertTrue(issubclass(loupe.TraceImportError, loupe.Error))
        self.assertTrue(issubclass(loupe.Error, Exception))


class Import(Workdir):
    def test_import_trace_writes_what_loupe_import_writes(self):
        source = os.path.join(FIXTURES, "v100_train_5steps.json.gz")
        if not os.path.exists(source):
            self.skipTest(f"no fixture {source}")
        ours, theirs = os.path.join(self.tmp.name, "py.db"), os.path.join(self.tmp.name, "cli.db")
        result = loupe.import_trace(source, ours)
        run_cli("import", source, "-o", theirs)
        self.assertEqual(result.format, "kineto")
        for table in loupe.event_tables():
            count = int(sql(theirs, f"SELECT count(*) FROM {table}")[1][0])
            self.assertEqual(result.rows_by_table.get(table, 0), count, table)
            self.assertEqual(len(loupe.open(ours).table(table)), count, table)

    def test_open_reads_a_foreign_trace_as_its_imported_file(self):
        source = os.path.join(os.path.dirname(__file__), "..", "fixtures", "kineto", "cpu_mlp_train.json.gz")
        imported = os.path.join(self.tmp.name, "cpu_mlp.db")
        run_cli("import", source, "-o", imported, "-q")
        os.environ["LOUPE_CACHE_DIR"] = os.path.join(self.tmp.name, "cache")
        try:
            direct = loupe.open(source)
            for table in loupe.event_tables():
                pd.testing.assert_frame_equal(direct.table(table), loupe.open(imported).table(table), obj=table)
            ours = direct.analyze()
            theirs = json.loads(run_cli("analyze", imported, "--format", "json").stdout)
            self.assertEqual({k: v for k, v in ours.items() if k != "trace"},
                             {k: v for k, v in theirs.items() if k != "trace"})
        finally:
            del os.environ["LOUPE_CACHE_DIR"]

    def test_a_bad_import_gives_the_clis_message(self):
        path = os.path.join(self.tmp.name, "bad.json")
        with open(path, "w") as f:
            f.write('{"traceEvents": [ {"ph": "X", ')
        out = os.path.join(self.tmp.name, "bad.db")
        stderr = run_cli("import", path, "-o", out, check=False).stderr.strip()
        with self.assertRaises(loupe.TraceImportError) as raised:
            loupe.import_trace(path, out)
        self.assertEqual("loupe: " + str(raised.exception), stderr)
        self.assertFalse(os.path.exists(out))
        with self.assertRaisesRegex(loupe.TraceImportError, "unknown import format 'perfetto'"):
            loupe.import_trace(path, out, format="perfetto")


if __name__ == "__main__":
    unittest.main()
