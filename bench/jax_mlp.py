#!/usr/bin/env python3
"""The MLP training step of bench/runtime_bench.cpp written in JAX, timed
on JAX's CPU backend. Prints one JSON object, or {"skipped": reason}.

    python3 bench/jax_mlp.py [--threads N]
"""
import json
import os
import sys
import time

threads = None
if "--threads" in sys.argv:
    threads = int(sys.argv[sys.argv.index("--threads") + 1])
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'}"
                               f" intra_op_parallelism_threads={threads}")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

try:
    import jax
    import jax.numpy as jnp
except ImportError as e:
    print(json.dumps({"skipped": f"JAX is not installed ({e}); pip install jax"}))
    sys.exit(0)


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
    for _ in range(3):
        params, m, v, t, loss = step(params, m, v, t, x, y)
    loss.block_until_ready()
    quick = "--quick" in sys.argv
    blocks = []
    for _ in range(3 if quick else 7):
        t0 = time.perf_counter()
        n = 3 if quick else 8
        for _ in range(n):
            params, m, v, t, loss = step(params, m, v, t, x, y)
        loss.block_until_ready()
        blocks.append((time.perf_counter() - t0) / n * 1e3)
    blocks.sort()
    print(json.dumps({"compile_ms": compile_ms, "step_ms": blocks[len(blocks) // 2], "version": jax.__version__,
                      "threads": threads or os.cpu_count()}))


main()
