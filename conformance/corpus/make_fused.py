#!/usr/bin/env python3
"""Writes conformance/corpus/fused: small graphs in the forms exporters write
(torch.onnx.export of torchvision networks), for the fused groups a provider
may form from several nodes (issue 18), in the ONNX backend test layout:

- Conv + BatchNormalization + Relu6, the Relu6 a Clip whose min and max come
  from Constant nodes (torch.onnx.export's form) or from initializers;
- Conv + BatchNormalization + Relu and a residual Add, a ResNet basic block;
- a group whose input comes from a node another provider runs (Softplus,
  which the oneDNN provider declines) and whose output is read by one too.

The node suite runs each whole graph through a session on the provider under
test alone and compares with the expected outputs, a float64 reference
computed here (a case with a node the provider declines, Softplus on oneDNN,
is reported declined); the claims suite checks that every claim holds in the
graph and for each node alone, whatever provider would run the others.

Run with a Python that has numpy and onnx:
  ~/.cache/onyx/int8-bench/venv/bin/python conformance/corpus/make_fused.py
"""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fused")
rng = np.random.default_rng(18)


def floats(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def conv2d(x, w, b, pad):
    """float64 Conv, stride 1, square padding."""
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, m, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + oh, j:j + ow]  # n, c, oh, ow
            y += np.einsum("nchw,mc->nmhw", patch, w[:, :, i, j].astype(np.float64))
    return y + b.astype(np.float64)[None, :, None, None]


def batch_norm(x, scale, bias, mean, var, eps=1e-5):
    s = lambda v: v.astype(np.float64)[None, :, None, None]  # noqa: E731
    return (x - s(mean)) / np.sqrt(s(var) + eps) * s(scale) + s(bias)


def max_pool_2x2(x):
    n, c, h, w = x.shape
    return x[:, :, :h // 2 * 2, :w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def bn_params(prefix, channels):
    return [init(prefix + ".scale", floats(channels, lo=0.5, hi=1.5)), init(prefix + ".bias", floats(channels)),
            init(prefix + ".mean", floats(channels, lo=-0.2, hi=0.2)),
            init(prefix + ".var", floats(channels, lo=0.5, hi=1.5))]


def values(inits, prefix):
    return [numpy_helper.to_array(t) for t in inits if t.name.startswith(prefix + ".")]


def write_case(name, nodes, inits, x, y, opset=13):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y.shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="onyx make_fused.py")
    model.ir_version = 8
    # Exporters run ONNX shape inference and keep its value_info: every
    # value's type is known, as a session's shape inference knows it.
    model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    onnx.checker.check_model(model)
    folder = os.path.join(OUT, name)
    os.makedirs(os.path.join(folder, "test_data_set_0"))
    onnx.save(model, os.path.join(folder, "model.onnx"))
    data = os.path.join(folder, "test_data_set_0")
    open(os.path.join(data, "input_0.pb"), "wb").write(numpy_helper.from_array(x, "x").SerializeToString())
    out = numpy_helper.from_array(y.astype(np.float32), "y")
    open(os.path.join(data, "output_0.pb"), "wb").write(out.SerializeToString())


def conv_bn_relu6(name, constant_bounds):
    """x -> Conv -> BatchNormalization -> Clip(0, 6): MobileNetV2's Conv2dNormActivation."""
    x = floats(2, 4, 9, 7, lo=-3, hi=3)
    w, b = floats(8, 4, 3, 3, lo=-0.5, hi=0.5), floats(8)
    inits = [init("w", w), init("b", b)] + bn_params("bn", 8)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["n"],
                              name="bn")]
    if constant_bounds:
        nodes += [helper.make_node("Constant", [], ["lo"], name="lo", value=helper.make_tensor("", 1, [], [0.0])),
                  helper.make_node("Constant", [], ["hi"], name="hi", value=helper.make_tensor("", 1, [], [6.0]))]
    else:
        inits += [init("lo", np.float32(0)), init("hi", np.float32(6))]
    nodes.append(helper.make_node("Clip", ["n", "lo", "hi"], ["y"], name="relu6"))
    y = np.clip(batch_norm(conv2d(x, w, b, 1), *values(inits, "bn")), 0, 6)
    write_case(name, nodes, inits, x, y)


def resnet_basic_block():
    """x -> (Conv+BN+Relu -> Conv+BN) + x -> Relu: torchvision's BasicBlock."""
    x = floats(2, 8, 6, 6, lo=-2, hi=2)
    w1, b1, w2, b2 = floats(8, 8, 3, 3, lo=-0.3, hi=0.3), floats(8), floats(8, 8, 3, 3, lo=-0.3, hi=0.3), floats(8)
    inits = [init("w1", w1), init("b1", b1), init("w2", w2), init("b2", b2)] + bn_params("bn1", 8) + \
        bn_params("bn2", 8)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"], ["n1"],
                              name="bn1"),
             helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c2", "bn2.scale", "bn2.bias", "bn2.mean", "bn2.var"], ["n2"],
                              name="bn2"),
             helper.make_node("Add", ["n2", "x"], ["s"], name="residual"),
             helper.make_node("Relu", ["s"], ["y"], name="relu2")]
    r1 = np.maximum(batch_norm(conv2d(x, w1, b1, 1), *values(inits, "bn1")), 0)
    y = np.maximum(batch_norm(conv2d(r1, w2, b2, 1), *values(inits, "bn2")) + x, 0)
    write_case("test_fused_resnet_basic_block", nodes, inits, x, y)


def group_between_other_nodes():
    """Softplus -> [Conv -> Relu -> MaxPool] -> Softplus: a group whose input and reader may run elsewhere."""
    x = floats(2, 3, 8, 10, lo=-2, hi=2)
    w, b = floats(6, 3, 3, 3, lo=-0.5, hi=0.5), floats(6)
    nodes = [helper.make_node("Softplus", ["x"], ["t"], name="in"),
             helper.make_node("Conv", ["t", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Softplus", ["p"], ["y"], name="out")]
    softplus = lambda v: np.log1p(np.exp(-np.abs(v))) + np.maximum(v, 0)  # noqa: E731
    y = softplus(max_pool_2x2(np.maximum(conv2d(softplus(x.astype(np.float64)), w, b, 1), 0)))
    write_case("test_fused_group_between_other_nodes", nodes, [init("w", w), init("b", b)], x, y)


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    conv_bn_relu6("test_fused_conv_bn_relu6_constant_bounds", constant_bounds=True)
    conv_bn_relu6("test_fused_conv_bn_relu6_initializer_bounds", constant_bounds=False)
    resnet_basic_block()
    group_between_other_nodes()
    print(f"wrote {len(os.listdir(OUT))} cases to {OUT}")


if __name__ == "__main__":
    main()
