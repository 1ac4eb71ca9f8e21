#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention on the GPU, with one backend forced
(cuDNN's or FlashAttention's), on the shapes bench/attention_bench.cpp
times on loupe: the forward pass alone, and the forward and backward passes.
Prints one JSON object, as attention_bench does, counting FLOPs the same
way (4·B·H·S²·D forward, 3.5 times that for both passes, halved when causal).

    torch_attention.py --backend cudnn|flash [--batch B] [--heads H] [--seq S]
                       [--dim D] [--dtype bf16|f16] [--causal]
"""
import argparse
import json
import time

from skip import skip, torch_on_gpu

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--backend", choices=["cudnn", "flash"], required=True)
parser.add_argument("--batch", type=int, default=2)
parser.add_argument("--heads", type=int, default=16)
parser.add_argument("--seq", type=int, default=4096)
parser.add_argument("--dim", type=int, default=128)
parser.add_argument("--dtype", choices=["bf16", "f16"], default="bf16")
parser.add_argument("--causal", action="store_true")
args = parser.parse_args()

torch = torch_on_gpu()
try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError as e:  # an older PyTorch
    skip(f"this PyTorch cannot force an attention backend ({e})")
import torch.nn.functional as F

backend = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[args.backend]
dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[args.dtype]
shape = (args.batch, args.heads, args.seq, args.dim)
gen = torch.Generator(device="cuda").manual_seed(1)
q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, generator=gen).requires_grad_() for _ in range(3))
grad = torch.randn(shape, device="cuda", dtype=dtype, generator=gen)


def time_per_call(call):
    """Milliseconds per call, calls queued back to back for about a second."""
    call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    one = max((time.perf_counter() - t0) * 1e3, 1e-3)
    n = int(min(max(1000.0 / one, 3), 200))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        call()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / n


def forward():
    with torch.no_grad():
        return F.scaled_dot_product_attention(q, k, v, is_causal=args.causal)


def train():
    out = F.scaled_dot_product_attention(q, k, v, is_causal=args.causal)
    q.grad = k.grad = v.grad = None
    out.backward(grad)


try:
    with sdpa_kernel([backend]):
        fwd_ms = time_per_call(forward)
        train_ms = time_per_call(train)
except RuntimeError as e:
    skip(f"the {args.backend} backend does not run this case: {str(e).splitlines()[0]}")

flop = 4.0 * args.batch * args.heads * args.seq * args.seq * args.dim * (0.5 if args.causal else 1.0)
print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "backend": args.backend,
                  "dtype": args.dtype, "batch": args.batch, "heads": args.heads, "seq": args.seq, "dim": args.dim,
                  "causal": args.causal, "forward_ms": fwd_ms, "forward_tflops": flop / fwd_ms / 1e9,
                  "train_ms": train_ms, "train_tflops": 3.5 * flop / train_ms / 1e9}))
