"""The installed package: what the wheel carries, the `onyx` console script,
type stubs, and the GIL released while a model runs."""
import pathlib
import subprocess
import sys
import threading
import time

import numpy as np

import onyx

PACKAGE = pathlib.Path(onyx.__file__).parent


def test_wheel_carries_the_core_the_plugins_and_the_tool():
    assert list(PACKAGE.glob("lib/libonyx.so*")), "libonyx"
    for plugin in ("providers/libonyx_provider_cpu.so", "optimizers/libonyx_optimizer_adamw.so",
                   "optimizers/libonyx_optimizer_adamw_hf.so", "optimizers/libonyx_optimizer_sgd.so",
                   "optimizers/libonyx_optimizer_lamb.so"):
        assert (PACKAGE / "lib" / "onyx" / plugin).is_file(), plugin
    assert (PACKAGE / "bin" / "onyx").is_file()
    assert (PACKAGE / "_onyx.pyi").is_file() and (PACKAGE / "py.typed").is_file()
    assert not str(PACKAGE).startswith(str(pathlib.Path(__file__).resolve().parents[2] / "python")), \
        "the tests must run against the installed package, not the source tree"


def test_console_script_runs_the_cli():
    script = pathlib.Path(sys.executable).parent / "onyx"
    result = subprocess.run([str(script), "providers"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "cpu" in result.stdout


def test_public_api_is_documented():
    import onyx.torch
    from onyx.training import api, artifacts
    for obj in (onyx.InferenceSession, onyx.InferenceSession.run, onyx.SessionOptions, onyx.get_available_providers,
                api.CheckpointState, api.Module, api.Optimizer, api.LinearLRScheduler, artifacts.generate_artifacts,
                onyx.torch.OnyxModule, onyx.InferenceSession.partition_report, onyx.InferenceSession.memory_report):
        assert obj.__doc__ and obj.__doc__.strip(), obj


def test_the_gil_is_released_while_a_model_runs(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    # One run of a few seconds' work: 6 chained 768x768 MatMuls on 768 rows.
    w = numpy_helper.from_array(np.eye(768, dtype=np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x" if k == 0 else f"h{k}", "w"], [f"h{k + 1}" if k < 5 else "y"])
             for k in range(6)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [768, 768])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [768, 768])], [w])
    path = str(tmp_path / "chain.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    options = onyx.SessionOptions()
    options.intra_op_num_threads = 1
    session = onyx.InferenceSession(path, options)
    x = np.ones((768, 768), np.float32)
    session.run(None, {"x": x})
    span = {}

    def worker():
        span["start"] = time.perf_counter()
        session.run(None, {"x": x})
        span["end"] = time.perf_counter()

    thread = threading.Thread(target=worker)
    ticks = []
    thread.start()
    while thread.is_alive():
        ticks.append(time.perf_counter())  # Python work on the main thread
    thread.join()
    inside = [t for t in ticks if span["start"] + 0.002 < t < span["end"] - 0.002]
    # With the GIL held for the whole run the main thread could not tick inside it.
    assert span["end"] - span["start"] > 0.01
    assert len(inside) > 100, (len(inside), span["end"] - span["start"])
