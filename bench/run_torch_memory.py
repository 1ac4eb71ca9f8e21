#!/usr/bin/env python3
"""What recording PyTorch's tensor memory costs a training step:
loupe.capture(memory=True) (every storage allocated and freed, with its
line) against the same loop unrecorded, under loupe.capture without
memory, and under torch.profiler with profile_memory and with_stack (the
way PyTorch's own profiler gets allocations with their stacks). A
784-1024-1024-10 MLP trained with AdamW on PyTorch's CPU backend, batch
256; the variants run in turn, round after round, in this process.
Prints bench/run's JSON rows; needs the package (`make python`).

    bench/run_torch_memory.py BUILD_DIR
"""
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time

try:
    import torch
except ImportError as e:
    print(json.dumps(["torch memory", f"skipped: PyTorch is not installed ({e})", ""]))
    sys.exit(0)

import loupe

STEPS, ROUNDS = 30, 9


def row(*cells):
    print(json.dumps(list(cells)))


torch.manual_seed(0)
torch.set_num_threads(1)  # two cores, shared: one thread is steadier
model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                            torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(256, 784), torch.randint(0, 10, (256,))


def train():
    """Seconds per step."""
    start = time.perf_counter()
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return (time.perf_counter() - start) / STEPS


def profiled(tmp, r):
    return torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True,
                                  with_stack=True)


class PassThrough:
    """An empty TorchDispatchMode, as loupe's answers compiles: what seeing
    every ATen operation from Python costs before recording anything."""

    def __new__(cls):
        from torch.utils._python_dispatch import TorchDispatchMode

        class Empty(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

            @classmethod
            def ignore_compile_internals(cls):
                return True

        return Empty()


def operations_a_step():
    """ATen operations one step runs: what the recording's mode sees."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    global STEPS
    steps, STEPS = STEPS, 1
    with Count():
        train()
    STEPS = steps
    return len(seen)


train()  # warm-up: the optimizer's state, the allocator's caches
operations = operations_a_step()
times = {"plain": [], "capture": [], "mode": [], "memory": [], "profiler": []}
allocations = []
with tempfile.TemporaryDirectory() as tmp:
    for r in range(ROUNDS):
        times["plain"].append(train())
        with loupe.capture(os.path.join(tmp, f"c{r}.db")):
            times["capture"].append(train())
        with PassThrough():
            times["mode"].append(train())
        with loupe.capture(os.path.join(tmp, f"m{r}.db"), memory=True) as capture:
            times["memory"].append(train())
        allocations.append(capture.stats["recorded"] / STEPS)
        with profiled(tmp, r):
            times["profiler"].append(train())
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(tmp, f"m{r}.db"))

step = statistics.median(times["plain"])
per_step = statistics.median(allocations)
row("torch memory", f"PyTorch CPU training step, MLP 784-1024-1024-10, AdamW, batch 256 (median of {ROUNDS} "
    f"runs of {STEPS} steps)", f"{step * 1e3:.2f} ms")
for key, label in (("capture", "under loupe.capture"),
                   ("mode", "under an empty TorchDispatchMode (what seeing each operation costs)"),
                   ("memory", f"under loupe.capture(memory=True) ({per_step:.0f} events a step)"),
                   ("profiler", "under torch.profiler(profile_memory=True, with_stack=True)")):
    ratios = [t / p - 1 for t, p in zip(times[key], times["plain"])]
    ratio = statistics.median(ratios)
    target, ok = ("<= 5%", ratio <= 0.05) if key == "memory" else ("", None)
    row("torch memory", f"  {label}: step time / unrecorded (spread {min(ratios) * 100:+.1f}% to "
        f"{max(ratios) * 100:+.1f}%)", f"{ratio * 100:+.1f}%", target, ok)
added = statistics.median(m - p for m, p in zip(times["memory"], times["plain"]))
row("torch memory", f"  what memory recording adds per operation ({operations} ATen operations a step)",
    f"{added / operations * 1e6:.1f} us")


def per_operation(op, count=20000):
    start = time.perf_counter()
    for _ in range(count):
        op()
    return (time.perf_counter() - start) / count


small = torch.randn(4, 4)
with tempfile.TemporaryDirectory() as tmp:
    plain_new, plain_inplace = per_operation(lambda: small + 1), per_operation(lambda: small.add_(0))
    with loupe.capture(os.path.join(tmp, "ops.db"), memory=True):
        new, inplace = per_operation(lambda: small + 1), per_operation(lambda: small.add_(0))
row("torch memory", "  an operation that allocates (x + 1 on 4x4), recorded / not",
    f"{new * 1e6:.1f} / {plain_new * 1e6:.1f} us")
row("torch memory", "  an operation in place (x.add_(0)), recorded / not",
    f"{inplace * 1e6:.1f} / {plain_inplace * 1e6:.1f} us")
