#!/usr/bin/env python3
"""Writes the int8 benchmark's models (issue 19): run by bench/int8/setup.sh in its venv.

    python bench/int8/make_models.py [--out DIR] [--per-channel] [--force]
                                     [--d-model 512] [--heads 8] [--ffn 2048] [--seq 64]

For ResNet-18 and MobileNetV2 (torchvision, 224x224, 1000 classes):
  NAME_fp32.onnx  torch.onnx.export (TorchScript exporter, opset 17, dynamic batch)
  NAME_qdq.onnx   onnxruntime.quantization.quantize_static, QuantFormat.QDQ
  NAME_qop.onnx   the same in QuantFormat.QOperator (QLinearConv, com.microsoft QLinearAdd, ...)
both static forms with uint8 activations, int8 weights, MinMax calibration on 32 random pictures,
and ORT's default per_channel=False (per-tensor weight scales; --per-channel writes
NAME_qdq_pc.onnx and NAME_qop_pc.onnx as well, with per-channel weight scales).
For a transformer encoder block (torch.nn.TransformerEncoderLayer, batch-first [batch, seq, d_model]):
  transformer_fp32.onnx and transformer_dyn.onnx (quantize_dynamic, int8 weights:
  DynamicQuantizeLinear + MatMulInteger).
The quantizer reads each float model after ORT's recommended quant_pre_process (shape
inference and ORT's basic graph optimizations).

Weights: torchvision's pretrained weights cannot be downloaded here, so the weights are random
with a fixed seed (common.SEED_WEIGHTS). Latency does not depend on their values; for the
top-1 agreement check to mean something the networks must not be degenerate: each BatchNorm
gets a random affine (gamma in [0.5, 1.5), beta ~ N(0, 0.2)) and its running statistics are
measured on random pictures, so activations stay in range; the BatchNorm closing each
residual branch has its gamma scaled by RESIDUAL_GAIN (0.2), so that a rounding difference
early on does not grow through the depth of a random network; and the classifier recognises
1000 random prototype pictures (row k: the centred, normalised features of prototype k, times
LOGIT_SCALE), so that a noisy copy of a prototype has a clear top-1 class, as a trained
network has on most real pictures (see top1_agreement.py).

manifest.json lists each model with its input's name, shape and kind, its float32
counterpart and how it was made; the benchmark and the agreement check read it.
"""
import argparse
import hashlib
import inspect
import json
import os
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np
import torch
import torchvision
import onnx
import onnxruntime
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quantize_dynamic, quantize_static)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

OPSET = 17
RESIDUAL_GAIN = 0.2  # gamma of the BatchNorm closing each residual branch, times this
LOGIT_SCALE = 10.0


def log(message):
    print(f"make_models: {message}", flush=True)


def export(model, example, path, input_name, output_name):
    """torch.onnx.export with a dynamic batch dimension; the TorchScript exporter where the
    installed torch has both (dynamo=False), since ORT's quantizer is documented with it."""
    kwargs = dict(input_names=[input_name], output_names=[output_name], opset_version=OPSET,
                  dynamic_axes={input_name: {0: "batch"}, output_name: {0: "batch"}},
                  do_constant_folding=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "legacy TorchScript-based exporter"
        if "dynamo" in inspect.signature(torch.onnx.export).parameters:
            kwargs["dynamo"] = False
        torch.onnx.export(model, (example,), path, **kwargs)
    onnx.checker.check_model(path)


def preprocess(src, dst):
    """ORT's quant_pre_process (symbolic shape inference, basic optimizations, ONNX shape
    inference), as ORT's quantization guide asks before quantize_static/quantize_dynamic."""
    from onnxruntime.quantization.shape_inference import quant_pre_process
    try:
        quant_pre_process(src, dst)
        return
    except Exception as e:  # ORT's symbolic shape inference asserts on the transformer's Reshape
        log(f"  quant_pre_process: {type(e).__name__} {e}; again without symbolic shape inference")
    try:
        quant_pre_process(src, dst, skip_symbolic_shape=True)
    except Exception as e:  # keep going with the exported model rather than fail the setup
        log(f"  quant_pre_process failed on {os.path.basename(src)} ({e}); quantizing it as exported")
        shutil.copy(src, dst)


class Pictures(CalibrationDataReader):
    def __init__(self, entry, input_name, count, batch, seed):
        data = common.make_inputs(entry, count, seed)
        self.batches = iter([{input_name: data[i:i + batch]} for i in range(0, count, batch)])

    def get_next(self):
        return next(self.batches, None)


def residual_branch_ends(net):
    """The BatchNorm closing each residual branch (ResNet's bn2, MobileNetV2's projection)."""
    ends = []
    for m in net.modules():
        if isinstance(m, torchvision.models.resnet.BasicBlock):
            ends.append(m.bn2)
        elif isinstance(m, torchvision.models.mobilenetv2.InvertedResidual) and m.use_res_connect:
            ends.append([b for b in m.conv.modules() if isinstance(b, torch.nn.BatchNorm2d)][-1])
    return ends


def randomize_cnn(net, entry, classifier):
    """Non-degenerate random weights: see the module's docstring."""
    g = torch.Generator().manual_seed(common.SEED_WEIGHTS + 1)
    bns = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    with torch.no_grad():
        for bn in bns:
            bn.weight.copy_(torch.rand(bn.weight.shape, generator=g) + 0.5)
            bn.bias.copy_(0.2 * torch.randn(bn.bias.shape, generator=g))
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average over all the batches below
        for bn in residual_branch_ends(net):
            bn.weight.mul_(RESIDUAL_GAIN)
        pictures = torch.from_numpy(common.make_inputs(entry, 64, common.SEED_BN_STATS))
        net.train()
        for i in range(0, len(pictures), 16):
            net(pictures[i:i + 16])
        net.eval()
        # The classifier recognises prototypes: row k is the centred, normalised feature vector
        # of class k's prototype picture, so a noisy copy of prototype k scores highest on k
        # by a clear margin, as a trained network is confident on most real pictures.
        features = []
        hook = classifier.register_forward_hook(lambda m, inputs, out: features.append(inputs[0]))
        for i in range(0, 1000, 50):
            net(torch.from_numpy(common.prototypes(entry, range(i, i + 50))))
        hook.remove()
        f = torch.cat(features)
        mean = f.mean(0)
        rows = (f - mean) / (f - mean).norm(dim=1, keepdim=True)
        classifier.weight.copy_(LOGIT_SCALE * rows)
        classifier.bias.copy_(-classifier.weight @ mean)
        x, labels = common.labelled_inputs(entry, 64, common.SEED_BN_STATS)
        logits = net(torch.from_numpy(x))
    top2 = logits.topk(2, dim=1).values
    log(f"  random weights: float32 top-1 is the prototype's class on "
        f"{int((logits.argmax(1).numpy() == labels).sum())}/64 noisy prototypes, median top-1 margin "
        f"{(top2[:, 0] - top2[:, 1]).median().item():.2f} (logit std {logits.std().item():.2f})")


def variants(args):
    """(per_channel, reduce_range, suffix) of each int8 model set written."""
    return [(pc, rr, ("_pc" if pc else "") + ("_rr" if rr else ""))
            for pc in ([False, True] if args.per_channel else [False])
            for rr in ([False, True] if args.reduce_range else [False])]


def make_cnn(name, out, sets, manifest):
    torch.manual_seed(common.SEED_WEIGHTS)
    net = getattr(torchvision.models, name)(weights=None, num_classes=1000)
    classifier = net.fc if name == "resnet18" else net.classifier[-1]
    entry = {"input_kind": "image", "input_shape": [3, 224, 224], "input_name": "input",
             "output_name": "logits", "family": name}
    randomize_cnn(net, entry, classifier)
    fp32 = os.path.join(out, f"{name}_fp32.onnx")
    export(net, torch.zeros(1, 3, 224, 224), fp32, "input", "logits")
    manifest[f"{name}_fp32"] = dict(entry, file=os.path.basename(fp32), precision="float32",
                                    form="float32", fp32=f"{name}_fp32")
    with tempfile.TemporaryDirectory() as tmp:
        prep = os.path.join(tmp, "prep.onnx")
        preprocess(fp32, prep)
        for pc, rr, suffix in sets:
            for form, fmt in (("qdq", QuantFormat.QDQ), ("qop", QuantFormat.QOperator)):
                key = f"{name}_{form}{suffix}"
                path = os.path.join(out, key + ".onnx")
                start = time.time()
                quantize_static(prep, path, Pictures(entry, "input", 32, 8, common.SEED_CALIBRATION),
                                quant_format=fmt, activation_type=QuantType.QUInt8,
                                weight_type=QuantType.QInt8, per_channel=pc, reduce_range=rr,
                                calibrate_method=CalibrationMethod.MinMax)
                manifest[key] = dict(entry, file=key + ".onnx", precision="int8", form=form,
                                     fp32=f"{name}_fp32",
                                     quantizer=f"quantize_static {fmt.name} u8 activations, s8 weights, "
                                               f"per_channel={pc}, reduce_range={rr}, "
                                               f"MinMax on 32 random pictures")
                log(f"  {key}.onnx ({time.time() - start:.0f} s)")


class Block(torch.nn.Module):
    """forward(x) alone: traced directly, the layer's is_causal=False became a graph input."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)


def make_transformer(out, d_model, heads, ffn, seq, sets, manifest):
    torch.manual_seed(common.SEED_WEIGHTS)
    layer = torch.nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=0.0, batch_first=True)
    block = Block(layer).eval()
    if hasattr(torch.backends, "mha"):  # keep PyTorch's fused fast path (no ONNX form) out of the trace
        torch.backends.mha.set_fastpath_enabled(False)
    entry = {"input_kind": "sequence", "input_shape": [seq, d_model], "input_name": "x",
             "output_name": "y", "family": "transformer",
             "config": {"d_model": d_model, "heads": heads, "ffn": ffn, "seq": seq}}
    fp32 = os.path.join(out, "transformer_fp32.onnx")
    export(block, torch.zeros(1, seq, d_model), fp32, "x", "y")
    manifest["transformer_fp32"] = dict(entry, file="transformer_fp32.onnx", precision="float32",
                                        form="float32", fp32="transformer_fp32")
    with tempfile.TemporaryDirectory() as tmp:
        prep = os.path.join(tmp, "prep.onnx")
        preprocess(fp32, prep)
        for rr in sorted({rr for _, rr, _ in sets}):
            key = "transformer_dyn" + ("_rr" if rr else "")
            quantize_dynamic(prep, os.path.join(out, key + ".onnx"), weight_type=QuantType.QInt8,
                             reduce_range=rr)
            manifest[key] = dict(entry, file=key + ".onnx", precision="int8", form="dynamic",
                                 fp32="transformer_fp32",
                                 quantizer=f"quantize_dynamic, s8 weights, reduce_range={rr} "
                                           "(u8 activations by DynamicQuantizeLinear)")
    log("  transformer_fp32.onnx, transformer_dyn*.onnx")


def op_counts(path):
    counts = {}
    for node in onnx.load(path, load_external_data=False).graph.node:
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def script_digest():
    """Of this script and common.py: the models are remade when either changes."""
    digest = hashlib.sha256()
    for name in ("make_models.py", "common.py"):
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), name), "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=common.default_models_dir())
    parser.add_argument("--per-channel", action="store_true",
                        help="also write per-channel static models (NAME_qdq_pc, NAME_qop_pc)")
    parser.add_argument("--reduce-range", action="store_true",
                        help="also write each int8 model with 7-bit weights (suffix _rr; ORT's advice "
                             "for CPUs without VNNI, where its u8s8 kernels can saturate)")
    parser.add_argument("--force", action="store_true", help="remake the models if present")
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--ffn", type=int, default=2048)
    parser.add_argument("--seq", type=int, default=64)
    args = parser.parse_args()
    manifest_path = os.path.join(args.out, common.MANIFEST)
    recipe = {"script": script_digest(), "per_channel": args.per_channel,
              "reduce_range": args.reduce_range, "d_model": args.d_model,
              "heads": args.heads, "ffn": args.ffn, "seq": args.seq}
    if os.path.exists(manifest_path) and not args.force:
        with open(manifest_path) as f:
            old = json.load(f).get("_made_with", {})
        if all(old.get(k) == v for k, v in recipe.items()):
            log(f"{args.out} has these models already (--force remakes them)")
            return
    torch.set_num_threads(1)  # a shared machine: setup is small work
    os.makedirs(args.out, exist_ok=True)
    manifest = {}
    start = time.time()
    for name in ("resnet18", "mobilenet_v2"):
        log(f"{name}")
        make_cnn(name, args.out, variants(args), manifest)
    log("transformer encoder block")
    make_transformer(args.out, args.d_model, args.heads, args.ffn, args.seq, variants(args), manifest)
    for key, entry in manifest.items():
        entry["ops"] = op_counts(os.path.join(args.out, entry["file"]))
    manifest["_made_with"] = {"torch": torch.__version__, "torchvision": torchvision.__version__,
                              "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
                              "numpy": np.__version__, "opset": OPSET, **recipe,
                              "seeds": {k: getattr(common, k) for k in dir(common) if k.startswith("SEED_")},
                              "weights": "random (fixed seed), BatchNorm statistics and classifier "
                                         "scaling measured on random pictures; not pretrained"}
    with open(manifest_path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(manifest_path + ".tmp", manifest_path)
    log(f"wrote {len(manifest) - 1} models to {args.out} in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
