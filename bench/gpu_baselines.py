#!/usr/bin/env python3
"""MatMul against cuBLAS and Conv against cuDNN, on the GPU, in one run.

    onyx_gpu_op_bench --iterations N > ops.txt
    gpu_baselines.py ops.txt [--iterations N]

Reads what onyx_gpu_op_bench printed (one node, device-bound I/O; run apart
so that each process loads its own cuDNN: PyTorch refuses an older one found
first on LD_LIBRARY_PATH), then times the same shapes through PyTorch's torch.matmul (cuBLAS) and conv2d (cuDNN), float32 with TF32
off (the provider asks cuBLAS for its default math and cuDNN for FMA math, no
TF32). Both sides are timed the same way: wall time of one call followed by a
device synchronize, median of N. Prints each case and the ratio
onyx/baseline (1.00: as fast as the vendor library; < 1 is faster).
"""
import argparse
import re
import statistics
import sys
import time


def torch_case(torch, name, iterations):
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    m = re.fullmatch(r"matmul_(\d+)x(\d+)x(\d+)", name)
    if m:
        mm, k, n = map(int, m.groups())
        x = torch.rand(mm, k, device=dev, generator=g)
        w = torch.rand(k, n, device=dev, generator=g)
        fn = lambda: torch.matmul(x, w)
        flops = 2.0 * mm * k * n
    else:
        m = re.fullmatch(r"conv_n(\d+)_c(\d+)_hw(\d+)_f(\d+)_r(\d+)", name)
        n, c, hw, f, r = map(int, m.groups())
        x = torch.rand(n, c, hw, hw, device=dev, generator=g)
        w = torch.rand(f, c, r, r, device=dev, generator=g)
        b = torch.rand(f, device=dev, generator=g)
        fn = lambda: torch.nn.functional.conv2d(x, w, b, padding=r // 2)
        flops = 2.0 * n * f * hw * hw * c * r * r
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e6)
    us = statistics.median(times)
    return us, flops / us * 1e-3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onyx_results", help="onyx_gpu_op_bench's output")
    ap.add_argument("--iterations", type=int, default=100)
    a = ap.parse_args()
    out = open(a.onyx_results).read()
    cases = re.findall(r"case (\S+) median_us ([\d.]+) gflops ([\d.]+)", out)
    if not cases:
        sys.exit("gpu_baselines: onyx_gpu_op_bench printed no case:\n" + out)
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}; "
          f"median of {a.iterations} synchronized calls, float32, TF32 off")
    print(f"{'case':34} {'onyx us':>10} {'GFLOP/s':>9} {'vendor us':>10} {'GFLOP/s':>9} {'onyx/vendor':>11}")
    for name, us, gflops in cases:
        base_us, base_gflops = torch_case(torch, name, a.iterations)
        vendor = "cuBLAS" if name.startswith("matmul") else "cuDNN"
        print(f"{name:34} {float(us):10.1f} {float(gflops):9.0f} {base_us:10.1f} {base_gflops:9.0f} "
              f"{float(us) / base_us:10.2f}x  ({vendor})")


if __name__ == "__main__":
    main()
