"""How a comparison script says it cannot run here: one JSON object,
{"skipped": reason}, and exit status 0, which scripts/gpu-check reports as
a skip rather than a failure."""
import json
import sys


def skip(reason):
    print(json.dumps({"skipped": reason}))
    sys.exit(0)


def torch_on_gpu():
    """PyTorch, when it is installed and sees a CUDA GPU; skips otherwise."""
    try:
        import torch
    except ImportError as e:
        skip(f"PyTorch is not installed ({e})")
    if not torch.cuda.is_available():
        skip("PyTorch sees no CUDA GPU")
    return torch
