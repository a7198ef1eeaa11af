"""The on-device training API of ``onnxruntime.training.api``, on Onyx.

CheckpointState holds the parameters, optimizer state and properties;
Module runs the training and eval models against it; Optimizer updates it;
the schedulers set the learning rate. Steps run in Onyx's C++ core with the
GIL released.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Iterator, List, MutableMapping, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _onyx
from .._errors import FailedPrecondition, InvalidArgument, NotFound
from .._inference import FALLBACK_POLICIES, SessionOptions, _provider_list, environment

PathLike = Union[str, os.PathLike]


class OrtValue:
    """A host array in ONNX Runtime's OrtValue clothing (what
    get_contiguous_parameters returns and copy_buffer_to_parameters takes)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    @staticmethod
    def ortvalue_from_numpy(array: np.ndarray, device_type: str = "cpu", device_id: int = 0) -> "OrtValue":
        if device_type != "cpu":
            raise InvalidArgument("OrtValue: Onyx's Python values live in host memory (device_type 'cpu')")
        return OrtValue(np.ascontiguousarray(array))

    def numpy(self) -> np.ndarray:
        return self._array

    def shape(self) -> List[int]:
        return list(self._array.shape)

    def data_type(self) -> str:
        return f"tensor({'float' if self._array.dtype == np.float32 else self._array.dtype.name})"

    def is_tensor(self) -> bool:
        return True


class Parameter:
    """One parameter of a CheckpointState: name, data (a numpy copy; assign
    an array of the same dtype and shape to change it) and requires_grad."""

    def __init__(self, state: "CheckpointState", name: str, requires_grad: bool) -> None:
        self._state, self.name, self.requires_grad = state, name, requires_grad

    @property
    def data(self) -> np.ndarray:
        return self._state._raw.get_parameter(self.name)

    @data.setter
    def data(self, value: np.ndarray) -> None:
        self._state._raw.update_parameter(self.name, np.ascontiguousarray(value))

    @property
    def grad(self) -> None:
        raise FailedPrecondition("Onyx keeps gradients inside the training session, not in the checkpoint state")

    def __repr__(self) -> str:
        return f"Parameter(name='{self.name}', requires_grad={self.requires_grad})"


class Parameters(MutableMapping):
    """name -> Parameter; ``state.parameters[name] = array`` updates one."""

    def __init__(self, state: "CheckpointState") -> None:
        self._state = state

    def _infos(self) -> List[Tuple[str, int, List[int], bool]]:
        return self._state._raw.parameters()

    def __getitem__(self, name: str) -> Parameter:
        for n, _, _, requires_grad in self._infos():
            if n == name:
                return Parameter(self._state, n, requires_grad)
        raise KeyError(name)

    def __setitem__(self, name: str, value: Any) -> None:
        self[name].data = value

    def __delitem__(self, name: str) -> None:
        raise InvalidArgument("parameters cannot be removed from a checkpoint state")

    def __iter__(self) -> Iterator[str]:
        return iter([n for n, _, _, _ in self._infos()])

    def __len__(self) -> int:
        return len(self._infos())


class Properties(MutableMapping):
    """The property bag: int, float or str values by name."""

    def __init__(self, state: "CheckpointState") -> None:
        self._state = state

    def _all(self) -> Dict[str, Union[int, float, str]]:
        return dict(self._state._raw.properties())

    def __getitem__(self, name: str) -> Union[int, float, str]:
        return self._all()[name]

    def __setitem__(self, name: str, value: Union[int, float, str]) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise InvalidArgument(f"property '{name}': int, float or str, not {type(value).__name__}")
        self._state._raw.set_property(name, value)

    def __delitem__(self, name: str) -> None:
        raise InvalidArgument("properties cannot be removed from a checkpoint state")

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


class CheckpointState:
    """Parameters, optimizer state and properties of a training run."""

    def __init__(self, state: "_onyx.CheckpointState") -> None:
        self._raw = state

    @classmethod
    def load_checkpoint(cls, checkpoint_uri: PathLike) -> "CheckpointState":
        return cls(_onyx.CheckpointState.load(os.fspath(checkpoint_uri)))

    @classmethod
    def save_checkpoint(cls, state: "CheckpointState", checkpoint_uri: PathLike,
                        include_optimizer_state: bool = False) -> None:
        """Writes the state atomically (the old file or the new one survive a crash)."""
        state._raw.save(os.fspath(checkpoint_uri), include_optimizer_state)

    @property
    def parameters(self) -> Parameters:
        return Parameters(self)

    @property
    def properties(self) -> Properties:
        return Properties(self)

    def is_nominal(self) -> bool:
        """True for a checkpoint with names, dtypes and shapes but no data."""
        return self._raw.is_nominal()

    def nominal(self) -> "CheckpointState":
        """The same schema without data (what federated clients receive)."""
        return CheckpointState(self._raw.make_nominal())


def _feedable(value: Any) -> Any:
    if isinstance(value, OrtValue):
        return value.numpy()
    return value if isinstance(value, np.ndarray) or hasattr(value, "__dlpack__") else np.asarray(value)


class Module:
    """The training and eval models, run against a CheckpointState.

    Starts in training mode: ``module(*inputs)`` runs a training step
    (forward and backward; gradients add up until lazy_reset_grad) and returns
    the training model's outputs (one array, or a list). In eval mode it runs
    the eval model.
    """

    def __init__(self, train_model_uri: PathLike, state: CheckpointState, eval_model_uri: Optional[PathLike] = None,
                 device: str = "cpu", session_options: Optional[SessionOptions] = None,
                 providers: Optional[Sequence[Any]] = None, provider_options: Optional[Sequence[Any]] = None) -> None:
        if device not in ("cpu", "CPU") and providers is None:
            providers = [device.split(":")[0].lower()]
        self._state = state
        self._paths = (os.fspath(train_model_uri), None if eval_model_uri is None else os.fspath(eval_model_uri))
        self._options = session_options or SessionOptions()
        self._providers = _provider_list(providers, provider_options)
        self._optimizer_path: Optional[str] = None
        self.training = True
        self._session = self._create()

    def _create(self) -> "_onyx.TrainingSession":
        policy = getattr(self._options, "fallback", "warn")
        return _onyx.TrainingSession(environment(), self._state._raw, self._paths[0], self._paths[1],
                                     self._optimizer_path, self._providers, FALLBACK_POLICIES[policy],
                                     int(self._options.intra_op_num_threads or 0))

    def _attach_optimizer(self, optimizer_uri: str) -> None:
        # The C API takes the optimizer model when the session is made; the
        # state lives apart from the session, so nothing trained is lost.
        self._optimizer_path = optimizer_uri
        self._session = self._create()

    def __call__(self, *user_inputs: Any) -> Union[np.ndarray, List[np.ndarray]]:
        outputs = self._session.step(not self.training, [_feedable(x) for x in user_inputs])
        return outputs[0] if len(outputs) == 1 else outputs

    def train(self, mode: bool = True) -> "Module":
        self.training = mode
        return self

    def eval(self) -> "Module":
        if self._paths[1] is None:
            raise FailedPrecondition("this Module was created without an eval model")
        return self.train(False)

    def lazy_reset_grad(self) -> None:
        """The next training step overwrites the gradients instead of adding to them."""
        self._session.lazy_reset_grad()

    def input_names(self) -> List[str]:
        return self._session.names(not self.training, True)

    def output_names(self) -> List[str]:
        return self._session.names(not self.training, False)

    def get_parameters_size(self, trainable_only: bool = True) -> int:
        return self._session.parameters_size(trainable_only)[0]

    def get_contiguous_parameters(self, trainable_only: bool = False) -> OrtValue:
        """Every (or every trainable) parameter packed in checkpoint order: a
        float32 vector when they are all float32, otherwise their bytes."""
        raw = self._session.copy_parameters_to_buffer(trainable_only)
        elements = self._session.parameters_size(trainable_only)[0]
        return OrtValue(raw.view(np.float32) if raw.size == 4 * elements else raw)

    def copy_buffer_to_parameters(self, buffer: Union[OrtValue, np.ndarray], trainable_only: bool = True) -> None:
        array = buffer.numpy() if isinstance(buffer, OrtValue) else np.asarray(buffer)
        self._session.copy_buffer_to_parameters(np.ascontiguousarray(array).view(np.uint8).reshape(-1),
                                                trainable_only)

    def export_model_for_inferencing(self, inference_model_uri: PathLike, graph_output_names: Sequence[str]) -> None:
        """An inference model (the eval graph cut to these outputs) with the
        current parameters as initializers, written atomically."""
        if self._paths[1] is None:
            raise FailedPrecondition("exporting needs the eval model: create the Module with eval_model_uri")
        self._session.export_model(os.fspath(inference_model_uri), list(graph_output_names))

    def set_seed(self, seed: int) -> None:
        self._session.set_seed(seed)


class Optimizer:
    """Updates the parameters of ``module`` from its accumulated gradients."""

    def __init__(self, optimizer_uri: PathLike, module: Module) -> None:
        self._module = module
        module._attach_optimizer(os.fspath(optimizer_uri))

    def step(self) -> None:
        self._module._session.optimizer_step()

    def set_learning_rate(self, learning_rate: float) -> None:
        self._module._session.set_learning_rate(float(learning_rate))

    def get_learning_rate(self) -> float:
        return self._module._session.learning_rate()

    def set_hyperparameter(self, name: str, value: float) -> None:
        """An optimizer hyperparameter by name ("beta1", "weight_decay", ...); Onyx's."""
        self._module._session.set_hyperparameter(name, float(value))

    def set_max_grad_norm(self, max_norm: float) -> None:
        """Gradient clipping by global norm (<= 0: off); Onyx's."""
        self._module._session.set_max_grad_norm(float(max_norm))


class _Scheduler:
    def __init__(self, optimizer: Optimizer, schedule: str, base_lr: float) -> None:
        self._session = optimizer._module._session
        self._session.set_lr_schedule(schedule, float(base_lr))

    def step(self) -> None:
        self._session.scheduler_step()


class LinearLRScheduler:
    """ONNX Runtime Training's linear schedule: at optimizer step s the rate is
    initial_lr * s / warmup_step_count during warmup (so the first step runs
    at 0), then initial_lr * (total - s) / (total - warmup), never below 0.
    Set when created and by each step(), which follows optimizer.step()."""

    def __init__(self, optimizer: Optimizer, warmup_step_count: int, total_step_count: int, initial_lr: float) -> None:
        if warmup_step_count < 0 or total_step_count < warmup_step_count:
            raise InvalidArgument(f"LinearLRScheduler: need 0 <= warmup_step_count ({warmup_step_count}) "
                                  f"<= total_step_count ({total_step_count})")
        self._optimizer, self._step = optimizer, 0
        self._warmup, self._total, self._initial = int(warmup_step_count), int(total_step_count), float(initial_lr)
        self._apply()

    def _apply(self) -> None:
        s = self._step
        if s < self._warmup:
            factor = s / max(1, self._warmup)
        else:
            factor = max(0.0, (self._total - s) / max(1, self._total - self._warmup))
        self._optimizer.set_learning_rate(self._initial * factor)

    def step(self) -> None:
        self._step += 1
        self._apply()


class CosineLRScheduler(_Scheduler):
    """Warmup, then cosine decay to final_factor * initial_lr at total_step_count (Onyx's)."""

    def __init__(self, optimizer: Optimizer, warmup_step_count: int, total_step_count: int, initial_lr: float,
                 final_factor: float = 0.0) -> None:
        super().__init__(optimizer, f"cosine:warmup={int(warmup_step_count)},total={int(total_step_count)},"
                                    f"final={float(final_factor)}", initial_lr)


class StepLRScheduler(_Scheduler):
    """initial_lr * gamma ** (step // step_size) after warmup (Onyx's)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, initial_lr: float = 1e-3,
                 warmup_step_count: int = 0) -> None:
        super().__init__(optimizer, f"step:warmup={int(warmup_step_count)},step_size={int(step_size)},"
                                    f"gamma={float(gamma)}", initial_lr)


class ConstantLRScheduler(_Scheduler):
    """initial_lr after a linear warmup (Onyx's)."""

    def __init__(self, optimizer: Optimizer, initial_lr: float, warmup_step_count: int = 0) -> None:
        super().__init__(optimizer, f"constant:warmup={int(warmup_step_count)}", initial_lr)
