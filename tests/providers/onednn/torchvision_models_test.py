#!/usr/bin/env python3
"""Torchvision ResNet-18, MobileNetV2 and EfficientNet-B0 (SiLU and squeeze-excitation
sigmoids; random weights) exported by torch.onnx.export
run on the oneDNN provider and on the CPU provider (through `onyx run`) and match a
float64 reference computed by torch: max |onyx - reference| <= 1e-4 * max |reference|.

    torchvision_models_test.py ONYX_CLI

Exits 77 (ctest: skipped) naming the module when torch, torchvision or onnx is absent.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torchvision
    import onnx  # noqa: F401  (torch.onnx.export needs it)
except ImportError as e:
    print(f"SKIP: needs numpy, torch, torchvision and onnx in {sys.executable} ({e})")
    sys.exit(77)

# float32 with different summation orders through ~20 layers: 3e-6 (ResNet-18) to 2e-5
# (MobileNetV2) of the output's scale, measured on both providers; 1e-4 catches any
# wrong layout, padding or fused post-op (>= 1e-2).
TOLERANCE = 1e-4


def export(name, model, x, directory):
    path = os.path.join(directory, name + ".onnx")
    kwargs = {"opset_version": 13, "input_names": ["x"], "output_names": ["y"],
              "dynamic_axes": {"x": {0: "N"}, "y": {0: "N"}}}
    try:
        torch.onnx.export(model, (x,), path, dynamo=False, **kwargs)
    except TypeError:  # a torch without the dynamo switch
        torch.onnx.export(model, (x,), path, **kwargs)
    return path


def run_onyx(onyx, model, x_path, providers, out_dir):
    command = [onyx, "run", model, "--input", "x=" + x_path, "--output-dir", out_dir,
               "--output-format", "npy", "--fallback", "fail"]
    for p in providers:
        command += ["--provider", p]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return np.load(os.path.join(out_dir, "y.npy")).astype(np.float64)


def main():
    onyx = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as directory:
        for name, build in (("resnet18", torchvision.models.resnet18),
                            ("mobilenet_v2", torchvision.models.mobilenet_v2),
                            ("efficientnet_b0", torchvision.models.efficientnet_b0)):
            torch.manual_seed(0)
            model = build(weights=None)
            x = torch.rand(2, 3, 96, 96) * 2 - 1
            # BatchNormalization statistics of this input (one training-mode pass with
            # momentum 1): with untrained weights, activations would otherwise vanish
            # through the layers (MobileNetV2's output ~1e-9) and any error hide.
            for m in model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.momentum = 1.0
            with torch.no_grad():
                model.train()(x)
            model.eval()
            path = export(name, model, x, directory)
            with torch.no_grad():
                reference = model.double()(x.double()).numpy()
            x_path = os.path.join(directory, name + "_x.npy")
            np.save(x_path, x.numpy())
            scale = float(np.abs(reference).max())
            for label, providers in (("onednn", ["onednn", "cpu"]), ("cpu", ["cpu"])):
                out_dir = os.path.join(directory, name + "_" + label)
                got = run_onyx(onyx, path, x_path, providers, out_dir)
                error = float(np.abs(got - reference).max()) / max(scale, 1e-12)
                ok = got.shape == reference.shape and error <= TOLERANCE and scale > 1e-2
                print(f"{name} on {label}: max error {error:.3g} of the reference's scale {scale:.3g} "
                      f"(tolerance {TOLERANCE:g}) {'ok' if ok else 'FAIL'}")
                failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
