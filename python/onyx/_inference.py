"""Inference with the API of ONNX Runtime's InferenceSession.

A script written for onnxruntime runs unchanged after ``import onyx as
onnxruntime`` for what is here: InferenceSession, SessionOptions, RunOptions,
get_available_providers and friends. Provider names may be Onyx's ("cpu",
"onednn", a plugin path) or ONNX Runtime's ("CPUExecutionProvider", ...).
What ONNX Runtime lacks: an explicit fallback policy and the partition and
memory reports.
"""
from __future__ import annotations

import enum
import json
import os
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _onyx
from ._errors import FailedPrecondition, InvalidArgument

# ONNX Runtime's provider names for Onyx's in-tree providers.
ORT_PROVIDER_NAMES = {
    "CPUExecutionProvider": "cpu",
    "DnnlExecutionProvider": "onednn",
    "CUDAExecutionProvider": "cuda",
    "ROCMExecutionProvider": "rocm",
}
FALLBACK_POLICIES = {"fail": 0, "warn": 1, "allow": 2}

_env: Optional[_onyx.Env] = None


def environment() -> _onyx.Env:
    """The process's one Onyx environment (created on first use)."""
    global _env
    if _env is None:
        _env = _onyx.Env()
    return _env


def set_default_logger_severity(level: int) -> None:
    """ONNX Runtime's levels: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal."""
    environment().set_log_level(min(max(int(level), 0), 3))


def _providers_json() -> List[Dict[str, Any]]:
    return json.loads(environment().providers_json())


def get_all_providers() -> List[str]:
    """Every provider plugin found on disk, available or not."""
    return [p["name"] for p in _providers_json()]


def get_available_providers() -> List[str]:
    """The providers that found a device here, in Onyx's names ("cpu", ...)."""
    return [p["name"] for p in _providers_json() if p.get("available")]


def get_device() -> str:
    return "GPU" if any(p in get_available_providers() for p in ("cuda", "rocm")) else "CPU"


class GraphOptimizationLevel(enum.IntEnum):
    """ONNX Runtime's levels, mapped onto Onyx's: DISABLE_ALL runs the graph as written, ENABLE_BASIC
    applies the rewrites that hold for any input shape, EXTENDED and ALL also fold values that follow from
    the declared input shapes (docs/architecture.md, "Graph optimization")."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted for compatibility: Onyx runs nodes in order, each on the intra-op threads."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class OrtExecutionProviderDevicePolicy(enum.IntEnum):
    """ONNX Runtime's device selection policies (1.22+), for a session given no providers. Onyx runs
    DEFAULT (the CPU provider), PREFER_CPU, PREFER_GPU (every GPU or accelerator device, then the CPU) and
    MAX_PERFORMANCE (times each candidate on the model and keeps the fastest); the others raise
    InvalidArgument (docs/architecture.md, "Device policies")."""

    DEFAULT = 0
    PREFER_CPU = 1
    PREFER_NPU = 2
    PREFER_GPU = 3
    MAX_PERFORMANCE = 4
    MAX_EFFICIENCY = 5
    MIN_OVERALL_POWER = 6


# OnyxDevicePolicy (onyx_c_api.h) of each policy Onyx runs.
_DEVICE_POLICIES = {OrtExecutionProviderDevicePolicy.DEFAULT: 0, OrtExecutionProviderDevicePolicy.PREFER_GPU: 1,
                    OrtExecutionProviderDevicePolicy.PREFER_CPU: 2, OrtExecutionProviderDevicePolicy.MAX_PERFORMANCE: 3}


def _optimization(level: int) -> int:
    """Onyx's level (0 off, 1 basic, 2 all) for an ONNX Runtime GraphOptimizationLevel."""
    level = int(level)
    if level < 0:
        raise InvalidArgument(f"graph_optimization_level {level} is negative")
    return min(level, 2)


class SessionOptions:
    """Options of an InferenceSession.

    intra_op_num_threads: threads inside one kernel (0: one per core).
    fallback: "fail", "warn" (default) or "allow": what happens to a node the
        first provider declines (Onyx's own; see docs/python.md).
    allow_reduced_precision: let providers compute in bf16 where they can.
    The other attributes are ONNX Runtime's and accepted for compatibility.
    """

    def __init__(self) -> None:
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.fallback = "warn"
        self.allow_reduced_precision = False
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_profiling = False
        self.profile_file_prefix = "onyx_profile"
        self.optimized_model_filepath = ""

    def set_provider_selection_policy(self, policy: OrtExecutionProviderDevicePolicy) -> None:
        """How a session given no providers chooses its devices (OrtExecutionProviderDevicePolicy)."""
        try:
            policy = OrtExecutionProviderDevicePolicy(policy)
        except ValueError:
            raise InvalidArgument(f"provider selection policy {policy!r}: not an OrtExecutionProviderDevicePolicy") from None
        if policy not in _DEVICE_POLICIES:
            runs = ", ".join(p.name for p in _DEVICE_POLICIES)
            raise InvalidArgument(f"provider selection policy {policy.name} is not one Onyx runs ({runs})")
        self.__dict__["_device_policy"] = policy

    def add_session_config_entry(self, key: str, value: str) -> None:
        self.__dict__.setdefault("_config", {})[key] = value

    def get_session_config_entry(self, key: str) -> str:
        return self.__dict__.get("_config", {})[key]


class RunOptions:
    """Options of runs, as ONNX Runtime's: ``run_tag`` starts each line logged
    during the runs (``[tag] message``); setting ``terminate`` to True (from
    any thread) stops the runs using these options now in progress, and runs
    started while it is True fail at once, until it is set back to False.
    The log levels are accepted for compatibility."""

    def __init__(self) -> None:
        self._native = _onyx.RunOptions()
        self._run_tag = ""
        self._terminate = False
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""

    @property
    def run_tag(self) -> str:
        return self._run_tag

    @run_tag.setter
    def run_tag(self, tag: str) -> None:
        self._native.set_tag(str(tag))
        self._run_tag = str(tag)

    @property
    def terminate(self) -> bool:
        return self._terminate

    @terminate.setter
    def terminate(self, value: bool) -> None:
        self._terminate = bool(value)
        if self._terminate:
            self._native.cancel()


_ORT_TYPE_NAMES = {"float32": "float", "float64": "double"}


_KIND_NAMES = {1: "seq", 2: "optional", 3: "map"}


def type_string(dtype: int, kind: int = 0) -> str:
    """ONNX Runtime's type string of an Onyx element type: "tensor(float)"; "seq", "optional" or "map"
    for the values the host carries (their element types are known only when a run returns them)."""
    if kind in _KIND_NAMES:
        return _KIND_NAMES[kind]
    name = _onyx.dtype_name(dtype)
    return f"tensor({_ORT_TYPE_NAMES.get(name, name)})"


class NodeArg:
    """An input or output of a model: name, type ("tensor(float)") and shape
    (ints, None for a dimension that is symbolic or unknown; None when the
    rank is unknown)."""

    def __init__(self, name: str, dtype: int, dims: Optional[Sequence[int]], kind: int = 0) -> None:
        self.name = name
        self.type = type_string(dtype, kind)
        self.kind = kind
        self.shape = None if dims is None else [d if d >= 0 else None for d in dims]
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


ProviderSpec = Union[str, Tuple[str, Mapping[str, Any]]]


def _provider_list(providers: Optional[Sequence[ProviderSpec]],
                   provider_options: Optional[Sequence[Mapping[str, Any]]]) -> List[Tuple[str, List[Tuple[str, str]]]]:
    if not providers:
        return [("cpu", [])]
    if provider_options is not None and len(provider_options) != len(providers):
        raise InvalidArgument("provider_options must have one entry per provider")
    out = []
    for k, spec in enumerate(providers):
        name, options = (spec, {}) if isinstance(spec, str) else spec
        if provider_options is not None:
            options = {**options, **provider_options[k]}
        name = ORT_PROVIDER_NAMES.get(name, name)
        if "device_id" in options:  # ORT's device index is the host's `device` option
            if "device" in options:
                raise InvalidArgument(f"provider {name}: device_id and device name the same thing; give one")
            options = {("device" if key == "device_id" else key): value for key, value in options.items()}
        out.append((name, [(str(key), str(value)) for key, value in options.items()]))
    return out


class InferenceSession:
    """A model placed on providers, ready to run.

    InferenceSession(path_or_bytes, sess_options=None, providers=None,
    provider_options=None, *, fallback=None): ``providers`` lists providers
    in priority order (names, or (name, options) pairs); the default is
    ["cpu"]. ``fallback`` ("fail", "warn", "allow") overrides
    sess_options.fallback.
    """

    def __init__(self, path_or_bytes: Union[str, bytes, os.PathLike], sess_options: Optional[SessionOptions] = None,
                 providers: Optional[Sequence[ProviderSpec]] = None,
                 provider_options: Optional[Sequence[Mapping[str, Any]]] = None, *, fallback: Optional[str] = None,
                 **kwargs: Any) -> None:
        self._options = sess_options or SessionOptions()
        policy = fallback or getattr(self._options, "fallback", "warn")
        if policy not in FALLBACK_POLICIES:
            raise InvalidArgument(f"fallback '{policy}': one of fail, warn, allow")
        device_policy = self._options.__dict__.get("_device_policy", OrtExecutionProviderDevicePolicy.DEFAULT)
        if device_policy != OrtExecutionProviderDevicePolicy.DEFAULT and providers is not None:
            raise InvalidArgument(f"providers {list(providers)} and the provider selection policy "
                                  f"{device_policy.name} exclude each other: give one")
        self._providers = [] if device_policy != OrtExecutionProviderDevicePolicy.DEFAULT else \
            _provider_list(providers, provider_options)
        model = path_or_bytes if isinstance(path_or_bytes, bytes) else os.fspath(path_or_bytes)
        self._model_path = None if isinstance(model, bytes) else model
        self._session = _onyx.Session(environment(), model, self._providers, FALLBACK_POLICIES[policy],
                                      int(self._options.intra_op_num_threads or 0),
                                      bool(getattr(self._options, "allow_reduced_precision", False)),
                                      _optimization(self._options.graph_optimization_level),
                                      _DEVICE_POLICIES[device_policy])
        self._inputs = [NodeArg(*m) for m in self._session.metadata(True)]
        self._outputs = [NodeArg(*m) for m in self._session.metadata(False)]
        # The providers the session runs, from its devices ("gpuemu:1" is gpuemu): those a policy chose, and
        # the CPU provider when nodes fell back to it; none that was unavailable here.
        self._active = []
        for device in self.partition_report().get("devices", []):
            name = device.split(":")[0]
            if name not in self._active:
                self._active.append(name)
        if getattr(self._options, "enable_profiling", False):
            self.start_profiling()

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
            run_options: Optional[RunOptions] = None) -> List[np.ndarray]:
        """Runs the model; returns the named outputs (all, in model order, when
        output_names is None or empty) as numpy arrays. Inputs are not copied:
        they must be C-contiguous. A sequence is a list of arrays, an empty
        optional None, a string tensor a numpy array of str (dtype object).
        The GIL is released while the model runs."""
        if not isinstance(input_feed, dict):
            input_feed = dict(input_feed)
        feed = {name: self._as_input(name, value) for name, value in input_feed.items()}
        if run_options is not None and run_options.terminate:
            raise FailedPrecondition("run cancelled (its run options): terminate is set")
        return self._session.run(list(output_names) if output_names else None, feed,
                                 run_options._native if run_options is not None else None)

    def _as_input(self, name: str, value: Any) -> Any:
        """Tensor inputs given as lists or scalars become arrays; sequences and optionals stay as given."""
        if value is None or isinstance(value, np.ndarray) or hasattr(value, "__dlpack__"):
            return value
        if any(a.name == name and a.kind != 0 for a in self._inputs):
            return value
        return np.asarray(value)

    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> List[NodeArg]:
        return []

    def get_providers(self) -> List[str]:
        """The providers the session runs, in priority order: those listed and available here (or chosen by a
        provider selection policy), and the CPU provider when nodes fell back to it."""
        return list(self._active)

    def get_provider_options(self) -> Dict[str, Dict[str, str]]:
        return {name: dict(options) for name, options in self._providers}

    def get_session_options(self) -> SessionOptions:
        return self._options

    def start_profiling(self) -> None:
        """Records a timing event per kernel (and per run) of the runs that follow (Onyx's)."""
        self._session.start_profiling()

    def end_profiling(self, path: Optional[str] = None) -> str:
        """Stops profiling and writes the Chrome trace (chrome://tracing, Perfetto) to ``path``, by default
        ``<sess_options.profile_file_prefix>_<date>_<time>.json`` as ONNX Runtime names it; returns the path."""
        trace = self._session.end_profiling()
        if path is None:
            prefix = getattr(self._options, "profile_file_prefix", "onyx_profile")
            path = f"{prefix}_{time.strftime('%Y-%m-%d_%H-%M-%S')}.json"
        scratch = f"{path}.tmp{os.getpid()}"
        with open(scratch, "w") as f:
            f.write(trace)
        os.replace(scratch, path)  # readers see the old file or the whole new one
        return path

    def partition_report(self) -> Dict[str, Any]:
        """Which node went to which provider and why, and the copies inserted."""
        return json.loads(self._session.partition_report())

    def memory_report(self, input_shapes: Optional[Mapping[str, Sequence[int]]] = None) -> Dict[str, Any]:
        """The static memory plan by device ({"cpu": {"arena_bytes", "lower_bound_bytes", ...}}) for these
        input shapes (declared shapes, unknown dims 1, for the rest)."""
        shapes = {name: [int(d) for d in dims] for name, dims in (input_shapes or {}).items()}
        return {entry["device"]: entry for entry in json.loads(self._session.memory_report(shapes))}
