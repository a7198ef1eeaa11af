"""Scripts written for ONNX Runtime (and ORT Training 1.19.2) run unchanged on
Onyx with only their import lines changed, and give the same numbers."""
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import require

SCRIPTS = pathlib.Path(__file__).parent / "scripts"


def run_script(script, tmp_path, use_onyx, *args):
    source = script.read_text()
    if use_onyx:  # the only change: the imports
        source = re.sub(r"^import onnxruntime as (\w+)$", r"import onyx as \1", source, flags=re.M)
        source = re.sub(r"^import onnxruntime$", "import onyx as onnxruntime", source, flags=re.M)
        source = re.sub(r"^from onnxruntime\.training", "from onyx.training", source, flags=re.M)
        assert "import onnxruntime\n" not in source and "from onnxruntime" not in source
    path = tmp_path / (("onyx_" if use_onyx else "ort_") + script.name)
    path.write_text(source)
    result = subprocess.run([sys.executable, str(path), *map(str, args)], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, f"{path.name} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_inference_script_runs_unchanged(tmp_path, model, mlp_path, cnn_path):
    require("onnxruntime")
    model_path = mlp_path if model == "mlp" else cnn_path
    ort_out, onyx_out = tmp_path / "ort.npz", tmp_path / "onyx.npz"
    ort_log = run_script(SCRIPTS / "ort_inference_script.py", tmp_path, False, model_path, ort_out)
    onyx_log = run_script(SCRIPTS / "ort_inference_script.py", tmp_path, True, model_path, onyx_out)
    assert onyx_log.splitlines()[-1] == "done" and ort_log.splitlines()[-1] == "done"
    ort, ours = np.load(ort_out), np.load(onyx_out)
    # Two float32 implementations summing 784 (MLP) or 1568 (CNN) products in
    # different orders: a few float32 ulps of the largest partial sums.
    for key in ("logits", "probabilities", "single"):
        np.testing.assert_allclose(ours[key], ort[key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_training_script_gives_orts_loss_curve(tmp_path, mlp_path):
    require("onnxruntime.training")
    ort_out, onyx_out = tmp_path / "ort.npz", tmp_path / "onyx.npz"
    run_script(SCRIPTS / "ort_training_script.py", tmp_path, False, mlp_path, tmp_path / "ort_artifacts", ort_out)
    log = run_script(SCRIPTS / "ort_training_script.py", tmp_path, True, mlp_path, tmp_path / "onyx_artifacts",
                     onyx_out)
    ort, ours = np.load(ort_out), np.load(onyx_out)
    assert ours["losses"].shape == (100,) and ours["losses"][-1] < 0.5 * ours["losses"][0], log
    # Same data, same initial weights, AdamW with the same semantics: only
    # float32 rounding differs (summation order in the GEMMs and the loss).
    relative = np.abs(ours["losses"] - ort["losses"]) / np.abs(ort["losses"])
    print("largest relative loss difference over 100 steps:", relative.max())
    assert relative.max() < 1e-5
    np.testing.assert_allclose(ours["eval_loss"], ort["eval_loss"], rtol=1e-5)
    np.testing.assert_allclose(ours["parameters"], ort["parameters"], rtol=1e-4, atol=1e-6)
    # What the script wrote is usable: the exported model runs in both runtimes.
    import onnxruntime
    import onyx
    from onyx.training import api
    x = np.random.default_rng(3).standard_normal((4, 784)).astype(np.float32)
    exported = str(tmp_path / "onyx_artifacts" / "inference.onnx")
    ort_logits = onnxruntime.InferenceSession(exported, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    onyx_logits = onyx.InferenceSession(exported).run(None, {"x": x})[0]
    np.testing.assert_allclose(onyx_logits, ort_logits, rtol=1e-5, atol=1e-6)
    state = api.CheckpointState.load_checkpoint(tmp_path / "onyx_artifacts" / "trained_checkpoint")
    assert state.properties["epochs"] == 1
