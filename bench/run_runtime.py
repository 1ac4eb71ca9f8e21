#!/usr/bin/env python3
"""The runtime's rows of bench/run: the MLP training step compiled, run on
the CPU device (with every core, and on one CPU with one BLAS thread), run
in JAX on its CPU backend in the same script (likewise), run with a
capture on and off, and run eagerly. The CPU device's BLAS and kernel
set are printed with the figures: a step time means little without them.
Prints one JSON row per line: [group, metric, value, target, verdict].

    bench/run_runtime.py BUILD_DIR [--quick]
"""
import json
import os
import subprocess
import sys

build = sys.argv[1] if len(sys.argv) > 1 else "build-release"
quick = ["--quick"] if "--quick" in sys.argv else []
here = os.path.dirname(os.path.abspath(__file__))
G = "runtime"


def row(metric, value, target="", ok=None):
    verdict = "" if ok is None else ("met" if ok else "MISSED")
    print(json.dumps([G, metric, value, target, verdict]))


def ours_once(threads=None):
    """runtime_bench's figures; with `threads`, on that many CPUs (the first
    of the process's affinity) and as many BLAS threads, as jax_mlp.py's
    --threads runs JAX."""
    env = dict(os.environ, LOUPE_CPU_BLAS_THREADS=str(threads)) if threads else None
    cpus = sorted(os.sched_getaffinity(0))[:threads] if threads else None
    return json.loads(subprocess.run([os.path.join(build, "bench", "runtime_bench"), *quick], check=True,
                                     capture_output=True, text=True, env=env,
                                     preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None).stdout)


def jax(*args):
    out = subprocess.run([sys.executable, os.path.join(here, "jax_mlp.py"), *args, *quick], capture_output=True,
                         text=True)
    if out.returncode != 0:
        return {"skipped": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "jax_mlp.py failed"}
    return json.loads(out.stdout)


def medians(runs):
    """Each numeric field's median over the runs (the first run's other fields)."""
    out = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, (int, float)):
            vals = sorted(r[key] for r in runs)
            out[key] = vals[len(vals) // 2]
    return out


# Both sides run in turn, a few rounds each, and medians are compared, so
# that a machine busy with other work slows both alike.
rounds = 1 if quick else 3
ours_runs, ours1_runs, jax_runs, jax1_runs = [], [], [], []
for _ in range(rounds):
    ours_runs.append(ours_once())
    ours1_runs.append(ours_once(threads=1))
    j = jax()
    if "skipped" in j:
        jax_runs = [j]
        break
    jax_runs.append(j)
    jax1_runs.append(jax("--threads", "1"))
ours = medians(ours_runs)
ours1 = medians(ours1_runs)
jx = jax_runs[0] if "skipped" in jax_runs[0] else medians(jax_runs)
jx1 = jx if "skipped" in jx else medians(jax1_runs)

step = "MLP step 784-1024-1024-10, batch 256, AdamW, f32"
c = ours["compile_ms"]
row(f"compile (trace+optimise+codegen) of the {step}", f"{c:.2f} ms ({ours['trace_ms']:.2f} + "
    f"{ours['optimize_ms']:.2f} + {ours['codegen_ms']:.2f}; {ours['kernels']} kernels)", "<= 5 ms", c <= 5)
row("first compile in the process (cold)", f"{ours['first_compile_ms']:.2f} ms")
if "skipped" in jx:
    row("JAX compile of the same step", "skipped: " + jx["skipped"])
else:
    row(f"JAX {jx['version']} compile of the same step (lower + compile)", f"{jx['compile_ms']:.1f} ms")
blas = ours["blas"]
kernels = blas.split(", ")[1].split(" (")[0] if ", " in blas else blas  # "SkylakeX kernels"
row("CPU device's BLAS", blas)
s = ours["step_ms"]  # queued back to back, as JAX's is timed
row(f"step time, CPU device (jit, steps queued; matrix products on every core; {kernels})",
    f"{s:.2f} ms ({ours['cores_used']:.1f} cores busy)")
s1 = ours1["step_ms"]
row(f"step time, CPU device, on 1 CPU with 1 BLAS thread ({kernels})",
    f"{s1:.2f} ms ({ours1['cores_used']:.1f} cores busy)")
if "skipped" in jx:
    row("step time / JAX's", "skipped: " + jx["skipped"], "<= 1.5x")
else:
    row(f"JAX step time on its CPU backend ({jx['threads']} CPUs)",
        f"{jx['step_ms']:.2f} ms ({jx['cores_used']:.1f} cores busy)")
    row(f"step time / JAX's ({jx['threads']} CPUs; {kernels})", f"{s / jx['step_ms']:.2f}x", "<= 1.5x",
        s / jx["step_ms"] <= 1.5)
    if "skipped" not in jx1:
        row("JAX step time, on 1 CPU", f"{jx1['step_ms']:.2f} ms ({jx1['cores_used']:.1f} cores busy)")
        row(f"step time / JAX's, both on 1 CPU ({kernels})", f"{s1 / jx1['step_ms']:.2f}x", "<= 1.5x",
            s1 / jx1["step_ms"] <= 1.5)
r = ours["capture_ratio"]
w = ours["step_waited_ms"]  # each step waited for, with a capture on and off
row(f"step time, capture on / off, steady state (same process, medians of interleaved steps, each waited for; "
    f"{ours['capture_steady_steps']} captured)", f"{r:.3f} ({ours['capture_on_ms']:.2f} / {w:.2f} ms)", "<= 1.03",
    r <= 1.03)
row("capture start-up: start and first step, less a step (first capture of the process; later ones)",
    f"{ours['capture_first_startup_ms']:.2f} ms; {ours['capture_startup_ms']:.2f} ms")
# The same overhead from first principles, which a busy machine cannot
# blur: the events a step records times the record API's cost per event
# (a span, the dearest kind, measured by record_bench now).
ev = ours["events_per_step"]
try:
    out = subprocess.run([os.path.join(build, "bench", "record_bench"), "--benchmark_format=json",
                          "--benchmark_filter=BM_Span/.*threads:1"], check=True, capture_output=True, text=True).stdout
    ns = next(b["ns_per_event"] for b in json.loads(out)["benchmarks"] if b["name"].endswith("_median"))
    row(f"events recorded per step; at {ns:.0f} ns each (record_bench), share of the step",
        f"{ev:.0f}; {ev * ns * 1e-6 / w * 100:.3f}%", "<= 3%", ev * ns * 1e-6 / w <= 0.03)
except (OSError, subprocess.CalledProcessError, StopIteration, KeyError, ValueError):
    row("events recorded per step", f"{ev:.0f}")
e = ours["eager_step_ms"]
row("eager step time (one kernel per op)", f"{e:.2f} ms")
row("eager / jit step time, each waited for", f"{e / w:.2f}x")
