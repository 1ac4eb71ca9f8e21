"""Five steps of a PyTorch loop under torch.profiler, marked the way its
documentation shows (prof.step() at the end of each); it knows nothing of
loupe."""
import torch

with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    x = torch.ones(64, 64)
    for _ in range(5):
        x = torch.tanh(x @ x)
        prof.step()
print(float(x.sum()))
