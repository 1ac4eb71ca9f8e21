"""What the run_*.py benchmarks share: a command's wall time and peak
memory, and bench/run's row format (one JSON list a line)."""
import json
import os
import subprocess
import time


def timed(args, exit_codes=(0,)):
    """Wall seconds and peak resident memory (bytes) of one command, which
    must end with one of `exit_codes`."""
    start = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    seconds = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) not in exit_codes:
        raise SystemExit(f"{args} failed: {p.stderr.read().decode()}")
    return seconds, usage.ru_maxrss * 1024


def row(*cells):
    print(json.dumps(list(cells)))
