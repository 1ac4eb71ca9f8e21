"""A job's analysis: the ranks of a distributed run compared (docs/analyses.md,
"Jobs"), here or on a Dask cluster.

    import loupe.jobs
    report = loupe.jobs.analyze("job/")                  # every core here
    report = loupe.jobs.analyze("job/", client=client)   # a dask.distributed.Client

The analysis is a map and a reduce. The map reads one rank's trace and
returns a small summary (a few hundred bytes a step); the reduce folds the
summaries into the report one at a time, in rank order. With a client, the map runs as one Dask task per
rank, on a worker of the host the rank's trace came from when one is known
to the scheduler (else on any worker: the trace must be readable there, as
on a shared file system), and the reduce runs here. The report is the same
as ``loupe analyze job/ --format json`` gives. docs/scale.md says how a
large job runs this way.
"""
from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from . import _core
from ._core import JobError

__all__ = ["analyze", "JobReport", "JobError"]

# Readings of a job that was written over while it was read, as
# analyze_job() makes them.
_READ_ATTEMPTS = 3


@dataclass(frozen=True)
class JobReport:
    """A job's report: ``data`` is the JSON document of ``loupe analyze job/
    --format json`` as Python objects, ``text`` what ``loupe analyze job/``
    prints."""

    data: dict
    text: str

    @property
    def findings(self) -> list[dict]:
        return self.data["findings"]

    def __str__(self) -> str:
        return self.text


def _thresholds(thresholds: Optional[Mapping[str, Any]]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (thresholds or {}).items()}


def _summarize(trace: str, rank: int, world_size: int, host: str, thresholds: dict[str, str]) -> tuple[bool, str]:
    """The map task: (True, the summary's JSON), or (False, the problem), in
    the words the local analysis uses."""
    try:
        return True, _core.summarize_rank(trace, rank, world_size, host, thresholds)
    except _core.Error as e:  # a rank that cannot be read is reported, not fatal
        return False, f"rank {rank}: cannot be read, left out: {e}"


def _workers_by_host(client) -> dict[str, list[str]]:
    """Worker addresses by the IP address of their host."""
    by_host: dict[str, list[str]] = {}
    for address, info in client.scheduler_info()["workers"].items():
        by_host.setdefault(info.get("host", ""), []).append(address)
    return by_host


def _ip_of(host: str) -> Optional[str]:
    try:
        return socket.gethostbyname(host) if host else None
    except OSError:
        return None


def _map_on_dask(client, ranks, thresholds):
    """The map tasks' results in rank order, each gathered when the reduce
    wants it and released once handed over, so the client holds one
    summary at a time while the others wait on the workers."""
    by_host = _workers_by_host(client)
    futures = []
    for rank, trace, world_size, host in ranks:
        near = by_host.get(_ip_of(host) or "")
        placement = {"workers": near, "allow_other_workers": True} if near else {}
        futures.append(client.submit(_summarize, trace, rank, world_size, host, thresholds,
                                     key=f"loupe-summary-{rank}-{trace}", pure=False, **placement))
    for i, future in enumerate(futures):
        result = future.result()
        futures[i] = None
        future.release()
        yield result


def analyze(job: str, client=None, thresholds: Optional[Mapping[str, Any]] = None,
            workers: int = 0) -> JobReport:
    """Analyses the job in the folder ``job``. ``client``: a
    ``dask.distributed.Client`` to run the map on, else it runs here on
    ``workers`` threads (0: one per core). ``thresholds``: each rank's own
    analysis thresholds, as ``--set NAME=VALUE`` takes them.

    Raises JobError for a folder that is not a job, and for a job none of
    whose ranks can be read; a rank that cannot be read is named in the
    report's ``problems`` and the rest are analysed. A job written over
    while it is read is read again, whole, as the local analysis does.
    """
    limits = _thresholds(thresholds)
    if client is None:
        data, text = _core.analyze_job(str(job), limits, workers)
        return JobReport(json.loads(data), text)
    attempt = 1
    while True:
        reducer = _core.JobReducer(str(job), limits)
        unread = 0
        for ok, value in _map_on_dask(client, reducer.ranks(), limits):
            if ok:
                reducer.add(value)
            else:
                unread += 1
                reducer.add_problem(value)
        if unread == 0 or not reducer.replaced():
            data, text = reducer.finish()
            return JobReport(json.loads(data), text)
        if attempt == _READ_ATTEMPTS:
            raise JobError(f"{job}: the job was written over {attempt} times while it was read; read it again once "
                           f"it is written")
        attempt += 1
