#!/usr/bin/env bash
# tools/compute_dtype_quality.sh [OUT_SVG]: train.compute_dtype "bf16" (BF16 products, FP32 accumulation)
# against "f32" on real text: the Debian licence texts under /usr/share/common-licenses as bytes (vocab 256),
# 90% train / 10% validation. An OLMo-2 model of size S's width (D=256, L=4, H=8, F=1024, RePo from layer 2),
# T=128, B=8, 300 steps at lr 1e-3, logged every step; the two runs side by side, one thread each. Prints the
# mean training loss of the last 50 steps and the final validation loss of each, with their relative
# differences, and draws both runs' curves with build/plot (default docs/compute_dtype_quality.svg).
# Never part of `make test` (several minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
SVG=${1:-docs/compute_dtype_quality.svg}
STEPS=${QUALITY_STEPS:-300}
make --no-print-directory -s build/train build/plot
W=$(mktemp -d /tmp/repoc_compute_quality.XXXXXX)
trap 'rm -rf "$W"' EXIT
cat /usr/share/common-licenses/* >"$W/text"
n=$(wc -c <"$W/text")
bytes() { od -An -v -tu1 -w1 | awk 'BEGIN { ORS = "" } { printf "%c%c", $1, 0 }' LC_ALL=C; } # -> u16 tokens
head -c $((n * 9 / 10)) "$W/text" | bytes >"$W/train.u16"
tail -c $((n - n * 9 / 10)) "$W/text" | bytes >"$W/val.u16"
run() { # compute_dtype
    cat >"$W/$1.json" <<JSON
{"run": {"out_dir": "$W/$1", "seed": 1, "threads": 1, "resume": "never", "overwrite": true},
 "model": {"vocab_size": 256, "d_model": 256, "n_layers": 4, "n_heads": 8, "d_ff": 1024,
           "positions": {"mode": "repo", "repo_start_layer": 2}},
 "data": {"train": ["$W/train.u16"], "val": ["$W/val.u16"], "format": "u16", "seq_len": 128},
 "optim": {"lr": 1e-3, "warmup_steps": 30},
 "train": {"batch_size": 8, "steps": $STEPS, "log_every": 1, "eval_every": 50, "eval_batches": 16, "save_every": 0,
           "compute_dtype": "$1"}}
JSON
    build/train "$W/$1.json" >"$W/$1.log" 2>&1 || { tail -5 "$W/$1.log"; return 1; }
}
run f32 &
a=$!
run bf16 &
b=$!
wait $a && wait $b
grep -h "BF16 products\|^cpu:" "$W/bf16.log" | head -2
last50() { grep -o '"step": [0-9]*, "loss": [0-9.e-]*' "$W/$1/metrics.jsonl" | tail -n 50 | awk '{ s += $4 } END { printf "%.5f", s / NR }'; }
val() { grep -o '"val_loss": [0-9.e-]*' "$W/$1/metrics.jsonl" | tail -n 1 | awk '{ printf "%.5f", $2 }'; }
f=$(last50 f32) b=$(last50 bf16) vf=$(val f32) vb=$(val bf16)
awk -v f="$f" -v b="$b" -v vf="$vf" -v vb="$vb" -v n="$STEPS" 'BEGIN {
    printf "mean training loss of steps %d-%d: f32 %.4f  bf16 %.4f  relative difference %+.3f%%\n", n - 49, n, f, b, 100 * (b - f) / f
    printf "final validation loss: f32 %.4f  bf16 %.4f  relative difference %+.3f%%\n", vf, vb, 100 * (vb - vf) / vf }'
build/plot "$W/f32" "$W/bf16" --out "$SVG" >/dev/null
echo "wrote $SVG"
