"""onyx.InferenceSession: the ONNX Runtime-compatible API, Onyx's reports,
zero-copy arrays, and clear errors for what cannot be fed."""
import threading
import time

import numpy as np
import pytest

import onyx


def test_providers_are_listed():
    assert "cpu" in onyx.get_available_providers()
    assert set(onyx.get_available_providers()) <= set(onyx.get_all_providers())


def test_mlp_matches_numpy_float64(mlp_path):
    import onnx
    from onnx import numpy_helper
    weights = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(mlp_path).graph.initializer}
    session = onyx.InferenceSession(mlp_path, providers=["cpu"])
    x = np.random.default_rng(1).standard_normal((5, 784)).astype(np.float32)
    (logits,) = session.run(None, {"x": x})
    h = np.maximum(x.astype(np.float64) @ weights["w1"].T + weights["b1"], 0)
    reference = h @ weights["w2"].T + weights["b2"]
    # float32 GEMMs over 784 and 256 terms: about sqrt(784) float32 roundings of |x w| ~ 1.
    np.testing.assert_allclose(logits, reference, rtol=1e-4, atol=1e-4)
    assert logits.dtype == np.float32 and logits.shape == (5, 10)


def test_metadata_and_reports(cnn_path):
    options = onyx.SessionOptions()
    options.intra_op_num_threads = 1
    session = onyx.InferenceSession(cnn_path, options, providers=["CPUExecutionProvider"], fallback="fail")
    (x,) = session.get_inputs()
    assert (x.name, x.type, x.shape) == ("x", "tensor(float)", [None, 1, 28, 28])
    assert session.get_outputs()[0].name == "logits"
    assert session.get_providers() == ["cpu"]
    report = session.partition_report()
    # Conv + Relu + MaxPool run as one FusedConvMaxPool node after graph optimization.
    assert report["policy"] == "fail" and {n["op"] for n in report["nodes"]} >= {"FusedConvMaxPool", "Gemm"}
    assert all(n["device"].startswith("cpu") for n in report["nodes"])
    memory = session.memory_report({"x": [8, 1, 28, 28]})
    # The largest activation: the first FusedConvMaxPool's output, [8, 8, 14, 14] float32.
    assert memory["cpu"]["arena_bytes"] >= memory["cpu"]["lower_bound_bytes"] >= 8 * 8 * 14 * 14 * 4


def test_outputs_by_name_and_bytes_model(mlp_path):
    with open(mlp_path, "rb") as f:
        session = onyx.InferenceSession(f.read())
    x = np.ones((2, 784), np.float32)
    assert np.array_equal(session.run(["logits"], {"x": x})[0], session.run(None, {"x": x})[0])


def test_inputs_are_read_in_place_and_outputs_own_their_memory(mlp_path):
    session = onyx.InferenceSession(mlp_path)
    x = np.zeros((3, 784), np.float32)
    first = session.run(None, {"x": x})[0]
    x[:] = 1  # the next run sees the new values: the array itself was read
    second = session.run(None, {"x": x})[0]
    assert not np.array_equal(first, second)
    del session  # outputs outlive the session
    assert np.isfinite(second).all() and second.flags["OWNDATA"] is False


def test_runs_concurrently_from_threads(mlp_path):
    session = onyx.InferenceSession(mlp_path)
    xs = [np.random.default_rng(k).standard_normal((4, 784)).astype(np.float32) for k in range(4)]
    expected = [session.run(None, {"x": x})[0] for x in xs]
    results = [None] * 4

    def work(k):
        for _ in range(20):
            results[k] = session.run(None, {"x": xs[k]})[0]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert np.array_equal(results[k], expected[k])


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                   np.uint32, np.int64, np.uint64, np.bool_, np.complex64, np.complex128])
def test_every_numpy_dtype_round_trips(tmp_path, dtype):
    import onnx
    from onnx import helper, mapping
    elem = mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "id",
                              [helper.make_tensor_value_info("x", elem, [2, 3])],
                              [helper.make_tensor_value_info("y", elem, [2, 3])])
    path = str(tmp_path / "identity.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    x = (np.arange(6).reshape(2, 3) % 2 == 1) if dtype is np.bool_ else np.arange(6).reshape(2, 3).astype(dtype)
    (y,) = onyx.InferenceSession(path).run(None, {"x": x})
    assert y.dtype == x.dtype and np.array_equal(y, x)


def test_bfloat16_travels_as_uint16_view(tmp_path):
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], "bf16",
                              [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    path = str(tmp_path / "bf16.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    values = np.array([1.5, -2.0, 0.25], np.float32)
    raw = (values.view(np.uint32) >> 16).astype(np.uint16)  # exact in bfloat16
    (y,) = onyx.InferenceSession(path).run(None, {"x": raw})
    assert np.array_equal(y, values)


def test_bad_feeds_raise_clear_errors(mlp_path):
    session = onyx.InferenceSession(mlp_path)
    good = np.zeros((2, 784), np.float32)
    with pytest.raises(onyx.InvalidArgument, match="'nope' is not an input of the model.*x"):
        session.run(None, {"nope": good})
    with pytest.raises(onyx.OnyxError, match="x") as wrong_dtype:
        session.run(None, {"x": good.astype(np.float64)})
    assert "float64" in str(wrong_dtype.value) or "element type" in str(wrong_dtype.value)
    with pytest.raises(onyx.OnyxError, match="x"):
        session.run(None, {"x": np.zeros((2, 100), np.float32)})
    with pytest.raises(ValueError, match="not C-contiguous.*ascontiguousarray"):
        session.run(None, {"x": np.zeros((784, 2), np.float32).T})
    with pytest.raises(TypeError, match="strings or Python objects"):
        session.run(None, {"x": np.array([["a"] * 784], dtype=object)})
    with pytest.raises(onyx.OnyxError, match="x"):
        session.run(None, {})
    with pytest.raises(onyx.OnyxError, match="missing_output"):
        session.run(["missing_output"], {"x": good})


def test_bad_models_raise_clear_errors(tmp_path):
    with pytest.raises(onyx.NotFound, match="does_not_exist.onnx"):
        onyx.InferenceSession(str(tmp_path / "does_not_exist.onnx"))
    with pytest.raises(onyx.OnyxError):
        onyx.InferenceSession(b"this is not a model")
    with pytest.raises(onyx.InvalidArgument, match="fallback"):
        onyx.InferenceSession(b"", fallback="sometimes")


def test_profiling_writes_a_chrome_trace(cnn_path, tmp_path, monkeypatch):
    import json
    monkeypatch.chdir(tmp_path)
    options = onyx.SessionOptions()
    options.enable_profiling = True  # ONNX Runtime's switch: profiles from creation
    session = onyx.InferenceSession(cnn_path, options)
    x = np.zeros((2, 1, 28, 28), np.float32)
    session.run(None, {"x": x})
    session.run(None, {"x": x})
    path = session.end_profiling()
    assert path.startswith("onyx_profile_") and path.endswith(".json")
    events = json.load(open(path))["traceEvents"]
    runs = [e for e in events if e["cat"] == "run"]
    kernels = [e for e in events if e["cat"] == "kernel"]
    assert len(runs) == 2 and len(kernels) == 2 * int(runs[0]["args"]["steps"])
    assert {e["args"]["op"] for e in kernels} >= {"FusedConvMaxPool", "Gemm"} and all(e["ph"] == "X" for e in events)
    with pytest.raises(onyx.FailedPrecondition, match="not profiling"):
        session.end_profiling()


def _values_model() -> bytes:
    """seq (sequence of float tensors), opt (optional float tensor) and s (strings) in; their
    length, presence, concatenation and the sequence itself out."""
    from onnx import TensorProto, helper
    seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    opt_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [None]))
    graph = helper.make_graph(
        [helper.make_node("SequenceLength", ["seq"], ["n"]),
         helper.make_node("OptionalHasElement", ["opt"], ["has"]),
         helper.make_node("StringConcat", ["s", "s"], ["ss"]),
         helper.make_node("Identity", ["seq"], ["seq_out"])],
        "values",
        [helper.make_value_info("seq", seq_type), helper.make_value_info("opt", opt_type),
         helper.make_tensor_value_info("s", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("has", TensorProto.BOOL, []),
         helper.make_tensor_value_info("ss", TensorProto.STRING, [2]),
         helper.make_value_info("seq_out", seq_type)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]).SerializeToString()


def test_sequences_optionals_and_strings_in_and_out():
    session = onyx.InferenceSession(_values_model(), providers=["cpu"])
    kinds = {a.name: a.type for a in session.get_inputs()}
    assert kinds == {"seq": "seq", "opt": "optional", "s": "tensor(string)"}
    items = [np.arange(3, dtype=np.float32), np.full((2, 2), 7, np.float32)]
    strings = np.array(["né", "b"], dtype=object)
    n, has, ss, seq_out = session.run(None, {"seq": items, "opt": None, "s": strings})
    assert int(n) == 2 and not bool(has)
    assert ss.dtype == object and ss.tolist() == ["néné", "bb"]
    assert isinstance(seq_out, list) and len(seq_out) == 2
    for got, want in zip(seq_out, items):
        np.testing.assert_array_equal(got, want)
    _, has, _, _ = session.run(None, {"seq": [], "opt": np.ones(4, np.float32), "s": np.array(["x", "y"])})
    assert bool(has)


def test_values_that_do_not_fit_are_named():
    session = onyx.InferenceSession(_values_model(), providers=["cpu"])
    good = {"seq": [np.ones(2, np.float32)], "opt": None, "s": np.array(["a", "b"], dtype=object)}
    with pytest.raises(TypeError, match="input 'seq' is a sequence: pass a list"):
        session.run(None, {**good, "seq": np.ones(2, np.float32)})
    with pytest.raises(onyx.InvalidArgument, match="element type"):
        session.run(None, {**good, "seq": [np.ones(2, np.float32), np.ones(2, np.int64)]})
    with pytest.raises(TypeError, match="element 1 is a <class 'int'>"):
        session.run(None, {**good, "s": np.array(["a", 3], dtype=object)})
    with pytest.raises(onyx.InvalidArgument, match="UTF-8"):
        session.run(None, {**good, "s": np.array([b"a", b"\xff"], dtype=object)})


def test_maps_in_and_out_as_dicts():
    """ZipMap's rows come back as dicts (as ONNX Runtime returns them); DictVectorizer reads a dict."""
    from onnx import TensorProto, TypeProto, helper

    def map_type(key: int) -> TypeProto:
        t = TypeProto()
        t.map_type.key_type = key
        t.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
        return t

    float_map = map_type(TensorProto.STRING)
    graph = helper.make_graph(
        [helper.make_node("ZipMap", ["scores"], ["rows"], domain="ai.onnx.ml", classlabels_int64s=[10, 20]),
         helper.make_node("DictVectorizer", ["counts"], ["vector"], domain="ai.onnx.ml",
                          string_vocabulary=["a", "b", "c"])],
        "maps",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 2]), helper.make_value_info("counts", float_map)],
        [helper.make_value_info("rows", helper.make_sequence_type_proto(map_type(TensorProto.INT64))),
         helper.make_tensor_value_info("vector", TensorProto.FLOAT, [1, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    session = onyx.InferenceSession(model.SerializeToString(), providers=["cpu"])
    assert [a.type for a in session.get_inputs()] == ["tensor(float)", "map"]
    rows, vector = session.run(None, {"scores": np.array([[0.25, 0.75], [1.0, 0.0]], np.float32),
                                      "counts": {"c": 2.0, "a": 0.5, "unknown": 9.0}})
    assert rows == [{10: 0.25, 20: 0.75}, {10: 1.0, 20: 0.0}]
    np.testing.assert_array_equal(vector, np.array([[0.5, 0.0, 2.0]], np.float32))
    with pytest.raises(TypeError, match="input 'counts' is a map: pass a dict"):
        session.run(None, {"scores": np.zeros((2, 2), np.float32), "counts": [1.0]})


def _counting_loop_model() -> bytes:
    """y = x + trips: a Loop of `trips` iterations (an input), each adding 1."""
    from onnx import TensorProto, helper
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["v_in", "one"], ["v_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "x"], ["y"], body=body)],
        "counting",
        [helper.make_tensor_value_info("trips", TensorProto.INT64, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_run_options_terminate_stops_that_run_only():
    session = onyx.InferenceSession(_counting_loop_model(), providers=["cpu"])
    x = np.zeros(1, np.float32)
    forever = {"trips": np.array(10**12, np.int64), "x": x}
    options = onyx.RunOptions()
    options.run_tag = "watchdog-test"
    outcome = {}

    def long_run():
        try:
            session.run(None, forever, options)
            outcome["result"] = "finished"
        except onyx.FailedPrecondition as e:
            outcome["result"] = str(e)
        outcome["ended"] = time.monotonic()

    worker = threading.Thread(target=long_run)
    worker.start()
    time.sleep(0.2)
    other = session.run(None, {"trips": np.array(3, np.int64), "x": x})  # not affected
    cancelled_at = time.monotonic()
    options.terminate = True
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert "run cancelled (its run options)" in outcome["result"]
    assert outcome["ended"] - cancelled_at < 1.0
    assert float(other[0][0]) == 3.0
    # While terminate is set, runs with these options fail at once; reset, they run.
    with pytest.raises(onyx.FailedPrecondition, match="terminate is set"):
        session.run(None, {"trips": np.array(3, np.int64), "x": x}, options)
    options.terminate = False
    assert float(session.run(None, {"trips": np.array(5, np.int64), "x": x}, options)[0][0]) == 5.0


def test_provider_selection_policies(mlp_path, tmp_path):
    # ONNX Runtime's policies for a session given no providers: the ones Onyx runs choose devices (here only
    # the CPU provider is a candidate, so each chooses it and the MLP runs); the others, and providers given
    # with a policy, are refused with what to do.
    x = np.random.default_rng(0).standard_normal((2, 784)).astype(np.float32)
    want = onyx.InferenceSession(mlp_path).run(None, {"x": x})[0]
    for policy in (onyx.OrtExecutionProviderDevicePolicy.PREFER_CPU, onyx.OrtExecutionProviderDevicePolicy.PREFER_GPU,
                   onyx.OrtExecutionProviderDevicePolicy.MAX_PERFORMANCE):
        options = onyx.SessionOptions()
        options.set_provider_selection_policy(policy)
        session = onyx.InferenceSession(mlp_path, options)
        assert session.get_providers() == ["cpu"], policy
        np.testing.assert_array_equal(session.run(None, {"x": x})[0], want)
    timed = session.partition_report()["device_policy"]
    assert timed["policy"] == "fastest" and timed["chosen"], timed
    options = onyx.SessionOptions()
    with pytest.raises(onyx.InvalidArgument, match="PREFER_NPU is not one Onyx runs"):
        options.set_provider_selection_policy(onyx.OrtExecutionProviderDevicePolicy.PREFER_NPU)
    options.set_provider_selection_policy(onyx.OrtExecutionProviderDevicePolicy.PREFER_GPU)
    with pytest.raises(onyx.InvalidArgument, match="exclude each other"):
        onyx.InferenceSession(mlp_path, options, providers=["cpu"])


def test_get_providers_names_the_cpu_fallback(tmp_path):
    # A node the listed provider declines runs on the CPU provider, which get_providers then lists too
    # (Sin is not one the oneDNN provider runs).
    if "onednn" not in onyx.get_available_providers():
        pytest.skip("the oneDNN provider is not available here")
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Sin", ["x"], ["y"])], "sin",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    session = onyx.InferenceSession(model.SerializeToString(), providers=["onednn"], fallback="allow")
    assert session.get_providers() == ["onednn", "cpu"]
    assert session.run(None, {"x": np.zeros(3, np.float32)})[0].tolist() == [0.0, 0.0, 0.0]


def test_ort_device_id_is_the_device_option(mlp_path):
    # ONNX Runtime's provider option device_id picks the device as Onyx's `device` does: device 0 of the CPU
    # provider runs, device 3 does not exist and the error lists the provider's devices.
    x = np.zeros((1, 784), np.float32)
    session = onyx.InferenceSession(mlp_path, providers=["CPUExecutionProvider"], provider_options=[{"device_id": 0}],
                                    fallback="fail")
    assert session.run(None, {"x": x})[0].shape == (1, 10)
    with pytest.raises(onyx.InvalidArgument, match="has no device 3"):
        onyx.InferenceSession(mlp_path, providers=[("cpu", {"device_id": 3})], fallback="fail")
    with pytest.raises(onyx.InvalidArgument, match="give one"):
        onyx.InferenceSession(mlp_path, providers=[("cpu", {"device_id": 0, "device": 0})])
