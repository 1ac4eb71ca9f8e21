"""A JAX training loop that keeps every step's predictions: appending the
jitted step's output to a list keeps its device buffer alive, so the
device's memory grows by one batch of predictions a step until it runs
out. The fix (--fixed) keeps what the loop needs of it on the host, a
float of the loss.

It marks its steps as JAX's documentation shows
(jax.profiler.StepTraceAnnotation) and knows nothing of loupe:

    loupe capture --memory -o run.db -- python jax_keep_outputs.py [--fixed]
    loupe analyze run.db
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--fixed", action="store_true", help="keep float(loss) instead of the predictions")
parser.add_argument("--steps", type=int, default=8)
args = parser.parse_args()


@jax.jit
def train_step(w, x, y):
    def loss_fn(w):
        predictions = jnp.tanh(x @ w)
        return ((predictions - y) ** 2).mean(), predictions

    (loss, predictions), grad = jax.value_and_grad(loss_fn, has_aux=True)(w)
    return w - 0.01 * grad, loss, predictions


rng = np.random.default_rng(0)
w = jnp.asarray(rng.normal(size=(256, 256)).astype(np.float32) * 0.05)
history = []
for step in range(args.steps):
    with jax.profiler.StepTraceAnnotation("train", step_num=step):
        x = rng.normal(size=(512, 256)).astype(np.float32)
        w, loss, predictions = train_step(w, x, x)
        if args.fixed:
            history.append(float(loss))
        else:
            history.append(predictions)  # the mistake: every step's predictions stay on the device
print(f"{len(history)} steps kept")
