"""A PyTorch training step whose batch does not fit the GPU memory it is
given: torch.cuda.set_per_process_memory_fraction caps PyTorch's CUDA
memory (--gib of the device, 3 GiB), and the forward of a batch of --batch
rows through a wide MLP keeps more activations for the backward than that.
The fix (--fixed) runs the same rows as --chunks micro-batches, their
gradients accumulated into one step: the same update, a fraction of the
activations at a time.

It knows nothing of loupe:

    loupe capture --memory -o oom.db -- python torch_batch_oom.py [--fixed]
    loupe analyze oom.db

On a GPU, the capture reads the CUDA caching allocator's own history, so
the memory finding leads with the out-of-memory error: the request, where
it was made, what was live by the line that allocated it. Without a GPU
there is no capacity to run out of: the program says so and exits 0.
"""
import argparse
import sys

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--fixed", action="store_true", help="micro-batches with gradient accumulation")
parser.add_argument("--batch", type=int, default=32768)
parser.add_argument("--chunks", type=int, default=16)
parser.add_argument("--gib", type=float, default=3.0, help="GPU memory PyTorch may use, GiB")
args = parser.parse_args()

if not torch.cuda.is_available():
    print("no CUDA GPU: nothing to run out of (the leak sample, torch_eval_leak.py, runs on the CPU)")
    sys.exit(0)

# 3 GiB: the batch's forward alone keeps 4 GiB of activations (four
# 32768 x 8192 float32 outputs, 1 GiB each); a micro-batch, a sixteenth.
torch.cuda.set_per_process_memory_fraction(min(1.0, args.gib * 2**30 / torch.cuda.get_device_properties(0).total_memory))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(1024, 8192), torch.nn.ReLU(), torch.nn.Linear(8192, 8192), torch.nn.ReLU(),
                            torch.nn.Linear(8192, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(args.batch, 1024, device="cuda")
y = torch.randint(0, 10, (args.batch,), device="cuda")


def step(chunks):
    opt.zero_grad(set_to_none=True)
    for xs, ys in zip(x.chunk(chunks), y.chunk(chunks)):
        loss = torch.nn.functional.cross_entropy(model(xs), ys) / chunks
        loss.backward()
    opt.step()


try:
    step(args.chunks if args.fixed else 1)
    torch.cuda.synchronize()
except torch.OutOfMemoryError as e:
    print(f"out of memory: {str(e).splitlines()[0]}", file=sys.stderr)
    sys.exit(1)
print(f"one step of {args.batch} rows{f' in {args.chunks} micro-batches' if args.fixed else ''}: fits")
