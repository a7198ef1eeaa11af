#!/usr/bin/env python3
"""Int8 and float32 latency of Onyx against ONNX Runtime, same model files, same run (issue 19).

    python bench/int8/int8_compare.py [--onyx build/bin/onyx] [--models DIR]
        [--model resnet18_qdq,mobilenet_v2 ...] [--provider cpu] [--batch 1,16] [--threads 1,2]
        [--iterations 50] [--warmup 5] [--rounds 2] [--budget 20] [--json FILE]

The models come from bench/int8/setup.sh (manifest.json in --models, by default
${ONYX_INT8_DIR:-~/.cache/onyx/int8-bench}/models); run this with that venv's python, or
any python with numpy and onnxruntime. --model takes names or prefixes ("resnet18" selects
resnet18_fp32, _qdq and _qop); the float32 counterpart of each int8 model is always timed
too, for the int8 speedup. For each model x batch x threads, Onyx (`onyx bench`, p50,
--fallback fail) and ORT (Python API, intra_op_num_threads, inter_op 1, sequential) time the
same input, alternating for --rounds rounds so that drift on a shared machine hits both; each
side's best p50 is kept. Iterations are cut so that one row (both sides, all rounds) takes
about --budget seconds (at least 3 iterations), since an unoptimized path can take seconds a
run; the n column says how many were timed. A model Onyx refuses is a "refused: <message>" row.
--provider onednn times the oneDNN provider instead, with the CPU provider behind it for the
nodes it declines (issue 18: ResNet-18 and MobileNetV2 float32 against ORT).

Columns: onyx ms, ort ms, onyx/ort (<= 1.0: Onyx is at least as fast; issue 19 asks <= 1.0
for every int8 model), and for int8 rows "x fp32": Onyx float32 p50 / Onyx int8 p50 for the
same batch and threads (issue 19 asks >= 1.5), with ORT's own ratio beside it for scale.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import onnxruntime as ort
except ImportError as e:  # a baseline, never a dependency of the runtime
    sys.exit(f"int8_compare: needs onnxruntime from PyPI (bench/int8/setup.sh makes a venv with it): {e}")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def first_error_line(text):
    """Onyx's error as one line: the line saying error, with the indented lines after it
    (the per-provider reasons), less the "onyx: error: cannot load model 'PATH':" preamble."""
    lines = text.strip().splitlines()
    for i, line in enumerate(lines):
        if "error" in line.lower():
            message = [line.strip()] + [l.strip() for l in lines[i + 1:] if l.startswith((" ", "\t"))]
            return re.sub(r"^onyx: error: (cannot load model '[^']*': )?", "", " ".join(message))
    lines = [l.strip() for l in lines if l.strip()]
    return lines[-1] if lines else "(no message)"


class Onyx:
    def __init__(self, binary, timeout, provider="cpu"):
        self.binary, self.timeout = binary, timeout
        # Another provider runs with the CPU provider behind it for what it declines.
        self.providers = (["--provider", "cpu", "--fallback", "fail"] if provider == "cpu" else
                          ["--provider", provider, "--provider", "cpu", "--fallback", "allow"])

    def bench(self, model, threads, input_name, npy, iterations, warmup):
        """p50 ms, or raises RuntimeError with Onyx's message."""
        cmd = [self.binary, "bench", model, *self.providers, "--threads", str(threads), "--input", f"{input_name}={npy}",
               "--iterations", str(iterations), "--warmup", str(warmup)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"timed out after {self.timeout} s")
        found = re.search(r"p50 ([0-9.]+)", done.stdout)
        if done.returncode != 0 or not found:
            raise RuntimeError(first_error_line(done.stderr + "\n" + done.stdout))
        return float(found.group(1))


class Ort:
    def __init__(self, model, threads):
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    def p50(self, feed, iterations, warmup):
        for _ in range(warmup):
            self.session.run(None, feed)
        times = []
        for _ in range(iterations):
            start = time.perf_counter()
            self.session.run(None, feed)
            times.append((time.perf_counter() - start) * 1e3)
        times.sort()
        return times[(len(times) - 1) // 2]


def select(manifest, wanted):
    names = [k for k in manifest if not k.startswith("_")]
    if wanted:
        chosen = []
        for w in wanted:
            match = [n for n in names if n == w or n.startswith(w + "_") or n.startswith(w)]
            if not match:
                sys.exit(f"int8_compare: no model {w!r} in the manifest ({', '.join(names)})")
            chosen += [n for n in match if n not in chosen]
    else:
        chosen = list(names)
    for n in list(chosen):  # each int8 model's float32 counterpart, for the speedup column
        fp32 = manifest[n]["fp32"]
        if fp32 not in chosen:
            chosen.append(fp32)
    # float32 first within a family, so the int8 rows can print their speedup
    order = {n: i for i, n in enumerate(names)}
    return sorted(chosen, key=lambda n: (order[manifest[n]["fp32"]], manifest[n]["precision"] != "float32",
                                         order[n]))


def fmt(v, spec):
    return format("-", ">" + spec.split(".")[0]) if v is None else format(v, spec)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onyx", default=os.path.join(here, "..", "..", "build", "bin", "onyx"))
    parser.add_argument("--models", default=common.default_models_dir())
    parser.add_argument("--model", default="", help="comma-separated names or prefixes (default: all)")
    parser.add_argument("--provider", default="cpu",
                        help="the Onyx provider timed (cpu; onednn runs with the CPU provider behind it)")
    parser.add_argument("--batch", default="1,16")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--iterations", type=int, default=50, help="timed runs per measurement, at most")
    parser.add_argument("--warmup", type=int, default=5, help="untimed runs per measurement, at most")
    parser.add_argument("--rounds", type=int, default=2, help="alternating Onyx/ORT rounds; best p50 kept")
    parser.add_argument("--budget", type=float, default=20.0,
                        help="seconds one row should take (both sides, all rounds): fewer iterations "
                             "where runs are slow")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before one onyx bench is killed")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()

    onyx = Onyx(os.path.abspath(args.onyx), args.timeout, args.provider)
    if not os.access(onyx.binary, os.X_OK):
        sys.exit(f"int8_compare: no {onyx.binary} (build Onyx first, or pass --onyx)")
    manifest = common.load_manifest(args.models)
    names = select(manifest, [m for m in args.model.split(",") if m])
    batches = [int(b) for b in args.batch.split(",")]
    threads_list = [int(t) for t in args.threads.split(",")]
    made = manifest.get("_made_with", {})
    print(f"onnxruntime {ort.__version__}; models from {args.models} (torch {made.get('torch')}, "
          f"onnxruntime {made.get('onnxruntime')} quantizer); onyx {onyx.binary}, provider {args.provider}")
    print(f"p50 ms, best of {args.rounds} alternating rounds, <= {args.iterations} timed runs "
          f"(~{args.budget:g} s) each; onyx/ort <= 1.0: Onyx as fast or faster; "
          f"x fp32: float32 p50 / int8 p50 (Onyx; ORT's in brackets)\n", flush=True)
    header = (f"{'model':<18} {'form':<8} {'batch':>5} {'thr':>3} {'n':>4} {'onyx ms':>10} {'ort ms':>9} "
              f"{'onyx/ort':>8} {'x fp32':>7} {'(ort)':>7}")
    print(header)
    print("-" * len(header), flush=True)

    rows, refused, onyx_ms, ort_ms = [], {}, {}, {}
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="onyx-int8-") as tmp:
        for name in names:
            entry = manifest[name]
            path = os.path.join(args.models, entry["file"])
            for batch in batches:
                x = common.make_inputs(entry, batch, common.SEED_BENCH)
                npy = os.path.join(tmp, f"{name}_{batch}.npy")
                np.save(npy, x)
                feed = {entry["input_name"]: x}
                for threads in threads_list:
                    row = {"model": name, "form": entry["form"], "batch": batch, "threads": threads}
                    session = Ort(path, threads)
                    # One probe run each: sizes the iteration count (and finds a refusal at once).
                    start = time.perf_counter()
                    session.session.run(None, feed)
                    ort_probe = time.perf_counter() - start
                    onyx_probe = None
                    if name not in refused:
                        try:
                            onyx_probe = onyx.bench(path, threads, entry["input_name"], npy, 1, 1) / 1e3
                        except RuntimeError as e:
                            refused[name] = str(e)
                    slowest = max(ort_probe, onyx_probe or 0.0)
                    per_side = args.budget / 2 / max(args.rounds, 1)
                    n = max(3, min(args.iterations, int(per_side / max(slowest, 1e-6))))
                    warmup = max(1, min(args.warmup, n // 5))
                    ours, theirs = [], []
                    for _ in range(args.rounds):
                        if name not in refused:
                            try:
                                ours.append(onyx.bench(path, threads, entry["input_name"], npy, n, warmup))
                            except RuntimeError as e:
                                refused[name] = str(e)
                        theirs.append(session.p50(feed, n, warmup))
                    a = min(ours) if ours and name not in refused else None
                    b = min(theirs)
                    onyx_ms[name, batch, threads], ort_ms[name, batch, threads] = a, b
                    fp32 = entry["fp32"]
                    speedup = ort_speedup = None
                    if entry["precision"] != "float32":
                        base = onyx_ms.get((fp32, batch, threads))
                        if a and base:
                            speedup = base / a
                        if ort_ms.get((fp32, batch, threads)):
                            ort_speedup = ort_ms[fp32, batch, threads] / b
                    row.update(n=n, onyx_ms=a, ort_ms=b, onyx_over_ort=(a / b if a else None),
                               int8_speedup=speedup, ort_int8_speedup=ort_speedup,
                               refused=refused.get(name))
                    rows.append(row)
                    line = (f"{name:<18} {entry['form']:<8} {batch:>5} {threads:>3} {n:>4} "
                            f"{fmt(a, '10.2f')} {b:>9.2f} {fmt(row['onyx_over_ort'], '8.2f')} "
                            f"{fmt(speedup, '6.2f')}{'x' if speedup else ' '} "
                            f"{'(' + format(ort_speedup, '.2f') + 'x)' if ort_speedup else '':>7}")
                    if name in refused:
                        line = (f"{name:<18} {entry['form']:<8} {batch:>5} {threads:>3} {n:>4} "
                                f"{'refused':>10} {b:>9.2f}  refused: {refused[name]}")
                    print(line, flush=True)
    print(f"\n{len(rows)} rows in {time.time() - started:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"onnxruntime": ort.__version__, "made_with": made, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
