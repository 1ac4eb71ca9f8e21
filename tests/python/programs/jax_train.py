"""A JAX training loop (a linear model, plain SGD) on ragged batches, or
with --bucket on batches padded to one size. It knows nothing of loupe:
the tests record it with loupe.capture and with `loupe capture -- python`,
and find its lines by the `loupe-test:` marks.
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np

SIZES = [32, 32, 40, 32, 48, 40, 56, 32]  # the batch size of each step
BUCKET = 64


@jax.jit
def train_step(w, x, y, mask):
    def loss_fn(w):
        err = (x @ w - y) * mask
        return (err**2).sum() / mask.sum()

    loss, grad = jax.value_and_grad(loss_fn)(w)
    return w - 0.05 * grad, loss


def batch(rng, n, bucket):
    x = rng.normal(size=(n, 16)).astype(np.float32)
    y, mask = x.sum(axis=1), np.ones(n, np.float32)
    if bucket:
        pad = BUCKET - n
        x, y, mask = np.pad(x, ((0, pad), (0, 0))), np.pad(y, (0, pad)), np.pad(mask, (0, pad))
    return x, y, mask


def main(bucket):
    rng = np.random.default_rng(0)
    w = jnp.zeros(16, jnp.float32)
    for step, n in enumerate(SIZES):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            x, y, mask = batch(rng, n, bucket)
            w, loss = train_step(w, x, y, mask)  # loupe-test: compiles
            print(step, float(loss))  # loupe-test: host sync


if __name__ == "__main__":
    main("--bucket" in sys.argv[1:])
