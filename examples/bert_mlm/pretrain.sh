#!/usr/bin/env bash
# Pretrains the BERT-style masked-language model on WordNet's glosses with
# onyx train, then measures it on the held-out glosses with onyx eval:
#   examples/bert_mlm/pretrain.sh [OUT] [STEPS]
# OUT (default bert-out) receives data/, bert.onnx and run/ (loss.csv,
# validation.csv, loss.svg, checkpoint.ckpt, model.onnx). The recipe is
# BERT's: LAMB, no weight decay on biases and LayerNorm weights, linear
# warmup (10%) and decay, clipping at 1.0, masked tokens only in the loss.
# Needs a built onyx (scripts/build.sh) and Debian's python3-onnx,
# python3-sentencepiece and wordnet-base (scripts/install-deps.sh --test).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-bert-out}
steps=${2:-700}
onyx=${ONYX:-$here/../../build/bin/onyx}
python=/usr/bin/python3
[ -x "$python" ] || python=python3
[ -x "$onyx" ] || { echo "pretrain.sh: $onyx is missing: build first (scripts/build.sh)" >&2; exit 1; }
mkdir -p "$out"
start=$SECONDS
"$python" "$here/prepare_data.py" --out "$out/data"
"$python" "$here/bert_onnx.py" --out "$out/bert.onnx"
"$onyx" train "$out/bert.onnx" --data "$out/data" --out "$out/run" \
  --class-axis -1 --ignore-index -100 \
  --optimizer lamb --lr 1e-2 --lr-schedule "linear:warmup=$((steps / 10))" --max-grad-norm 1.0 \
  --param-group '(bias|norm\.weight)$:weight_decay=0' \
  --batch-size 32 --max-steps "$steps" --eval-every 250
"$onyx" eval "$out/run/model.onnx" --data "$out/data" --split valid --class-axis -1 --ignore-index -100
echo "pretrain.sh: done in $((SECONDS - start)) s"
