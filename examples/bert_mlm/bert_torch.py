#!/usr/bin/env python3
"""The model of bert_onnx.py in PyTorch, parameter for parameter.

Two uses: exporting the model with torch.onnx.export (how users bring their
models; `--out model.onnx`), and serving as the independent reference the
tests compare Onyx's training with (`BertMLM.load_onnx_initializers`). The
state_dict names equal bert_onnx.py's initializer names, so weights move
between the two by name, and the exported file keeps them.
"""
import argparse
import math
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_onnx  # noqa: E402  (the shared configuration and initial weights)


class Dense(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))  # [in, out], as MatMul reads it
        self.bias = nn.Parameter(torch.empty(n_out))

    def forward(self, x):
        return torch.matmul(x, self.weight) + self.bias


def norm(h):
    return nn.LayerNorm(h, eps=1e-12)


def gelu(x):  # the exact form, in bert_onnx.py's order of operations
    return (x * 0.5) * (1.0 + torch.erf(x * (1 / math.sqrt(2))))


class Embeddings(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.word = nn.Parameter(torch.empty(cfg["vocab"], cfg["hidden"]))
        self.position = nn.Parameter(torch.empty(cfg["max_positions"], cfg["hidden"]))
        self.norm = norm(cfg["hidden"])


class Attention(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.query, self.key, self.value, self.output = Dense(h, h), Dense(h, h), Dense(h, h), Dense(h, h)
        self.norm = norm(h)


class FeedForward(nn.Module):
    def __init__(self, h, f):
        super().__init__()
        self.up, self.down, self.norm = Dense(h, f), Dense(f, h), norm(h)


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attention = Attention(cfg["hidden"])
        self.ffn = FeedForward(cfg["hidden"], cfg["ffn"])


class DecoderBias(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.bias = nn.Parameter(torch.empty(v))


class Head(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.dense, self.norm, self.decoder = Dense(cfg["hidden"], cfg["hidden"]), norm(cfg["hidden"]), DecoderBias(
            cfg["vocab"])


class BertMLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embeddings = Embeddings(cfg)
        self.layers = nn.ModuleList([Layer(cfg) for _ in range(cfg["layers"])])
        self.head = Head(cfg)

    def forward(self, input_ids, attention_mask):
        b, s = input_ids.shape
        heads = self.cfg["heads"]
        dh = self.cfg["hidden"] // heads
        x = self.embeddings.word[input_ids] + self.embeddings.position[:s]
        x = self.embeddings.norm(x)
        mask = ((1.0 - attention_mask.to(torch.float32)) * -10000.0).unsqueeze(1).unsqueeze(2)
        for layer in self.layers:
            a = layer.attention

            def split(t):
                return t.reshape(b, s, heads, dh).transpose(1, 2)

            q, k, v = split(a.query(x)), split(a.key(x)), split(a.value(x))
            scores = torch.matmul(q, k.transpose(2, 3)) * (1 / math.sqrt(dh))
            probs = torch.softmax(scores + mask, dim=-1)
            context = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, -1)
            x = a.norm(x + a.output(context))
            f = layer.ffn
            x = f.norm(x + f.down(gelu(f.up(x))))
        t = self.head.norm(gelu(self.head.dense(x)))
        return torch.matmul(t, self.embeddings.word.transpose(0, 1)) + self.head.decoder.bias

    def load_weights(self, weights):
        """weights: name -> numpy array (bert_onnx.initial_weights or an ONNX file's initializers)."""
        state = {name: torch.from_numpy(value.copy()) for name, value in weights.items()
                 if name in dict(self.named_parameters())}
        missing = set(dict(self.named_parameters())) - set(state)
        if missing:
            raise ValueError(f"no weights for {sorted(missing)}")
        self.load_state_dict(state, strict=True)

    def load_onnx_initializers(self, path):
        import onnx
        from onnx import numpy_helper

        model = onnx.load(path)
        self.load_weights({i.name: numpy_helper.to_array(i) for i in model.graph.initializer})


def export(model, path, seq_len):
    ids = torch.zeros(2, seq_len, dtype=torch.int64)
    mask = torch.ones(2, seq_len, dtype=torch.int64)
    # No constant folding: it would fold the decoder's Transpose of the token
    # embedding into a second initializer and untie the two. Training mode:
    # in eval mode the exporter merges parameters whose values are equal (all
    # the zero biases into one), which would train them as one.
    torch.onnx.export(model, (ids, mask), path, input_names=["input_ids", "attention_mask"], output_names=["logits"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                    "attention_mask": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}},
                      opset_version=17, do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING)


def main():
    parser = argparse.ArgumentParser(description="export the BERT-style MLM from PyTorch to ONNX")
    parser.add_argument("--out", required=True, help="the .onnx file to write")
    bert_onnx.add_config_arguments(parser)
    args = parser.parse_args()
    cfg = bert_onnx.config_from(args)
    model = BertMLM(cfg)
    model.load_weights(bert_onnx.initial_weights(cfg, args.seed))
    export(model, args.out, min(16, cfg["max_positions"]))
    print(f"bert_torch: exported {args.out} with torch {torch.__version__}")


if __name__ == "__main__":
    main()
