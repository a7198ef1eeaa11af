"""The com.microsoft operator-form quantized ops (what ONNX Runtime's
quantizer writes) give ONNX Runtime's codes on Onyx's CPU provider.

ORT computes these ops in float32 (its own rounding of the scale ratios),
Onyx's kernels in float64, so a code may differ by one where the real result
lies next to a rounding boundary: never by more, and at most 1% of them (the
bound of tests/providers/ops/quantized_ops_test.cpp). For QLinearAdd and
QLinearMul, whose float64 result is one line of numpy, every code Onyx gives
must be that reference's, so any disagreement with ORT is ORT's rounding."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import require

MS = "com.microsoft"


def _model(path, node, inputs, out_type, initializers):
    graph = helper.make_graph([node], "q", inputs, [helper.make_tensor_value_info("y", out_type, None)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    onnx.save(model, str(path))
    return str(path)


def _params(dtype, **values):
    """Scales (float32) and zero points (dtype) as initializers."""
    out = []
    for name, v in values.items():
        arr = np.array(v, dtype=np.float32 if name.endswith("scale") else dtype)
        out.append(numpy_helper.from_array(arr, name))
    return out


def _cases(dtype):
    elem = TensorProto.UINT8 if dtype == np.uint8 else TensorProto.INT8
    z = (lambda u, s: u if dtype == np.uint8 else s)
    binary = dict(a_scale=0.05, a_zero=z(128, -3), b_scale=0.031, b_zero=z(101, 5), c_scale=0.07, c_zero=z(131, 2))
    unary = dict(x_scale=0.043, x_zero=z(120, 7), y_scale=0.037, y_zero=z(160, 30))
    for op in ("QLinearAdd", "QLinearMul"):
        node = helper.make_node(op, ["a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "c_scale", "c_zero"], ["y"],
                                domain=MS)
        yield op, node, {"a": (2, 8, 5, 5), "b": (1, 8, 1, 1)}, elem, _params(dtype, **binary)
    for op, attrs in (("QLinearSigmoid", {}), ("QLinearLeakyRelu", {"alpha": 0.13})):
        node = helper.make_node(op, ["x", "x_scale", "x_zero", "y_scale", "y_zero"], ["y"], domain=MS, **attrs)
        yield op, node, {"x": (3, 700)}, elem, _params(dtype, **unary)
    pool_inputs = ["x", "x_scale", "x_zero", "y_scale", "y_zero"]
    node = helper.make_node("QLinearAveragePool", pool_inputs, ["y"], domain=MS, kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1], count_include_pad=1)
    yield "QLinearAveragePool", node, {"x": (2, 3, 9, 10)}, elem, _params(dtype, **unary)
    node = helper.make_node("QLinearAveragePool", pool_inputs, ["y"], domain=MS, kernel_shape=[2, 2], pads=[1, 0, 0, 1],
                            channels_last=1)
    yield "QLinearAveragePool channels_last", node, {"x": (2, 14, 12, 16)}, elem, _params(dtype, **unary)
    for channels_last in (0, 1):
        node = helper.make_node("QLinearGlobalAveragePool", pool_inputs, ["y"], domain=MS, channels_last=channels_last)
        yield f"QLinearGlobalAveragePool channels_last={channels_last}", node, {"x": (2, 6, 7, 5)}, elem, \
            _params(dtype, **unary)
    node = helper.make_node("QLinearConcat", ["y_scale", "y_zero", "a", "a_scale", "a_zero", "b", "b_scale", "b_zero"],
                            ["y"], domain=MS, axis=1)
    yield "QLinearConcat", node, {"a": (2, 3, 4), "b": (2, 5, 4)}, elem, \
        _params(dtype, y_scale=0.05, y_zero=z(128, 0), a_scale=0.05, a_zero=z(128, 0), b_scale=0.033, b_zero=z(90, -9))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["uint8", "int8"])
def test_qlinear_ops_match_onnxruntime(tmp_path, dtype):
    ort = require("onnxruntime")
    import onyx
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    for k, (name, node, shapes, elem, inits) in enumerate(_cases(dtype)):
        inputs = [helper.make_tensor_value_info(n, elem, list(s)) for n, s in shapes.items()]
        path = _model(tmp_path / f"m{k}.onnx", node, inputs, elem, inits)
        feeds = {n: rng.integers(info.min, info.max + 1, size=s, dtype=dtype) for n, s in shapes.items()}
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        got = onyx.InferenceSession(path, providers=["cpu"]).run(None, feeds)[0]
        assert got.shape == want.shape and got.dtype == want.dtype, name
        diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
        assert diff.max() <= 1, f"{name}: codes differ by {diff.max()}"
        if name in ("QLinearAdd", "QLinearMul"):
            ref = _binary_reference(name, feeds["a"], feeds["b"], inits, info)
            assert np.array_equal(got.astype(np.int64), ref), f"{name}: not the float64 reference's codes"
        else:
            assert np.count_nonzero(diff) <= 0.01 * diff.size, f"{name}: {np.count_nonzero(diff)} of {diff.size} off by one"


def _binary_reference(name, a, b, inits, info):
    """QLinearAdd/Mul in float64 with round half to even, saturated."""
    p = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in inits}
    x = (a.astype(np.float64) - p["a_zero"]) * p["a_scale"]
    y = (b.astype(np.float64) - p["b_zero"]) * p["b_scale"]
    real = x + y if name == "QLinearAdd" else x * y
    return np.clip(np.rint(real / p["c_scale"]) + p["c_zero"], info.min, info.max).astype(np.int64)
