#!/usr/bin/env python3
"""End-to-end latency of Onyx against ONNX Runtime on the same model files, same run.

    python bench/ort_compare.py [--build build] [--threads 1,2] [--batch 1,8,64] [MODEL.onnx ...]

Without models it writes the test MLP and CNN (onyx_make_test_models) and uses those.
ONNX Runtime is the incumbent and only a baseline here (pip install onnxruntime numpy);
Onyx is timed through `onyx bench`, ORT through its Python API with the same thread count,
alternating the two so that drift on a shared machine hits both. Ratio > 1: Onyx is faster.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:  # a baseline, never a dependency of the runtime
    sys.exit(f"ort_compare: needs numpy and onnxruntime from PyPI ({e})")


def onyx_p50_ms(onyx, model, threads, shape, iterations):
    out = subprocess.run([onyx, "bench", model, "--provider", "cpu", "--fallback", "fail",
                          "--threads", str(threads), "--shape", shape,
                          "--iterations", str(iterations), "--warmup", "10"],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"p50 ([0-9.]+)", out).group(1))


def ort_p50_ms(model, threads, dims, iterations):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    x = np.random.default_rng(0).uniform(-1, 1, dims).astype(np.float32)
    for _ in range(10):
        session.run(None, {name: x})
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        session.run(None, {name: x})
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return times[(len(times) - 1) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--batch", default="1,8,64")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("models", nargs="*")
    args = parser.parse_args()
    onyx = os.path.join(args.build, "bin", "onyx")
    models = args.models
    if not models:
        folder = tempfile.mkdtemp(prefix="onyx-ort-")
        subprocess.run([os.path.join(args.build, "bin", "onyx_make_test_models"), folder],
                       check=True, capture_output=True)
        models = [os.path.join(folder, m) for m in ("mlp.onnx", "cnn.onnx")]
    print(f"onnxruntime {ort.__version__}; p50 latency in ms, best of {args.rounds} alternating rounds")
    print(f"{'model':<10} {'batch':>5} {'thr':>3} {'onyx':>9} {'ort':>9} {'ort/onyx':>9}")
    for model in models:
        session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        declared = session.get_inputs()[0].shape
        for batch in [int(b) for b in args.batch.split(",")]:
            dims = [batch] + [int(d) for d in declared[1:]]
            shape = f"{session.get_inputs()[0].name}=" + ",".join(map(str, dims))
            for threads in [int(t) for t in args.threads.split(",")]:
                ours, theirs = [], []
                for _ in range(args.rounds):
                    ours.append(onyx_p50_ms(onyx, model, threads, shape, args.iterations))
                    theirs.append(ort_p50_ms(model, threads, dims, args.iterations))
                a, b = min(ours), min(theirs)
                print(f"{os.path.basename(model):<10} {batch:>5} {threads:>3} {a:>9.3f} {b:>9.3f} {b / a:>9.2f}")


if __name__ == "__main__":
    main()
