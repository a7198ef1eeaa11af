"""generate_artifacts: ONNX Runtime training's artifact generator, on Onyx.

Writes, into ``artifact_directory``, the files ORT Training writes, by the same
names: ``<prefix>training_model.onnx``, ``<prefix>eval_model.onnx``,
``<prefix>optimizer_model.onnx`` and ``<prefix>checkpoint``. Onyx's own
formats are inside (ONNX models with Onyx's conventions, an Onyx checkpoint);
they are read by onyx.training.api, not by ONNX Runtime.
"""
from __future__ import annotations

import enum
import os
import shutil
import tempfile
from typing import Any, List, Optional, Sequence, Union

from .. import _onyx
from .._errors import InvalidArgument


class LossType(enum.Enum):
    MSELoss = "mse"
    CrossEntropyLoss = "crossentropy"
    BCEWithLogitsLoss = "bcewithlogits"
    L1Loss = "l1"


class OptimType(enum.Enum):
    AdamW = "adamw_hf"  # ORT Training's AdamW (Hugging Face semantics); "adamw" is PyTorch's
    SGD = "sgd"
    LAMB = "lamb"  # Onyx's; ORT Training has no LAMB artifact


_FILES = {"training.onnx": "training_model.onnx", "eval.onnx": "eval_model.onnx",
          "optimizer.onnx": "optimizer_model.onnx", "checkpoint.ckpt": "checkpoint"}


def _model_path(model: Any, scratch: str) -> str:
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    serialize = getattr(model, "SerializeToString", None)
    if serialize is None:
        raise InvalidArgument("model must be an onnx.ModelProto or a path to an ONNX file")
    path = os.path.join(scratch, "forward.onnx")
    with open(path, "wb") as f:
        f.write(serialize())
    return path


def generate_artifacts(model: Any, requires_grad: Optional[Sequence[str]] = None,
                       frozen_params: Optional[Sequence[str]] = None,
                       loss: Optional[Union[LossType, str]] = None,
                       optimizer: Optional[Union[OptimType, str]] = None,
                       artifact_directory: Optional[Union[str, os.PathLike]] = None, prefix: str = "",
                       ort_format: bool = False, custom_op_library: Any = None,
                       additional_output_names: Optional[Sequence[str]] = None,
                       nominal_checkpoint: bool = False, loss_input_names: Optional[Sequence[str]] = None,
                       **onyx_options: Any) -> None:
    """Makes the training artifacts of ``model`` (an onnx.ModelProto or a path).

    requires_grad / frozen_params: initializers that get gradients / stay
    fixed, as checkpoint parameters (default: every float initializer
    trains); with requires_grad given, the initializers in neither list stay
    in the models as constants, as ORT's generate_artifacts keeps them. loss: a LossType (ORT's
    default, none, is refused: Onyx builds the loss into the training model).
    optimizer: AdamW (default), SGD or LAMB. additional_output_names: forward
    outputs the training and eval models return after the loss.
    onyx_options: further options of onyx_training_generate_artifacts
    (reduction, ignore_index, class_axis, label_dtype, param_group, precision),
    e.g. ``precision="bf16"``.
    """
    if loss is None:
        raise InvalidArgument("generate_artifacts needs a loss (a LossType): Onyx builds the loss into the training model")
    if ort_format:
        raise InvalidArgument("ort_format: Onyx writes ONNX models, not ORT's flatbuffer format")
    if custom_op_library is not None:
        raise InvalidArgument("custom_op_library: Onyx's ops come from provider plugins, not custom-op libraries")
    if loss_input_names is not None:
        raise InvalidArgument("loss_input_names: Onyx's built-in losses read the model's first output "
                              "(pass loss_output=NAME to choose another)")
    options: List[tuple] = []
    options += [("requires_grad", name) for name in requires_grad or []]
    options += [("frozen", name) for name in frozen_params or []]
    options.append(("loss", loss.value if isinstance(loss, LossType) else str(loss)))
    optimizer = OptimType.AdamW if optimizer is None else optimizer
    options.append(("optimizer", optimizer.value if isinstance(optimizer, OptimType) else str(optimizer)))
    options.append(("forward_outputs", ",".join(additional_output_names or [])))
    if nominal_checkpoint:
        options.append(("nominal", "1"))
    for key, value in onyx_options.items():
        for v in value if isinstance(value, (list, tuple)) else [value]:
            options.append((key, str(v)))
    out_dir = os.fspath(artifact_directory) if artifact_directory is not None else os.getcwd()
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".onyx-artifacts-") as scratch:
        _onyx.generate_artifacts(_model_path(model, scratch), options, os.path.join(scratch, "out"))
        for onyx_name, ort_name in _FILES.items():
            os.replace(os.path.join(scratch, "out", onyx_name), os.path.join(out_dir, prefix + ort_name))
        shutil.rmtree(os.path.join(scratch, "out"), ignore_errors=True)
