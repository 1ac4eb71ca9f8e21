#!/usr/bin/env python3
"""The MLP training step of bench/runtime_bench.cpp (784-1024-1024-10,
batch 256, AdamW, f32) in PyTorch on the GPU, eager. Steps are queued back
to back and waited for once per block, blocks of at least 100 ms (300
without --quick), as runtime_bench's `step_ms`. Prints one JSON object, or
{"skipped": reason}.

    python3 bench/torch_mlp.py [--quick] [--tf32]

f32 products are exact, as loupe's CUDA device computes them by default;
--tf32 lets cuBLAS use TF32 tensor cores, as LOUPE_CUDA_TF32=1 does.
"""
import json
import sys
import time

from skip import torch_on_gpu

torch = torch_on_gpu()

tf32 = "--tf32" in sys.argv
torch.backends.cuda.matmul.allow_tf32 = tf32
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




def block(n):
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e3


block(5)
quick = "--quick" in sys.argv
n = min(max(int((100 if quick else 300) / max(block(3), 1e-3)) + 1, 3), 2000)
blocks = sorted(block(n) for _ in range(5 if quick else 9))
print(json.dumps({"step_ms": blocks[len(blocks) // 2], "steps_per_block": n, "version": torch.__version__,
                  "device": torch.cuda.get_device_name(0), "tf32": tf32}))
