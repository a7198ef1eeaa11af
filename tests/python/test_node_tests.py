"""On every ONNX node test the CPU provider passes, the Python API gives
exactly (bitwise) what the C++ API gives: the same model, inputs and thread
count through onyx.InferenceSession and through `onyx run`, the C++ tool
bundled in the package. Sequences (lists), optionals (None when empty) and
string tensors (numpy arrays of str) included."""
import concurrent.futures
import fnmatch
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest
from onnx import ModelProto, OptionalProto, SequenceProto, TensorProto

import onyx
from conftest import REPO, node_test_corpus

PACKED_BITS = {TensorProto.UINT4 if hasattr(TensorProto, "UINT4") else 21: 4, 22: 4, 23: 4, 25: 2, 26: 2}
RAW_VIEWS = {16: np.uint16, 17: np.uint8, 18: np.uint8, 19: np.uint8, 20: np.uint8, 24: np.uint8}
NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
         10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64, 14: np.complex64, 15: np.complex128}


def cli():
    bundled = pathlib.Path(onyx.__file__).parent / "bin" / "onyx"
    return os.environ.get("ONYX_CLI") or str(bundled)


def expected_failures():
    globs = []
    listed = os.environ.get("ONYX_CPU_EXPECTATIONS") or REPO / "providers" / "cpu" / "conformance.txt"
    for line in pathlib.Path(listed).read_text().splitlines():
        fields = line.split(maxsplit=3)
        if len(fields) >= 3 and fields[1] == "onnx-node":
            globs.append(fields[2])
    return globs


def tensor_bytes(t: TensorProto) -> bytes:
    """The tensor's data as stored (row-major, packed types packed), from raw_data or the typed fields."""
    if t.HasField("raw_data"):
        return t.raw_data
    if t.data_type in (1,):
        return np.array(t.float_data, np.float32).tobytes()
    if t.data_type == 11:
        return np.array(t.double_data, np.float64).tobytes()
    if t.data_type == 7:
        return np.array(t.int64_data, np.int64).tobytes()
    if t.data_type in (12, 13):
        return np.array(t.uint64_data, NUMPY[t.data_type]).tobytes()
    if t.data_type == 14:
        return np.array(t.float_data, np.float32).tobytes()
    if t.data_type == 15:
        return np.array(t.double_data, np.float64).tobytes()
    # int32_data carries every other type, one element per entry (packed types: one packed byte per entry).
    width = {2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 9: np.uint8, 10: np.uint16,
             16: np.uint16}.get(t.data_type, np.uint8)
    return np.array(t.int32_data, np.int64).astype(width).tobytes()


def to_numpy(t: TensorProto):
    """An array the Python API takes for this tensor (raw views, packed types one element per byte)."""
    dims = tuple(t.dims)
    data = tensor_bytes(t)
    if t.data_type in NUMPY:
        return np.frombuffer(data, NUMPY[t.data_type]).reshape(dims)
    if t.data_type in RAW_VIEWS:
        return np.frombuffer(data, RAW_VIEWS[t.data_type]).reshape(dims)
    if t.data_type in PACKED_BITS:
        bits = PACKED_BITS[t.data_type]
        count = int(np.prod(dims, dtype=np.int64))
        raw = np.frombuffer(data, np.uint8)  # packed in raw_data and in int32_data (one byte per entry) alike
        per = 8 // bits
        packed_values = np.array([(raw[i // per] >> (bits * (i % per))) & ((1 << bits) - 1) for i in range(count)],
                                 np.uint8)
        return packed_values.reshape(dims)
    raise TypeError(f"element type {t.data_type}")


def tensor_value(t: TensorProto):
    """What the Python API takes and returns for a TensorProto: strings as a numpy array of str."""
    if t.data_type == TensorProto.STRING:
        return np.array([s.decode("utf-8") for s in t.string_data] or [], dtype=object).reshape(tuple(t.dims))
    return to_numpy(t)


def value_of(kind: str, data: bytes):
    """The Python value of a value file of the declared kind (tensor, sequence or optional)."""
    if kind == "sequence_type":
        s = SequenceProto()
        s.ParseFromString(data)
        return [tensor_value(t) for t in s.tensor_values]
    if kind == "optional_type":
        o = OptionalProto()
        o.ParseFromString(data)
        if o.HasField("tensor_value"):
            return tensor_value(o.tensor_value)
        if o.HasField("sequence_value"):
            return [tensor_value(t) for t in o.sequence_value.tensor_values]
        return None
    t = TensorProto()
    t.ParseFromString(data)
    return t


def same(py, cpp, where: str):
    """None when the Python value equals the C++ one (a TensorProto, or lists and None around them)."""
    if isinstance(cpp, list) or cpp is None:
        if (cpp is None) != (py is None) or (cpp is not None and (not isinstance(py, list) or len(py) != len(cpp))):
            return f"{where}: {type(py).__name__} in Python, {type(cpp).__name__} in C++"
        for k, (p, c) in enumerate(zip(py or [], cpp or [])):
            why = same(p, c, f"{where}[{k}]")
            if why:
                return why
        return None
    if isinstance(cpp, np.ndarray):  # an element read back from a sequence or optional file
        if py.dtype == object or cpp.dtype == object:
            return None if py.shape == cpp.shape and py.tolist() == cpp.tolist() else f"{where}: strings differ"
        return None if py.shape == cpp.shape and py.tobytes() == cpp.tobytes() else f"{where}: values differ"
    t = cpp
    if t.data_type == TensorProto.STRING:
        want = [s.decode("utf-8") for s in t.string_data]
        ok = tuple(py.shape) == tuple(t.dims) and py.reshape(-1).tolist() == want
        return None if ok else f"{where}: strings differ"
    if tuple(t.dims) != tuple(py.shape) and t.data_type not in PACKED_BITS:
        return f"{where}: shape {py.shape} in Python, {tuple(t.dims)} in C++"
    if as_stored_bytes(np.ascontiguousarray(py), t.data_type) != tensor_bytes(t):
        return f"{where}: bytes differ"
    return None


def as_stored_bytes(array: np.ndarray, data_type: int) -> bytes:
    """What Onyx stores for a Python output: packed types repacked, others as they are."""
    if data_type not in PACKED_BITS:
        return array.tobytes()
    bits = PACKED_BITS[data_type]
    per = 8 // bits
    flat = array.reshape(-1).view(np.uint8) & ((1 << bits) - 1)
    out = np.zeros((flat.size + per - 1) // per, np.uint8)
    for i, v in enumerate(flat):
        out[i // per] |= v << (bits * (i % per))
    return out.tobytes()


def compare_case(case: pathlib.Path, scratch: pathlib.Path):
    """None when Python and C++ agree bit for bit on every data set, else what differs."""
    model = ModelProto()
    model.ParseFromString((case / "model.onnx").read_bytes())
    initialized = {t.name for t in model.graph.initializer}
    inputs = [(i.name, i.type.WhichOneof("value")) for i in model.graph.input if i.name not in initialized]
    outputs = [(o.name, o.type.WhichOneof("value")) for o in model.graph.output]
    options = onyx.SessionOptions()
    options.intra_op_num_threads = 1
    session = onyx.InferenceSession(str(case / "model.onnx"), options, providers=["cpu"], fallback="fail")
    for data_set in sorted(case.glob("test_data_set_*")):
        feed, args = {}, []
        for k, (name, kind) in enumerate(inputs):
            path = data_set / f"input_{k}.pb"
            if not path.exists():
                continue  # an optional input the data set leaves out
            value = value_of(kind, path.read_bytes())
            feed[name] = tensor_value(value) if isinstance(value, TensorProto) else value
            args += ["--input", f"{name}={path}"]
        out_dir = scratch / case.name / data_set.name
        run = subprocess.run([cli(), "run", str(case / "model.onnx"), "--provider", "cpu", "--fallback", "fail",
                              "--threads", "1", "--output-dir", str(out_dir), *args],
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            return f"onyx run failed: {run.stderr.strip()[-300:]}"
        ours = session.run(None, feed)
        for (name, kind), value in zip(outputs, ours):
            cpp = value_of(kind, (out_dir / f"{name}.pb").read_bytes())
            why = same(value, cpp, f"{data_set.name} output '{name}'")
            if why:
                return why
    shutil.rmtree(scratch / case.name, ignore_errors=True)
    return None


def test_python_equals_cpp_bitwise_on_passing_node_tests(tmp_path):
    corpus = node_test_corpus()
    if not corpus.is_dir():
        pytest.skip(f"the ONNX node tests are not at {corpus} (set ONYX_CONFORMANCE_CORPUS)")
    assert os.access(cli(), os.X_OK), f"the C++ tool is missing: {cli()}"
    failing = expected_failures()
    cases = [c for c in sorted(corpus.iterdir()) if (c / "model.onnx").exists()
             and not any(fnmatch.fnmatchcase(c.name, g) for g in failing)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = dict(zip(cases, pool.map(lambda c: _guarded(c, tmp_path), cases)))
    mismatches = {c.name: r for c, r in results.items() if r is not None}
    print(f"{len(cases) - len(mismatches)} of {len(cases)} passing node tests equal bitwise")
    assert cases
    assert not mismatches, "\n".join(f"{k}: {v}" for k, v in sorted(mismatches.items())[:40])


def _guarded(case, scratch):
    try:
        return compare_case(case, scratch)
    except Exception as e:  # a Python-side failure is a mismatch, reported with the case
        return f"{type(e).__name__}: {e}"
