"""JAX's compiles, host syncs and steps, recorded for loupe.capture.

Where each comes from, in JAX's own words:

- A compile is assembled from JAX's monitoring spans of one function on one
  thread: ``jaxpr_trace_duration`` (tracing), ``jaxpr_to_mlir_module_duration``
  (lowering) and ``backend_compile_duration`` (XLA), which ends it; its input
  types from pxla's "Compiling F with global shapes and types" record; its
  reason from the "TRACING CACHE MISS" explanation that
  ``jax_explain_cache_misses`` makes JAX log. Functions traced inside
  another one's trace (inner jits) are part of that compile, not compiles
  of their own.
- A host sync is a read of an array's value by the host (``float(x)``,
  ``x.item()``, ``x.tolist()``, printing, ``jax.device_get``) or a
  ``block_until_ready``: the wrappers run only at those calls and cost
  nothing between them. ``np.asarray`` of an array on JAX's CPU backend
  reads it through the buffer protocol, below Python, and is not seen.
- A step is a ``jax.profiler.StepTraceAnnotation``.

Nothing here changes what the program computes; JAX's explanations are
kept out of the program's log unless it had asked for them.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from typing import Any, Callable

from . import _callsite, _core
from ._hooks import Restorer, SyncTimer, monotonic_ns_of_wall_ns
from ._jax_memory import LiveArrays

_PHASES = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}
_WRAPPED_NAME = re.compile(r"^(?:jit|pjit|pmap|xla_pmap)\((.*)\)$")


def _plain_name(name: str) -> str:
    """'jit(f)' and 'f' both name f."""
    m = _WRAPPED_NAME.match(name)
    return m.group(1) if m else name


def _monotonic_ns(wall_seconds: float) -> int:
    """A time.time() instant (what JAX's monitoring reports) on the trace's clock."""
    return monotonic_ns_of_wall_ns(round(wall_seconds * 1e9))


class _Compile:
    """One compile being assembled from its phases."""

    __slots__ = ("name", "site", "trace", "lower", "backend", "signature", "reason", "defined_at",
                 "function_object")

    def __init__(self, name: str, site: int):
        self.name, self.site = name, site
        self.trace = self.lower = self.backend = None  # (start_ns, end_ns)
        self.signature = self.reason = self.defined_at = ""
        self.function_object = 0

    def span(self) -> tuple[int, int]:
        phases = [p for p in (self.trace, self.lower, self.backend) if p]
        return min(p[0] for p in phases), max(p[1] for p in phases)


def _inside(inner: tuple[int, int] | None, outer: tuple[int, int]) -> bool:
    return inner is not None and outer[0] <= inner[0] and inner[1] <= outer[1]


class _Compiles:
    """Assembles each thread's compiles from JAX's events and records them."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pending: dict[int, list[_Compile]] = {}
        self._emitted: dict[int, list[tuple[int, int]]] = {}  # per thread: traces of recorded compiles
        self._last_signature: dict[str, str] = {}
        # JAX names the function object only at its first miss ("never seen
        # function"); later misses "for" the function are of that object.
        self._function_object: dict[str, int] = {}

    def _latest(self, name: str, missing: str) -> _Compile:
        """The thread's latest compile of `name` still without `missing`, or a new one."""
        pending = self._pending.setdefault(threading.get_ident(), [])
        for c in reversed(pending):
            if c.name == name and not getattr(c, missing):
                return c
        c = _Compile(name, _callsite.site_of(_callsite.user_frame()))
        pending.append(c)
        return c

    def phase(self, phase: str, name: str, start_ns: int, end_ns: int) -> None:
        with self._lock:
            if phase == "trace":  # each trace is a compile of its own
                c = _Compile(name, _callsite.site_of(_callsite.user_frame()))
                self._pending.setdefault(threading.get_ident(), []).append(c)
            else:
                c = self._latest(name, "backend" if phase == "compile" else phase)
            setattr(c, "backend" if phase == "compile" else phase, (start_ns, end_ns))
            if phase == "compile":
                self._record(threading.get_ident(), c)

    def explained(self, name: str, reason: str, defined_at: str, function_object: int) -> None:
        with self._lock:
            c = self._latest(name, "reason")
            c.reason, c.defined_at, c.function_object = reason, defined_at, function_object

    def typed(self, name: str, signature: str) -> None:
        with self._lock:
            self._latest(name, "signature").signature = signature

    def _record(self, thread: int, c: _Compile) -> None:
        pending = self._pending[thread]
        pending.remove(c)
        if c.trace:  # what was traced inside this trace belongs to this compile
            pending[:] = [p for p in pending if not _inside(p.trace, c.trace)]
            self._emitted.setdefault(thread, []).append(c.trace)
        start, end = c.span()
        function = c.name
        if c.defined_at:
            file, _, line = c.defined_at.rpartition(":")
            function = f"{c.name} ({os.path.basename(file)}:{line})"
        reason = c.reason
        before = self._last_signature.get(function)
        if not reason and before is not None and c.signature and before != c.signature:
            reason = f"input types now {c.signature}, before {before} (JAX gave no explanation)"
        if c.signature:
            self._last_signature[function] = c.signature
        if c.function_object:
            self._function_object[function] = c.function_object
        elif c.reason:
            c.function_object = self._function_object.get(function, 0)
        length = lambda p: p[1] - p[0] if p else 0  # noqa: E731
        _core.compile(function, c.signature, "miss", reason, start, end, length(c.trace), length(c.lower),
                      length(c.backend), c.site, c.function_object)

    def flush(self) -> None:
        """Records the traces JAX explained as cache misses that compiled
        nothing new (XLA's cache had the program), unless they were part of
        a recorded compile."""
        with self._lock:
            for thread, pending in self._pending.items():
                for c in list(pending):
                    if c.reason and c.trace and not any(_inside(c.trace, t) for t in self._emitted.get(thread, [])):
                        self._record(thread, c)
            self._pending.clear()
            self._emitted.clear()


_MISS = re.compile(r"^TRACING CACHE MISS at .* because:$")
_UNSEEN = re.compile(r"^\s*(?P<name>.+?) id=(?P<id>\d+)(?: defined at (?P<at>\S+))?\s*$")
_FOR = re.compile(r"^\s*for (?P<name>.+?)(?: defined at (?P<at>\S+))?\s*$")


def parse_explanation(text: str) -> tuple[str, str, str, int] | None:
    """(function, reason, defined at, function id) of a TRACING CACHE MISS
    message; None for any other text."""
    lines = text.split("\n")
    if not _MISS.match(lines[0]) or len(lines) < 2:
        return None
    body = [line.strip() for line in lines[1:]]
    if body[0] == "never seen function:" and len(lines) > 2 and (m := _UNSEEN.match(lines[2])):
        reason = " ".join(["never seen function"] + body[2:])
        return m["name"], reason, m["at"] or "", int(m["id"])
    if m := _FOR.match(lines[1]):
        return m["name"], " ".join(body[1:]), m["at"] or "", 0
    return None


class _LogTap(logging.Filter):
    """Takes the records that carry compile facts off one of JAX's loggers,
    and lets through only what the program would have seen without loupe."""

    def __init__(self, logger: logging.Logger, take: Callable[[logging.LogRecord], bool], show_taken: bool):
        super().__init__()
        self.logger, self.take, self.show_taken = logger, take, show_taken
        self.level = logger.level
        self.visible = logger.getEffectiveLevel()

    def filter(self, record: logging.LogRecord) -> bool:
        taken = self.take(record)
        return record.levelno >= self.visible and (self.show_taken or not taken)

    def attach(self, level: int) -> None:
        self.logger.addFilter(self)
        if self.logger.getEffectiveLevel() > level:
            self.logger.setLevel(level)

    def detach(self) -> None:
        self.logger.removeFilter(self)
        self.logger.setLevel(self.level)


_active: "JaxHooks | None" = None
_listening = False


def _on_span(event: str, start: float, end: float, **kwargs: Any) -> None:
    hooks, phase = _active, _PHASES.get(event)
    if hooks is not None and phase is not None:
        hooks.compiles.phase(phase, _plain_name(str(kwargs.get("fun_name", ""))), _monotonic_ns(start),
                             _monotonic_ns(end))


class JaxHooks:
    """JAX's events into the active capture, from install() to uninstall()."""

    def __init__(self, gpu_collected: bool, memory: bool = False):
        self.compiles = _Compiles()
        self._arrays = LiveArrays(self._device_id) if memory else None
        self._gpu_collected = gpu_collected
        self._restorer = Restorer()
        self._syncs = SyncTimer()
        self._taps: list[_LogTap] = []
        self._devices: dict[tuple[str, int], int] = {}
        self._local = threading.local()  # explicit: inside device_get; step: the step number
        self._explain_was = False

    def install(self) -> None:
        global _active, _listening
        import jax
        from jax import monitoring

        _active = self
        if not _listening:  # JAX has no way to remove a listener: one for the process
            monitoring.register_event_time_span_listener(_on_span)
            _listening = True
        self._explain_was = bool(jax.config.jax_explain_cache_misses)
        jax.config.update("jax_explain_cache_misses", True)
        # The explanations, and the persistent cache's notes that the same
        # switch raises to warnings, reach the program's log only if it had
        # asked for them; the input types are logged at debug level.
        self._tap("jax._src.pjit", self._take_explanation, logging.WARNING, self._explain_was)
        for name in ("jax._src.compiler", "jax._src.compilation_cache"):
            self._tap(name, _persistent_cache_note, logging.WARNING, self._explain_was)
        self._tap("jax._src.interpreters.pxla", self._take_signature, logging.DEBUG, True)
        self._wrap_syncs(jax)
        self._wrap_steps()
        if self._arrays is not None:
            self._arrays.start()

    def uninstall(self) -> None:
        global _active
        import jax

        _active = None
        if self._arrays is not None:
            self._arrays.sample()  # what is live as the capture ends
        self.compiles.flush()
        for tap in self._taps:
            tap.detach()
        self._taps.clear()
        self._restorer.restore()
        jax.config.update("jax_explain_cache_misses", self._explain_was)

    # ---- compiles ---------------------------------------------------------

    def _tap(self, logger_name: str, take: Callable[[logging.LogRecord], bool], level: int, show_taken: bool) -> None:
        tap = _LogTap(logging.getLogger(logger_name), take, show_taken)
        tap.attach(level)
        self._taps.append(tap)

    def _take_explanation(self, record: logging.LogRecord) -> bool:
        parsed = parse_explanation(record.getMessage()) if isinstance(record.msg, str) else None
        if parsed is None:
            return False
        self.compiles.explained(*parsed)
        return True

    def _take_signature(self, record: logging.LogRecord) -> bool:
        if not (isinstance(record.msg, str) and record.msg.startswith("Compiling %s with global shapes and types")):
            return False
        name, avals = record.args[0], record.args[1]
        self.compiles.typed(_plain_name(str(name)), ", ".join(_type_text(a) for a in avals))
        return True

    # ---- host syncs -------------------------------------------------------

    def _device(self, array: Any) -> int:
        return self._device_id(next(iter(array.devices())))

    def _device_id(self, device: Any) -> int:
        """The trace's id of a jax Device, registered at its first use."""
        key = (device.platform, device.id)
        trace_id = self._devices.get(key)
        if trace_id is None:
            gpu = device.platform in ("gpu", "cuda", "rocm")
            # CUPTI numbers GPUs by CUDA ordinal and names them itself; the
            # CPU devices go apart then.
            trace_id = device.local_hardware_id if gpu else device.id + (1000 if self._gpu_collected else 0)
            if not (gpu and self._gpu_collected):
                _core.register_device(trace_id, f"{device.platform}:{device.id} {device.device_kind}", device.platform)
            self._devices[key] = trace_id
        return trace_id

    def _read(self, array: Any, call: Callable[[], Any]) -> Any:
        def record(start: int, end: int, _: Any) -> None:
            _core.transfer("device_to_host", start, end, self._device(array), int(array.nbytes),
                           not getattr(self._local, "explicit", False), _callsite.callsite())
        return self._syncs.timed(call, record)

    def _wait(self, call: Callable[[], Any]) -> Any:
        def record(start: int, end: int, _: Any) -> None:
            _core.span("block_until_ready", "wait", start, end, _callsite.callsite())
        return self._syncs.timed(call, record)

    def _wrap_syncs(self, jax: Any) -> None:
        from jax._src import array

        hooks, cls, replace = self, array.ArrayImpl, self._restorer.replace
        value = cls.__dict__["_value"]

        def read_value(self: Any) -> Any:
            if self._npy_value is not None:  # read before: no sync
                return value.fget(self)
            return hooks._read(self, lambda: value.fget(self))

        replace(cls, "_value", property(read_value, doc=value.__doc__))
        item = cls.item

        def read_item(self: Any, *args: int) -> Any:
            return hooks._read(self, lambda: item(self, *args))

        replace(cls, "item", read_item)
        ready = cls.block_until_ready
        replace(cls, "block_until_ready", lambda self: hooks._wait(lambda: ready(self)))
        ready_tree = jax.block_until_ready
        replace(jax, "block_until_ready", lambda x: hooks._wait(lambda: ready_tree(x)))
        device_get = jax.device_get

        def explicit_get(x: Any) -> Any:
            hooks._local.explicit = True
            try:
                return device_get(x)
            finally:
                hooks._local.explicit = False

        replace(jax, "device_get", explicit_get)

    # ---- steps ------------------------------------------------------------

    def at_step_end(self) -> None:
        """A step ends: the arrays live now, when memory is recorded."""
        if self._arrays is not None:
            self._arrays.sample()

    def _wrap_steps(self) -> None:
        from jax._src import profiler

        cls, local, replace, hooks = profiler.StepTraceAnnotation, self._local, self._restorer.replace, self
        init, enter, leave = cls.__init__, cls.__enter__, cls.__exit__

        def init_step(self: Any, name: str, **kwargs: Any) -> None:
            local.step = int(kwargs.get("step_num", getattr(local, "step", -1) + 1))
            init(self, name, **kwargs)

        def enter_step(self: Any) -> Any:
            _core.step_begin(getattr(local, "step", 0))
            return enter(self)

        def leave_step(self: Any, *exc: Any) -> Any:
            hooks.at_step_end()
            _core.step_end()
            return leave(self, *exc)

        replace(cls, "__init__", init_step)
        replace(cls, "__enter__", enter_step)
        replace(cls, "__exit__", leave_step)


def _persistent_cache_note(record: logging.LogRecord) -> bool:
    return record.levelno == logging.WARNING and "persistent" in str(record.msg).lower()


def _type_text(aval: Any) -> str:
    """'f32[8,4]' for a ShapedArray(float32[8,4])."""
    try:
        return aval.str_short(short_dtypes=True)
    except (AttributeError, TypeError):
        return str(aval)
