"""A PyTorch training loop (a linear model, plain SGD) whose loss is
torch.compile'd, on ragged batches, or with --bucket on batches padded to
one size; on the GPU when there is one. It knows nothing of loupe: the
tests record it with loupe.capture and with `loupe capture -- python`, and
find its lines by the `loupe-test:` marks. The "eager" backend keeps
dynamo's guards and recompiles without Inductor's code generation.
"""
import sys

import torch

SIZES = [32, 32, 40, 32, 48, 40, 56, 32]  # the batch size of each step
BUCKET = 64
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@torch.compile(backend="eager")
def loss_fn(w, x, y, mask):
    err = (x @ w - y) * mask
    return (err**2).sum() / mask.sum()


def batch(generator, n, bucket):
    x = torch.randn(n, 16, generator=generator)
    y, mask = x.sum(dim=1), torch.ones(n)
    if bucket:
        pad = BUCKET - n
        x, y, mask = (torch.nn.functional.pad(t, (0, 0, 0, pad) if t.dim() == 2 else (0, pad)) for t in (x, y, mask))
    return x.to(DEVICE), y.to(DEVICE), mask.to(DEVICE)


def main(bucket):
    generator = torch.Generator().manual_seed(0)
    w = torch.zeros(16, device=DEVICE, requires_grad=True)
    for step, n in enumerate(SIZES):
        x, y, mask = batch(generator, n, bucket)
        loss = loss_fn(w, x, y, mask)  # loupe-test: compiles
        loss.backward()
        with torch.no_grad():
            w -= 0.05 * w.grad
            w.grad = None
        print(step, f"{float(loss):.6f}")  # loupe-test: host sync


if __name__ == "__main__":
    main("--bucket" in sys.argv[1:])
