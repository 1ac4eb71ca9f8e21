"""Recording a Python program: ``with loupe.capture("run.db"):``.

A capture records this process into a trace file with the same recorder
as loupe's runtime: CUPTI's device activity where a GPU is, and the events
of the frameworks the program uses, each hooked when it is imported (JAX's
compiles with their reasons, host syncs with their Python lines, steps).
A framework that is not installed is skipped. ``loupe capture -o run.db --
python train.py`` starts one for an unmodified program.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
import threading
from types import ModuleType, TracebackType
from typing import Any, Callable

from . import _core
from ._core import Error


class CaptureError(Error):
    """A capture that cannot start: one already recording, or a file that cannot be written."""


# The frameworks hooked, by the module whose import brings them in: each
# makes the hooks of one capture (given whether CUPTI collects the GPUs,
# and whether memory is recorded). Hooks have install(), which may return
# {module: callback} for parts to hook once those modules are imported,
# uninstall(), and may have at_step_end(), which loupe.step calls.
def _jax_hooks(gpu_collected: bool, memory: bool) -> Any:
    from ._jax import JaxHooks

    return JaxHooks(gpu_collected, memory)


def _torch_hooks(gpu_collected: bool, memory: bool) -> Any:
    from ._torch import TorchHooks

    return TorchHooks(gpu_collected, memory)


_FRAMEWORKS: dict[str, Callable[[bool, bool], Any]] = {"jax": _jax_hooks, "torch": _torch_hooks}

_lock = threading.Lock()
_active: "capture | None" = None


class capture:  # noqa: N801 - used as `with loupe.capture(...)`, like open()
    """Records this process into ``path`` from ``__enter__`` (or start())
    to ``__exit__`` (or stop()).

    ``gpu`` collects the device activity of NVIDIA GPUs through CUPTI where
    there are any; ``frameworks`` names those to hook (default: every one
    loupe knows, "jax" and "torch"). ``memory`` records every tensor
    storage PyTorch allocates and frees, with the line that allocated it
    (an operation costs several microseconds more: docs/python.md), and
    JAX's arrays live at each step's end. Raises CaptureError when another
    capture is recording this process, and FileError when ``path`` cannot
    be written.
    """

    def __init__(self, path: str | os.PathLike[str] = "trace.db", *, gpu: bool = True,
                 frameworks: tuple[str, ...] | None = None, memory: bool = False):
        self.path = os.fspath(path)
        self._gpu = gpu
        self._memory = memory
        unknown = set(frameworks or ()) - set(_FRAMEWORKS)
        if unknown:
            raise ValueError(f"no framework {sorted(unknown)[0]!r} (loupe hooks: {', '.join(_FRAMEWORKS)})")
        self._frameworks = tuple(frameworks if frameworks is not None else _FRAMEWORKS)
        self._core: _core.ProcessCapture | None = None
        self._hooks: list[Any] = []
        self._finder: _AfterImport | None = None
        self._final_stats: dict[str, Any] = {}
        self.process_wide = False  # started by `loupe capture`; a capture inside it records nothing of its own

    def __repr__(self) -> str:
        state = "recording" if self._core is not None else "stopped"
        return f"<loupe.capture {self.path!r} {state}>"

    def __enter__(self) -> "capture":
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        global _active
        with _lock:
            if _active is not None:
                if _active.process_wide:
                    print(f"loupe: this process is already recorded into {_active.path} by `loupe capture`; "
                          f"the capture into {self.path} records nothing of its own", file=sys.stderr)
                    return
                raise CaptureError(f"a capture is already recording to {_active.path}: loupe.capture cannot be "
                                   f"nested; stop that one first")
            if _core.capturing():
                raise CaptureError(f"cannot record to {self.path}: this process is already recorded by another "
                                   f"capture (LOUPE_TRACE or loupe's runtime)")
            _core.check_output_path(self.path)
            core = _core.start_capture(self.path, "loupe python", " ".join(sys.argv), self._gpu)
            if not core.ok:
                core.stop()
                raise CaptureError(f"cannot record to {self.path}: {core.stats['error'] or 'the file was not created'}")
            self._core, _active = core, self
        self._finder = _AfterImport()
        for name in self._frameworks:
            self._finder.watch(name, self._hook)
        sys.meta_path.insert(0, self._finder)
        for name in self._frameworks:
            if sys.modules.get(name) is not None:  # imported already (None: an import that failed)
                self._hook(name)

    def stop(self) -> None:
        """Uninstalls the hooks and writes everything recorded. Idempotent."""
        global _active
        if self._core is None:
            return
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        for hooks in reversed(self._hooks):
            hooks.uninstall()
        self._hooks.clear()
        self._core.stop()
        self._final_stats = dict(self._core.stats)
        with _lock:
            self._core, _active = None, None

    @property
    def stats(self) -> dict[str, Any]:
        """Events recorded, dropped (a thread's buffer was full) and lost (the
        file could not be written), and the first write error: so far, or
        final once stopped."""
        return dict(self._core.stats) if self._core is not None else dict(self._final_stats)

    @property
    def gpu_missing(self) -> str:
        """Why no device activity is collected ("" when CUPTI collects it)."""
        return self._core.gpu_missing if self._core is not None else ""

    def _forget(self) -> None:
        """In a forked child: the capture is the parent's. Its hooks come out
        and it is dropped without being stopped (the C++ side stopped
        recording in the child at the fork, and a capture the child did not
        start stands down)."""
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        for hooks in reversed(self._hooks):
            hooks.uninstall()
        self._hooks.clear()
        self._core = None

    def _hook(self, framework: str) -> None:
        if self._core is None:
            return
        hooks = _FRAMEWORKS[framework](not self._core.gpu_missing, self._memory)
        later = hooks.install() or {}
        self._hooks.append(hooks)
        for module, callback in later.items():
            if sys.modules.get(module) is not None:
                callback()
            else:
                self._finder.watch(module, lambda _, callback=callback: callback())


def _after_fork_in_child() -> None:
    """A forked child (a DataLoader worker, a multiprocessing pool) inherits
    the parent's capture but records nothing: the capture is forgotten, so
    that its atexit handler and ``with`` exit are no-ops in the child, and
    the child may start a capture of its own."""
    global _active, _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    inherited, _active = _active, None
    if inherited is not None:
        inherited._forget()


os.register_at_fork(after_in_child=_after_fork_in_child)


class step:  # noqa: N801 - used as `with loupe.step(n)`
    """One training step on the calling thread: ``with loupe.step(i): ...``.

    Steps let the analyses tell warm-up from steady state and report
    per-step figures. Costs two calls into the recorder.
    """

    __slots__ = ("number",)

    def __init__(self, number: int):
        self.number = int(number)

    def __enter__(self) -> "step":
        _core.step_begin(self.number)
        return self

    def __exit__(self, *exc: Any) -> None:
        active = _active
        for hooks in active._hooks if active is not None else ():
            if hasattr(hooks, "at_step_end"):
                hooks.at_step_end()
        _core.step_end()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a callback once a module has been imported, for frameworks the
    program imports after the capture started."""

    def __init__(self) -> None:
        self._callbacks: dict[str, Callable[[str], None]] = {}
        self._finding: set[str] = set()

    def watch(self, module: str, callback: Callable[[str], None]) -> None:
        """Calls callback(module) once `module` has been imported."""
        self._callbacks[module] = callback

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        callback = self._callbacks.get(name)
        if callback is None or name in self._finding:
            return None
        self._finding.add(name)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._finding.discard(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader

        class Loader(importlib.abc.Loader):
            def create_module(self, s: Any) -> ModuleType | None:
                return loader.create_module(s)

            def exec_module(self, module: ModuleType) -> None:
                module.__loader__ = module.__spec__.loader = loader
                loader.exec_module(module)
                callback(name)

        spec.loader = Loader()
        return spec
