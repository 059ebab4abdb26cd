#!/usr/bin/env bash
# tools/diloco_quality.sh [OUT_SVG]: the loss after the same tokens for the three ways 2 MPI ranks train
# (docs/mpi.md, "Quality"): synchronous data parallelism with the gradients summed in f32 on the wire,
# the same with train.grad_wire_dtype "bf16", and DiLoCo (train.outer, its defaults lr 0.7, momentum 0.9,
# Nesterov) every H = 10, 50 and 100 steps. Real text: the mixture example's sources (tools/mixture_example.sh,
# the same byte-level data preparation): licence texts and C headers mixed 3:1, validation per source.
# An OLMo-2 model with RePo (vocab 256, D=256, L=4, H=4, F=768, 3.6M parameters), T=128, batch_size 8 per
# rank (a global batch of 16 rows, 2048 tokens), 800 steps of WSD at lr 3e-3, seed 1, the same rows in the
# same order for every run; AdamW replicated on every rank (train.shard_optimizer false, which DiLoCo
# needs), one thread per rank. Evaluation every 100 steps, a multiple of every H, so that it scores the
# ranks' common (outer) weights. The five runs go one after another, about 10 minutes on 2 cores. Prints
# each run's time and load, then the mean training loss of the last 50 steps and the final validation
# loss with their relative differences to synchronous f32, and draws the curves with build/plot (default
# docs/diloco_quality.svg). Never part of `make test`.
# QUALITY_STEPS overrides the steps (keep it a multiple of 100), QUALITY_SEED the seed (1).
set -euo pipefail
cd "$(dirname "$0")/.."
SVG=${1:-docs/diloco_quality.svg}
STEPS=${QUALITY_STEPS:-800}
SEED=${QUALITY_SEED:-1}
make --no-print-directory -s MPI=1 build/mpi/train
make --no-print-directory -s build/plot
W=$(mktemp -d /tmp/repoc_diloco_quality.XXXXXX)
trap 'rm -rf "$W"' EXIT
# shellcheck source=tools/mixture_data.sh
. tools/mixture_data.sh
mixture_data "$W"
export OMP_NUM_THREADS=1
MPIRUN=(mpirun --oversubscribe -np 2)
[ "$(id -u)" -ne 0 ] || MPIRUN+=(--allow-run-as-root)
load() { cut -d' ' -f1 /proc/loadavg; }
run() { # name wire outer
    cat >"$W/$1.json" <<JSON
{"run": {"out_dir": "$W/$1", "seed": $SEED, "threads": 1, "resume": "never", "overwrite": true},
 "model": {"vocab_size": 256, "d_model": 256, "n_layers": 4, "n_heads": 4, "d_ff": 768, "positions": {"mode": "repo"}},
 "data": {"train": [{"name": "prose", "files": ["$W/prose.u16"], "weight": 3},
                    {"name": "code", "files": ["$W/code.u16"], "weight": 1}],
          "val": [{"name": "prose", "files": ["$W/prose_val.u16"]}, {"name": "code", "files": ["$W/code_val.u16"]}],
          "seq_len": 128},
 "optim": {"lr": 3e-3, "warmup_steps": 20, "schedule": "wsd", "decay_fraction": 0.3},
 "train": {"batch_size": 8, "steps": $STEPS, "log_every": 1, "eval_every": 100, "eval_batches": 8, "save_every": 0,
           "shard_optimizer": false, "grad_wire_dtype": "$2", "outer": $3}}
JSON
    local t0 l0
    t0=$(date +%s) l0=$(load)
    printf '%-12s start %s UTC, load %s' "$1" "$(date -u +%H:%M:%S)" "$l0"
    "${MPIRUN[@]}" build/mpi/train "$W/$1.json" >"$W/$1.log" 2>&1 || { echo; tail -5 "$W/$1.log"; return 1; }
    printf ' -> %s, %d s\n' "$(load)" $(($(date +%s) - t0))
}
run sync_f32 f32 null
run sync_bf16 bf16 null
for h in 10 50 100; do run "diloco_h$h" f32 "{\"every\": $h}"; done
echo "$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed "s/^ //"), $(nproc --all) cores, seed $SEED"
last50() { grep -o '"step": [0-9]*, "loss": [0-9.e-]*' "$W/$1/metrics.jsonl" | tail -n 50 | awk '{ s += $4 } END { printf "%.5f", s / NR }'; }
val() { grep -o '"val_loss": [0-9.e-]*' "$W/$1/metrics.jsonl" | tail -n 1 | awk '{ printf "%.5f", $2 }'; }
f=$(last50 sync_f32) vf=$(val sync_f32)
printf '\n| run | mean training loss, steps %d-%d | vs (a) | final validation loss (step %d) | vs (a) |\n' $((STEPS - 49)) "$STEPS" "$STEPS"
echo "|---|---|---|---|---|"
for r in sync_f32 sync_bf16 diloco_h10 diloco_h50 diloco_h100; do
    awk -v r="$r" -v t="$(last50 "$r")" -v v="$(val "$r")" -v f="$f" -v vf="$vf" \
        'BEGIN { printf "| %s | %.4f | %+.2f%% | %.4f | %+.2f%% |\n", r, t, 100 * (t - f) / f, v, 100 * (v - vf) / vf }'
done
build/plot "$W/sync_f32" "$W/sync_bf16" "$W/diloco_h10" "$W/diloco_h50" "$W/diloco_h100" --smooth 20 --out "$SVG" >/dev/null
echo "wrote $SVG ($(wc -c <"$SVG") bytes)"
