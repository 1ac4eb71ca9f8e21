"""What the framework hooks (_jax.py, _torch.py) share: putting back what
they replaced, the trace's clock for times a framework took with
time.time(), and the timing of a host sync."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from . import _core

_ABSENT = object()


class Restorer:
    """Attributes replaced on classes and modules, put back on restore()."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []

    def replace(self, owner: Any, name: str, value: Any) -> Any:
        """Sets owner.name to value; returns what calls used to reach."""
        original = owner.__dict__.get(name, _ABSENT)
        reached = getattr(owner, name)
        self._saved.append((owner, name, original))
        setattr(owner, name, value)
        return reached

    def restore(self) -> None:
        for owner, name, original in reversed(self._saved):
            if original is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self._saved.clear()


def monotonic_ns_of_wall_ns(wall_ns: int) -> int:
    """A time.time_ns() instant (what frameworks stamp their events with)
    on the trace's clock, CLOCK_MONOTONIC."""
    return time.monotonic_ns() - (time.time_ns() - wall_ns)


class SyncTimer:
    """Times the calls that make the host wait for a device, once each: a
    call inside another (float() reading the value read() also reads) is
    part of the outer one."""

    def __init__(self) -> None:
        self._local = threading.local()

    def timed(self, call: Callable[[], Any], record: Callable[[int, int, Any], None]) -> Any:
        """call()'s result; record(start_ns, end_ns, result) when a capture is on."""
        local = self._local
        if getattr(local, "depth", 0) or not _core.capturing():
            return call()
        local.depth = 1
        start = time.monotonic_ns()
        try:
            result = call()
        finally:
            local.depth = 0
        record(start, time.monotonic_ns(), result)
        return result
