"""Put on PYTHONPATH by `loupe capture`: records the Python program it runs
with loupe.capture when the loupe package is installed in this
interpreter, then runs the sitecustomize module this one hides, if any.

Without the package, nothing is recorded from Python; CUDA's injection
still records the GPUs.
"""

import os
import sys


def _record() -> None:
    if not os.environ.get("LOUPE_PYTHON_TRACE"):
        return
    try:
        from loupe import _autocapture
    except ImportError:
        del os.environ["LOUPE_PYTHON_TRACE"]  # nor in the processes it starts
        return
    _autocapture.start_from_environment()


def _run_hidden_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    this = sys.modules.pop("sitecustomize", None)
    path = sys.path[:]
    sys.path[:] = [p for p in path if os.path.abspath(p or os.curdir) != here]
    try:
        import sitecustomize  # noqa: F401 - the next one on the path, if any
    except ImportError as e:
        if e.name != "sitecustomize":
            raise  # the user's own module failed: site reports it, as without loupe
        sys.modules["sitecustomize"] = this
    finally:
        sys.path[:] = path


_record()
_run_hidden_sitecustomize()
