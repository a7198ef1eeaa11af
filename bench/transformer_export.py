#!/usr/bin/env python3
"""Writes a transformer encoder block the way PyTorch's ONNX exporter writes one, for benchmarks.

    python bench/transformer_export.py OUT.onnx [--seq 16] [--dim 256] [--heads 4]

Unlike tests/providers/onednn/transformer_block.h (which uses the LayerNormalization and Gelu
ops), this model has what exporters emit at opset 17: LayerNorm decomposed into ReduceMean, Sub,
Pow, ReduceMean, Add, Sqrt, Div, Mul, Add; erf GELU as Div, Erf, Add, Mul, Mul; MatMul followed
by Add for every linear layer; multi-head attention as Reshape/Transpose, MatMul, Div, Softmax,
MatMul. So it measures whether a runtime recognizes those patterns. Input "x" [batch, seq, dim].
Needs the `onnx` and `numpy` packages.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    args = parser.parse_args()
    seq, dim, heads = args.seq, args.dim, args.heads
    head_dim = dim // heads
    rng = np.random.default_rng(20240611)
    nodes, inits = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name))
        return name

    def const_i64(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.int64), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def linear(name, x, fan_in, fan_out):
        w = const(name + ".weight", rng.uniform(-1, 1, (fan_in, fan_out)) / np.sqrt(fan_in))
        b = const(name + ".bias", rng.uniform(-0.1, 0.1, fan_out))
        return node("Add", [node("MatMul", [x, w], name + ".mm"), b], name + ".out")

    def layer_norm(name, x):
        mean = node("ReduceMean", [x], name + ".mean", axes=[-1], keepdims=1)
        centered = node("Sub", [x, mean], name + ".centered")
        square = node("Pow", [centered, const(name + ".two", 2.0)], name + ".square")
        var = node("ReduceMean", [square], name + ".var", axes=[-1], keepdims=1)
        std = node("Sqrt", [node("Add", [var, const(name + ".eps", 1e-5)], name + ".var_eps")], name + ".std")
        normed = node("Div", [centered, std], name + ".normed")
        scaled = node("Mul", [normed, const(name + ".weight", rng.uniform(0.8, 1.2, dim))], name + ".scaled")
        return node("Add", [scaled, const(name + ".bias", rng.uniform(-0.1, 0.1, dim))], name + ".out")

    def gelu(name, x):
        erf = node("Erf", [node("Div", [x, const(name + ".sqrt2", np.sqrt(2.0))], name + ".div")], name + ".erf")
        one_plus = node("Add", [erf, const(name + ".one", 1.0)], name + ".one_plus")
        return node("Mul", [node("Mul", [x, one_plus], name + ".mul"), const(name + ".half", 0.5)], name + ".out")

    split_shape = const_i64("split_shape", [0, 0, heads, head_dim])
    merge_shape = const_i64("merge_shape", [0, 0, dim])

    def heads_of(name, x, perm):
        return node("Transpose", [node("Reshape", [x, split_shape], name + ".split")], name + ".heads", perm=perm)

    a = layer_norm("ln1", "x")
    q = heads_of("q", linear("q", a, dim, dim), [0, 2, 1, 3])
    k = heads_of("k", linear("k", a, dim, dim), [0, 2, 3, 1])
    v = heads_of("v", linear("v", a, dim, dim), [0, 2, 1, 3])
    scores = node("Div", [node("MatMul", [q, k], "attn.qk"), const("attn.scale", np.sqrt(head_dim))], "attn.scores")
    probs = node("Softmax", [scores], "attn.probs", axis=-1)
    context = node("Transpose", [node("MatMul", [probs, v], "attn.context")], "attn.merge", perm=[0, 2, 1, 3])
    merged = node("Reshape", [context, merge_shape], "attn.merged")
    h = node("Add", ["x", linear("o", merged, dim, dim)], "h")
    f = gelu("gelu", linear("ff1", layer_norm("ln2", h), dim, 4 * dim))
    node("Add", [h, linear("ff2", f, 4 * dim, dim)], "y")

    graph = helper.make_graph(
        nodes, "transformer_block_exported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", seq, dim])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", seq, dim])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, args.out)


if __name__ == "__main__":
    main()
