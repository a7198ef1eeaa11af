#!/usr/bin/env python3
"""Writes conformance/corpus/quantized: single-node cases, in the ONNX backend
test layout, for the operator forms that quantized models and Onyx's QDQ
fusion produce (issue 19): the com.microsoft ops of ONNX Runtime's quantizer
and the fused groups a provider may claim. The claims suite runs them like
the ONNX node tests (`onyx-conformance --corpus conformance/corpus/quantized`).

Expected outputs:
- elementwise, pooling and concatenation: a float64 reference of the op's
  definition here (dequantize, the float op, quantize with rounding half to
  even and saturation);
- QGemm, DynamicQuantizeMatMul and QLinearConv: ONNX Runtime (an independent
  implementation) from the benchmark venv (bench/int8/setup.sh).
Scales are random, not powers of two, so that no result lies on an exact
tie of rounding, where implementations may legitimately differ.

Run with a Python that has numpy, onnx and onnxruntime:
  ~/.cache/onyx/int8-bench/venv/bin/python conformance/corpus/make_quantized.py
"""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quantized")
rng = np.random.default_rng(19)
MS = "com.microsoft"


def codes(dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape, dtype=np.int64).astype(dtype)


def scale():
    return np.float32(rng.uniform(0.01, 0.09))


def zero(dtype):
    info = np.iinfo(dtype)
    return dtype(rng.integers(info.min // 2, info.max // 2 + 1))


def quantize(real, s, z, dtype):
    info = np.iinfo(dtype)
    q = np.round(real / np.float64(s)) + np.float64(z)  # numpy rounds half to even
    return np.clip(q, info.min, info.max).astype(dtype)


def deq(x, s, z):
    return (x.astype(np.float64) - np.float64(z)) * np.float64(s)


def onnx_type(a):
    return helper.np_dtype_to_tensor_dtype(a.dtype)


def write_case(name, op, inputs, outputs, attrs=None, domain=MS, opset=13, constants=()):
    """inputs/outputs: lists of (name, array or None for an omitted input);
    the inputs named in `constants` become initializers (the form quantizers
    write, which providers that prepack weights claim)."""
    node = helper.make_node(op, [n if a is not None else "" for n, a in inputs], [n for n, _ in outputs],
                            domain=domain, **(attrs or {}))
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, onnx_type(a), a.shape) for n, a in inputs
         if a is not None and n not in constants],
        [helper.make_tensor_value_info(n, onnx_type(a), a.shape) for n, a in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inputs if a is not None and n in constants])
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(MS, 1)] if domain == MS else [])
    model = helper.make_model(graph, opset_imports=imports, producer_name="onyx make_quantized.py")
    model.ir_version = 8
    folder = os.path.join(OUT, name)
    os.makedirs(os.path.join(folder, "test_data_set_0"))
    onnx.save(model, os.path.join(folder, "model.onnx"))
    present = [(n, a) for n, a in inputs if a is not None and n not in constants]
    for i, (n, a) in enumerate(present):
        t = numpy_helper.from_array(np.asarray(a), n)
        open(os.path.join(folder, "test_data_set_0", f"input_{i}.pb"), "wb").write(t.SerializeToString())
    for i, (n, a) in enumerate(outputs):
        t = numpy_helper.from_array(np.asarray(a), n)
        open(os.path.join(folder, "test_data_set_0", f"output_{i}.pb"), "wb").write(t.SerializeToString())
    return folder


def ort_outputs(folder, inputs, constants=()):
    import onnxruntime as ort
    sess = ort.InferenceSession(os.path.join(folder, "model.onnx"), providers=["CPUExecutionProvider"])
    return sess.run(None, {n: a for n, a in inputs if a is not None and n not in constants})


def rewrite_outputs(folder, outputs):
    for i, (n, a) in enumerate(outputs):
        t = numpy_helper.from_array(np.asarray(a), n)
        open(os.path.join(folder, "test_data_set_0", f"output_{i}.pb"), "wb").write(t.SerializeToString())


def binary(name, op, dtype, a_shape, b_shape, constant_params=False):
    a, b = codes(dtype, a_shape), codes(dtype, b_shape)
    sa, za, sb, zb, sc, zc = scale(), zero(dtype), scale(), zero(dtype), scale(), zero(dtype)
    real = deq(a, sa, za) + deq(b, sb, zb) if op == "QLinearAdd" else deq(a, sa, za) * deq(b, sb, zb)
    if op == "QLinearMul":
        sc = np.float32(sc * 20)  # products span a wider range than sums
    c = quantize(real, sc, zc, dtype)
    write_case(name, op, [("A", a), ("A_scale", np.array(sa)), ("A_zero_point", np.array(za)), ("B", b),
                          ("B_scale", np.array(sb)), ("B_zero_point", np.array(zb)), ("C_scale", np.array(sc)),
                          ("C_zero_point", np.array(zc))], [("C", c)],
               constants=["A_scale", "A_zero_point", "B_scale", "B_zero_point", "C_scale", "C_zero_point"]
               if constant_params else ())


def unary(name, op, dtype, alpha=None):
    x = codes(dtype, (2, 3, 5, 7))
    sx, zx, sy, zy = scale(), zero(dtype), np.float32(rng.uniform(0.002, 0.006)), zero(dtype)
    real = deq(x, sx, zx)
    if op == "QLinearSigmoid":
        real = 1.0 / (1.0 + np.exp(-real))
    else:
        real = np.where(real >= 0, real, np.float64(np.float32(alpha)) * real)
        sy = scale()
    y = quantize(real, sy, zy, dtype)
    write_case(name, op, [("X", x), ("X_scale", np.array(sx)), ("X_zero_point", np.array(zx)), ("Y_scale", np.array(sy)),
                          ("Y_zero_point", np.array(zy))], [("Y", y)],
               {"alpha": float(np.float32(alpha))} if alpha is not None else None)


def global_average_pool(name, dtype):
    x = codes(dtype, (2, 6, 5, 7))
    sx, zx, sy, zy = scale(), zero(dtype), scale(), zero(dtype)
    y = quantize(deq(x, sx, zx).mean(axis=(2, 3), keepdims=True), sy, zy, dtype)
    write_case(name, "QLinearGlobalAveragePool", [("X", x), ("x_scale", np.array(sx)), ("x_zero_point", np.array(zx)),
                                                  ("y_scale", np.array(sy)), ("y_zero_point", np.array(zy))],
               [("Y", y)], {"channels_last": 0})


def average_pool(name, dtype, count_include_pad):
    x = codes(dtype, (1, 4, 9, 8))
    sx, zx, sy, zy = scale(), zero(dtype), scale(), zero(dtype)
    real = deq(x, sx, zx)
    k, s, p = 3, 2, 1
    oh, ow = (9 + 2 * p - k) // s + 1, (8 + 2 * p - k) // s + 1
    out = np.zeros((1, 4, oh, ow))
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * s - p, j * s - p
            ys, xs = slice(max(y0, 0), min(y0 + k, 9)), slice(max(x0, 0), min(x0 + k, 8))
            window = real[:, :, ys, xs]
            count = k * k if count_include_pad else window.shape[2] * window.shape[3]
            out[:, :, i, j] = window.sum(axis=(2, 3)) / count
    y = quantize(out, sy, zy, dtype)
    write_case(name, "QLinearAveragePool", [("X", x), ("x_scale", np.array(sx)), ("x_zero_point", np.array(zx)),
                                            ("y_scale", np.array(sy)), ("y_zero_point", np.array(zy))], [("Y", y)],
               {"kernel_shape": [k, k], "strides": [s, s], "pads": [p, p, p, p],
                "count_include_pad": int(count_include_pad), "channels_last": 0})


def concat(name, dtype):
    xs = [codes(dtype, (2, c, 3)) for c in (2, 4, 1)]
    qs = [(scale(), zero(dtype)) for _ in xs]
    sy, zy = scale(), zero(dtype)
    y = quantize(np.concatenate([deq(x, s, z) for x, (s, z) in zip(xs, qs)], axis=1), sy, zy, dtype)
    inputs = [("Y_scale", np.array(sy)), ("Y_zero_point", np.array(zy))]
    for i, (x, (s, z)) in enumerate(zip(xs, qs)):
        inputs += [(f"X{i}", x), (f"X{i}_scale", np.array(s)), (f"X{i}_zero_point", np.array(z))]
    write_case(name, "QLinearConcat", inputs, [("Y", y)], {"axis": 1})


def qgemm(name, float_out, trans_b, constant_params=False):
    a, b = codes(np.uint8, (5, 12)), codes(np.int8, (7, 12) if trans_b else (12, 7))
    sa, za, sb = scale(), zero(np.uint8), np.array(rng.uniform(0.01, 0.05, size=7), dtype=np.float32)
    zb = np.zeros(7, dtype=np.int8)  # ONNX Runtime's QGemm takes per-column scales with zero points 0
    c = rng.integers(-500, 500, size=7, dtype=np.int32)
    inputs = [("A", a), ("a_scale", np.array(sa)), ("a_zero_point", np.array(za)), ("B", b), ("b_scale", sb),
              ("b_zero_point", zb), ("C", c)]
    if not float_out:
        inputs += [("y_scale", np.array(np.float32(rng.uniform(0.5, 1.5)))), ("y_zero_point", np.array(zero(np.uint8)))]
    placeholder = np.zeros((5, 7), dtype=np.float32 if float_out else np.uint8)
    constants = [n for n, _ in inputs if n != "A"] if constant_params else ()
    folder = write_case(name, "QGemm", inputs, [("Y", placeholder)], {"transB": int(trans_b), "alpha": 1.0},
                        constants=constants)
    rewrite_outputs(folder, [("Y", ort_outputs(folder, inputs, constants)[0])])


def dynamic_quantize_matmul(name):
    a = rng.normal(size=(3, 4, 16)).astype(np.float32)
    b = codes(np.int8, (16, 9))
    inputs = [("A", a), ("B", b), ("b_scale", np.array(np.float32(0.02))), ("b_zero_point", np.array(np.int8(0))),
              ("bias", rng.normal(size=9).astype(np.float32))]
    folder = write_case(name, "DynamicQuantizeMatMul", inputs, [("Y", np.zeros((3, 4, 9), dtype=np.float32))])
    rewrite_outputs(folder, [("Y", ort_outputs(folder, inputs)[0])])


def qlinear_conv(name, per_channel):
    x, w = codes(np.uint8, (1, 6, 9, 9)), codes(np.int8, (8, 3, 3, 3))
    ws = np.array(rng.uniform(0.01, 0.05, size=8) if per_channel else rng.uniform(0.01, 0.05), dtype=np.float32)
    wz = np.zeros(8 if per_channel else (), dtype=np.int8)
    inputs = [("x", x), ("x_scale", np.array(scale())), ("x_zero_point", np.array(zero(np.uint8))), ("w", w),
              ("w_scale", ws), ("w_zero_point", wz), ("y_scale", np.array(np.float32(rng.uniform(0.2, 0.4)))),
              ("y_zero_point", np.array(zero(np.uint8))), ("B", rng.integers(-300, 300, size=8, dtype=np.int32))]
    folder = write_case(name, "QLinearConv", inputs, [("y", np.zeros((1, 8, 5, 5), dtype=np.uint8))],
                        {"group": 2, "strides": [2, 2], "pads": [1, 1, 1, 1]})
    rewrite_outputs(folder, [("y", ort_outputs(folder, inputs)[0])])


def constant_qlinear_conv(name, x_type, w_type, per_channel, attrs, channels=8, kernel=3, out_channels=16):
    """ONNX QLinearConv with its weights, scales, zero points and bias as
    initializers; uint8 weights carry zero point 128 (symmetric, so that
    weights minus zero point fit int8, as oneDNN's int8 kernels need)."""
    x = codes(x_type, (2, channels, 11, 10))
    group = attrs.get("group", 1)
    w = codes(w_type, (out_channels, channels // group, kernel, kernel))
    ws = np.array(rng.uniform(0.005, 0.02, size=out_channels) if per_channel else rng.uniform(0.005, 0.02), dtype=np.float32)
    if w_type == np.uint8:
        wz = np.full(out_channels if per_channel else (), 128, dtype=np.uint8)
    else:
        wz = np.zeros(out_channels if per_channel else (), dtype=np.int8)
    inputs = [("x", x), ("x_scale", np.array(scale())), ("x_zero_point", np.array(zero(x_type))), ("w", w),
              ("w_scale", ws), ("w_zero_point", wz), ("y_scale", np.array(np.float32(rng.uniform(0.3, 0.6)))),
              ("y_zero_point", np.array(zero(x_type))), ("B", rng.integers(-3000, 3000, size=out_channels, dtype=np.int32))]
    constants = [n for n, _ in inputs if n != "x"]
    folder = write_case(name, "QLinearConv", inputs, [("y", np.zeros((1,), dtype=x_type))], attrs, domain="",
                        constants=constants)
    y = ort_outputs(folder, inputs, constants)[0]
    shutil.rmtree(folder)  # again, with the output's real shape in the graph
    write_case(name, "QLinearConv", inputs, [("y", y)], attrs, domain="", constants=constants)


def constant_qlinear_matmul(name, a_type, per_column):
    a, b = codes(a_type, (2, 5, 24)), codes(np.int8, (24, 9))
    bs = np.array(rng.uniform(0.005, 0.02, size=9) if per_column else rng.uniform(0.005, 0.02), dtype=np.float32)
    sa, za, sy, zy = scale(), zero(a_type), np.float32(rng.uniform(0.1, 0.3)), zero(a_type)
    real = deq(a, sa, za) @ (b.astype(np.float64) * bs.astype(np.float64))
    y = quantize(real, sy, zy, a_type)
    inputs = [("a", a), ("a_scale", np.array(sa)), ("a_zero_point", np.array(za)), ("b", b), ("b_scale", bs),
              ("b_zero_point", np.zeros(bs.shape, dtype=np.int8)), ("y_scale", np.array(sy)),
              ("y_zero_point", np.array(zy))]
    write_case(name, "QLinearMatMul", inputs, [("y", y)], domain="", opset=21,
               constants=[n for n, _ in inputs if n != "a"])


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    binary("test_qlinear_add_uint8_broadcast", "QLinearAdd", np.uint8, (2, 3, 4, 5), (1, 3, 1, 5))
    binary("test_qlinear_add_int8", "QLinearAdd", np.int8, (3, 17), (3, 17))
    binary("test_qlinear_mul_uint8", "QLinearMul", np.uint8, (4, 33), (4, 33))
    binary("test_qlinear_mul_int8_scalar", "QLinearMul", np.int8, (2, 3, 8), ())
    unary("test_qlinear_sigmoid_uint8", "QLinearSigmoid", np.uint8)
    unary("test_qlinear_sigmoid_int8", "QLinearSigmoid", np.int8)
    unary("test_qlinear_leaky_relu_uint8", "QLinearLeakyRelu", np.uint8, alpha=0.1)
    unary("test_qlinear_leaky_relu_int8", "QLinearLeakyRelu", np.int8, alpha=0.2)
    global_average_pool("test_qlinear_global_average_pool_uint8", np.uint8)
    global_average_pool("test_qlinear_global_average_pool_int8", np.int8)
    average_pool("test_qlinear_average_pool_uint8_pads", np.uint8, False)
    average_pool("test_qlinear_average_pool_int8_count_include_pad", np.int8, True)
    concat("test_qlinear_concat_uint8", np.uint8)
    concat("test_qlinear_concat_int8", np.int8)
    qgemm("test_qgemm_uint8_output", False, False)
    qgemm("test_qgemm_float_output_trans_b", True, True)
    dynamic_quantize_matmul("test_dynamic_quantize_matmul")
    qlinear_conv("test_qlinear_conv_ms_grouped_strided", False)
    qlinear_conv("test_qlinear_conv_ms_per_channel", True)
    constant_qlinear_conv("test_qlinear_conv_constant_uint8_per_channel", np.uint8, np.int8, True,
                          {"pads": [1, 1, 1, 1]})
    constant_qlinear_conv("test_qlinear_conv_constant_int8_grouped_dilated", np.int8, np.int8, False,
                          {"group": 2, "dilations": [2, 2], "strides": [1, 2], "pads": [2, 1, 0, 2]})
    constant_qlinear_conv("test_qlinear_conv_constant_uint8_weights", np.uint8, np.uint8, True,
                          {"strides": [2, 2], "auto_pad": "SAME_UPPER"})
    constant_qlinear_conv("test_qlinear_conv_constant_uint8_depthwise", np.uint8, np.int8, True,
                          {"group": 16, "pads": [1, 1, 1, 1]}, channels=16)
    constant_qlinear_conv("test_qlinear_conv_constant_uint8_depthwise_strided", np.uint8, np.int8, True,
                          {"group": 16, "pads": [1, 1, 1, 1], "strides": [2, 2]}, channels=16)
    constant_qlinear_conv("test_qlinear_conv_constant_uint8_pointwise", np.uint8, np.int8, True, {},
                          channels=24, kernel=1)
    binary("test_qlinear_add_constant_uint8", "QLinearAdd", np.uint8, (2, 16, 7, 7), (2, 16, 7, 7), True)
    binary("test_qlinear_add_constant_int8", "QLinearAdd", np.int8, (3, 40), (3, 40), True)
    constant_qlinear_matmul("test_qlinear_matmul_constant_uint8_per_column", np.uint8, True)
    constant_qlinear_matmul("test_qlinear_matmul_constant_int8", np.int8, False)
    qgemm("test_qgemm_constant_uint8_output", False, False, True)
    qgemm("test_qgemm_constant_float_output_trans_b", True, True, True)
    print(f"wrote {len(os.listdir(OUT))} cases to {OUT}")


if __name__ == "__main__":
    main()
