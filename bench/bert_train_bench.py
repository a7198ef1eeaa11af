#!/usr/bin/env python3
"""bert_train_bench.py: tokens/s of a BERT-style MLM training step, Onyx
against PyTorch on the CPU, measured in the same run.

The model is examples/bert_mlm's (2 layers, hidden 128, 4 heads, vocabulary
4,000, sequence 128 by default), the batch the same real masked batches for
both (examples/bert_mlm/prepare_data.py on a slice of WordNet), the optimizer
AdamW for both. Onyx runs `onyx train --max-steps N` (its own samples/s,
which counts the whole step: forward, backward, optimizer, data copy);
PyTorch runs the same steps of bert_torch.BertMLM with the same thread count.
The first steps of each are warm-up and not timed.

    bench/bert_train_bench.py [--onyx build/bin/onyx] [--steps 30] [--batch 32] [--threads 2]

Prints tokens/s (sequence tokens, padding included) for each and the ratio
Onyx / PyTorch, for float32 and for bf16 mixed precision (Onyx `--precision
bf16`; PyTorch under torch.autocast("cpu", dtype=torch.bfloat16)). Both keep
float32 master weights and optimizer state. Onyx's CPU provider computes its
16-bit matrix products by widening to float32, so its bf16 row measures the
casts' cost, not a 16-bit speed-up.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "examples", "bert_mlm")
sys.path.insert(0, EXAMPLE)


def onyx_tokens_per_s(onyx, model, data, args, tmp, precision="fp32"):
    def run(steps):
        out = subprocess.run([onyx, "train", model, "--data", data, "--out", os.path.join(tmp, f"onyx-{steps}"),
                              "--class-axis", "-1", "--ignore-index", "-100", "--optimizer", "adamw", "--no-shuffle",
                              "--valid-split", "none", "--batch-size", str(args.batch), "--max-steps", str(steps),
                              "--threads", str(args.threads), "--precision", precision],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=True).stdout
        match = re.search(r"trained (\d+) steps \((\d+) samples\) in [0-9:]+, ([0-9.]+) samples/s", out)
        return float(match.group(3))
    # samples/s of a long run and a short one: the difference removes the
    # first steps' planning and warm-up, which both include.
    long_rate, short_rate = run(args.steps + args.warmup), run(args.warmup)
    long_s, short_s = (args.steps + args.warmup) * args.batch / long_rate, args.warmup * args.batch / short_rate
    return args.steps * args.batch * args.seq_len / max(long_s - short_s, 1e-9)


def torch_tokens_per_s(cfg, model_path, data, args, precision="fp32"):
    import numpy as np
    import torch
    import bert_torch

    torch.set_num_threads(args.threads)
    model = bert_torch.BertMLM(cfg)
    model.load_onnx_initializers(model_path)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    arrays = {n: torch.from_numpy(np.load(os.path.join(data, "train", n + ".npy")))
              for n in ("input_ids", "attention_mask", "labels")}
    start = None
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            start = time.perf_counter()
        batch = {n: a[step * args.batch:(step + 1) * args.batch] for n, a in arrays.items()}
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            logits = model(batch["input_ids"], batch["attention_mask"])
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, cfg["vocab"]),
                                                 batch["labels"].reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return args.steps * args.batch * args.seq_len / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--onyx", default=os.path.join(HERE, "..", "build", "bin", "onyx"))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    import onnx
    import bert_onnx

    tmp = tempfile.mkdtemp(prefix="bert_bench_")
    data, model = os.path.join(tmp, "data"), os.path.join(tmp, "bert.onnx")
    subprocess.run([sys.executable, os.path.join(EXAMPLE, "prepare_data.py"), "--out", data, "--limit", "20000",
                    "--seq-len", str(args.seq_len)], check=True, stdout=subprocess.DEVNULL)
    parser_cfg = argparse.ArgumentParser()
    bert_onnx.add_config_arguments(parser_cfg)
    cfg = bert_onnx.config_from(parser_cfg.parse_args(["--max-positions", str(args.seq_len)]))
    onnx.save(bert_onnx.build(cfg), model)
    rates = {p: (onyx_tokens_per_s(args.onyx, model, data, args, tmp, p), torch_tokens_per_s(cfg, model, data, args, p))
             for p in ("fp32", "bf16")}
    print(f"BERT-style MLM training step: {cfg['layers']} layers, hidden {cfg['hidden']}, {cfg['heads']} heads, "
          f"vocabulary {cfg['vocab']}, batch {args.batch} x {args.seq_len} tokens, AdamW, {args.threads} thread(s), "
          f"{args.steps} timed steps")
    print(f"{'precision':10s} {'Onyx tokens/s':>14s} {'PyTorch tokens/s':>17s} {'Onyx / PyTorch':>15s}")
    for precision, (onyx_rate, torch_rate) in rates.items():
        print(f"{precision:10s} {onyx_rate:14.0f} {torch_rate:17.0f} {onyx_rate / torch_rate:15.2f}")


if __name__ == "__main__":
    main()
