#!/usr/bin/env python3
"""What loupe.capture's JAX hooks cost a training step: a two-layer MLP
trained with SGD on JAX's CPU backend, each step marked with
StepTraceAnnotation and ending in float(loss) (a host sync the hooks
record), timed without and with a capture, in turn, in this process.
The end-to-end ratio moves by several percent from round to round on a
busy machine, so the target is judged on what the hooks add to a step,
measured on steps that do nothing else. Prints bench/run's JSON rows; needs the package (`make python`).

    bench/run_python_hooks.py BUILD_DIR
"""
import json
import os
import statistics
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

import loupe

STEPS, ROUNDS = 200, 11


def row(*cells):
    print(json.dumps(list(cells)))


@jax.jit
def train_step(params, x, y):
    def loss_fn(params):
        w1, w2 = params
        return ((jnp.tanh(x @ w1) @ w2 - y) ** 2).mean()

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return [p - 0.01 * g for p, g in zip(params, grads)], loss


def train(params, x, y):
    start = time.perf_counter()
    for step in range(STEPS):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            params, loss = train_step(params, x, y)
            float(loss)
    return (time.perf_counter() - start) / STEPS, params


rng = np.random.default_rng(0)
x = rng.normal(size=(256, 512)).astype(np.float32)
y = rng.normal(size=(256, 64)).astype(np.float32)
params = [jnp.asarray(rng.normal(size=(512, 512)).astype(np.float32) * 0.01),
          jnp.asarray(rng.normal(size=(512, 64)).astype(np.float32) * 0.01)]
_, params = train(params, x, y)  # compiles, warms the caches

def empty_steps(count):
    """Seconds per step of a loop with the training loop's structure and no
    work: a StepTraceAnnotation and a host sync of a fresh scalar. What the
    hooks add to it is what they add to each training step."""
    one = jnp.float32(1.0)
    start = time.perf_counter()
    for step in range(count):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            float(one + 1)
    return (time.perf_counter() - start) / count


# Rounds in the order plain, captured, captured, plain, so that a drift of
# the machine's speed within a round hits both sides alike.
plain, hooked, ratios, added = [], [], [], []
with tempfile.TemporaryDirectory() as tmp:
    for r in range(ROUNDS):
        before, params = train(params, x, y)
        empty_before = empty_steps(STEPS)
        with loupe.capture(os.path.join(tmp, f"hooks-{r}.db")) as capture:
            first, params = train(params, x, y)
            empty_hooked = empty_steps(STEPS)
            second, params = train(params, x, y)
        after, params = train(params, x, y)
        plain += [before, after]
        hooked += [first, second]
        ratios.append((first + second) / (before + after) - 1)
        added.append(empty_hooked - empty_before)
        recorded = capture.stats["recorded"]
        if recorded < 6 * STEPS:
            raise SystemExit(f"the capture recorded {recorded} events, not a step and a sync per step")
step = statistics.median(plain)
row("python", f"JAX CPU training step ({STEPS} steps a run, median of {2 * ROUNDS} runs)", f"{step * 1e3:.3f} ms")
row("python", "  the same under loupe.capture (a step and a host sync recorded per step)",
    f"{statistics.median(hooked) * 1e3:.3f} ms")
row("python", f"  step time under capture / without, end to end (median of {ROUNDS} rounds; spread "
    f"{min(ratios) * 100:+.1f}% to {max(ratios) * 100:+.1f}%)", f"{statistics.median(ratios) * 100:+.2f}%")
cost = statistics.median(added)
row("python", "what the hooks add to a step (a step marker and a host sync, measured on empty steps)",
    f"{cost * 1e6:.1f} us")
row("python", "hooks' cost / training step", f"{cost / step * 100:.2f}%", "<= 3%", cost / step <= 0.03)
