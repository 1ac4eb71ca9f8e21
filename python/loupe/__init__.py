"""loupe for Python: recording a program's JAX compiles, host syncs and
steps (``loupe.capture``), loupe trace files as pandas DataFrames, and the
analyses, budgets, diffs and imports of the ``loupe`` command line.

    import loupe

    with loupe.capture("run.db"):            # or: loupe capture -o run.db -- python train.py
        for i, batch in enumerate(batches):
            with loupe.step(i):
                loss = train_step(params, batch)

    trace = loupe.open("run.db")
    kernels = trace.table("device_ops")      # one row per device operation
    report = trace.analyze(min_gap="50us")   # what ``loupe analyze --format json`` prints
    for finding in report["findings"]:
        print(finding["severity"], finding["title"])

Every figure comes from the same C++ library as the CLI's, so the two
always agree. Errors are ``loupe.Error`` subclasses carrying the message
the CLI prints.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Mapping, Sequence, Union

import numpy as np
import pandas as pd

from . import _core
from ._core import (BudgetError, BudgetResult, Error, FileError, ImportResult, JobError, StoreError, TraceError,
                    TraceImportError)
from ._recording import CaptureError, capture, step

__all__ = [
    "open", "Trace", "diff", "import_trace", "event_tables", "small_tables", "capture", "step",
    "Error", "TraceError", "TraceImportError", "BudgetError", "StoreError", "FileError", "JobError", "CaptureError",
    "BudgetResult", "ImportResult",
]

PathLike = Union[str, "os.PathLike[str]"]

small_tables = tuple(_core.small_tables())


def event_tables() -> list[str]:
    """The event tables, in the trace schema's order (docs/trace-format.md)."""
    return list(_core.event_tables())


def open(path: PathLike) -> "Trace":  # noqa: A001 - loupe.open, like the CLI's FILE argument
    """Opens a trace: any file ``loupe analyze`` takes but a job's folder.

    Of a loupe trace file, reads its meta, strings and small tables now, and
    each event table the first time it is asked for (:meth:`Trace.table`),
    so that one table of a large trace costs only its own rows. Another
    profiler's trace (Kineto, JAX or Chrome JSON, an Nsight Systems export,
    a memory snapshot, a JAX profile folder) is imported in memory, whole,
    through the cache of imported traces (docs/import.md). Raises
    TraceError naming the file and the problem for a missing, corrupt or
    unreadable file.
    """
    return Trace(os.fspath(path))


class Trace:
    """A trace file opened by :func:`loupe.open`."""

    def __init__(self, path: str):
        self._header = _core.open(path, [])  # checks the file; reads no event table of a loupe trace
        # Another profiler's trace is read whole at once (imported in memory).
        self._whole: _core.Trace | None = self._header if self._header.complete else None
        self._read: dict[str, _core.Trace] = {}  # event table -> the read that holds it
        self._string_categories: dict[_core.Trace, pd.Index] = {}  # per read: its strings table

    def __repr__(self) -> str:
        return f"<loupe.Trace {self.path!r}>"

    @property
    def path(self) -> str:
        return self._header.path

    @property
    def info(self) -> dict[str, Any]:
        """Format version, producer, status, clock origin, lost events and the meta rows."""
        return dict(self._header.info)

    @property
    def tables(self) -> list[str]:
        """Every table :meth:`table` returns: the event tables, then the small ones."""
        return event_tables() + list(small_tables)

    def table(self, name: str) -> pd.DataFrame:
        """One table as a DataFrame, with its columns in docs/trace-format.md's order.

        Event tables hold every event of every track (sorted by time within
        each track), without the SQL-only ``id``. Strings and enumerations
        come as categoricals of their readable names (``name``, ``kind``,
        ``direction``, ...), flags as booleans, times and durations as int64
        nanoseconds from the trace's origin. ``callsite`` stays an id into
        the ``callsites`` table (0: none). The first call for an event table
        reads it from the file and checks it, raising TraceError if it is
        damaged.
        """
        if name in small_tables:
            return pd.DataFrame(self._header.small_table(name))
        core = self._holding(name)
        frame = {c.name: self._column(core, c) for c in core.columns(name)}
        return pd.DataFrame(frame, copy=False)

    def _holding(self, table: str) -> "_core.Trace":
        """A read of the file that holds `table`: the whole trace if it was read, else that table alone."""
        if self._whole is not None:
            return self._whole
        if table not in self._read:
            if table not in _core.event_tables():
                self._header.columns(table)  # raises ValueError naming the tables
            self._read[table] = _core.open(self.path, [table])
        return self._read[table]

    def _model(self) -> "_core.Trace":
        """The whole trace, read once, for the analyses."""
        if self._whole is None:
            self._whole = _core.open(self.path)
            self._read.clear()
            self._string_categories.clear()
        return self._whole

    def analyze(self, rules: Sequence[str] | None = None, **thresholds: Any) -> dict[str, Any]:
        """The findings and measurements of ``loupe analyze --format json`` (docs/analyses.md).

        ``rules`` limits the rules run; each keyword is a threshold as
        ``--set NAME=VALUE`` takes it (``min_gap="50us"``, ``idle_warning=0.2``).
        Raises ValueError naming an unknown rule or threshold or a bad value.
        """
        return json.loads(self._model().analyze_json(list(rules or []), _threshold_texts(thresholds)))

    def live_memory(self, device: int, time_ns: int) -> dict[str, Any]:
        """What was live on ``device``'s memory just after ``time_ns`` (the
        ``time`` of the ``memory_events`` table), as the viewer lists it for a
        point of the memory lane and the memory finding at the peak:
        ``allocated`` (the running total), ``held_before`` (the part of it held
        from before the trace), ``by_category`` ({category: bytes} of the
        trace's blocks whose ops tell what they were for, docs/analyses.md) and
        ``sites`` ([(allocation site, bytes, blocks)], most bytes first).
        Raises ValueError for a device with no memory events.
        """
        return dict(self._model().live_memory(device, time_ns))

    def check(self, budget: PathLike | Mapping[str, Any]) -> list[BudgetResult]:
        """``loupe check``: each limit of a budget against this trace.

        ``budget`` is a TOML file, or a dict of the same keys
        (``{"idle_fraction_max": 0.15, "thresholds": {"min_gap": "50us"}}``).
        Raises BudgetError naming the problem in a malformed budget.
        """
        if isinstance(budget, Mapping):
            return list(self._model().check(_budget_toml(budget), "<dict>"))
        return list(self._model().check_file(os.fspath(budget)))

    def _column(self, core: "_core.Trace", column: "_core.Column") -> Any:
        if column.check == "string":
            return self._strings(core, column.values)
        if column.check == "kind":
            return pd.Categorical.from_codes(column.values, categories=column.categories)
        if column.check == "flag":
            return column.values.view(np.bool_)
        if column.check == "text":
            return pd.Series(column.values, dtype=object)
        return column.values

    def _strings(self, core: "_core.Trace", ids: np.ndarray) -> Any:
        """String ids as a categorical of the strings table of the read that holds them."""
        categories = self._string_categories.get(core)
        if categories is None:
            categories = self._string_categories[core] = pd.Index(core.strings, dtype=object)
        if categories.is_unique:
            return pd.Categorical.from_codes(ids, categories=categories)
        # A file written by another tool may repeat a string: plain objects then.
        return categories.to_numpy()[ids]


def diff(base: PathLike | Trace | Sequence[PathLike | Trace], head: PathLike | Trace | Sequence[PathLike | Trace],
         rules: Sequence[str] | None = None, step: int | None = None, significance: float = 0.05,
         **thresholds: Any) -> dict[str, Any]:
    """``loupe diff BASE HEAD --format json``: two runs side by side, with the changes beyond noise marked.

    Given a list of runs a side (``loupe diff --base A1 A2 --head B1 B2``), the step time and each name's
    time per step are tested with a rank test over steps blocked by run, at ``significance``; ``step``
    compares that step of each run by name instead of each name's median step.
    """
    def runs(side: Any) -> list[Trace]:
        items = list(side) if isinstance(side, (list, tuple)) else [side]
        if not items:
            raise ValueError("diff: each side needs at least one run")
        return [item if isinstance(item, Trace) else open(item) for item in items]

    if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
        raise ValueError(f"step must be a step number (0 or more), got {step!r}")
    if not 0 < significance <= 0.5:
        raise ValueError(f"significance must be in (0, 0.5], got {significance!r}")
    base_runs, head_runs = runs(base), runs(head)
    text = _core.diff_json([t._model() for t in base_runs], [t._model() for t in head_runs],
                           ", ".join(t.path for t in base_runs), ", ".join(t.path for t in head_runs),
                           list(rules or []), _threshold_texts(thresholds), -1 if step is None else step,
                           significance)
    return json.loads(text)


def import_trace(source: PathLike, out: PathLike, format: str = "auto", threads: int = 0) -> ImportResult:
    """``loupe import``: reads a Kineto, JAX or Chrome JSON trace (gzip too) or an
    Nsight Systems SQLite export and writes the loupe trace ``out``.

    Raises TraceImportError naming the input and the problem; ``out`` is then
    left as it was.
    """
    if threads < 0:
        raise ValueError(f"threads must be 0 (one per core) or more, got {threads}")
    return _core.import_trace(os.fspath(source), os.fspath(out), format, threads)


def _threshold_texts(thresholds: Mapping[str, Any]) -> dict[str, str]:
    texts = {}
    for name, value in thresholds.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"{name} must be a number or a string such as '50us', got {value!r}")
        texts[name] = value if isinstance(value, str) else repr(value)
    return texts


def _toml_value(key: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise BudgetError(f"<dict>: {key} must be a number or a string, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise BudgetError(f"<dict>: {key} must be finite, got {value!r}")
    return json.dumps(value)  # a TOML basic string, integer or float


def _budget_toml(budget: Mapping[str, Any]) -> str:
    lines, tables = [], []
    for key, value in budget.items():
        if isinstance(value, Mapping):
            tables.append(f"[{key}]")
            tables += [f"{k} = {_toml_value(f'{key}.{k}', v)}" for k, v in value.items()]
        else:
            lines.append(f"{key} = {_toml_value(key, value)}")
    return "\n".join(lines + tables) + "\n"
