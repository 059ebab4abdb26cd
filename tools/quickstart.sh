#!/usr/bin/env bash
# make quickstart: the main job on the built-in default. Stage 1
# trains a small OLMo-2-style model with RoPE from scratch on the synthetic
# long-context data; stage 2 continues that checkpoint with RePo from layer
# floor(L/3). Ends with a summary of both stages.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
val_of() { grep -o '"val_loss": [^,]*' "$1/metrics.jsonl" | tail -n 1 | awk '{printf "%.4f", $2}'; }
first_val() { grep -o '"val_loss": [^,]*' "$1/metrics.jsonl" | head -n 1 | awk '{printf "%.4f", $2}'; }

echo "== stage 1: RoPE from scratch (configs/quickstart_rope.json)"
build/train configs/quickstart_rope.json
echo
echo "== stage 2: continue with RePo from layer floor(L/3) (configs/quickstart_repo.json)"
build/train configs/quickstart_repo.json
t1=$(date +%s)

rope=runs/quickstart/rope
repo=runs/quickstart/repo
echo
echo "== quickstart summary ($((t1 - t0)) s)"
printf '  %-28s val loss %s -> %s   checkpoint %s\n' "stage 1 (RoPE, 4 layers)" "$(first_val $rope)" "$(val_of $rope)" \
    "$rope/$(head -n 1 $rope/latest)"
printf '  %-28s val loss %s -> %s   checkpoint %s\n' "stage 2 (RePo in layers 1-3)" "$(first_val $repo)" "$(val_of $repo)" \
    "$repo/$(head -n 1 $repo/latest)"
echo "  Each checkpoint is a Hugging Face directory (config.json + model.safetensors): load it in"
echo "  PyTorch, or continue it with \"model\": {\"init_from\": \"$repo\"}. Per-step losses and the"
echo "  validation losses are in $rope/metrics.jsonl and $repo/metrics.jsonl."
