#!/usr/bin/env python3
"""The MLP training step of bench/runtime_bench.cpp written in JAX, timed
on JAX's CPU backend (or the one JAX_PLATFORMS names). Steps are queued
back to back and waited for once per block, blocks of at least 100 ms
(300 without --quick), as runtime_bench's `step_ms`. Prints one JSON
object, or {"skipped": reason}.

    python3 bench/jax_mlp.py [--quick] [--threads N] [--matmul-precision P]

--threads N runs the process on N of the CPUs it may use (its affinity),
the first N. XLA's CPU client keeps a thread pool of its own whatever its
flags say (with `--xla_cpu_multi_thread_eigen=false` alone, a step on a
two-core machine kept 1.9 cores busy), so only the affinity makes
"1 thread" one core. `cores_used` is the process's CPU time over the wall
time of the timed blocks: what it really used.

--matmul-precision sets jax_default_matmul_precision: on NVIDIA GPUs since
Ampere JAX's default computes f32 products in TF32, so a comparison with
loupe's exact f32 products (its CUDA device's default) needs "highest".
"""
import json
import os
import sys
import time

from skip import skip


def option(name):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


threads = int(option("--threads")) if option("--threads") else None
precision = option("--matmul-precision")
if threads:
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:threads])
    if threads == 1:
        os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

try:
    import jax
    import jax.numpy as jnp
except ImportError as e:
    skip(f"JAX is not installed ({e}); pip install jax")
if precision:
    jax.config.update("jax_default_matmul_precision", precision)


def init(key, sizes):
    params = []
    for i in range(len(sizes) - 1):
        key, k = jax.random.split(key)
        w = jax.random.normal(k, (sizes[i], sizes[i + 1])) * (2.0 / sizes[i]) ** 0.5
        params += [w, jnp.zeros(sizes[i + 1])]
    return params


def loss_fn(params, x, y):
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i + 2 < len(params):
            h = jax.nn.relu(h)
    logp = jax.nn.log_softmax(h)
    return -jnp.mean(jnp.sum(logp * jax.nn.one_hot(y, h.shape[-1]), axis=-1))


def adamw(params, grads, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    t = t + 1
    m = [b1 * mi + (1 - b1) * g for mi, g in zip(m, grads)]
    v = [b2 * vi + (1 - b2) * g * g for vi, g in zip(v, grads)]
    bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
    params = [p - lr * ((mi / bc1) / (jnp.sqrt(vi / bc2) + eps) + wd * p) for p, mi, vi in zip(params, m, v)]
    return params, m, v, t


@jax.jit
def step(params, m, v, t, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params, m, v, t = adamw(params, grads, m, v, t)
    return params, m, v, t, loss


def main():
    params = init(jax.random.PRNGKey(0), [784, 1024, 1024, 10])
    m = [jnp.zeros_like(p) for p in params]
    v = [jnp.zeros_like(p) for p in params]
    t = jnp.float32(0)
    x = jax.random.normal(jax.random.PRNGKey(1), (256, 784))
    y = jax.random.randint(jax.random.PRNGKey(2), (256,), 0, 10)
    t0 = time.perf_counter()
    step.lower(params, m, v, t, x, y).compile()
    compile_ms = (time.perf_counter() - t0) * 1e3
    state = (params, m, v, t)

    cpu_s = wall_s = 0.0

    def block(n):
        nonlocal state, cpu_s, wall_s
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            *state, loss = step(*state, x, y)
        loss.block_until_ready()
        wall_s += time.perf_counter() - t0
        cpu_s += time.process_time() - c0
        return (time.perf_counter() - t0) / n * 1e3

    block(3)
    quick = "--quick" in sys.argv
    n = min(max(int((100 if quick else 300) / max(block(3), 1e-3)) + 1, 3), 2000)
    cpu_s = wall_s = 0.0
    blocks = sorted(block(n) for _ in range(5 if quick else 9))
    print(json.dumps({"compile_ms": compile_ms, "step_ms": blocks[len(blocks) // 2], "steps_per_block": n,
                      "cores_used": cpu_s / wall_s,
                      "version": jax.__version__, "threads": len(os.sched_getaffinity(0)),
                      "device": jax.devices()[0].device_kind, "matmul_precision": precision or "default"}))


main()
