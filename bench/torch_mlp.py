#!/usr/bin/env python3
"""The MLP training step of bench/runtime_bench.cpp (784-1024-1024-10,
batch 256, AdamW, f32) in PyTorch on the GPU, eager, timed to completion.
Prints one JSON object, or {"skipped": reason}.

    python3 bench/torch_mlp.py [--quick]
"""
import json
import sys
import time

try:
    import torch
except ImportError as e:
    print(json.dumps({"skipped": f"PyTorch is not installed ({e})"}))
    sys.exit(0)
if not torch.cuda.is_available():
    print(json.dumps({"skipped": "PyTorch sees no CUDA GPU"}))
    sys.exit(0)

# FP32 products, as loupe's CUDA device computes them by default.
torch.backends.cuda.matmul.allow_tf32 = False
dev = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                            torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
x = torch.randn(256, 784, device=dev)
y = torch.randint(0, 10, (256,), device=dev)


def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


quick = "--quick" in sys.argv
for _ in range(5):
    step()
torch.cuda.synchronize()
blocks = []
for _ in range(3 if quick else 7):
    n = 5 if quick else 20
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    blocks.append((time.perf_counter() - t0) / n * 1e3)
blocks.sort()
print(json.dumps({"step_ms": blocks[len(blocks) // 2], "version": torch.__version__,
                  "device": torch.cuda.get_device_name(0)}))
