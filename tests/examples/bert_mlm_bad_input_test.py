#!/usr/bin/env python3
"""Hostile inputs to the BERT-style MLM get clear errors that name the input.

A sequence longer than the position table, a token id outside the
vocabulary, and an attention mask of the wrong shape (shorter, or a single
column that would broadcast silently) each make `onyx run` fail with a
message that names the offending input and its shape; a valid input runs.

Usage: bert_mlm_bad_input_test.py ONYX_CLI SOURCE_DIR (skips, exit 77, without
the onnx and numpy Python packages).
"""
import os
import shutil
import subprocess
import sys
import tempfile

ONYX, SOURCE = sys.argv[1], sys.argv[2]
try:
    import numpy as np
    import onnx  # noqa: F401
except ImportError as e:
    print(f"SKIPPED: {e.name} is not installed (Debian: python3-onnx python3-numpy)")
    sys.exit(77)
sys.path.insert(0, os.path.join(SOURCE, "examples", "bert_mlm"))
import bert_onnx  # noqa: E402

CASES = [  # (name, input_ids shape, attention_mask shape, an out-of-vocabulary id?, expected fragments)
    ("valid", (2, 32), (2, 32), False, []),
    ("sequence longer than the position table", (2, 40), (2, 40), False,
     ["'embeddings.position' [32, 16]", "index 32", "out of range", "input_ids [2, 40]"]),
    ("token id outside the vocabulary", (2, 32), (2, 32), True,
     ["'input_ids' [2, 32]", "index 100 ", "out of range for axis 0 of size 100"]),
    ("attention mask shorter than the sequence", (2, 32), (2, 20), False,
     ["input 'attention_mask' has shape [2, 20]", "('sequence') is 20", "input 'input_ids' gives 'sequence' = 32"]),
    ("attention mask of one column", (2, 32), (2, 1), False,
     ["input 'attention_mask' has shape [2, 1]", "('sequence') is 1"]),
]


def main():
    tmp = tempfile.mkdtemp(prefix="bert_bad_input_")
    cfg = {"vocab": 100, "hidden": 16, "layers": 1, "heads": 2, "ffn": 32, "max_positions": 32}
    model = os.path.join(tmp, "bert.onnx")
    onnx.save(bert_onnx.build(cfg), model)
    failures = []
    for name, ids_shape, mask_shape, oov, expected in CASES:
        ids = np.full(ids_shape, 7, np.int64)
        if oov:
            ids[1, 3] = cfg["vocab"]
        np.save(os.path.join(tmp, "ids.npy"), ids)
        np.save(os.path.join(tmp, "mask.npy"), np.ones(mask_shape, np.int64))
        result = subprocess.run([ONYX, "run", model, "--input", "input_ids=" + os.path.join(tmp, "ids.npy"), "--input",
                                 "attention_mask=" + os.path.join(tmp, "mask.npy")],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        message = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
        ok = (result.returncode == 0) if not expected else (
            result.returncode == 1 and all(fragment in message for fragment in expected))
        print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {result.returncode}: {message}")
        if not ok:
            failures.append(name)
    shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        sys.exit("FAILED: " + "; ".join(failures))


if __name__ == "__main__":
    main()
