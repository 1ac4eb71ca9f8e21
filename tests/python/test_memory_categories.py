"""loupe's memory categories on a Kineto trace against PyTorch's own: one
CPU training run recorded by torch.profiler (profile_memory, with_stack,
record_shapes) is exported as Kineto JSON, which loupe imports, and turned
by PyTorch into a memory snapshot (torch.cuda._memory_viz._profile_to_snapshot),
whose allocations carry the category PyTorch's memory profiler infers from
the tensors' data flow. Block by block, loupe must agree with PyTorch or
say "unknown"; never name another category, except where the raw events
show PyTorch's inference is wrong (below).

The run: a 256-512-10 MLP and Adam, four steps, each on a fresh batch.
From the program alone, loupe should find: optimizer state (Adam's
exp_avg and exp_avg_sq of 4 parameters and a step counter each, made at the
first step and kept); activations (made in the forward, freed by the
backward: the ReLU's output, log_softmax's output, nll_loss's total
weight); gradients freed by the next step's zero_grad (the last step's are
never freed, so nothing tells what they were: unknown); and the backward's
working memory (PyTorch's AUTOGRAD_DETAIL: a gradient one backward node
makes for its input and the next one frees).
Where PyTorch is wrong: what Adam's step makes and frees before the step
ends (sqrt, div, the scalars of its update) is its working memory, yet
PyTorch labels it by the tensors it flows into (activation, parameter,
input); loupe calls it temporary.
"""
import collections
import json
import os
import pickle
import tempfile
import unittest

import loupe

TO_LOUPE = {"activation": "activation", "gradient": "gradient", "optimizer_state": "optimizer state",
            "temporary": "temporary", "autograd_detail": "temporary", "input": "input data"}


def record(directory):
    """(Kineto JSON path, snapshot) of the run."""
    import torch
    from torch.cuda._memory_viz import _profile_to_snapshot
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        for _ in range(4):
            x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    path = os.path.join(directory, "trace.json")
    prof.export_chrome_trace(path)
    return path, _profile_to_snapshot(prof)


def torch_blocks(snapshot):
    """address -> [PyTorch's category of each block made there, in order].
    A tensor's new version (an in-place op) comes as a free and an alloc of
    the same address back to back: the same block, its last category kept."""
    events = snapshot["device_traces"][-1]  # the host: after the CUDA devices
    blocks = collections.defaultdict(list)
    k = 0
    while k < len(events):
        e = events[k]
        bump = (e["action"] == "free_requested" and k + 2 < len(events) and events[k + 2]["action"] == "alloc"
                and events[k + 2]["addr"] == e["addr"])
        if bump:
            if blocks[e["addr"]]:  # else a version of a block from before the profile
                blocks[e["addr"]][-1] = events[k + 2]["category"]
            k += 3
            continue
        if e["action"] == "alloc":
            blocks[e["addr"]].append(e["category"])
        k += 1
    return blocks


def ranges(trace, prefix):
    """(start, end, tid) of each range whose name begins with `prefix`, in
    the JSON's µs."""
    return [(e["ts"], e["ts"] + e["dur"], e["tid"]) for e in trace["traceEvents"]
            if e.get("ph") == "X" and e.get("name", "").startswith(prefix)]


def inside(spans, event):
    return any(start <= event["ts"] < end and tid == event["tid"] for start, end, tid in spans)


class CategoriesAgreeWithPyTorchs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        json_path, snapshot = record(cls.tmp.name)
        db = os.path.join(cls.tmp.name, "t.db")
        loupe.import_trace(json_path, db)
        with open(json_path) as f:
            cls.trace = json.load(f)
        cls.blocks = torch_blocks(snapshot)
        cls.loupe = loupe.open(db)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def compared(self):
        """Each block whose allocation is alone at its time (loupe's category
        of it is then what its allocation adds to the totals): PyTorch's
        category, loupe's, whether it was made and freed inside one optimizer
        step, and what the raw events show open at its free ("backward",
        "zero_grad", "" for neither, None when never freed)."""
        events = sorted((e for e in self.trace["traceEvents"]
                         if e.get("name") == "[memory]" and e["args"].get("Device Type") == 0),
                        key=lambda e: e["ts"])
        times = self.loupe.table("memory_events").time.to_numpy()
        self.assertEqual(len(times), len(events))
        steps = ranges(self.trace, "Optimizer.step#")
        backward = ranges(self.trace, "autograd::engine::evaluate_function")
        zero_grad = ranges(self.trace, "Optimizer.zero_grad#")
        made = collections.Counter()
        live = {}
        out = []

        def categories_after(k):
            return self.loupe.live_memory(0, int(times[k]))["by_category"] if k >= 0 else {}

        for k, e in enumerate(events):
            address, size = e["args"]["Addr"], e["args"]["Bytes"]
            if size > 0:
                made[address] += 1
                alone = ((k == 0 or events[k - 1]["ts"] != e["ts"])
                         and (k + 1 == len(events) or events[k + 1]["ts"] != e["ts"]))
                theirs = self.blocks.get(address, [])
                live[address] = (e, theirs[made[address] - 1] if made[address] <= len(theirs) else None,
                                 self.added(categories_after(k - 1), categories_after(k), size) if alone else None)
                continue
            allocated, theirs, ours = live.pop(address)
            in_step = any(s <= allocated["ts"] and e["ts"] < end and tid == e["tid"] for s, end, tid in steps)
            freed_in = "backward" if inside(backward, e) else "zero_grad" if inside(zero_grad, e) else ""
            if ours is not None:
                out.append((theirs, ours, in_step, freed_in))
        out += [(theirs, ours, False, None) for _, theirs, ours in live.values() if ours is not None]
        return out

    @staticmethod
    def added(before, after, size):
        """The category whose total grew by `size`: the new block's."""
        grown = [c for c in set(before) | set(after) if after.get(c, 0) - before.get(c, 0) == size]
        return grown[0] if len(grown) == 1 else "unknown"

    def test_loupe_agrees_or_says_unknown(self):
        blocks = self.compared()
        self.assertGreater(len(blocks), 120)  # of 240 allocations; some share a time with another event
        for theirs, ours, in_optimizer_step, _ in blocks:
            if in_optimizer_step:
                self.assertEqual(ours, "temporary", theirs)
            else:
                self.assertIn(ours, {TO_LOUPE.get(theirs), "unknown"}, theirs)

    def test_where_the_events_tell_loupe_names_pytorchs_category(self):
        """Where the raw events hold the evidence, loupe names the category,
        not unknown: Adam's state (never freed), activations freed by the
        backward, gradients freed by zero_grad, and what the backward makes
        and frees itself. Each kind must be among the blocks compared."""
        expected = {("optimizer_state", None): "optimizer state", ("activation", "backward"): "activation",
                    ("gradient", "zero_grad"): "gradient", ("autograd_detail", "backward"): "temporary"}
        seen = collections.Counter()
        for theirs, ours, in_step, freed_in in self.compared():
            want = expected.get((theirs, freed_in))
            if want is None or in_step:
                continue
            self.assertEqual(ours, want, (theirs, freed_in))
            seen[want] += 1
        self.assertEqual(set(seen), set(expected.values()), seen)

    def test_pytorch_labels_the_optimizers_working_memory_by_where_it_flows(self):
        labels = {theirs for theirs, _, in_step, _ in self.compared() if in_step}
        self.assertTrue(labels & {"activation", "parameter", "input"}, labels)


if __name__ == "__main__":
    unittest.main()
