#!/usr/bin/env python3
"""Onyx trains the BERT-style MLM step for step like PyTorch.

Builds a small configuration of examples/bert_mlm (real WordNet text, BPE,
15% masking), writes the model twice (bert_onnx.py with the onnx package, and
torch.onnx.export of bert_torch.py), trains each for 200 steps with `onyx
train` (AdamW, batches in order) and the same model in PyTorch from the same
initial weights on the same batches, and compares the per-step MLM loss.

Bound: 1e-4 relative per step. Both sides compute in float32 with different
summation orders and kernels (softmax over 1,000 classes, LayerNorm, GEMM),
which puts single-step differences near 1e-6; Adam's updates carry them on,
and over 200 steps they grow to about 1e-5 here. A wrong gradient anywhere
(one parameter, the tied embedding, the mask) moves the loss by far more
within a few steps.

BERT's recipe, the same way: LAMB (written out below from the paper's update,
as Onyx's lamb plugin documents it; PyTorch has none), parameter groups (no
weight decay on biases and LayerNorm weights), linear warmup and decay, and
global-norm clipping at 1.0; 100 steps, same bound.

Also: gradient accumulation of 4 micro-batches of 8 equals batches of 32
(loss per step within 1e-5 relative, final weights within 1e-5 + 1e-4 |w|).

Usage: bert_mlm_torch_test.py ONYX_CLI SOURCE_DIR. Exits 77 (skipped) with a
reason when torch, onnx, sentencepiece or WordNet are missing.
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlm_test_util as util  # noqa: E402

ONYX, SOURCE = sys.argv[1], sys.argv[2]
EXAMPLE = os.path.join(SOURCE, "examples", "bert_mlm")
STEPS, BATCH, LR, LAMB_LR = 200, 8, 1e-3, 5e-3
util.require("numpy", "onnx", "sentencepiece", "torch")
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, EXAMPLE)
import bert_onnx  # noqa: E402
import bert_torch  # noqa: E402


def onyx_train(model, data, out, *extra, steps=STEPS):
    # (the later --optimizer and --lr in `extra` win: the CLI takes an option's last value)
    return util.onyx_train(ONYX, model, data, out, steps, "--optimizer", "adamw", "--lr", str(LR), *extra)[0]


NO_DECAY = r"(bias|norm\.weight)$"  # BERT's parameter groups: no weight decay on these


class Lamb(torch.optim.Optimizer):
    """LAMB (You et al. 2019) as Onyx's plugin states it: Adam moments with bias
    correction, r = m_hat / (sqrt(v_hat) + eps) + wd * p, trust = |p| / |r| when
    both are > 0 (else 1), p -= lr * trust * r."""

    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                state = self.state[p]
                if not state:
                    state["step"], state["m"], state["v"] = 0, torch.zeros_like(p), torch.zeros_like(p)
                state["step"] += 1
                t, m, v = state["step"], state["m"], state["v"]
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                r = (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + group["eps"]) + group["weight_decay"] * p
                p_norm, r_norm = p.norm(), r.norm()
                trust = (p_norm / r_norm).item() if p_norm > 0 and r_norm > 0 else 1.0
                p.sub_(group["lr"] * trust * r)


def linear_schedule(step, base, warmup, total):  # Onyx's "linear:warmup=W" (lr_scheduler.h)
    if step < warmup:
        return base * (step + 1) / warmup
    return base * (1 - min(1.0, (step - warmup) / (total - warmup)))


def torch_losses(cfg, weights_from, data, steps=STEPS, recipe="adamw"):
    import re
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = bert_torch.BertMLM(cfg)
    model.load_onnx_initializers(weights_from)
    if recipe == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    else:
        named = list(model.named_parameters())
        opt = Lamb([{"params": [p for n, p in named if not re.search(NO_DECAY, n)]},
                    {"params": [p for n, p in named if re.search(NO_DECAY, n)], "weight_decay": 0.0}], lr=LAMB_LR)
    arrays = {n: torch.from_numpy(np.load(os.path.join(data, "train", n + ".npy")))
              for n in ("input_ids", "attention_mask", "labels")}
    losses = []
    for step in range(steps):
        batch = {n: a[step * BATCH:(step + 1) * BATCH] for n, a in arrays.items()}
        logits = model(batch["input_ids"], batch["attention_mask"])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, cfg["vocab"]), batch["labels"].reshape(-1),
                                                 ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        if recipe == "lamb":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            for group in opt.param_groups:
                group["lr"] = linear_schedule(step, LAMB_LR, 10, steps)
        opt.step()
        losses.append(loss.item())
    return losses


def worst_relative(a, b):
    assert len(a) == len(b), f"{len(a)} losses against {len(b)}"
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


def initializers(path):
    from onnx import numpy_helper
    return {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}


def main():
    tmp = tempfile.mkdtemp(prefix="bert_mlm_test_")
    try:
        check(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check(tmp):
    data, script_model = util.small_mlm(SOURCE, tmp)
    exported_model = os.path.join(tmp, "bert_torch.onnx")
    util.run(sys.executable, os.path.join(EXAMPLE, "bert_torch.py"), "--out", exported_model, *util.CONFIG)
    parser = bert_onnx.argparse.ArgumentParser()
    bert_onnx.add_config_arguments(parser)
    cfg = bert_onnx.config_from(parser.parse_args(util.CONFIG))

    reference = torch_losses(cfg, script_model, data)
    failures = []
    for name, model in (("onnx-script model", script_model), ("torch.onnx.export model", exported_model)):
        losses = onyx_train(model, data, os.path.join(tmp, "run-" + name.split()[0]), "--batch-size", str(BATCH))
        worst = worst_relative(losses, reference)
        print(f"{name}: {STEPS} steps, loss {losses[0]:.5f} -> {losses[-1]:.5f} (PyTorch {reference[0]:.5f} -> "
              f"{reference[-1]:.5f}), worst relative difference {worst:.2e} (bound 1e-4)")
        if worst > 1e-4:
            failures.append(name)
    if reference[-1] > reference[0] - 0.5:
        failures.append("the loss did not fall by at least 0.5 nats in 200 steps")

    lamb_steps = 100
    reference = torch_losses(cfg, script_model, data, steps=lamb_steps, recipe="lamb")
    losses = onyx_train(script_model, data, os.path.join(tmp, "lamb"), "--batch-size", str(BATCH), "--optimizer",
                        "lamb", "--lr", str(LAMB_LR), "--lr-schedule", "linear:warmup=10", "--max-grad-norm", "1.0",
                        "--param-group", NO_DECAY + ":weight_decay=0", steps=lamb_steps)
    worst = worst_relative(losses, reference)
    print(f"LAMB, parameter groups, warmup and linear decay, clipping: {lamb_steps} steps, loss {losses[0]:.5f} -> "
          f"{losses[-1]:.5f} (PyTorch {reference[0]:.5f} -> {reference[-1]:.5f}), worst relative difference "
          f"{worst:.2e} (bound 1e-4)")
    if worst > 1e-4:
        failures.append("LAMB with parameter groups")

    # Gradient accumulation: 4 micro-batches of 8 against batches of 32.
    steps = 25
    whole = onyx_train(script_model, data, os.path.join(tmp, "batch32"), "--batch-size", "32", steps=steps)
    accumulated = onyx_train(script_model, data, os.path.join(tmp, "accum4"), "--batch-size", "32", "--grad-accum", "4",
                             steps=steps)
    worst = worst_relative(accumulated, whole)
    a, b = initializers(os.path.join(tmp, "accum4", "model.onnx")), initializers(os.path.join(tmp, "batch32", "model.onnx"))
    weight_gap = max(float(np.max(np.abs(a[n] - b[n]) - 1e-4 * np.abs(b[n]))) for n in b)
    print(f"--grad-accum 4 x 8 against batch 32: {steps} steps, worst loss difference {worst:.2e} (bound 1e-5), "
          f"weights: max |a-b| - 1e-4|b| = {weight_gap:.2e} (bound 1e-5)")
    if worst > 1e-5 or weight_gap > 1e-5:
        failures.append("gradient accumulation")
    if failures:
        sys.exit("FAILED: " + "; ".join(failures))
    print("bert_mlm_torch_test: passed")


if __name__ == "__main__":
    main()
