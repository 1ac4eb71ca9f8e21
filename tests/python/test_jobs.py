"""loupe.jobs: a job's analysis here and on a Dask cluster (a LocalCluster
of two worker processes) gives what `loupe analyze job/ --format json`
gives, planted straggler included, and a rank that cannot be read is named
the same way by both.

The CLI (LOUPE_CLI, set by ctest) writes the synthetic job and is the
independent side of the comparison.
"""
import json
import os
import re
import subprocess
import tempfile
import unittest

import loupe
import loupe.jobs

CLI = os.environ.get("LOUPE_CLI", "loupe")


def run_cli(*args):
    result = subprocess.run([CLI, *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"loupe {' '.join(args)} failed: {result.stderr}")
    return result.stdout


class JobTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.job = os.path.join(cls.tmp.name, "job")
        out = run_cli("synth", "--ranks", "6", "--events", "6000", "--seed", "7", "-o", cls.job)
        cls.straggler = int(re.search(r"planted: rank (\d+) late by", out).group(1))
        cls.cli = json.loads(run_cli("analyze", cls.job, "--format", "json"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def straggler_of(self, data):
        found = [f for f in data["findings"] if f["rule"] == "straggler"]
        self.assertEqual(len(found), 1)
        return found[0]["ranks"]

    def test_local_analysis_is_the_clis(self):
        report = loupe.jobs.analyze(self.job)
        self.assertEqual(report.data, self.cli)
        self.assertEqual(self.straggler_of(report.data), [self.straggler])
        self.assertIn(f"rank {self.straggler} arrived last", report.text)

    def test_dask_gives_the_local_result(self):
        from dask.distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            report = loupe.jobs.analyze(self.job, client=client)
            self.assertEqual(report.data, self.cli)

            # A corrupt rank: named alike by both paths, the rest analysed.
            with tempfile.TemporaryDirectory() as tmp:
                job = os.path.join(tmp, "job")
                run_cli("synth", "--ranks", "4", "--events", "3000", "--seed", "2", "-o", job)
                victim = 3
                with open(os.path.join(job, "job.json")) as index:
                    trace = json.load(index)["ranks"][victim]["trace"]
                with open(os.path.join(job, trace), "wb") as f:
                    f.write(b"not a trace")
                local = loupe.jobs.analyze(job)
                on_dask = loupe.jobs.analyze(job, client=client)
                self.assertEqual(on_dask.data, local.data)
                self.assertEqual(len(local.data["ranks"]), 3)
                self.assertTrue(any(p.startswith(f"rank {victim}: cannot be read, left out")
                                    for p in local.data["problems"]), local.data["problems"])

    def test_a_folder_that_is_no_job_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(loupe.JobError) as raised:
                loupe.jobs.analyze(tmp)
            self.assertIn("job.json", str(raised.exception))


if __name__ == "__main__":
    unittest.main()
