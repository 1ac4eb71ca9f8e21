#!/usr/bin/env python3
"""A small PyTorch training loop on the GPU for `loupe capture`: each step
in an NVTX range (so the trace shows steps), the loss read every 10 steps
(a synchronous copy, as logging does). Prints one JSON object with the
median step time, so that running it with and without `loupe capture`
gives the capture's overhead. Exits 3 without a GPU.

    python3 bench/torch_train_loop.py [--steps N]
"""
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

times = []
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
print(json.dumps({"step_ms": times[len(times) // 2], "steps": steps}))
