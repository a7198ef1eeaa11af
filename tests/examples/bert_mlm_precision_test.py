#!/usr/bin/env python3
"""Mixed-precision training of the BERT-style MLM follows the float32 curve.

Builds a small configuration of examples/bert_mlm (real WordNet text, BPE,
15% masking; vocabulary 1,000, hidden 64, 2 layers, 2 heads, sequences of
64) and trains it with `onyx train` for 1,000 steps of batch 8 (AdamW,
lr 1e-3, batches in order) three times: --precision fp32, bf16 and fp16
(dynamic loss scaling). The three runs see the same batches from the same
initial weights.

"Within 2%": let MA(c, i) be the mean of curve c's losses at steps i-49..i
(a 50-step moving average: single-batch losses vary by far more than
rounding does, so the curves are compared where they are smooth). For every
step i from 50 to 1,000, |MA(bf16, i) - MA(fp32, i)| <= 0.02 MA(fp32, i);
the same for fp16. The fp32 curve must also fall by at least 0.5 nats (it
falls by 0.9 here), so the comparison is about training and not about a
flat line. A wrong
mixed-precision gradient (a lost or doubled cast gradient) leaves the curve
by far more within a few hundred steps, and so do the fp16 steps that loss
scaling would skip if it halved too little, while rounding to bf16 (8
significant bits) in the matrix products alone moves it by a fraction of a
percent. (AdamW does not see a constant factor on the gradients, so the
loss scale's division is tested under SGD in tests/training/loss_scaling_test.cpp.)

Also: the inference model the bf16 run exports is the float32 graph (the
same ops as the fp32 run's, no 16-bit type anywhere).

Usage: bert_mlm_precision_test.py ONYX_CLI SOURCE_DIR. Exits 77 (skipped) with
a reason when onnx, sentencepiece or WordNet are missing.
"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlm_test_util as util  # noqa: E402

ONYX, SOURCE = sys.argv[1], sys.argv[2]
STEPS, BATCH, WINDOW, BOUND = 1000, 8, 50, 0.02
util.require("onnx", "sentencepiece")
import onnx  # noqa: E402


def onyx_train(model, data, out, precision):
    return util.onyx_train(ONYX, model, data, out, STEPS, "--optimizer", "adamw", "--lr", "1e-3", "--batch-size",
                           str(BATCH), "--precision", precision)


def moving_average(curve):
    return [sum(curve[i - WINDOW + 1:i + 1]) / WINDOW for i in range(WINDOW - 1, len(curve))]


def worst_gap(curve, reference):
    """The largest |MA(curve) - MA(reference)| / MA(reference) and its step (1-based)."""
    a, b = moving_average(curve), moving_average(reference)
    gaps = [abs(x - y) / y for x, y in zip(a, b)]
    worst = max(range(len(gaps)), key=gaps.__getitem__)
    return gaps[worst], worst + WINDOW


def types_in(model_path):
    m = onnx.load(model_path)
    ops = sorted(n.op_type for n in m.graph.node)
    types = set()
    for n in m.graph.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to":
                types.add(a.i)
    for v in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
        types.add(v.type.tensor_type.elem_type)
    types.update(t.data_type for t in m.graph.initializer)
    return ops, types


def main():
    tmp = tempfile.mkdtemp(prefix="bert_precision_test_")
    try:
        check(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check(tmp):
    data, model = util.small_mlm(SOURCE, tmp)
    curves, outputs = {}, {}
    for precision in ("fp32", "bf16", "fp16"):
        curves[precision], outputs[precision] = onyx_train(model, data, os.path.join(tmp, precision), precision)
    failures = []
    fp32 = curves["fp32"]
    first, last = moving_average(fp32)[0], moving_average(fp32)[-1]
    print(f"fp32: {STEPS} steps, {WINDOW}-step mean loss {first:.4f} (steps 1-{WINDOW}) -> {last:.4f} (last {WINDOW})")
    if last > first - 0.5:
        failures.append(f"the fp32 loss fell by {first - last:.3f} nats, less than 0.5")
    for precision in ("bf16", "fp16"):
        gap, at = worst_gap(curves[precision], fp32)
        ma = moving_average(curves[precision])
        scaling = re.search(r"loss scaling: .*", outputs[precision])
        print(f"{precision}: {WINDOW}-step mean loss {ma[0]:.4f} -> {ma[-1]:.4f}; worst gap to fp32 {100 * gap:.3f}% "
              f"at step {at} (bound {100 * BOUND:.0f}%)" + (f"; {scaling.group(0)}" if scaling else ""))
        if gap > BOUND:
            failures.append(f"{precision} left the fp32 curve by {100 * gap:.2f}% at step {at}")
    if not re.search(r"loss scaling: \d+ step\(s\) skipped on overflow, final scale", outputs["fp16"]):
        failures.append("the fp16 run did not report its loss scaling")

    ops32, types32 = types_in(os.path.join(tmp, "fp32", "model.onnx"))
    ops16, types16 = types_in(os.path.join(tmp, "bf16", "model.onnx"))
    half = {onnx.TensorProto.BFLOAT16, onnx.TensorProto.FLOAT16}
    print(f"exported bf16 model: {len(ops16)} nodes, element types {sorted(types16)}; fp32 run's: {len(ops32)} nodes")
    if ops16 != ops32 or types16 & half:
        failures.append("the bf16 run's exported model is not the float32 graph")
    if failures:
        sys.exit("FAILED: " + "; ".join(failures))
    print("bert_mlm_precision_test: passed")


if __name__ == "__main__":
    main()
