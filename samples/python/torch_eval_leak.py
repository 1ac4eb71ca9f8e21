"""An evaluation loop that keeps every step's memory: `total_loss += loss`
adds a loss computed with autograd on, so the running total carries the
graph of every step, and with it the activations each step saved for a
backward pass that never comes. The fix (--fixed) adds `loss.item()`, a
float. In a training loop the same line keeps only the graph's nodes:
`loss.backward()` frees the saved activations.

It records itself with torch.profiler, as its documentation shows
(memory and Python stacks on, a schedule and prof.step() at the end of
each step), and
knows nothing of loupe:

    python torch_eval_leak.py trace.json [--fixed]
    loupe import trace.json -o run.db && loupe analyze run.db

or, for the lines that allocated what each step leaves behind:

    loupe capture --memory -o run.db -- python torch_eval_leak.py trace.json
    loupe analyze run.db
"""
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("trace", help="where to write the Kineto trace (JSON)")
parser.add_argument("--fixed", action="store_true", help="accumulate loss.item() instead of loss")
parser.add_argument("--steps", type=int, default=8)
args = parser.parse_args()

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1))
profile = torch.profiler.profile(
    activities=[torch.profiler.ProfilerActivity.CPU],
    schedule=torch.profiler.schedule(wait=0, warmup=0, active=args.steps, repeat=1),  # marks each step
    on_trace_ready=lambda p: p.export_chrome_trace(args.trace),
    profile_memory=True,
    with_stack=True,
)
with profile as prof:
    total_loss = 0.0
    for step in range(args.steps):
        x, y = torch.randn(64, 256), torch.randn(64, 1)
        loss = torch.nn.functional.mse_loss(model(x), y)
        if args.fixed:
            total_loss += loss.item()
        else:
            total_loss += loss  # the mistake: the sum keeps each step's graph alive
        prof.step()
print(f"mean loss {float(total_loss) / args.steps:.4f}")
