#!/usr/bin/env python3
"""A small PyTorch training loop on the GPU for `loupe capture`: each step
in an NVTX range (so the trace shows steps), the loss read every 10 steps
(a synchronous copy, as logging does). Prints one JSON object with the
median step time, so that running it with and without `loupe capture`
gives the capture's overhead. With --torch-profiler the whole loop, warm-up
included, runs under torch.profiler recording CPU and CUDA activities
(Kineto, on CUPTI): the same comparison for PyTorch's own profiler, whose
trace is exported after the timed steps. Exits 3 without a GPU.

    python3 bench/torch_train_loop.py [--steps N] [--torch-profiler TRACE.json]
"""
import contextlib
import json
import sys
import time

try:
    import torch
except ImportError as e:
    print(f"PyTorch is not installed ({e})", file=sys.stderr)
    sys.exit(3)
if not torch.cuda.is_available():
    print("PyTorch sees no CUDA GPU", file=sys.stderr)
    sys.exit(3)

steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 200
dev = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                            torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(256, 784, device=dev)
y = torch.randint(0, 10, (256,), device=dev)

profiler_trace = sys.argv[sys.argv.index("--torch-profiler") + 1] if "--torch-profiler" in sys.argv else None
if profiler_trace:
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    profiling = torch.profiler.profile(activities=acts)
else:
    profiling = contextlib.nullcontext()

times = []
with profiling:
    for i in range(steps + 20):
        t0 = time.perf_counter()
        torch.cuda.nvtx.range_push("step")
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if i % 10 == 0:
            loss.item()
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        if i >= 20:  # after warm-up
            times.append((time.perf_counter() - t0) * 1e3)
times.sort()
if profiler_trace:
    profiling.export_chrome_trace(profiler_trace)
print(json.dumps({"step_ms": times[len(times) // 2], "steps": steps,
                  "spread_ms": [times[len(times) // 10], times[len(times) * 9 // 10]]}))
