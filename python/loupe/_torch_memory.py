"""PyTorch's tensor memory, for loupe.capture(memory=True) and
`loupe capture --memory`: every tensor storage an operation creates, with
the line of the user's code that led to it, and its release.

How, in PyTorch's own terms:

- A TorchDispatchMode (``torch.utils._python_dispatch``) on the thread that
  started the capture sees every ATen operation below autograd: the ones a
  composite op decomposes into, and those the backward runs (PyTorch
  carries the mode into its autograd threads). A result whose storage is
  not yet known is an allocation of ``storage.nbytes()`` bytes.
- PyTorch keeps one Python object per storage for as long as the storage
  lives, so ``weakref.finalize`` on it records the free when PyTorch
  releases the memory (when the last tensor or view of it goes).
- The running total of each device begins with the storages of the tensors
  that Python objects held when recording began (a walk of
  ``gc.get_objects()``: parameters, optimizer state, data already loaded),
  so that what was allocated before the trace is stated, not missed.

So that the memory rule can tell what each block was for (its categories:
docs/analyses.md), the phases of a training step are recorded as ranges
under PyTorch's own names: each ``torch.autograd.backward`` (which
``Tensor.backward`` calls), and each optimizer's ``step`` and ``zero_grad``
("Optimizer.step#AdamW.step", as PyTorch's profiler names them).

On a GPU, CUDA memory comes from the CUDA caching allocator's own history
instead (``torch.cuda.memory._record_memory_history``, kept in C++ with
each entry's Python stack): every allocation and free, on any thread, each
segment reserved and released and each out-of-memory error with its
request, read when the capture stops and added at the entries' times
(their wall clock moved onto the capture's). Its storages are then not
followed here, so nothing is counted twice.

What it does not see on the CPU: operations on other threads (a
DataLoader's workers are other processes anyway), and memory allocated
outside an ATen operation (``torch.from_numpy`` shares NumPy's). What it
costs: one Python call per operation, and a walk up the stack per
allocation (docs/python.md gives the figures).
"""

from __future__ import annotations

import gc
import pickle
import sys
import threading
import time
import weakref
from typing import Any, Callable

from . import _callsite, _core
from ._hooks import Restorer

# The trace's device for the host's memory (CPU tensors): apart from the
# GPUs' ids, which CUPTI numbers from 0, and JAX's CPU devices.
HOST_DEVICE = 2000


class TensorMemory:
    """Allocations and frees of tensor storages into the active capture."""

    def __init__(self, gpu_collected: bool):
        self._gpu_collected = gpu_collected
        self._lock = threading.Lock()
        self._live: dict[int, tuple[int, int]] = {}  # data_ptr -> (device, bytes)
        self._addresses: dict[weakref.ref[Any], int] = {}  # each live storage's reference -> its data_ptr
        self._allocated: dict[int, int] = {}  # device -> bytes live
        self._devices: set[int] = set()
        self._mode: Any = None
        self._thread = 0
        self._on = False
        self._restorer = Restorer()
        self._step_hooks: list[Any] = []  # the optimizer step hooks' handles
        self._step_starts = threading.local()
        self._cuda_history = False  # the CUDA caching allocator records its own (on a GPU)
        self._since = 0  # when recording began (time.monotonic_ns)

    def install(self) -> None:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        memory = self

        class RecordAllocations(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                result = func(*args, **(kwargs or {}))
                if memory._on:
                    memory._results(result)
                return result

            # torch.compile compiles and runs its graphs as it would without
            # the mode (their allocations are not seen) rather than falling
            # back to eager operations for it: recording changes no program.
            @classmethod
            def ignore_compile_internals(cls) -> bool:
                return True

        self._on = True
        self._since = time.monotonic_ns()
        self._cuda_history = _start_cuda_history(torch)
        self._record_phases(torch)
        self._held_before(torch)
        self._mode = RecordAllocations()
        self._mode.__enter__()
        self._thread = threading.get_ident()

    def uninstall(self) -> None:
        self._on = False  # the finalizers still to come record nothing
        if self._cuda_history:
            import torch

            self._add_cuda_history(torch)
            self._cuda_history = False
        for handle in self._step_hooks:
            handle.remove()
        self._step_hooks.clear()
        self._restorer.restore()
        # A mode is the state of the thread that entered it; from another
        # (a --duration timer) it stays on that thread, passing calls through.
        if self._mode is not None and threading.get_ident() == self._thread:
            self._mode.__exit__(None, None, None)
        self._mode = None

    def _add_cuda_history(self, torch: Any) -> None:
        """What the CUDA caching allocator recorded since recording began:
        read, stopped, and added as memory events at their own times."""
        try:
            snapshot = torch.cuda.memory._snapshot()
        finally:
            torch.cuda.memory._record_memory_history(enabled=None)
        clock = time.time_ns() - time.monotonic_ns()
        try:
            devices = _core.torch_snapshot(pickle.dumps(snapshot, protocol=4), clock, self._since)
        except (_core.Error, ValueError) as e:  # the program goes on; its trace says less
            print(f"loupe: the CUDA allocator's history was not added: {e}", file=sys.stderr)
            return
        for device in devices:
            if device not in self._devices:
                self._devices.add(device)
                if not self._gpu_collected:  # CUPTI names the GPUs it collects
                    _core.register_device(device, f"cuda:{device}", "cuda")

    # ---- the phases of a step -------------------------------------------------

    def _record_phases(self, torch: Any) -> None:
        from torch.optim import optimizer

        starts = self._step_starts

        def before_step(opt: Any, *_: Any) -> None:
            starts.at = time.monotonic_ns()

        def after_step(opt: Any, *_: Any) -> None:
            start = getattr(starts, "at", None)
            if start is not None:
                _core.span(f"Optimizer.step#{type(opt).__name__}.step", "user", start, time.monotonic_ns(), 0)

        self._step_hooks = [optimizer.register_optimizer_step_pre_hook(before_step),
                            optimizer.register_optimizer_step_post_hook(after_step)]
        zero_grad = torch.optim.Optimizer.zero_grad
        self._restorer.replace(torch.optim.Optimizer, "zero_grad", _ranged(
            zero_grad, lambda opt, *a, **k: f"Optimizer.zero_grad#{type(opt).__name__}.zero_grad"))
        backward = torch.autograd.backward
        self._restorer.replace(torch.autograd, "backward", _ranged(backward, lambda *a, **k: "torch.autograd.backward"))

    # ---- what an operation returns ----------------------------------------

    def _results(self, result: Any) -> None:
        if type(result) in (tuple, list):
            for r in result:
                self._results(r)
            return
        storage = _storage_of(result)
        if storage is None:
            return
        address = storage.data_ptr()
        if address == 0 or address in self._live:  # empty, meta, a view, or written in place
            return
        device = self._device_of(result)
        if device is None:
            return
        site = _callsite.site_of(_callsite.user_frame(sys._getframe(1)))
        self._alloc(storage, address, device, storage.nbytes(), site)

    def _alloc(self, storage: Any, address: int, device: int, size: int, site: int) -> None:
        with self._lock:
            total = self._track(storage, address, device, size)
            _core.memory(device, "alloc", size, address, total, site)

    def _track(self, storage: Any, address: int, device: int, size: int) -> int:
        """Follows a storage until PyTorch frees it; the device's new total.
        A weak reference with a callback, kept here, costs a fraction of a
        weakref.finalize."""
        self._live[address] = (device, size)
        self._addresses[weakref.ref(storage, self._freed)] = address
        total = self._allocated[device] = self._allocated.get(device, 0) + size
        return total

    def _freed(self, ref: "weakref.ref[Any]") -> None:
        with self._lock:
            address = self._addresses.pop(ref, None)
            device, size = self._live.pop(address, (None, 0))
            if device is None or not self._on:
                return
            total = self._allocated[device] = self._allocated[device] - size
            _core.memory(device, "free", size, address, total, 0)

    # ---- before the trace -------------------------------------------------

    def _held_before(self, torch: Any) -> None:
        """The storages of every tensor a Python object holds now: live from
        the start, their frees recorded like any other."""
        for obj in gc.get_objects():
            # type(), not isinstance(): the latter reads __class__, which some
            # modules' deprecated attributes answer with a warning.
            if not issubclass(type(obj), torch.Tensor):
                continue
            storage = _storage_of(obj)
            if storage is None or storage.data_ptr() == 0 or storage.data_ptr() in self._live:
                continue
            device = self._device_of(obj)
            if device is None:
                continue
            self._track(storage, storage.data_ptr(), device, storage.nbytes())

    def _device_of(self, tensor: Any) -> int | None:
        """The trace's id of a tensor's device; None for one that holds no
        memory (meta, a fake tensor's). Read through is_cpu and is_cuda: a
        tensor's .device makes a torch.device object, a third of a
        microsecond at every allocation."""
        if tensor.is_cpu:
            index, name, platform = HOST_DEVICE, "PyTorch CPU tensors", "cpu"
        elif tensor.is_cuda:
            if self._cuda_history:  # the allocator's own history has it, with segments and errors
                return None
            index = tensor.get_device()
            name, platform = f"cuda:{index}", "cuda"
        else:
            return None
        if index not in self._devices:
            self._devices.add(index)
            if platform == "cpu" or not self._gpu_collected:  # CUPTI names the GPUs it collects
                _core.register_device(index, name, platform)
        return index


# Entries the CUDA allocator keeps (a ring: the oldest go first); about
# 300 bytes each while recording, plus the stacks they share.
_CUDA_HISTORY_ENTRIES = 1_000_000


def _start_cuda_history(torch: Any) -> bool:
    """On a GPU, PyTorch's CUDA caching allocator records its own history
    (torch.cuda.memory._record_memory_history): every allocation and free
    with the Python stack, each segment reserved and released, and each
    out-of-memory error with the request's size, in C++ without a Python
    call per operation. Whether it does."""
    if not torch.cuda.is_available():
        return False
    try:
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                                 max_entries=_CUDA_HISTORY_ENTRIES)
    except (AttributeError, RuntimeError, TypeError) as e:  # a PyTorch without it, or a CUDA that cannot
        print(f"loupe: CUDA memory history not recorded ({e}); tensors' storages are followed instead",
              file=sys.stderr)
        return False
    _core.leave_cuda_memory(list(range(torch.cuda.device_count())))  # CUPTI's cudaMalloc records would count twice
    return True


def _ranged(call: Callable[..., Any], name: Callable[..., str]) -> Callable[..., Any]:
    """`call`, recorded as a range named name(*args) on the calling thread."""

    def ranged(*args: Any, **kwargs: Any) -> Any:
        start = time.monotonic_ns()
        try:
            return call(*args, **kwargs)
        finally:
            _core.span(name(*args, **kwargs), "user", start, time.monotonic_ns(), 0)

    return ranged


def _storage_of(value: Any) -> Any:
    """A tensor's storage; None for anything else, and for tensors without
    one to follow (sparse and nested tensors raise)."""
    try:
        return value.untyped_storage()
    except (AttributeError, RuntimeError, NotImplementedError):
        return None
