"""Onyx: run and train ONNX models on pluggable hardware.

Inference with ONNX Runtime's API (``import onyx as onnxruntime`` works for
InferenceSession scripts), on-device training in ``onyx.training``, and a
PyTorch module wrapper that trains through Onyx in ``onyx.torch``. See
docs/python.md.
"""
from . import _errors, _onyx
from ._errors import (DataLoss, FailedPrecondition, Incompatible, InternalError, InvalidArgument, NotFound,
                      OnyxError, OutOfMemory, Unavailable)
from ._inference import (ExecutionMode, GraphOptimizationLevel, InferenceSession, NodeArg,
                         OrtExecutionProviderDevicePolicy, RunOptions, SessionOptions, get_all_providers,
                         get_available_providers, get_device, set_default_logger_severity)

_onyx._set_error_types(OnyxError, _errors.BY_CODE)

__version__ = _onyx.version()

__all__ = [
    "InferenceSession", "SessionOptions", "RunOptions", "NodeArg", "GraphOptimizationLevel", "ExecutionMode",
    "OrtExecutionProviderDevicePolicy",
    "get_available_providers", "get_all_providers", "get_device", "set_default_logger_severity",
    "OnyxError", "InvalidArgument", "NotFound", "Unavailable", "OutOfMemory", "Incompatible", "FailedPrecondition",
    "DataLoss", "InternalError", "__version__",
]
