"""onyx.training.api beyond what the ORT script uses: checkpoint state,
nominal checkpoints, parameters in and out, schedulers, and clear errors."""
import os

import numpy as np
import pytest

import onyx
from onyx.training import api, artifacts


@pytest.fixture
def trained(tmp_path, mlp_path):
    out = tmp_path / "artifacts"
    artifacts.generate_artifacts(mlp_path, loss=artifacts.LossType.CrossEntropyLoss,
                                 optimizer=artifacts.OptimType.AdamW, artifact_directory=out,
                                 additional_output_names=["logits"])
    state = api.CheckpointState.load_checkpoint(out / "checkpoint")
    module = api.Module(out / "training_model.onnx", state, out / "eval_model.onnx")
    optimizer = api.Optimizer(out / "optimizer_model.onnx", module)
    return out, state, module, optimizer


def batch(seed=0, n=8):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 784)).astype(np.float32), rng.integers(0, 10, n).astype(np.int64)


def test_module_outputs_modes_and_parameters(trained):
    out, state, module, optimizer = trained
    assert sorted(os.listdir(out)) == ["checkpoint", "eval_model.onnx", "optimizer_model.onnx", "training_model.onnx"]
    assert module.input_names() == ["x", "labels"] and module.output_names() == ["loss", "logits"]
    loss, logits = module(*batch())
    assert loss.shape == () and logits.shape == (8, 10)
    assert optimizer.get_learning_rate() == pytest.approx(1e-3)
    before = state.parameters["b2"].data.copy()
    optimizer.step()
    assert not np.array_equal(state.parameters["b2"].data, before)
    module.eval()
    eval_loss, _ = module(*batch())
    assert module.training is False and np.isfinite(eval_loss)

    assert list(state.parameters) == ["w1", "b1", "w2", "b2"] or set(state.parameters) == {"w1", "b1", "w2", "b2"}
    assert state.parameters["w1"].requires_grad and state.parameters["w1"].data.shape == (256, 784)
    flat = module.get_contiguous_parameters()
    assert flat.numpy().dtype == np.float32 and flat.numpy().size == module.get_parameters_size(False) == 203530
    module.copy_buffer_to_parameters(np.zeros_like(flat.numpy()), trainable_only=False)
    assert not state.parameters["w2"].data.any()
    state.parameters["b2"] = np.arange(10, dtype=np.float32)
    assert np.array_equal(state.parameters["b2"].data, np.arange(10, dtype=np.float32))


def test_checkpoint_properties_nominal_and_reload(trained, tmp_path):
    out, state, module, optimizer = trained
    module(*batch())
    optimizer.step()
    state.properties["epoch"] = 3
    state.properties["lr"] = 0.5
    state.properties["note"] = "hello"
    path = tmp_path / "saved.ckpt"
    api.CheckpointState.save_checkpoint(state, path, include_optimizer_state=True)
    again = api.CheckpointState.load_checkpoint(path)
    assert dict(again.properties) == {**dict(again.properties), "epoch": 3, "lr": 0.5, "note": "hello"}
    assert np.array_equal(again.parameters["w1"].data, state.parameters["w1"].data)
    nominal = again.nominal()
    assert nominal.is_nominal() and not again.is_nominal()
    with pytest.raises(onyx.InvalidArgument, match="int, float or str"):
        state.properties["bad"] = [1, 2]


def test_nominal_artifacts_get_weights_from_a_buffer(tmp_path, mlp_path, trained):
    _, full_state, full_module, _ = trained
    out = tmp_path / "nominal"
    artifacts.generate_artifacts(mlp_path, loss=artifacts.LossType.CrossEntropyLoss, artifact_directory=out,
                                 nominal_checkpoint=True)
    state = api.CheckpointState.load_checkpoint(out / "checkpoint")
    assert state.is_nominal()
    module = api.Module(out / "training_model.onnx", state, out / "eval_model.onnx")
    module.copy_buffer_to_parameters(full_module.get_contiguous_parameters(), trainable_only=True)
    module.eval()
    full_module.eval()
    np.testing.assert_array_equal(module(*batch()), full_module(*batch())[0])


def test_linear_scheduler_follows_orts_rule(trained):
    _, _, module, optimizer = trained
    scheduler = api.LinearLRScheduler(optimizer, warmup_step_count=2, total_step_count=6, initial_lr=1e-2)
    rates = [optimizer.get_learning_rate()]
    for _ in range(7):
        module(*batch())
        optimizer.step()
        scheduler.step()
        rates.append(optimizer.get_learning_rate())
    np.testing.assert_allclose(rates, [0, 5e-3, 1e-2, 7.5e-3, 5e-3, 2.5e-3, 0, 0], atol=1e-9)


def test_export_for_inference(trained, tmp_path):
    _, _, module, optimizer = trained
    module(*batch())
    optimizer.step()
    module.eval()
    _, logits = module(*batch())
    module.export_model_for_inferencing(tmp_path / "inference.onnx", ["logits"])
    (again,) = onyx.InferenceSession(str(tmp_path / "inference.onnx")).run(None, {"x": batch()[0]})
    np.testing.assert_allclose(again, logits, rtol=1e-6, atol=1e-6)


def test_bad_training_input_raises_clear_errors(trained, tmp_path):
    out, state, module, _ = trained
    x, y = batch()
    with pytest.raises(onyx.InvalidArgument, match="1 inputs given, the model takes 2 \\(x, labels\\)"):
        module(x)
    with pytest.raises(onyx.OnyxError, match="labels"):
        module(x, y.astype(np.float32))
    with pytest.raises(onyx.OnyxError, match="x"):
        module(x[:, :100].copy(), y)
    with pytest.raises(ValueError, match="not C-contiguous"):
        module(np.asfortranarray(x), y)
    with pytest.raises(onyx.NotFound, match="no_such_checkpoint"):
        api.CheckpointState.load_checkpoint(tmp_path / "no_such_checkpoint")
    (tmp_path / "garbage").write_bytes(b"\0" * 100)
    with pytest.raises(onyx.OnyxError, match="garbage"):
        api.CheckpointState.load_checkpoint(tmp_path / "garbage")
    with pytest.raises(onyx.InvalidArgument, match="needs a loss"):
        artifacts.generate_artifacts(str(out / "eval_model.onnx"), artifact_directory=tmp_path / "x")
    with pytest.raises(KeyError):
        state.parameters["nope"]
    with pytest.raises(onyx.OnyxError, match="b2"):
        state.parameters["b2"] = np.zeros(3, np.float32)
