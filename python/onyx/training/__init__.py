"""On-device training with the API of ``onnxruntime.training``.

``artifacts.generate_artifacts`` makes the training, eval and optimizer models
and the checkpoint from a forward model; ``api`` has CheckpointState, Module,
Optimizer and the learning-rate schedulers. A script written for ORT Training
1.19 runs unchanged after ``from onyx.training import api, artifacts``.
"""
from . import api, artifacts

__all__ = ["api", "artifacts"]
