"""What the examples/bert_mlm tests share: the skip rule, running a command,
`onyx train` on the small configuration, and building that configuration's
data and model (vocabulary 1,000, hidden 64, 2 layers, 2 heads, sequences of
64 from the first 6,000 WordNet synsets)."""
import csv
import os
import subprocess
import sys

CONFIG = ["--vocab", "1000", "--hidden", "64", "--layers", "2", "--heads", "2", "--max-positions", "64"]


def require(*modules):
    """Exits 77 (ctest: skipped) with the reason when a module or WordNet is missing."""
    import importlib
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            print(f"SKIPPED: {name} is not installed (Debian: python3-torch python3-onnx python3-sentencepiece)")
            sys.exit(77)
    if not os.path.exists("/usr/share/wordnet/data.noun"):
        print("SKIPPED: WordNet is not installed (Debian: wordnet-base)")
        sys.exit(77)


def run(*args):
    """Runs a command; its output, or the test fails printing it."""
    result = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        print(result.stdout)
        sys.exit(f"FAILED: {' '.join(args)} exited {result.returncode}")
    return result.stdout


def onyx_train(onyx, model, data, out, steps, *extra):
    """`onyx train` on the MLM arrays, batches in order, no validation; its
    per-step losses and its output. Later options in `extra` win."""
    output = run(onyx, "train", model, "--data", data, "--out", out, "--class-axis", "-1", "--ignore-index", "-100",
                 "--no-shuffle", "--valid-split", "none", "--epochs", "1000", "--max-steps", str(steps), *extra)
    with open(os.path.join(out, "loss.csv")) as f:
        losses = [float(row["loss"]) for row in csv.DictReader(f)]
    if len(losses) != steps:
        sys.exit(f"FAILED: {out} trained {len(losses)} steps, not {steps}")
    return losses, output


def small_mlm(source, tmp):
    """Writes the small configuration's data and onnx-script model into tmp."""
    example = os.path.join(source, "examples", "bert_mlm")
    data, model = os.path.join(tmp, "data"), os.path.join(tmp, "bert_onnx.onnx")
    run(sys.executable, os.path.join(example, "prepare_data.py"), "--out", data, "--limit", "6000", "--vocab-size",
        "1000", "--seq-len", "64")
    run(sys.executable, os.path.join(example, "bert_onnx.py"), "--out", model, *CONFIG)
    return data, model
