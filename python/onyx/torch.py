"""OnyxModule: train a PyTorch module through Onyx.

``OnyxModule(module)`` behaves like ``module``: on the first call for each
input signature (shapes and dtypes) it exports the module with
torch.onnx.export, builds the model of its vector-Jacobian products, and from
then on runs the forward and backward passes in Onyx inside a
torch.autograd.Function. Any torch optimizer, loss and training loop works
unchanged; parameters stay torch tensors that Onyx reads in place (DLPack,
no copies), and gradients come back as tensors over Onyx's output memory.

What it does not do yet: modules whose training-mode forward draws random
numbers (Dropout with p > 0) or updates buffers (BatchNorm's running
statistics) are refused with an error saying so (the backward pass recomputes
the forward, which would draw another mask). Their eval-mode forms run.
"""
from __future__ import annotations

import io
import os
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from . import _onyx
from ._errors import InvalidArgument, OnyxError
from ._inference import FALLBACK_POLICIES, _provider_list, environment

__all__ = ["OnyxModule"]

_STATEFUL_IN_TRAINING = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.InstanceNorm1d, torch.nn.InstanceNorm2d,
                         torch.nn.InstanceNorm3d)


def _check_exportable_state(module: torch.nn.Module) -> None:
    for name, sub in module.named_modules():
        if not sub.training:
            continue
        where = f"'{name}' ({type(sub).__name__})" if name else type(sub).__name__
        if isinstance(sub, torch.nn.modules.dropout._DropoutNd) and sub.p > 0:
            raise InvalidArgument(
                f"OnyxModule: {where} drops out with p={sub.p} in training mode; random forward passes are not "
                "supported yet (the backward pass recomputes the forward and would draw another mask). "
                "Use p=0 or put that layer in eval mode")
        if isinstance(sub, _STATEFUL_IN_TRAINING) and getattr(sub, "track_running_stats", False):
            raise InvalidArgument(
                f"OnyxModule: {where} updates running statistics in training mode, which is not supported yet; "
                "put that layer in eval mode (or set track_running_stats=False)")


class _Compiled:
    """The forward and gradient sessions for one input signature."""

    def __init__(self, owner: "OnyxModule", args: Tuple[torch.Tensor, ...]) -> None:
        import onnx  # the exporter's output is edited with the onnx package

        module = owner.module
        _check_exportable_state(module)
        with torch.no_grad():
            sample = module(*args)
        self.single = isinstance(sample, torch.Tensor)
        samples = [sample] if self.single else list(sample) if isinstance(sample, (tuple, list)) else None
        if samples is None or not all(isinstance(s, torch.Tensor) for s in samples):
            raise InvalidArgument(f"OnyxModule: {type(module).__name__} must return a tensor or a tuple of tensors, "
                                  f"not {type(sample).__name__}")
        self.input_names = [f"input_{k}" for k in range(len(args))]
        self.output_names = [f"output_{k}" for k in range(len(samples))]
        buffer = io.BytesIO()
        was_training = module.training
        # Only the top-level flag: in eval mode the exporter merges initializers
        # that hold equal values (two fresh LayerNorms' ones), and Onyx must
        # see every parameter under its own name.
        module.training = True
        try:
            torch.onnx.export(module, args, buffer, input_names=self.input_names, output_names=self.output_names,
                              opset_version=owner.opset, do_constant_folding=False,
                              training=torch.onnx.TrainingMode.PRESERVE)
        except Exception as e:  # the exporter raises many types; say which module failed and why
            raise OnyxError(f"OnyxModule: torch.onnx.export could not export {type(module).__name__}: "
                            f"{type(e).__name__}: {e}") from e
        finally:
            module.training = was_training
        model = onnx.load_from_string(buffer.getvalue())
        graph_inputs = {i.name for i in model.graph.input}
        lost = [k for k, name in enumerate(self.input_names) if name not in graph_inputs]
        if lost:
            raise OnyxError(f"OnyxModule: the graph torch.onnx.export traced from {type(module).__name__} does not "
                            f"read argument {lost[0]}: its forward leaves the traced graph (numpy, .item(), Python "
                            "control flow on values), so the exporter recorded a constant in its place")

        # Parameters become graph inputs, fed from the torch tensors each call.
        params = dict(module.named_parameters())
        graph = model.graph
        kept, self.param_names = [], []
        for init in graph.initializer:
            if init.name in params:
                self.param_names.append(init.name)
                graph.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
            else:
                kept.append(init)
        del graph.initializer[:]
        graph.initializer.extend(kept)
        self.params = [params[n] for n in self.param_names]

        float_types = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
        self.input_grads = [k for k, a in enumerate(args) if a.requires_grad and a.dtype in float_types]
        self.param_grads = [k for k, p in enumerate(self.params) if p.requires_grad]
        self.differentiable = [s.dtype in float_types for s in samples]
        wrt = [self.input_names[k] for k in self.input_grads] + [self.param_names[k] for k in self.param_grads]

        providers = _provider_list(owner.providers, None)
        policy = FALLBACK_POLICIES[owner.fallback]
        with tempfile.TemporaryDirectory(prefix="onyx-module-") as scratch:
            forward_path = os.path.join(scratch, "forward.onnx")
            onnx.save(model, forward_path)
            self.forward = _onyx.Session(environment(), forward_path, providers, policy, owner.threads, False)
            self.backward = None
            if wrt:
                gradient_path = os.path.join(scratch, "gradient.onnx")
                _onyx.build_gradient_model(forward_path, wrt, gradient_path)
                self.backward = _onyx.Session(environment(), gradient_path, providers, policy, owner.threads, False)
        self.grad_outputs = [f"{n}_grad" for n in wrt]

    def feed(self, args: Sequence[torch.Tensor]) -> Dict[str, Any]:
        feed = {n: a.detach().contiguous() for n, a in zip(self.input_names, args)}
        feed.update({n: p.detach() for n, p in zip(self.param_names, self.params)})
        return feed


class _OnyxFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, compiled: _Compiled, arg_count: int, *tensors: torch.Tensor) -> Any:
        args = tensors[:arg_count]
        outputs = [torch.from_numpy(o) for o in compiled.forward.run(None, compiled.feed(args))]
        ctx.compiled = compiled
        ctx.save_for_backward(*args)
        ctx.mark_non_differentiable(*[o for o, d in zip(outputs, compiled.differentiable) if not d])
        return tuple(outputs)

    @staticmethod
    def backward(ctx: Any, *grads: Optional[torch.Tensor]) -> Any:
        compiled: _Compiled = ctx.compiled
        args = ctx.saved_tensors
        if compiled.backward is None:
            return (None, None) + (None,) * (len(args) + len(compiled.params))
        feed = compiled.feed(args)
        for name, grad, differentiable, like in zip(compiled.output_names, grads, compiled.differentiable,
                                                    compiled.forward_shapes):
            if differentiable:
                feed[f"{name}_grad"] = (grad.contiguous() if grad is not None
                                        else torch.zeros(like[0], dtype=like[1]))
        results = [torch.from_numpy(r) for r in compiled.backward.run(compiled.grad_outputs, feed)]
        input_grads: List[Optional[torch.Tensor]] = [None] * len(args)
        param_grads: List[Optional[torch.Tensor]] = [None] * len(compiled.params)
        for k, index in enumerate(compiled.input_grads):
            input_grads[index] = results[k]
        for k, index in enumerate(compiled.param_grads):
            param_grads[index] = results[len(compiled.input_grads) + k]
        return (None, None, *input_grads, *param_grads)


class OnyxModule(torch.nn.Module):
    """Runs ``module``'s forward and backward passes through Onyx.

    providers: Onyx providers in priority order (default ["cpu"]);
    fallback: "fail", "warn" or "allow" for nodes the first provider declines;
    threads: Onyx's intra-op threads (0: one per core); opset: the ONNX opset
    the module is exported with.
    """

    def __init__(self, module: torch.nn.Module, providers: Optional[Sequence[Any]] = None, fallback: str = "warn",
                 threads: int = 0, opset: int = 17) -> None:
        super().__init__()
        if not isinstance(module, torch.nn.Module):
            raise InvalidArgument(f"OnyxModule wraps a torch.nn.Module, not {type(module).__name__}")
        if fallback not in FALLBACK_POLICIES:
            raise InvalidArgument(f"fallback '{fallback}': one of fail, warn, allow")
        self.module = module
        self.providers, self.fallback, self.threads, self.opset = providers, fallback, int(threads), int(opset)
        self._compiled: Dict[Any, _Compiled] = {}

    def forward(self, *args: torch.Tensor) -> Any:
        for k, a in enumerate(args):
            if not isinstance(a, torch.Tensor):
                raise InvalidArgument(f"OnyxModule: argument {k} is a {type(a).__name__}; Onyx takes tensors only")
            if a.device.type != "cpu":
                raise InvalidArgument(f"OnyxModule: argument {k} lives on {a.device}; Onyx's Python API reads host memory")
        key = (self.module.training, tuple((tuple(a.shape), a.dtype, a.requires_grad) for a in args))
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = _Compiled(self, args)
            with torch.no_grad():
                outs = compiled.forward.run(None, compiled.feed(args))
            compiled.forward_shapes = [(tuple(o.shape), torch.from_numpy(o).dtype) for o in outs]
            self._compiled[key] = compiled
        outputs = _OnyxFunction.apply(compiled, len(args), *args, *compiled.params)
        return outputs[0] if compiled.single else outputs
