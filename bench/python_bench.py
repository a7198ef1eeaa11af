#!/usr/bin/env python3
"""Python-level costs of Onyx against the incumbents, measured in one run.

    python bench/python_bench.py [--calls 20000] [--steps 100]

1. Per-call overhead of InferenceSession.run on a tiny model (one Add of two
   4-float vectors): onyx vs onnxruntime (PyPI), one intra-op thread each,
   alternating rounds so that drift on a shared machine hits both.
2. OnyxModule training step (forward, backward, torch.optim.AdamW step) vs
   the same module in plain PyTorch: an MLP, a CNN, a transformer block.
Ratios > 1 mean Onyx takes longer. Needs the onyx package, onnxruntime,
torch and onnx (scripts/python-venv.sh makes such a venv).
"""
import argparse
import copy
import os
import statistics
import sys
import tempfile
import time

import numpy as np

try:
    import onnx
    import onnxruntime
    import torch
    from onnx import TensorProto, helper

    import onyx
    from onyx.torch import OnyxModule
except ImportError as e:  # baselines and the package under test, never runtime dependencies
    sys.exit(f"python_bench: needs onyx, onnxruntime, torch and onnx ({e})")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from test_onyx_module import CASES, loss_of  # noqa: E402  the models the tests check


def tiny_model(path):
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "add",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in "ab"],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def per_call_us(session, feed, calls):
    for _ in range(200):
        session.run(None, feed)
    start = time.perf_counter()
    for _ in range(calls):
        session.run(None, feed)
    return (time.perf_counter() - start) / calls * 1e6


def bench_overhead(calls, rounds):
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "add.onnx")
        tiny_model(path)
        o = onyx.SessionOptions()
        o.intra_op_num_threads = 1
        r = onnxruntime.SessionOptions()
        r.intra_op_num_threads = 1
        r.inter_op_num_threads = 1
        ours = onyx.InferenceSession(path, o, providers=["cpu"])
        theirs = onnxruntime.InferenceSession(path, r, providers=["CPUExecutionProvider"])
        feed = {"a": np.ones(4, np.float32), "b": np.ones(4, np.float32)}
        onyx_us, ort_us = [], []
        for _ in range(rounds):
            onyx_us.append(per_call_us(ours, feed, calls))
            ort_us.append(per_call_us(theirs, feed, calls))
    a, b = statistics.median(onyx_us), statistics.median(ort_us)
    print(f"InferenceSession.run on one Add, median of {rounds} rounds of {calls} calls:")
    print(f"  onyx {a:.2f} us/call, onnxruntime {onnxruntime.__version__} {b:.2f} us/call: onyx/ort = {a / b:.2f}x")


def step_ms(model, data, name, steps):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps + 5):
        x, y = data[step % len(data)]
        start = time.perf_counter()
        optimizer.zero_grad()
        loss_of(name, model(x), y).backward()
        optimizer.step()
        if step >= 5:  # the first calls export and build the sessions
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def bench_training(steps, rounds):
    print(f"training step (forward, backward, AdamW), median of {steps} steps, best of {rounds} rounds, "
          f"{torch.get_num_threads()} thread(s) each:")
    for name, (make, make_x, make_y) in CASES.items():
        torch.manual_seed(0)
        reference = make()
        wrapped = OnyxModule(copy.deepcopy(reference), threads=torch.get_num_threads())  # same thread count
        g = torch.Generator().manual_seed(0)
        data = [(make_x(g), make_y(g)) for _ in range(4)]
        torch_ms, onyx_ms = [], []
        for _ in range(rounds):
            torch_ms.append(step_ms(reference, data, name, steps))
            onyx_ms.append(step_ms(wrapped, data, name, steps))
        a, b = min(onyx_ms), min(torch_ms)
        print(f"  {name:12s} OnyxModule {a:.3f} ms, PyTorch {torch.__version__} {b:.3f} ms: onyx/torch = {a / b:.2f}x")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    bench_overhead(args.calls, args.rounds)
    bench_training(args.steps, args.rounds)


if __name__ == "__main__":
    main()
