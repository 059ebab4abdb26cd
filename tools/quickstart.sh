#!/usr/bin/env bash
# make quickstart: the main job on the built-in default. Stage 1
# trains a small OLMo-2-style model with RoPE from scratch on the synthetic
# long-context data; stage 2 continues that checkpoint with RePo from layer
# floor(L/3). Ends with a summary of both stages.
#
# Every run starts over: an earlier quickstart's checkpoints and metrics in
# the output directory are replaced (run.overwrite), with a line saying so.
# QUICKSTART_OUT (default runs/quickstart) moves the output directory;
# QUICKSTART_SET, a space-separated list of KEY=VALUE, is passed to both
# stages as --set arguments (tests/test_quickstart.sh runs a few steps).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${QUICKSTART_OUT:-runs/quickstart}
rope=$out/rope
repo=$out/repo
sets=(--set "run.overwrite=true")
for kv in ${QUICKSTART_SET:-}; do sets+=(--set "$kv"); done
t0=$(date +%s)
val_of() { grep -o '"val_loss": [^,]*' "$1/metrics.jsonl" | tail -n 1 | awk '{printf "%.4f", $2}'; }
first_val() { grep -o '"val_loss": [^,]*' "$1/metrics.jsonl" | head -n 1 | awk '{printf "%.4f", $2}'; }

if [ -e "$rope/metrics.jsonl" ] || [ -e "$repo/metrics.jsonl" ] || compgen -G "$rope/step_*" >/dev/null ||
    compgen -G "$repo/step_*" >/dev/null; then
    echo "quickstart: starting over in $out (the previous run's checkpoints are replaced)"
fi
echo "== stage 1: RoPE from scratch (configs/quickstart_rope.json)"
build/train configs/quickstart_rope.json --set "run.out_dir=$rope" "${sets[@]}"
echo
echo "== stage 2: continue with RePo from layer floor(L/3) (configs/quickstart_repo.json)"
build/train configs/quickstart_repo.json --set "run.out_dir=$repo" --set "model.init_from=$rope" "${sets[@]}"
t1=$(date +%s)

echo
echo "== quickstart summary ($((t1 - t0)) s)"
printf '  %-28s val loss %s -> %s   checkpoint %s\n' "stage 1 (RoPE, 4 layers)" "$(first_val "$rope")" \
    "$(val_of "$rope")" "$rope/$(head -n 1 "$rope/latest")"
printf '  %-28s val loss %s -> %s   checkpoint %s\n' "stage 2 (RePo in layers 1-3)" "$(first_val "$repo")" \
    "$(val_of "$repo")" "$repo/$(head -n 1 "$repo/latest")"
echo "  Each checkpoint is a Hugging Face directory (config.json + model.safetensors): load it in"
echo "  PyTorch, or continue it with \"model\": {\"init_from\": \"$repo\"}. Per-step losses and the"
echo "  validation losses are in $rope/metrics.jsonl and $repo/metrics.jsonl. Running it again"
echo "  starts over."
