"""Shared by the int8 benchmark scripts: where the models live, their manifest, the inputs.

numpy only (no torch), so that the benchmark and the agreement check need just numpy,
onnxruntime and the onyx binary.
"""
import json
import os

import numpy as np

MANIFEST = "manifest.json"

# Seeds: one per use, so that no input the quantizer calibrated on is ever checked.
SEED_WEIGHTS = 0      # torch.manual_seed for the random initialisation
SEED_BN_STATS = 1     # inputs that set BatchNorm statistics and the classifier's scaling
SEED_CALIBRATION = 2  # inputs for ORT's static quantizer (MinMax calibration)
SEED_BENCH = 3        # the one input timed by int8_compare.py
SEED_AGREEMENT = 4    # the 100 inputs of top1_agreement.py
SEED_PROTOTYPES = 5   # the class prototypes that the CNNs' classifiers recognise ([5, class])


def default_root():
    """${ONYX_INT8_DIR:-${XDG_CACHE_HOME:-~/.cache}/onyx/int8-bench}, as bench/int8/setup.sh."""
    if os.environ.get("ONYX_INT8_DIR"):
        return os.environ["ONYX_INT8_DIR"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "onyx", "int8-bench")


def default_models_dir():
    return os.path.join(default_root(), "models")


def load_manifest(folder):
    path = os.path.join(folder, MANIFEST)
    if not os.path.exists(path):
        raise SystemExit(f"no {path}: run bench/int8/setup.sh first (or pass --models DIR)")
    with open(path) as f:
        return json.load(f)


def _pictures(shape, rng, n):
    c, h, w = shape
    low = rng.standard_normal((n, c, (h + 31) // 32, (w + 31) // 32))
    x = np.repeat(np.repeat(low, 32, axis=2), 32, axis=3)[:, :, :h, :w]
    return x + 0.5 * rng.standard_normal((n, c, h, w))


def make_inputs(entry, n, seed):
    """n inputs for a manifest entry, float32 [n, ...].

    Images are smooth random pictures (7x7 noise blown up 32x, plus fine noise), about
    N(0, 1.1^2) per pixel like ImageNet-normalised photos. Token sequences are N(0, 1).
    """
    rng = np.random.default_rng(seed)
    if entry["input_kind"] == "image":
        x = _pictures(entry["input_shape"], rng, n)
    else:
        x = rng.standard_normal([n] + list(entry["input_shape"]))
    return np.ascontiguousarray(x, dtype=np.float32)


PROTOTYPE_NOISE = 0.1  # a labelled picture: 0.995 * its class's prototype + 0.1 * a fresh random picture


def prototypes(entry, classes):
    """float32 [len(classes), c, h, w]: the prototype picture of each class (one seed each)."""
    return np.ascontiguousarray(np.concatenate(
        [_pictures(entry["input_shape"], np.random.default_rng([SEED_PROTOTYPES, k]), 1) for k in classes]),
        dtype=np.float32)


def labelled_inputs(entry, n, seed, classes=1000):
    """n random pictures with a known class: a random class's prototype plus fresh noise
    (the CNNs' classifiers recognise the prototypes; see make_models.py). Returns (x, labels);
    for a non-image model, make_inputs and labels None."""
    if entry["input_kind"] != "image":
        return make_inputs(entry, n, seed), None
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    noise = _pictures(entry["input_shape"], rng, n)
    x = np.sqrt(1 - PROTOTYPE_NOISE ** 2) * prototypes(entry, labels) + PROTOTYPE_NOISE * noise
    return np.ascontiguousarray(x, dtype=np.float32), labels
