"""PyTorch's compiles and host syncs, recorded for loupe.capture.

Where each comes from, in PyTorch's own words:

- A compile is a frame that torch.compile's dynamo compiled: the
  CompilationMetrics dynamo logs at the end of each one
  (``torch._dynamo.utils.log_compilation_event``), with the function and
  where it is defined, dynamo's recompile reason (the guard that failed),
  the shapes of the graph's inputs, its start and end, and the time spent
  in dynamo itself, in the backend and in Inductor. The backward graphs
  AOTAutograd compiles at the first backward, and runtime autotuning, are
  not compiles of a frame and are left out.
- A host sync is a read of a CUDA tensor's value by the host: ``.item()``,
  ``.tolist()``, ``float()``, ``int()``, ``bool()``, and ``.cpu()`` or
  ``.to()`` onto the CPU without ``non_blocking``; and
  ``torch.cuda.synchronize()``, a wait. The wrappers go on once the
  program initialises CUDA and run only at those calls; a tensor on the
  CPU is not a sync and is not recorded.
- With ``memory``, every tensor storage an operation allocates and its
  free (_torch_memory.py).
- A step runs from one ``torch.profiler.profile.step()`` to the next (the
  profiler's ProfilerStep), or is a ``loupe.step``.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Any, Callable

from . import _callsite, _core
from ._hooks import Restorer, SyncTimer, monotonic_ns_of_wall_ns
from ._torch_memory import TensorMemory

# The methods that read a tensor's value into Python, and those that copy
# it to the host.
_VALUE_READS = ("item", "tolist", "__float__", "__int__", "__bool__")
_COPIES = ("cpu", "to")


def _reason_text(reason: str | None) -> str:
    """Dynamo's reason on one line, without the stack it appends."""
    if not reason:
        return ""
    return re.sub(r"\s+", " ", reason.split("\nUser stack trace:")[0]).strip()


def _input_shapes(graph_node_shapes: str | None) -> str:
    """'x[32,16], w[16]' from dynamo's "{'l_x_': [32, 16], 'l_w_': [16], 'mul': ...}":
    the graph's inputs (its local and global arguments) and their shapes."""
    try:
        shapes = ast.literal_eval(graph_node_shapes or "{}")
    except (ValueError, SyntaxError):
        return ""
    inputs = []
    for name, shape in shapes.items() if isinstance(shapes, dict) else ():
        if name.startswith(("l_", "L_", "g_", "G_")):
            dims = ",".join(str(d) for d in shape) if isinstance(shape, (list, tuple)) else str(shape)
            inputs.append(f"{name[2:].rstrip('_')}[{dims}]")
    return ", ".join(inputs)


class TorchHooks:
    """PyTorch's events into the active capture, from install() to uninstall()."""

    def __init__(self, gpu_collected: bool, memory: bool = False):
        self._gpu_collected = gpu_collected
        self._memory = TensorMemory(gpu_collected) if memory else None
        self._restorer = Restorer()
        self._syncs = SyncTimer()
        self._devices: set[int] = set()
        self._config: Any = None  # torch._dynamo.config, once hooked
        self._syncs_wrapped = False
        self._metrics_were_logged = True

    def install(self) -> dict[str, Callable[[], None]]:
        import torch

        # A program that never uses CUDA has no host syncs: its tensors stay
        # unwrapped (a wrapper would be the frame PyTorch's own warnings
        # name). The wrappers go on once CUDA is initialised.
        if torch.cuda.is_initialized():
            self._wrap_syncs()
        else:
            lazy_init = torch.cuda._lazy_init

            def init_then_wrap() -> None:
                lazy_init()
                if torch.cuda.is_initialized() and not self._syncs_wrapped:
                    self._wrap_syncs()

            self._restorer.replace(torch.cuda, "_lazy_init", init_then_wrap)
        self._wrap_steps(torch)
        if self._memory is not None:
            self._memory.install()
        # Dynamo takes seconds to import: its compiles are hooked when the
        # program imports it (its first torch.compile'd call).
        return {"torch._dynamo.utils": self._wrap_compiles}

    def _wrap_steps(self, torch: Any) -> None:
        """A torch.profiler.profile's steps: from start() to each step(), from
        each step() to the next, and from the last to stop()."""
        profile, replace = torch.profiler.profile, self._restorer.replace
        start, step, stop = profile.start, profile.step, profile.stop

        def start_steps(prof: Any) -> None:
            start(prof)
            _core.step_begin(prof.step_num)

        def next_step(prof: Any) -> None:
            _core.step_end()
            step(prof)
            _core.step_begin(prof.step_num)

        def stop_steps(prof: Any) -> None:
            _core.step_end()
            stop(prof)

        replace(profile, "start", start_steps)
        replace(profile, "step", next_step)
        replace(profile, "stop", stop_steps)

    def _wrap_syncs(self) -> None:
        import torch

        self._syncs_wrapped = True
        tensor, replace = torch.Tensor, self._restorer.replace
        for name in _VALUE_READS:
            replace(tensor, name, self._value_read(getattr(tensor, name), whole=name == "tolist"))
        for name in _COPIES:
            replace(tensor, name, self._copy(getattr(tensor, name)))
        synchronize = torch.cuda.synchronize
        replace(torch.cuda, "synchronize", lambda *args, **kwargs: self._wait(lambda: synchronize(*args, **kwargs)))

    def uninstall(self) -> None:
        if self._memory is not None:
            self._memory.uninstall()
        self._restorer.restore()
        if self._config is not None:
            self._config.log_compilation_metrics = self._metrics_were_logged

    # ---- compiles ---------------------------------------------------------

    def _wrap_compiles(self) -> None:
        try:
            import torch._dynamo.config as dynamo_config
            import torch._dynamo.utils as dynamo_utils
        except ImportError:  # a PyTorch without torch.compile
            return
        # Dynamo hands each frame's metrics to the function below when this
        # is on (the default). Its config is not a plain module: set and put
        # back by value.
        self._config = dynamo_config
        self._metrics_were_logged = dynamo_config.log_compilation_metrics
        dynamo_config.log_compilation_metrics = True
        log = dynamo_utils.log_compilation_event

        def log_compilation_event(metrics: Any) -> Any:
            self._record_compile(metrics)
            return log(metrics)

        self._restorer.replace(dynamo_utils, "log_compilation_event", log_compilation_event)

    def _record_compile(self, m: Any) -> None:
        if getattr(m, "is_runtime", False) or getattr(m, "is_forward", True) is False or not m.co_name:
            return
        if m.start_time_us is None or m.end_time_us is None:
            return
        start = monotonic_ns_of_wall_ns(m.start_time_us * 1000)
        end = monotonic_ns_of_wall_ns(m.end_time_us * 1000)
        whole = end - start
        backend = round((getattr(m, "backend_compile_time_s", None) or 0) * 1e9)
        inductor = (getattr(m, "inductor_cumulative_compile_time_us", None) or 0) * 1000
        reason = _reason_text(m.recompile_reason)
        if m.fail_type:
            reason = f"{reason}; the compile failed: {m.fail_type}".lstrip("; ")
        function = f"{m.co_name} ({os.path.basename(m.co_filename or '')}:{m.co_firstlineno})"
        _core.compile(function, _input_shapes(getattr(m, "graph_node_shapes", None)), "miss", reason, start, end,
                      max(whole - backend, 0), max(backend - inductor, 0), inductor, _callsite.callsite(), 0)

    # ---- host syncs -------------------------------------------------------

    def _device(self, tensor: Any) -> int:
        index = tensor.device.index or 0
        if index not in self._devices:
            self._devices.add(index)
            if not self._gpu_collected:  # CUPTI names the GPUs it collects
                import torch

                _core.register_device(index, f"cuda:{index} {torch.cuda.get_device_name(index)}", "cuda")
        return index

    def _value_read(self, method: Callable[..., Any], whole: bool) -> Callable[..., Any]:
        hooks = self

        def read(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not self.is_cuda:
                return method(self, *args, **kwargs)

            def record(start: int, end: int, _: Any) -> None:
                count = self.numel() if whole else 1
                _core.transfer("device_to_host", start, end, hooks._device(self), count * self.element_size(), True,
                               _callsite.callsite())
            return hooks._syncs.timed(lambda: method(self, *args, **kwargs), record)

        return read

    def _copy(self, method: Callable[..., Any]) -> Callable[..., Any]:
        hooks = self

        def copy(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not self.is_cuda or kwargs.get("non_blocking"):
                return method(self, *args, **kwargs)

            def record(start: int, end: int, result: Any) -> None:
                if getattr(result, "is_cuda", True) or result is self:
                    return  # stayed on the GPU: no copy to the host
                _core.transfer("device_to_host", start, end, hooks._device(self), self.numel() * self.element_size(),
                               False, _callsite.callsite())
            return hooks._syncs.timed(lambda: method(self, *args, **kwargs), record)

        return copy

    def _wait(self, call: Callable[[], Any]) -> Any:
        def record(start: int, end: int, _: Any) -> None:
            _core.span("torch.cuda.synchronize", "wait", start, end, _callsite.callsite())
        return self._syncs.timed(call, record)
