#!/usr/bin/env python3
"""A BERT-style masked-language model written directly as ONNX (opset 17).

Token + position embeddings, LayerNorm, N post-LN encoder layers (multi-head
self-attention with an additive attention mask, GELU feed-forward), and the
MLM head (dense, GELU, LayerNorm, decoder tied to the token embedding).
Inputs input_ids and attention_mask are int64 [batch, sequence]; the output
logits is float [batch, sequence, vocab]. No dropout: training is
deterministic, so it can be compared step by step with PyTorch
(bert_torch.py builds the same model, with the same parameter names).

The weights are drawn from one seed (normal, std 0.02; LayerNorm 1 and 0;
biases 0), as BERT initialises them.
"""
import argparse
import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def parameter_shapes(cfg):
    """(name, shape) of every parameter, in one order shared with PyTorch."""
    h, f, v = cfg["hidden"], cfg["ffn"], cfg["vocab"]
    shapes = [("embeddings.word", [v, h]), ("embeddings.position", [cfg["max_positions"], h]),
              ("embeddings.norm.weight", [h]), ("embeddings.norm.bias", [h])]
    for i in range(cfg["layers"]):
        p = f"layers.{i}."
        for name in ("query", "key", "value", "output"):
            shapes += [(p + f"attention.{name}.weight", [h, h]), (p + f"attention.{name}.bias", [h])]
        shapes += [(p + "attention.norm.weight", [h]), (p + "attention.norm.bias", [h]),
                   (p + "ffn.up.weight", [h, f]), (p + "ffn.up.bias", [f]),
                   (p + "ffn.down.weight", [f, h]), (p + "ffn.down.bias", [h]),
                   (p + "ffn.norm.weight", [h]), (p + "ffn.norm.bias", [h])]
    shapes += [("head.dense.weight", [h, h]), ("head.dense.bias", [h]),
               ("head.norm.weight", [h]), ("head.norm.bias", [h]), ("head.decoder.bias", [v])]
    return shapes


def initial_weights(cfg, seed):
    rng = np.random.RandomState(seed)
    weights = {}
    for name, shape in parameter_shapes(cfg):
        if name.endswith("norm.weight"):
            value = np.ones(shape)
        elif name.endswith("bias"):
            value = np.zeros(shape)
        else:
            value = rng.normal(0.0, 0.02, size=shape)
        weights[name] = value.astype(np.float32)
    return weights


class Graph:
    def __init__(self):
        self.nodes, self.initializers, self.count = [], [], 0

    def op(self, op_type, inputs, **attrs):
        self.count += 1
        out = f"{op_type.lower()}_{self.count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"{op_type}_{self.count}", **attrs))
        return out

    def parameter(self, name, value):
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def const(self, name, value):
        """A Constant node: a fixed value, not a parameter (float initializers
        are trainable parameters by default)."""
        self.nodes.append(helper.make_node("Constant", [], [name], name=name,
                                           value=numpy_helper.from_array(np.asarray(value), name)))
        return name


def build(cfg, seed=1):
    g = Graph()
    h, heads = cfg["hidden"], cfg["heads"]
    dh = h // heads
    for name, value in initial_weights(cfg, seed).items():
        g.parameter(name, value)
    one = g.const("one", np.array(1.0, np.float32))
    half = g.const("half", np.array(0.5, np.float32))
    rsqrt2 = g.const("rsqrt2", np.array(1 / math.sqrt(2), np.float32))
    g.const("heads_shape", np.array([0, 0, heads, dh], np.int64))
    g.const("hidden_shape", np.array([0, 0, h], np.int64))
    g.const("axis1", np.array([1], np.int64))
    g.const("axes12", np.array([1, 2], np.int64))
    g.const("zero_i", np.array(0, np.int64))
    g.const("one_i", np.array(1, np.int64))
    g.const("mask_fill", np.array(-10000.0, np.float32))
    g.const("attention_scale", np.array(1 / math.sqrt(dh), np.float32))

    def dense(x, prefix):
        return g.op("Add", [g.op("MatMul", [x, prefix + ".weight"]), prefix + ".bias"])

    def norm(x, prefix):
        return g.op("LayerNormalization", [x, prefix + ".weight", prefix + ".bias"], axis=-1, epsilon=1e-12)

    def gelu(x):  # the exact (erf) form, as BERT and PyTorch's exporter write it
        return g.op("Mul", [g.op("Mul", [x, half]), g.op("Add", [one, g.op("Erf", [g.op("Mul", [x, rsqrt2])])])])

    # Embeddings: token + position (positions 0..sequence-1).
    seq = g.op("Gather", [g.op("Shape", ["input_ids"]), "one_i"], axis=0)
    positions = g.op("Range", ["zero_i", seq, "one_i"])
    x = g.op("Add", [g.op("Gather", ["embeddings.word", "input_ids"], axis=0),
                     g.op("Gather", ["embeddings.position", positions], axis=0)])
    x = norm(x, "embeddings.norm")
    # Additive mask [batch, 1, 1, sequence]: 0 where attended, -10000 at padding.
    keep = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask = g.op("Unsqueeze", [g.op("Mul", [g.op("Sub", [one, keep]), "mask_fill"]), "axes12"])

    for i in range(cfg["layers"]):
        p = f"layers.{i}."

        def split_heads(t):  # [b, s, h] -> [b, heads, s, dh]
            return g.op("Transpose", [g.op("Reshape", [t, "heads_shape"])], perm=[0, 2, 1, 3])

        q = split_heads(dense(x, p + "attention.query"))
        k = split_heads(dense(x, p + "attention.key"))
        v = split_heads(dense(x, p + "attention.value"))
        scores = g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), "attention_scale"])
        probs = g.op("Softmax", [g.op("Add", [scores, mask])], axis=-1)
        context = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3]), "hidden_shape"])
        x = norm(g.op("Add", [x, dense(context, p + "attention.output")]), p + "attention.norm")
        ffn = dense(gelu(dense(x, p + "ffn.up")), p + "ffn.down")
        x = norm(g.op("Add", [x, ffn]), p + "ffn.norm")

    t = norm(gelu(dense(x, "head.dense")), "head.norm")
    decoder = g.op("Transpose", ["embeddings.word"], perm=[1, 0])  # tied to the token embedding
    logits = g.op("Add", [g.op("MatMul", [t, decoder]), "head.decoder.bias"])
    g.nodes[-1].output[0] = "logits"

    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])
    keep_in = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "sequence", cfg["vocab"]])
    graph = helper.make_graph(g.nodes, "bert_mlm", [ids, keep_in], [out], g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onyx bert_onnx.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def config_from(args):
    return {"vocab": args.vocab, "hidden": args.hidden, "layers": args.layers, "heads": args.heads,
            "ffn": args.ffn or 4 * args.hidden, "max_positions": args.max_positions}


def add_config_arguments(parser):
    parser.add_argument("--vocab", type=int, default=4000)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ffn", type=int, default=0, help="feed-forward width (default 4 x hidden)")
    parser.add_argument("--max-positions", type=int, default=128)
    parser.add_argument("--seed", type=int, default=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="the .onnx file to write")
    add_config_arguments(parser)
    args = parser.parse_args()
    cfg = config_from(args)
    onnx.save(build(cfg, args.seed), args.out)
    params = sum(int(np.prod(s)) for _, s in parameter_shapes(cfg))
    print(f"bert_onnx: {args.out}: {cfg['layers']} layers, hidden {cfg['hidden']}, {cfg['heads']} heads, "
          f"vocabulary {cfg['vocab']}, {params} parameters")


if __name__ == "__main__":
    main()
