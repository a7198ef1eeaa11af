"""An ordinary ONNX Runtime inference script, as users write them (after the
onnxruntime documentation's examples). tests/python/test_ort_compat.py runs it
with onnxruntime and again with only its import line changed to onyx.

    python ort_inference_script.py MODEL OUT.npz
"""
import sys

import numpy as np
import onnxruntime as ort

model_path, out_path = sys.argv[1], sys.argv[2]

options = ort.SessionOptions()
options.intra_op_num_threads = 1
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
session = ort.InferenceSession(model_path, sess_options=options, providers=["CPUExecutionProvider"])
assert "CPUExecutionProvider" in ort.get_available_providers() or "cpu" in ort.get_available_providers()

inputs = session.get_inputs()
outputs = session.get_outputs()
print(f"{len(inputs)} input(s), {len(outputs)} output(s)")
for arg in inputs + outputs:
    print(f"  {arg.name}: {arg.type} {arg.shape}")
assert inputs[0].type == "tensor(float)"

# Symbolic dims (the batch) become 4.
shape = [d if isinstance(d, int) else 4 for d in inputs[0].shape]
rng = np.random.default_rng(7)
x = rng.standard_normal(shape).astype(np.float32)

logits = session.run(None, {inputs[0].name: x})[0]
same = session.run([outputs[0].name], {inputs[0].name: x})[0]
assert np.array_equal(logits, same)

# Softmax and top classes, as a classifier script does.
e = np.exp(logits - logits.max(axis=1, keepdims=True))
probabilities = e / e.sum(axis=1, keepdims=True)
top = np.argsort(-probabilities, axis=1)[:, :3]
for row in range(shape[0]):
    print(f"sample {row}: classes {top[row].tolist()} p={probabilities[row, top[row][0]]:.4f}")

# A batch of one: a slice of the batch.
single = session.run(None, {inputs[0].name: x[:1]})[0]
np.savez(out_path, logits=logits, probabilities=probabilities, single=single)
print("done")
