"""The capture `loupe capture -o FILE -- python PROGRAM` starts: its
sitecustomize calls start_from_environment() before the program runs.

The capture covers the whole process (a loupe.capture inside it records
nothing of its own), collects the GPUs itself where CUPTI can (CUDA's
injection, which `loupe capture` also sets up, then stands down), stops
after LOUPE_CAPTURE_DURATION seconds if given, and is written at exit.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

from ._core import Error
from ._recording import capture


def start_from_environment() -> None:
    path = os.environ.pop("LOUPE_PYTHON_TRACE", "")  # not again in the processes it starts
    if not path:
        return
    recording = capture(path, memory=os.environ.pop("LOUPE_PYTHON_MEMORY", "") == "1")
    recording.process_wide = True
    try:
        recording.start()
    except Error as e:
        print(f"loupe: {e}; this program is not recorded from Python", file=sys.stderr)
        return
    if not recording.gpu_missing:
        os.environ.pop("CUDA_INJECTION64_PATH", None)  # read by CUDA at its initialisation, still to come
    atexit.register(recording.stop)
    duration = float(os.environ.get("LOUPE_CAPTURE_DURATION") or 0)
    if duration > 0:
        timer = threading.Timer(duration, recording.stop)
        timer.daemon = True
        timer.start()
