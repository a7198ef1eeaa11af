#!/usr/bin/env python3
"""Issue 12's speed benchmark: Onyx against ONNX Runtime, ORT Training and PyTorch on the CPU, in one run.

    scripts/bench.sh [OPTIONS]                  (bench/speed/setup.sh, then this script)
    python3 bench/speed/compare.py [--build build] [--quick] [--only inference|training] ...

Inference: the test MLP (x [batch, 784]) and CNN (x [batch, 1, 28, 28]) that onyx_make_test_models
writes, and the transformer encoder block of bench/transformer_export.py as exporters write it
(x [batch, 16, 256]), at batch 1, 16 and 64 with 1 and 2 intra-op threads. Onyx runs
`onyx bench MODEL --provider cpu --fallback fail --threads T --input x=FILE.npy`, ONNX Runtime
(PyPI) its Python API (CPUExecutionProvider, intra_op_num_threads T, inter_op_num_threads 1), on the
same model file and the same input. Each measurement is the p50 (nearest rank) of N timed runs after
a warm-up, N sized to about --budget seconds. Both runtimes at every thread count alternate, --rounds
rounds (default 3), so that drift on a shared machine hits all of them (a VM's single-core speed can
swing 1.7x from one minute to the next); the best p50 of each is kept. Onyx/ORT < 1 means Onyx is
faster (issue 12's goal: <= 0.8). The thread table gives each runtime's throughput with 2 threads
over 1 thread (goal: >= 1.6 at batch 64). With the build's onyx_gemm_bench, %pk columns give each
runtime's MatMul/Gemm/Conv GFLOP/s as a percentage of the measured FMA peak, and `need` the
percentage 0.8x ORT's latency takes. --providers cpu,onednn times each Onyx provider in turn
(one other than cpu with `--provider P --provider cpu --fallback allow`: what it declines runs on the
CPU provider), each against ORT and against Onyx's CPU provider (issue 18's goals: oneDNN <= the CPU
provider, and <= 0.8x ORT on the CNN at batch 64).

Training: one step (forward, loss, backward, AdamW update) of the MLP and the CNN (cross-entropy
against int64 classes) and of the transformer block (MSE against float targets of its output's shape) at
batch 16 and 64, 1 and 2 threads, in samples/s = batch / median step time (steps after a warm-up,
for about --train-budget seconds; best of the rounds, runtimes and thread counts interleaved within
each round):
  Onyx          onyx.training.api (CheckpointState, Module, Optimizer), artifacts made by
                onyx.training.artifacts.generate_artifacts
  ORT Training  onnxruntime-training 1.19.2, onnxruntime.training.api, artifacts made by its
                generate_artifacts
  PyTorch       the same layers as a torch.nn.Module, torch.optim.AdamW, torch.set_num_threads(T)
Both artifact sets come from the same forward model file through the same call (that loss, AdamW,
every float initializer of more than one element trained except BatchNorm's running mean and
variance; the one-element ones are the exporter's constants): Onyx cannot read
ORT's artifacts (ORT's checkpoint format and com.microsoft gradient ops), it writes its own under
ORT's names. A step is module(x, labels); optimizer.step(); module.lazy_reset_grad(), the same
code for both (only the package differs). PyTorch's BatchNorm layers run in eval mode (running
statistics, trainable affine), as the ONNX model's BatchNormalization does. Ratios > 1 mean Onyx
is faster (goals, for the MLP and the CNN: >= 1.4 against PyTorch, >= 1.0 against ORT Training). Onyx's training rows time the
onyx Python package of the training venv, built apart from --build (a warning says when it is
older than --build's bin/onyx).

Every measurement runs in a fresh process of the Python that has its runtime: bench/speed/setup.sh
writes which into ${ONYX_SPEED_DIR:-${XDG_CACHE_HOME:-~/.cache}/onyx/speed-bench}/env.json. This
script itself (the orchestrator) needs only the standard library; the same file, run as
`compare.py --worker KIND JSON`, is the worker.
"""
import argparse
import importlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))

# name -> (input name, dims of one sample)
MODELS = {"mlp": ("x", [784]), "cnn": ("x", [1, 28, 28]), "transformer": ("x", [16, 256])}
TRAINABLE = ("mlp", "cnn", "transformer")
# The loss each model trains with: class scores against int64 labels, or the encoder block's output
# against float targets of its shape.
LOSS = {"mlp": "CrossEntropyLoss", "cnn": "CrossEntropyLoss", "transformer": "MSELoss"}
CLASSES = 10
SEED = 12
TRAIN_RUNTIMES = ("onyx", "ort", "torch")
RUNTIME_NAMES = {"onyx": "Onyx", "ort": "ORT Training", "torch": "PyTorch"}
GOAL_MODELS = ("mlp", "cnn")  # issue 12's training goals; the transformer block's row is measured, not judged


# ----------------------------------------------------------------------------------------------
# Workers: run in a benchmark venv's Python, one measurement each, print one RESULT line.
# ----------------------------------------------------------------------------------------------

def nearest_rank_p50(samples):
    """The p50 as `onyx bench` computes it: the smallest sample with at least half <= it."""
    ordered = sorted(samples)
    return ordered[max(1, math.ceil(0.5 * len(ordered))) - 1]


def worker_versions(args):
    """The version (and location) of each package this Python can import."""
    found = {}
    for name in args["packages"]:
        try:
            module = importlib.import_module(name)
            version = getattr(module, "__version__", None) or getattr(sys.modules[name.split(".")[0]], "__version__", "?")
            found[name] = f"{version} ({os.path.dirname(module.__file__)})"
        except ImportError as e:
            found[name] = f"missing ({e})"
    return found


def worker_onyx_built(args):
    """When the onyx package's extension module was written (seconds since the epoch)."""
    from onyx import _onyx
    return {"mtime": os.path.getmtime(_onyx.__file__)}


def worker_make_inputs(args):
    """Writes the float32 inputs (.npy, uniform in [-1, 1), one seed per shape)."""
    import numpy as np
    for path, dims in args["inputs"]:
        rng = np.random.default_rng([SEED] + list(dims))
        np.save(path, rng.uniform(-1, 1, dims).astype(np.float32))
    return {}


def worker_ort_infer(args):
    """ONNX Runtime's p50 ms on one model and input (CPUExecutionProvider)."""
    import numpy as np
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = args["threads"]
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(args["model"], options, providers=["CPUExecutionProvider"])
    feed = {args["input_name"]: np.load(args["input"])}
    for _ in range(args["warmup"]):
        session.run(None, feed)
    times = []
    for _ in range(args["iterations"]):
        start = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - start) * 1e3)
    return {"p50_ms": nearest_rank_p50(times)}


def quiet(package):
    """ONNX Runtime's log down to errors."""
    if package == "onnxruntime":
        importlib.import_module(package).set_default_logger_severity(3)


def frozen_names(model):
    """Initializers that do not train: BatchNormalization's running mean and variance."""
    frozen = set()
    for node in model.graph.node:
        if node.op_type == "BatchNormalization":
            frozen.update(node.input[3:5])
    return sorted(frozen)


def trained_names(model, frozen):
    """Initializers that train: the float ones of more than one element (weights, biases, norms'
    scales), not frozen. The one-element ones are an exporter's constants (LayerNorm's epsilon and
    exponent, GELU's sqrt(2), attention's scale); integer ones are shapes."""
    from onnx import TensorProto
    floats = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)
    return [t.name for t in model.graph.initializer
            if t.data_type in floats and math.prod(t.dims) > 1 and t.name not in frozen]


def worker_artifacts(args):
    """Training artifacts of a forward model with `package`.training.artifacts (onyx or onnxruntime)."""
    import onnx
    artifacts = importlib.import_module(args["package"] + ".training.artifacts")
    model = onnx.load(args["model"])
    frozen = frozen_names(model)
    os.makedirs(args["out"], exist_ok=True)  # ORT's generator does not make it
    artifacts.generate_artifacts(
        model, requires_grad=trained_names(model, frozen), frozen_params=frozen,
        loss=getattr(artifacts.LossType, LOSS[args["name"]]),
        optimizer=artifacts.OptimType.AdamW, artifact_directory=args["out"])
    return {}


def training_batches(model, batch, count=4):
    """`count` fixed batches of (x float32 [batch, ...], labels): int64 classes [batch] for a
    cross-entropy loss, float32 targets of the output's shape (the input's) for MSE."""
    import numpy as np
    rng = np.random.default_rng([SEED, batch])
    dims = MODELS[model][1]

    def labels():
        if LOSS[model] == "MSELoss":
            return rng.standard_normal([batch] + dims).astype(np.float32)
        return rng.integers(0, CLASSES, batch).astype(np.int64)
    return [(rng.standard_normal([batch] + dims).astype(np.float32), labels()) for _ in range(count)]


def median_step_ms(step, warmup, budget_s, min_steps):
    """Median wall time of step(k) over at least min_steps steps and budget_s seconds, after warmup."""
    for k in range(warmup):
        step(k)
    times, start = [], time.perf_counter()
    while len(times) < min_steps or time.perf_counter() - start < budget_s:
        begin = time.perf_counter()
        step(len(times))
        times.append((time.perf_counter() - begin) * 1e3)
    return statistics.median(times), len(times)


def ort_api_step(args, batches):
    """A step function over ORT Training's on-device API, from `package` (onnxruntime or onyx)."""
    package = importlib.import_module(args["package"])
    quiet(args["package"])
    api = importlib.import_module(args["package"] + ".training.api")
    options = package.SessionOptions()
    options.intra_op_num_threads = args["threads"]
    options.inter_op_num_threads = 1
    folder = args["artifacts"]
    state = api.CheckpointState.load_checkpoint(os.path.join(folder, "checkpoint"))
    module = api.Module(os.path.join(folder, "training_model.onnx"), state,
                        os.path.join(folder, "eval_model.onnx"), session_options=options)
    optimizer = api.Optimizer(os.path.join(folder, "optimizer_model.onnx"), module)
    module.train()

    def step(k):
        x, labels = batches[k % len(batches)]
        module(x, labels)
        optimizer.step()
        module.lazy_reset_grad()
    return step


def torch_encoder_block(dim=256, heads=4):
    """bench/transformer_export.py's block as PyTorch users write it: pre-norm, nn.LayerNorm,
    scaled_dot_product_attention, exact (erf) GELU, no dropout."""
    import torch
    from torch import nn

    class EncoderBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
            self.ff1, self.ff2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            batch, seq, _ = x.shape
            a = self.ln1(x)
            q, k, v = (f(a).view(batch, seq, heads, dim // heads).transpose(1, 2) for f in (self.q, self.k, self.v))
            context = nn.functional.scaled_dot_product_attention(q, k, v)
            h = x + self.o(context.transpose(1, 2).reshape(batch, seq, dim))
            return h + self.ff2(nn.functional.gelu(self.ff1(self.ln2(h))))
    return EncoderBlock()


def torch_network(model):
    """The test model's layers (tests/models/mlp_cnn.cpp, bench/transformer_export.py) as a torch.nn.Module."""
    from torch import nn
    if model == "transformer":
        return torch_encoder_block()
    if model == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(16 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10))


def torch_step(args, batches):
    """A step function: forward, cross-entropy, backward and torch.optim.AdamW."""
    import torch
    torch.set_num_threads(args["threads"])
    torch.set_num_interop_threads(1)
    torch.manual_seed(SEED)
    net = torch_network(args["model"]).train()
    for layer in net.modules():  # running statistics, as the ONNX model's BatchNormalization
        if isinstance(layer, torch.nn.BatchNorm2d):
            layer.eval()
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    loss_of = getattr(torch.nn, LOSS[args["model"]])()
    tensors = [(torch.from_numpy(x), torch.from_numpy(labels)) for x, labels in batches]

    def step(k):
        x, labels = tensors[k % len(tensors)]
        optimizer.zero_grad(set_to_none=True)
        loss_of(net(x), labels).backward()
        optimizer.step()
    return step


def worker_train(args):
    """Median step time (ms) of one runtime's training step on one model, batch and thread count."""
    batches = training_batches(args["model"], args["batch"])
    step = torch_step(args, batches) if args["runtime"] == "torch" else ort_api_step(args, batches)
    step_ms, steps = median_step_ms(step, args["warmup"], args["budget_s"], args["min_steps"])
    return {"step_ms": step_ms, "steps": steps}


def worker_flops(args):
    """Multiply-add FLOPs (2 per multiply-add) of each model's MatMul, Gemm and Conv nodes at each input
    shape, from ONNX shape inference: {"path|dims": flops}. The rest (elementwise, pooling,
    normalization) is left out: a lower bound on the work."""
    import onnx
    from onnx import shape_inference
    out = {}
    for path, input_name, dims in args["cases"]:
        model = onnx.load(path)
        for value in model.graph.input:
            if value.name == input_name:
                shape = value.type.tensor_type.shape
                for dim, size in zip(shape.dim, dims):
                    dim.Clear()
                    dim.dim_value = size
        model = shape_inference.infer_shapes(model)
        known = {}
        for value in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
            known[value.name] = [d.dim_value for d in value.type.tensor_type.shape.dim]
        for tensor in model.graph.initializer:
            known[tensor.name] = list(tensor.dims)
        flops = 0
        for node in model.graph.node:
            a = known.get(node.input[0]) if node.input else None
            y = known.get(node.output[0])
            if not a or not y or 0 in a + y:
                continue
            if node.op_type == "MatMul":
                flops += 2 * math.prod(y) * a[-1]
            elif node.op_type == "Gemm":
                trans_a = any(at.name == "transA" and at.i for at in node.attribute)
                flops += 2 * math.prod(y) * (a[0] if trans_a else a[-1])
            elif node.op_type == "Conv":
                w = known.get(node.input[1])
                if w:
                    flops += 2 * math.prod(y) * math.prod(w[1:])
        out[f"{path}|{dims}"] = flops
    return out


WORKERS = {"versions": worker_versions, "onyx_built": worker_onyx_built, "make_inputs": worker_make_inputs, "ort_infer": worker_ort_infer,
           "artifacts": worker_artifacts, "train": worker_train, "flops": worker_flops}


def worker_main(kind, payload):
    result = WORKERS[kind](json.loads(payload))
    print("RESULT " + json.dumps(result), flush=True)


# ----------------------------------------------------------------------------------------------
# Orchestrator: standard library only.
# ----------------------------------------------------------------------------------------------

class MeasurementError(RuntimeError):
    pass


def speed_root():
    """${ONYX_SPEED_DIR:-${XDG_CACHE_HOME:-~/.cache}/onyx/speed-bench}, as bench/speed/setup.sh."""
    if os.environ.get("ONYX_SPEED_DIR"):
        return os.environ["ONYX_SPEED_DIR"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "onyx", "speed-bench")


def needed_pythons(args):
    """The venvs the chosen parts use."""
    keys = [] if args.only == "training" else ["infer_python"]
    if args.only != "inference":
        keys += ["torch_python"] if "torch" in args.train_runtimes else []
        keys += ["train_python"] if {"onyx", "ort"} & set(args.train_runtimes) else []
    return keys


def load_pythons(args):
    """The Python of each venv the run needs: --*-python options, else setup.sh's env.json."""
    path = os.path.join(speed_root(), "env.json")
    recorded = {}
    if os.path.exists(path):
        with open(path) as f:
            recorded = json.load(f)
    pythons = {}
    for key in needed_pythons(args):
        pythons[key] = getattr(args, key) or recorded.get(key)
        if not pythons[key]:
            sys.exit(f"compare: no {key}: run bench/speed/setup.sh first (it writes {path}), "
                     f"or pass --{key.replace('_', '-')}")
        if not os.access(pythons[key], os.X_OK):
            sys.exit(f"compare: {key} {pythons[key]} is not there any more: rerun bench/speed/setup.sh")
    return pythons


def run_worker(python, kind, payload, timeout=900):
    """Runs `compare.py --worker KIND` under `python`; its RESULT, or MeasurementError with stderr."""
    command = [python, os.path.abspath(__file__), "--worker", kind, json.dumps(payload)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    results = [line[7:] for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not results:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise MeasurementError(f"{kind} worker ({python}) failed, exit {done.returncode}:\n{tail}")
    return json.loads(results[-1])


def provider_args(provider):
    """`onyx bench` options for one Onyx provider: the CPU provider alone, or another with the CPU one behind it."""
    if provider == "cpu":
        return ["--provider", "cpu", "--fallback", "fail"]
    return ["--provider", provider, "--provider", "cpu", "--fallback", "allow"]


def run_onyx_bench(onyx, model, input_name, input_file, threads, iterations, warmup, provider="cpu"):
    """`onyx bench`'s p50 ms."""
    command = [onyx, "bench", model, *provider_args(provider), "--threads", str(threads),
               "--input", f"{input_name}={input_file}", "--iterations", str(iterations), "--warmup", str(warmup)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    for line in done.stdout.splitlines():
        if line.startswith("latency ms: p50 "):
            return float(line.split()[3])
    raise MeasurementError(f"onyx bench failed, exit {done.returncode}: {' '.join(command)}\n"
                           f"{(done.stderr or done.stdout).strip()}")


def parse_list(text):
    return [int(v) for v in text.split(",") if v]


def prepare_models(build, onnx_python, folder, wanted):
    """Writes mlp.onnx, cnn.onnx (onyx_make_test_models) and transformer.onnx into folder."""
    maker = os.path.join(build, "bin", "onyx_make_test_models")
    if not os.access(maker, os.X_OK):
        sys.exit(f"compare: no {maker}: build first (scripts/build.sh), or pass --build DIR")
    subprocess.run([maker, folder], check=True, capture_output=True)
    if "transformer" in wanted:
        done = subprocess.run([onnx_python, os.path.join(REPO, "bench", "transformer_export.py"),
                               os.path.join(folder, "transformer.onnx")], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"compare: bench/transformer_export.py failed:\n{done.stderr.strip()}")
    return {name: os.path.join(folder, name + ".onnx") for name in wanted}


def failure(errors, where, error):
    """Notes a failed measurement (printed now and counted for the exit status)."""
    print(f"  {where}: {error}", file=sys.stderr)
    errors.append(where)


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


# --- inference ---------------------------------------------------------------------------------

def iterations_for(onyx, model, input_name, input_file, threads, budget_s):
    """Timed runs that take about budget_s, from a short `onyx bench` probe (10 to 20000)."""
    p50 = run_onyx_bench(onyx, model, input_name, input_file, threads, 5, 2)
    return max(10, min(20000, int(budget_s * 1e3 / max(p50, 1e-3))))


def measured_peak(build):
    """One core's fp32 FMA peak in GFLOP/s from `onyx_gemm_bench --peak`, or None (not built)."""
    gemm_bench = os.path.join(build, "bin", "onyx_gemm_bench")
    if not os.access(gemm_bench, os.X_OK):
        return None
    done = subprocess.run([gemm_bench, "--peak"], capture_output=True, text=True, timeout=120)
    for line in done.stdout.splitlines():
        if "peak:" in line:
            return float(line.split("peak:")[1].split()[0])
    return None


def percent_of_peak(flops, ms, peak, threads):
    """The GFLOP/s of `flops` in `ms`, as a percentage of `threads` cores' peak."""
    if not flops or not ms or not peak:
        return None
    return 100 * flops / (ms * 1e6) / (peak * threads)


def measure_inference(group, onyx, pythons, args):
    """Best p50 (ms) of each Onyx provider and of ORT at each thread count, over alternating rounds:
    {threads: {"cpu": ms, ..., "ort": ms}}, and the timed runs per measurement {threads: n}. Every
    thread count runs in every round, so the thread table compares measurements of the same minutes:
    this machine's single-core speed drifts by up to 1.7x from one minute to the next."""
    name, batch, thread_counts, model, input_file = group
    input_name = MODELS[name][0]
    runs = {t: iterations_for(onyx, model, input_name, input_file, t, args.budget) for t in thread_counts}
    order = [(t, r) for t in thread_counts for r in args.providers + ["ort"]]
    best = {t: {} for t in thread_counts}
    for r in range(args.rounds):
        for threads, runtime in order if r % 2 == 0 else order[::-1]:
            n = runs[threads]
            warmup = max(3, n // 10)
            if runtime != "ort":
                ms = run_onyx_bench(onyx, model, input_name, input_file, threads, n, warmup, runtime)
            else:
                ms = run_worker(pythons["infer_python"], "ort_infer", {
                    "model": model, "input_name": input_name, "input": input_file, "threads": threads,
                    "iterations": n, "warmup": warmup})["p50_ms"]
            best[threads][runtime] = min(ms, best[threads].get(runtime, ms))
    return best, runs


def inference_part(args, onyx, pythons, models, folder, errors):
    """Times every model x batch x threads case; prints the latency and the thread tables."""
    groups = []
    for name in args.models:
        for batch in args.batch:
            dims = [batch] + MODELS[name][1]
            input_file = os.path.join(folder, f"{name}_b{batch}.npy")
            groups.append((name, batch, args.threads, models[name], input_file, dims))
    run_worker(pythons["infer_python"], "make_inputs",
               {"inputs": sorted({(g[4], tuple(g[5])) for g in groups})})
    flops = run_worker(pythons["infer_python"], "flops",
                       {"cases": sorted({(g[3], MODELS[g[0]][0], tuple(g[5])) for g in groups})})
    peak = measured_peak(args.build)
    print(f"\nInference: p50 latency in ms, best of {args.rounds} alternating round(s), "
          f"each about {args.budget:g} s of runs")
    if peak:
        print(f"%pk: the MatMul/Gemm/Conv FLOPs per run over the latency, as a percentage of the measured "
              f"FMA peak ({peak:.1f} GFLOP/s per core) times the threads; 'need': the %pk that 0.8x ORT "
              f"takes (over 100: beyond this machine)")
    others = [p for p in args.providers if p != "cpu"]
    heading = "".join(f" {p + ' ms':>10} {p + '/ORT':>11} {'<=0.8':>6}" for p in args.providers)
    heading += "".join(f" {p + '/cpu':>11}" for p in others if "cpu" in args.providers)
    heading += "".join(f" {p + ' %pk':>9}" for p in args.providers) + f" {'ORT %pk':>8} {'need':>5}" if peak else ""
    print(f"{'model':<12} {'batch':>5} {'thr':>3} {'runs':>6} {'ORT ms':>9}" + heading, flush=True)
    results = {}
    for group in groups:
        name, batch, thread_counts = group[:3]
        try:
            measured, runs = measure_inference(group[:5], onyx, pythons, args)
        except (MeasurementError, subprocess.TimeoutExpired) as e:
            failure(errors, f"inference {name} batch {batch}", e)
            continue
        for threads in thread_counts:
            best = measured[threads]
            results[(name, batch, threads)] = best
            row = ""
            for p in args.providers:
                r = ratio(best[p], best["ort"])
                row += f" {best[p]:>10.3f} {r:>11.2f} {'yes' if r <= 0.8 else 'no':>6}"
            row += "".join(f" {ratio(best[p], best['cpu']):>11.2f}" for p in others if "cpu" in args.providers)
            if peak:
                work = flops.get(f"{group[3]}|{list(group[5])}")
                shares = {r: percent_of_peak(work, best[r], peak, threads) for r in args.providers + ["ort"]}
                need = None if shares["ort"] is None else shares["ort"] / 0.8
                row += "".join(f" {fmt(shares[p], '.0f'):>9}" for p in args.providers)
                row += f" {fmt(shares['ort'], '.0f'):>8} {fmt(need, '.0f'):>5}"
            print(f"{name:<12} {batch:>5} {threads:>3} {runs[threads]:>6} {best['ort']:>9.3f}" + row, flush=True)
    names = {p: "Onyx " + p for p in args.providers}
    names["ort"] = "ORT"
    print_thread_table(results, args, tuple(args.providers) + ("ort",), names, latency=True)
    return results


def print_thread_table(results, args, runtimes, names, latency):
    """Throughput with each further thread count over the first one, per model and batch."""
    if len(args.threads) < 2:
        return
    base = args.threads[0]
    for more in args.threads[1:]:
        print(f"\n{more} threads over {base}: throughput ratio (goal: >= 1.6 at batch 64)")
        print(f"{'model':<12} {'batch':>5} " + " ".join(f"{names[r]:>12}" for r in runtimes))
        for name in args.models if latency else args.train_models:
            for batch in args.batch if latency else args.train_batch:
                a, b = results.get((name, batch, base)), results.get((name, batch, more))
                cells = []
                for r in runtimes:
                    x, y = (a or {}).get(r), (b or {}).get(r)
                    cells.append(ratio(x, y) if latency else ratio(y, x))
                print(f"{name:<12} {batch:>5} " + " ".join(f"{fmt(c, '.2f'):>12}" for c in cells))


# --- training ----------------------------------------------------------------------------------

def make_artifacts(pythons, models, folder, wanted, runtimes):
    """ORT Training's and Onyx's artifacts of each model: {(runtime, model): folder}."""
    made = {}
    for runtime, package in (("ort", "onnxruntime"), ("onyx", "onyx")):
        for name in wanted if runtime in runtimes else []:
            out = os.path.join(folder, f"artifacts_{runtime}_{name}")
            run_worker(pythons["train_python"], "artifacts",
                       {"package": package, "model": models[name], "name": name, "out": out})
            made[(runtime, name)] = out
    return made


def train_payload(runtime, name, batch, threads, artifacts, args):
    payload = {"runtime": runtime, "model": name, "batch": batch, "threads": threads,
               "warmup": args.train_warmup, "budget_s": args.train_budget, "min_steps": args.min_steps}
    if runtime != "torch":
        payload.update(package="onyx" if runtime == "onyx" else "onnxruntime", artifacts=artifacts[(runtime, name)])
    return payload


def measure_training(case, pythons, artifacts, args, errors):
    """Best samples/s of each runtime at each thread count, interleaved (every thread count and
    runtime in every round, the order rotating): {threads: {"onyx": s/s, "ort": s/s, "torch": s/s}}."""
    name, batch = case
    order = [(t, r) for t in args.threads for r in args.train_runtimes]
    samples = {t: {r: [] for r in TRAIN_RUNTIMES} for t in args.threads}
    for r in range(args.rounds):
        for threads, runtime in order[r % len(order):] + order[:r % len(order)]:
            python = pythons["torch_python" if runtime == "torch" else "train_python"]
            try:
                step_ms = run_worker(python, "train", train_payload(runtime, name, batch, threads, artifacts, args))["step_ms"]
                samples[threads][runtime].append(batch / step_ms * 1e3)
            except (MeasurementError, subprocess.TimeoutExpired) as e:
                failure(errors, f"training {RUNTIME_NAMES[runtime]} {name} batch {batch} threads {threads}", e)
    return {t: {r: (max(v) if v else None) for r, v in per.items()} for t, per in samples.items()}


def training_part(args, pythons, models, folder, errors):
    """Times a training step of each runtime; prints samples/s and the ratios."""
    try:
        artifacts = make_artifacts(pythons, models, folder, args.train_models, args.train_runtimes)
    except MeasurementError as e:
        failure(errors, "training artifacts", e)
        return {}
    print(f"\nTraining step (forward, loss, backward, AdamW): samples/s, best of {args.rounds} "
          f"interleaved round(s), each the median step over about {args.train_budget:g} s")
    print(f"{'model':<12} {'batch':>5} {'thr':>3} {'Onyx':>9} {'ORT-T':>9} {'PyTorch':>9} "
          f"{'Onyx/PyTorch':>12} {'Onyx/ORT-T':>10} {'goals':>6}", flush=True)
    results = {}
    for name in args.train_models:
        for batch in args.train_batch:
            measured = measure_training((name, batch), pythons, artifacts, args, errors)
            for threads in args.threads:
                best = measured[threads]
                results[(name, batch, threads)] = best
                vs_torch, vs_ort = ratio(best["onyx"], best["torch"]), ratio(best["onyx"], best["ort"])
                met = (None if vs_torch is None or vs_ort is None or name not in GOAL_MODELS
                       else vs_torch >= 1.4 and vs_ort >= 1.0)
                print(f"{name:<12} {batch:>5} {threads:>3} {fmt(best['onyx'], '.0f'):>9} {fmt(best['ort'], '.0f'):>9} "
                      f"{fmt(best['torch'], '.0f'):>9} {fmt(vs_torch, '.2f'):>12} {fmt(vs_ort, '.2f'):>10} "
                      f"{'-' if met is None else 'yes' if met else 'no':>6}", flush=True)
    print_thread_table(results, args, TRAIN_RUNTIMES, {"onyx": "Onyx", "ort": "ORT-T", "torch": "PyTorch"},
                       latency=False)
    return results


# --- main --------------------------------------------------------------------------------------

def print_versions(pythons, onyx, args):
    """What is being compared: each venv's packages and the onyx binary."""
    print(f"onyx binary: {onyx}")
    wanted = {"infer_python": ["onnxruntime", "numpy"], "torch_python": ["torch", "numpy"],
              "train_python": (["onyx"] if "onyx" in args.train_runtimes else []) +
              (["onnxruntime.training"] if "ort" in args.train_runtimes else []) + ["onnx", "numpy"]}
    for key in needed_pythons(args):
        packages = wanted[key]
        found = run_worker(pythons[key], "versions", {"packages": packages})
        print(f"{key} {pythons[key]}: " + "; ".join(f"{k} {v}" for k, v in found.items()))
        missing = [k for k, v in found.items() if v.startswith("missing")]
        if missing:
            sys.exit(f"compare: {pythons[key]} lacks {', '.join(missing)}: rerun bench/speed/setup.sh")
    if "train_python" in pythons and "onyx" in args.train_runtimes:
        warn_if_package_older(pythons["train_python"], onyx)


def warn_if_package_older(python, onyx):
    """The training rows time the onyx Python package, built apart from the binary: say when it is older."""
    built = run_worker(python, "onyx_built", {})["mtime"]
    if built < os.path.getmtime(onyx) - 60:
        venv = os.path.dirname(os.path.dirname(python))
        print(f"warning: the onyx package in {venv} was built {time.ctime(built)}, before {onyx} "
              f"({time.ctime(os.path.getmtime(onyx))}): the training rows time the older code. Remake it: "
              f"scripts/python-venv.sh {venv}")


def parse_args():
    parser = argparse.ArgumentParser(description="Onyx against ONNX Runtime, ORT Training and PyTorch (issue 12)")
    parser.add_argument("--build", default=os.path.join(REPO, "build"), help="build folder with bin/onyx")
    parser.add_argument("--only", choices=("inference", "training"), help="one part only")
    parser.add_argument("--models", default="mlp,cnn,transformer", help="inference models")
    parser.add_argument("--batch", default="1,16,64", help="inference batch sizes")
    parser.add_argument("--threads", default="1,2", help="intra-op thread counts (inference and training)")
    parser.add_argument("--providers", default="cpu",
                        help="Onyx providers timed for inference, e.g. cpu,onednn (others fall back to cpu)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the best of each runtime counts")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timed inference runs per measurement")
    parser.add_argument("--train-models", default="mlp,cnn,transformer")
    parser.add_argument("--train-batch", default="16,64")
    parser.add_argument("--train-runtimes", default=",".join(TRAIN_RUNTIMES), help="of onyx,ort,torch")
    parser.add_argument("--train-budget", type=float, default=2.0, help="seconds of timed steps per measurement")
    parser.add_argument("--train-warmup", type=int, default=10, help="untimed steps first")
    parser.add_argument("--min-steps", type=int, default=20, help="timed steps at least")
    parser.add_argument("--quick", action="store_true",
                        help="check that it works: 1 round, 0.1 s budgets, 3 warm-up and 5 timed steps")
    for key in ("infer-python", "torch-python", "train-python"):
        parser.add_argument("--" + key, help="Python for this part (default: setup.sh's env.json)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.budget, args.train_budget, args.train_warmup, args.min_steps = 1, 0.1, 0.1, 3, 5
    args.models = [m for m in args.models.split(",") if m]
    args.providers = [p for p in args.providers.split(",") if p]
    if not args.providers or "ort" in args.providers:
        parser.error("--providers: one or more Onyx provider names")
    args.train_runtimes = [r for r in args.train_runtimes.split(",") if r]
    if not args.train_runtimes or set(args.train_runtimes) - set(TRAIN_RUNTIMES):
        parser.error(f"--train-runtimes: a list of {', '.join(TRAIN_RUNTIMES)}")
    args.train_models = [m for m in args.train_models.split(",") if m]
    for m in args.models + args.train_models:
        if m not in MODELS or (m in args.train_models and m not in TRAINABLE):
            parser.error(f"unknown model {m} (inference: {', '.join(MODELS)}; training: {', '.join(TRAINABLE)})")
    args.batch, args.threads, args.train_batch = parse_list(args.batch), parse_list(args.threads), parse_list(args.train_batch)
    return args


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        return worker_main(sys.argv[2], sys.argv[3])
    args = parse_args()
    onyx = os.path.join(args.build, "bin", "onyx")
    if not os.access(onyx, os.X_OK):
        sys.exit(f"compare: no {onyx}: build first (scripts/build.sh), or pass --build DIR")
    pythons = load_pythons(args)
    print_versions(pythons, onyx, args)
    errors = []
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="onyx-speed-") as folder:
        wanted = sorted(set(([] if args.only == "training" else args.models) +
                            ([] if args.only == "inference" else args.train_models)))
        onnx_python = next(pythons[k] for k in ("infer_python", "train_python", "torch_python") if k in pythons)
        models = prepare_models(args.build, onnx_python, folder, wanted)
        if args.only != "training":
            inference_part(args, onyx, pythons, models, folder, errors)
        if args.only != "inference":
            training_part(args, pythons, models, folder, errors)
    print(f"\n{time.time() - start:.0f} s; " + (f"{len(errors)} measurement(s) failed" if errors else "all measured"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
