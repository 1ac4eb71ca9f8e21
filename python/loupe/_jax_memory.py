"""JAX's arrays, for loupe.capture(memory=True) and `loupe capture
--memory`: the arrays live at each step's end and when the capture stops,
each with the line of the user's code that made it.

JAX says nothing when it allocates or frees a buffer, so the arrays are
sampled: ``jax.live_arrays()`` at each step boundary (a
``jax.profiler.StepTraceAnnotation`` or a ``loupe.step`` leaving) gives
every array alive, and each buffer of each (one per addressable shard,
``unsafe_buffer_pointer()`` its address) not seen at the last sample is an
allocation, each one gone a free, recorded at the sample's time. The line
is the innermost frame of the user's code in the array's own traceback
(``jax.Array.traceback``, the stack when JAX made it). What was live when
recording began is the running total's starting point: allocated before
the trace. Buffers made and dropped within one step are not seen; the
totals at step ends, which the leak rule reads, are exact.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from . import _callsite, _core


class LiveArrays:
    """Samples of jax.live_arrays() into the active capture."""

    def __init__(self, device_id: Callable[[Any], int]):
        self._device_id = device_id  # the trace's id of a jax Device
        self._lock = threading.Lock()
        self._live: dict[tuple[int, int], int] = {}  # (device, address) -> bytes
        self._allocated: dict[int, int] = {}  # device -> bytes live
        self._noted: set[int] = set()  # devices named in the trace's meta as sampled

    def start(self) -> None:
        """What is live now is held from before the trace: no events."""
        with self._lock:
            for key, (size, _) in self._buffers().items():
                self._live[key] = size
                self._allocated[key[0]] = self._allocated.get(key[0], 0) + size

    def sample(self) -> None:
        """Records what was allocated and freed since the last sample."""
        with self._lock:
            now = self._buffers()
            self._note_devices(now)
            for key in [k for k in self._live if k not in now]:
                size = self._live.pop(key)
                total = self._allocated[key[0]] = self._allocated[key[0]] - size
                _core.memory(key[0], "free", size, key[1], total, 0)
            for key, (size, array) in now.items():
                if key in self._live:
                    continue
                self._live[key] = size
                total = self._allocated[key[0]] = self._allocated.get(key[0], 0) + size
                _core.memory(key[0], "alloc", size, key[1], total, self._site(array))

    def _note_devices(self, buffers: dict[tuple[int, int], tuple[int, Any]]) -> None:
        """Tells the trace which devices' memory events are samples."""
        devices = {device for device, _ in buffers} | set(self._allocated)
        if devices - self._noted:
            self._noted |= devices
            _core.note_meta(_core.META_MEMORY_SAMPLED, ",".join(str(d) for d in sorted(self._noted)))

    def _buffers(self) -> dict[tuple[int, int], tuple[int, Any]]:
        """(device, address) -> (bytes, array) of every buffer alive."""
        import jax

        out: dict[tuple[int, int], tuple[int, Any]] = {}
        for array in jax.live_arrays():
            for buffer in _single_device_arrays(array):
                try:
                    key = (self._device_id(next(iter(buffer.devices()))), buffer.unsafe_buffer_pointer())
                    out[key] = (int(buffer.nbytes), array)
                except (RuntimeError, ValueError):  # deleted or donated meanwhile
                    continue
        return out

    def _site(self, array: Any) -> int:
        """The call site of the user's innermost frame in the array's
        traceback (innermost first) and of the frames that called it; 0 when
        it has none of the user's."""
        frames = list(getattr(getattr(array, "traceback", None), "frames", ()))
        first = next((k for k, f in enumerate(frames) if _callsite.is_user_file(f.file_name)), None)
        if first is None:
            return 0
        return _callsite.stack_site([(f.file_name, f.line_num, f.function_name) for f in frames[first:]])


def _single_device_arrays(array: Any) -> list[Any]:
    """The array's buffers, one single-device array each. Not through
    ``addressable_shards``: that property is cached on the array, and the
    Shards it keeps hold their data arrays until the garbage collector runs,
    so a sample through it would keep every sampled buffer alive past the
    user's last reference and change the memory it measures."""
    try:
        return list(array._arrays)
    except (AttributeError, RuntimeError):  # not an ArrayImpl, or deleted meanwhile
        return []
