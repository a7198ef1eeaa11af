"""Shared pieces of the Python package's tests: small real models written
with the onnx package, the node-test corpus, and what each test needs."""
import os
import pathlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

REPO = pathlib.Path(__file__).resolve().parents[2]


def _init(name, shape, rng, scale=0.1):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def make_mlp(path, seed=0):
    """784-256-10 MLP (Gemm, Relu), symbolic batch: what image classifiers export."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["logits"], transB=1)]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 784])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        [_init("w1", (256, 784), rng, 0.05), _init("b1", (256,), rng), _init("w2", (10, 256), rng),
         _init("b2", (10,), rng)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


def make_cnn(path, seed=0):
    """Conv-Relu-MaxPool-Flatten-Gemm on 1x28x28 images."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "cw", "cb"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "w", "b"], ["logits"], transB=1)]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 28, 28])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        [_init("cw", (8, 1, 3, 3), rng, 0.3), _init("cb", (8,), rng), _init("w", (10, 8 * 14 * 14), rng, 0.02),
         _init("b", (10,), rng)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


@pytest.fixture
def mlp_path(tmp_path):
    return make_mlp(tmp_path / "mlp.onnx")


@pytest.fixture
def cnn_path(tmp_path):
    return make_cnn(tmp_path / "cnn.onnx")


def node_test_corpus():
    """The ONNX node tests (ONYX_CONFORMANCE_CORPUS, else ../shared beside the repository)."""
    corpus = os.environ.get("ONYX_CONFORMANCE_CORPUS") or str(REPO.parent / "shared" / "onnx-backend-tests" / "node")
    return pathlib.Path(corpus)


def require(module_name):
    """The module, or a skip that names what is missing (shown by pytest -rs)."""
    return pytest.importorskip(module_name, reason=f"{module_name} is not installed (scripts/python-venv.sh installs it)")
