"""An ordinary ONNX Runtime Training 1.19 on-device training script (after
the onnxruntime-training documentation's examples): artifacts, then Module,
Optimizer and a plain loop. tests/python/test_ort_compat.py runs it with
onnxruntime-training and again with only its import lines changed to onyx.

    python ort_training_script.py MODEL ARTIFACT_DIR OUT.npz
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime
from onnxruntime.training import artifacts
from onnxruntime.training.api import CheckpointState, Module, Optimizer

onnxruntime.set_default_logger_severity(3)
model_path, artifact_dir, out_path = sys.argv[1:4]
os.makedirs(artifact_dir, exist_ok=True)

model = onnx.load(model_path)
artifacts.generate_artifacts(
    model,
    requires_grad=[t.name for t in model.graph.initializer],
    frozen_params=[],
    loss=artifacts.LossType.CrossEntropyLoss,
    optimizer=artifacts.OptimType.AdamW,
    artifact_directory=artifact_dir,
)

state = CheckpointState.load_checkpoint(os.path.join(artifact_dir, "checkpoint"))
module = Module(os.path.join(artifact_dir, "training_model.onnx"), state,
                os.path.join(artifact_dir, "eval_model.onnx"))
optimizer = Optimizer(os.path.join(artifact_dir, "optimizer_model.onnx"), module)
print("inputs:", module.input_names(), "learning rate:", optimizer.get_learning_rate())

# A fixed synthetic task: 8 batches of 32 samples labelled by a random linear teacher.
rng = np.random.default_rng(0)
teacher = rng.standard_normal((784, 10)).astype(np.float32)
batches = []
for _ in range(9):
    x = rng.standard_normal((32, 784)).astype(np.float32)
    batches.append((x, np.argmax(x @ teacher, axis=1).astype(np.int64)))
validation = batches.pop()

losses = []
module.train()
for step in range(100):
    x, y = batches[step % len(batches)]
    loss = module(x, y)
    optimizer.step()
    module.lazy_reset_grad()
    losses.append(float(loss))
    if step % 20 == 0:
        print(f"step {step}: loss {losses[-1]:.6f}")

module.eval()
eval_loss = float(module(*validation))
print(f"validation loss {eval_loss:.6f}")
module.export_model_for_inferencing(os.path.join(artifact_dir, "inference.onnx"), ["logits"])
state.properties["epochs"] = 1
CheckpointState.save_checkpoint(state, os.path.join(artifact_dir, "trained_checkpoint"))
np.savez(out_path, losses=np.array(losses), eval_loss=np.array(eval_loss),
         parameters=module.get_contiguous_parameters().numpy())
