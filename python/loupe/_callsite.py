"""The Python line behind an event: the innermost frame of the user's own
code, above the frameworks, the standard library and loupe itself.

It is read only when an event is recorded (a compile, a host sync), never
between them: a walk up the stack of a few frames, with the verdict on
each file cached.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from types import CodeType, FrameType

from . import _core

_here = os.path.dirname(os.path.abspath(__file__)) + os.sep
_library_dirs = tuple(sorted({
    os.path.realpath(path) + os.sep
    for key in ("stdlib", "platstdlib", "purelib", "platlib")
    if (path := sysconfig.get_paths().get(key))
} | {_here}))

_USER, _LIBRARY, _LOUPE = 0, 1, 2
_kinds: dict[str, int] = {}  # per file name: whose code it is
_ids: dict[tuple[str, int, str, int], int] = {}  # (file, line, function, parent) -> call site


def _kind(filename: str) -> int:
    kind = _kinds.get(filename)
    if kind is None:
        if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>; not <stdin>, <ipython-input-..>
            kind = _USER if filename == "<stdin>" or filename.startswith("<ipython-input") else _LIBRARY
        else:
            path = os.path.realpath(filename)
            kind = _LOUPE if path.startswith(_here) else _LIBRARY if path.startswith(_library_dirs) else _USER
        _kinds[filename] = kind
    return kind


def is_user_file(filename: str) -> bool:
    """Whether a file is the program's own code (not a library's, not loupe's)."""
    return _kind(filename) == _USER


def user_frame(frame: FrameType | None = None) -> FrameType | None:
    """The innermost frame of user code at or above `frame` (the caller's
    caller by default); when every frame is a library's, the innermost one
    outside loupe."""
    frame = frame or sys._getframe(2)
    fallback = None
    while frame is not None:
        kind = _kind(frame.f_code.co_filename)
        if kind == _USER:
            return frame
        if fallback is None and kind == _LIBRARY:
            fallback = frame
        frame = frame.f_back
    return fallback


_MAX_FRAMES = 64  # a stack deeper than this keeps its innermost frames


_by_position: dict[tuple[int, int, int], int] = {}  # (id(code), instruction, parent) -> call site
_pinned: dict[int, CodeType] = {}  # the code objects of those ids, kept so that no other takes an id


def site_of(frame: FrameType | None) -> int:
    """The trace's call-site id of a frame's current line and the frames
    that called it, its whole stack (0: none). Each frame is interned under
    its caller's call site, outermost first, so a line reached from two
    places is two call sites that name the same frame.

    A frame's line is looked up by its code and instruction (``f_lasti``),
    not read: Python finds a line by scanning the code's line table, which
    for a caller suspended in a long module costs microseconds a frame, at
    every allocation."""
    chain = []
    while frame is not None and len(chain) < _MAX_FRAMES:
        chain.append(frame)
        frame = frame.f_back
    site = 0
    for f in reversed(chain):
        code = f.f_code
        key = (id(code), f.f_lasti, site)
        known = _by_position.get(key)
        if known is None:
            _pinned[id(code)] = code
            known = _by_position[key] = _intern(code.co_filename, f.f_lineno, code.co_name, site)
        site = known
    return site


def _intern(file: str, line: int, function: str, parent: int) -> int:
    key = (file, line, function, parent)
    known = _ids.get(key)
    if known is None:
        known = _ids[key] = _core.callsite(*key)
    return known


def stack_site(frames: list[tuple[str, int, str]]) -> int:
    """The call site of a stack given as (file, line, function), innermost
    first: its frames interned outermost first, each under its caller's
    call site; 0 for no frame. The first _MAX_FRAMES frames are kept."""
    site = 0
    for file, line, function in reversed(frames[:_MAX_FRAMES]):
        site = _intern(file, line, function, site)
    return site


def callsite() -> int:
    """The call-site id of the user's line that led to the caller."""
    return site_of(user_frame(sys._getframe(2)))
