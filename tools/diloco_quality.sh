#!/usr/bin/env bash
# tools/diloco_quality.sh [OUT_SVG]: the loss after the same tokens for the three ways 2 MPI ranks train
# (docs/mpi.md, "Quality"): synchronous data parallelism with the gradients summed in f32 on the wire (a),
# the same with train.grad_wire_dtype "bf16" (b), and DiLoCo (train.outer, its defaults lr 0.7, momentum
# 0.9, Nesterov) every H = 10, 50 and 100 steps (c).
#
# Data: quality_data (tools/mixture_data.sh), several MB of byte-level text that ships with Debian (prose:
# licences, copyright files, docs and man pages; code: C headers and Python), split by a hash of the file
# name into validation (6 shards per kind), the continued phase's training text and the first phase's,
# disjoint, each read about once. Training mixes prose and code 3:1; the validation loss reported is the
# same 3:1 mix of the shards' means, and the spread of the 6 shards gives its standard error.
# Model: OLMo-2 with RePo, vocab 256, D=256, L=4, H=4, F=768 (3.6M parameters), T=128, batch_size 8 per rank
# (a global batch of 16 rows, 2048 tokens), AdamW replicated on every rank (train.shard_optimizer false,
# which DiLoCo needs), one thread per rank.
# Two phases, as DiLoCo is used (and published): a model pretrained synchronously, then continued.
#   1. pretrain: synchronous, f32 wire, from random weights (seed 1), PRE_STEPS steps of WSD at PRE_LR.
#   2. continue: every mode from that checkpoint (model.init_from: its weights, fresh AdamW state), STEPS
#      steps of WSD at LR, once per seed of SEEDS (the seed changes which rows each step reads, nothing
#      else: the weights are the checkpoint's), evaluated every EVAL steps (a multiple of every H, so that
#      it scores the ranks' common outer weights).
# Prints each run's start, time and load, then per mode and seed the final validation loss and the mean
# training loss of the last 50 steps, their relative differences to (a) of the same seed, and draws the
# first seed's curves with build/plot (default docs/diloco_quality.svg). 35-45 minutes on 2 cores (docs/mpi.md
# has the times). Never part of `make test`.
# Knobs: QUALITY_STEPS (600), QUALITY_PRE_STEPS (1600), QUALITY_LR (5e-4), QUALITY_PRE_LR (1e-3),
# QUALITY_SEEDS ("1 2 3"), QUALITY_EVAL (300), QUALITY_EVAL_BATCHES (24 per shard), QUALITY_MODES (the five
# above; an extra "diloco_h<H>_olr<LR>_mom<M>" is DiLoCo with outer lr LR and momentum M, either optional),
# QUALITY_DIR (keep the data and runs there, and rerun only the runs missing; default a temporary directory,
# removed), QUALITY_WAIT_FILE (wait while this file exists before each run: a machine shared with someone
# who times things).
set -euo pipefail
cd "$(dirname "$0")/.."
SVG=${1:-docs/diloco_quality.svg}
STEPS=${QUALITY_STEPS:-600}
PRE_STEPS=${QUALITY_PRE_STEPS:-1600}
LR=${QUALITY_LR:-5e-4}
PRE_LR=${QUALITY_PRE_LR:-1e-3}
read -r -a SEEDS <<<"${QUALITY_SEEDS:-1 2 3}"
EVAL=${QUALITY_EVAL:-300}
EVAL_BATCHES=${QUALITY_EVAL_BATCHES:-24}
read -r -a MODES <<<"${QUALITY_MODES:-sync_f32 sync_bf16 diloco_h10 diloco_h50 diloco_h100}"
SHARDS=6
make --no-print-directory -s MPI=1 build/mpi/train
make --no-print-directory -s build/plot
if [ -n "${QUALITY_DIR:-}" ]; then
    W=$QUALITY_DIR
    mkdir -p "$W"
else
    W=$(mktemp -d /tmp/repoc_diloco_quality.XXXXXX)
    trap 'rm -rf "$W"' EXIT
fi
# shellcheck source=tools/mixture_data.sh
. tools/mixture_data.sh
# The budgets in bytes: the first phase's prose (its code a third), the continued phase's, and each kind's
# validation text (EVAL_BATCHES of 8 rows of 128 tokens per shard, and a little more)
[ -e "$W/prose_pre.u16" ] || quality_data "$W" 6000000 3000000 $((SHARDS * (EVAL_BATCHES * 1024 + 2048))) "$SHARDS"
printf 'tokens: %s\n' "$(cd "$W" && for f in *.u16; do printf '%s %d, ' "${f%.u16}" $(($(stat -c %s "$f") / 2)); done)"
export OMP_NUM_THREADS=1
MPIRUN=(mpirun --oversubscribe -np 2)
[ "$(id -u)" -ne 0 ] || MPIRUN+=(--allow-run-as-root)
load() { cut -d' ' -f1 /proc/loadavg; }
files() { # kind part: the JSON list of one source's files
    printf '"%s/%s_%s.u16"' "$W" "$1" "$2"
}
val_sources() { # every validation shard as its own source, scored one by one
    local k s=
    for kind in prose code; do
        for ((k = 0; k < SHARDS; k++)); do
            s+="${s:+, }{\"name\": \"${kind}$k\", \"files\": [$(files "$kind" "val$k")]}"
        done
    done
    echo "$s"
}
run() { # name seed steps lr part eval wire outer init
    local init=$9 model
    model='"vocab_size": 256, "d_model": 256, "n_layers": 4, "n_heads": 4, "d_ff": 768, "positions": {"mode": "repo"}'
    [ -z "$init" ] || model="\"init_from\": \"$init\""
    cat >"$W/$1.json" <<JSON
{"run": {"out_dir": "$W/$1", "seed": $2, "threads": 1, "resume": "never", "overwrite": true},
 "model": {$model},
 "data": {"train": [{"name": "prose", "files": [$(files prose "$5")], "weight": 3},
                    {"name": "code", "files": [$(files code "$5")], "weight": 1}],
          "val": [$(val_sources)], "seq_len": 128},
 "optim": {"lr": $4, "warmup_steps": 20, "schedule": "wsd", "decay_fraction": 0.3},
 "train": {"batch_size": 8, "steps": $3, "log_every": 1, "eval_every": $6, "eval_batches": $EVAL_BATCHES,
           "save_every": 0, "shard_optimizer": false, "grad_wire_dtype": "$7", "outer": $8}}
JSON
    [ ! -e "$W/$1.done" ] || return 0 # finished before: QUALITY_DIR reruns only what is missing
    if [ -n "${QUALITY_WAIT_FILE:-}" ]; then while [ -e "$QUALITY_WAIT_FILE" ]; do sleep 10; done; fi
    local t0 l0
    t0=$(date +%s) l0=$(load)
    printf '%-22s start %s UTC, load %s' "$1" "$(date -u +%H:%M:%S)" "$l0"
    "${MPIRUN[@]}" build/mpi/train "$W/$1.json" >"$W/$1.log" 2>&1 || { echo; tail -5 "$W/$1.log"; return 1; }
    printf ' -> %s, %d s\n' "$(load)" $(($(date +%s) - t0))
    touch "$W/$1.done"
}
mode_run() { # mode seed: one continued run from the pretrained checkpoint
    local wire=f32 outer=null h=${1#diloco_h} o
    case $1 in
        sync_f32) ;;
        sync_bf16) wire=bf16 ;;
        diloco_h*) # diloco_h<H>[_olr<LR>][_mom<M>]: the outer defaults but what the name sets
            outer="{\"every\": ${h%%_*}"
            for o in $(echo "$h" | tr _ ' '); do
                case $o in olr*) outer+=", \"lr\": ${o#olr}" ;; mom*) outer+=", \"momentum\": ${o#mom}" ;; esac
            done
            outer+="}" ;;
        *) echo "unknown mode $1" >&2 && return 1 ;;
    esac
    run "$1_s$2" "$2" "$STEPS" "$LR" cont "$EVAL" "$wire" "$outer" "$W/pretrain"
}
run pretrain 1 "$PRE_STEPS" "$PRE_LR" pre $((PRE_STEPS / 2)) f32 null ""
for seed in "${SEEDS[@]}"; do
    for m in "${MODES[@]}"; do mode_run "$m" "$seed"; done
done
echo "$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed "s/^ //"), $(nproc --all) cores"
# One line per run: mode seed train val se shards...: the mean training loss of the last 50 steps, the final
# validation loss (3:1 prose:code of the shards' means), its standard error from the shards' spread, and the
# 2·SHARDS shard losses (prose first).
summary() { # run directory
    grep -o '"step": [0-9]*, "loss": [0-9.e-]*' "$1/metrics.jsonl" | tail -n 50 |
        awk '{ s += $4 } END { printf "%.6f", s / NR }'
    grep '"val_loss_source"' "$1/metrics.jsonl" | tail -n 1 | grep -o '"val_loss_source": {[^}]*}' |
        grep -o '": [0-9][0-9.e-]*' | cut -c4- | awk -v n="$SHARDS" '
        function se(lo, sum,  k, v) { # the squared standard error of the mean of shards lo..lo+n-1
            v = 0; for (k = lo; k < lo + n; k++) v += (x[k] - sum / n) ^ 2; return v / (n - 1) / n
        }
        { x[NR] = $1; s[NR <= n ? "p" : "c"] += $1 }
        END { v = 0.75 * s["p"] / n + 0.25 * s["c"] / n
              printf " %.6f %.6f", v, sqrt(0.5625 * se(1, s["p"]) + 0.0625 * se(n + 1, s["c"]))
              for (k = 1; k <= 2 * n; k++) printf " %.6f", x[k] }'
}
for seed in "${SEEDS[@]}"; do
    for m in "${MODES[@]}"; do echo "$m $seed $(summary "$W/${m}_s$seed")"; done
done >"$W/summary.txt"
echo "pretrain (seed 1, $PRE_STEPS steps): $(summary "$W/pretrain" | cut -d' ' -f1-3) (train, val, its standard error)"
# The tables: per mode the seeds' values, their mean, and the difference to (a) of the same seed (the same rows
# read); for the validation loss also the standard error of that difference from the shards (the difference
# per shard, weighted 3:1 as the loss). The first mode is the reference (a).
awk -v n="$SHARDS" -v steps="$STEPS" '
    { m = $1; s = $2
      if (!(m in seen)) { seen[m] = 1; mode[++nm] = m }
      if (!(s in sseen)) { sseen[s] = 1; seed[++ns] = s }
      tr[m, s] = $3; va[m, s] = $4; se[m, s] = $5; for (k = 1; k <= 2 * n; k++) sh[m, s, k] = $(5 + k) }
    function dse(m, s,  k, lo, w, v, mu, d) { # standard error of the weighted difference to (a) from the shards
        v = 0
        for (lo = 0; lo <= n; lo += n) {
            w = lo ? 0.0625 : 0.5625; mu = 0
            for (k = lo + 1; k <= lo + n; k++) mu += (sh[m, s, k] - sh[mode[1], s, k]) / n
            for (k = lo + 1; k <= lo + n; k++) {
                d = sh[m, s, k] - sh[mode[1], s, k] - mu; v += w * d * d / (n - 1) / n
            }
        }
        return sqrt(v)
    }
    function table(what, x, withse,  i, j, m, sum, dsum, h) {
        h = "| run |"; for (j = 1; j <= ns; j++) h = h " seed " seed[j] " |"
        h = h " mean |"; for (j = 1; j <= ns; j++) h = h " vs (a), seed " seed[j] " |"
        printf "\n%s\n%s mean vs (a) |\n|---|", what, h
        for (j = 1; j <= 2 * ns + 2; j++) printf "---|"
        printf "\n"
        for (i = 1; i <= nm; i++) {
            m = mode[i]; sum = 0; dsum = 0; printf "| %s |", m
            for (j = 1; j <= ns; j++) { sum += x[m, seed[j]]; printf " %.4f |", x[m, seed[j]] }
            printf " %.4f |", sum / ns
            for (j = 1; j <= ns; j++) {
                d = 100 * (x[m, seed[j]] / x[mode[1], seed[j]] - 1); dsum += d
                if (i == 1) printf " |"
                else if (withse) printf " %+.3f%% ± %.3f |", d, 100 * dse(m, seed[j]) / x[mode[1], seed[j]]
                else printf " %+.3f%% |", d
            }
            if (i == 1) printf " |\n"; else printf " %+.3f%% |\n", dsum / ns
        }
    }
    END {
        table("final validation loss (step " steps ", prose:code 3:1; ± the standard error of the difference from the " \
              n " shards per kind)", va, 1)
        table("mean training loss, steps " steps - 49 "-" steps, tr, 0)
        printf "\nstandard error of the validation loss itself (shards), %s: ", mode[1]
        for (j = 1; j <= ns; j++)
            printf "seed %s %.4f (%.2f%%) ", seed[j], se[mode[1], seed[j]], 100 * se[mode[1], seed[j]] / va[mode[1], seed[j]]
        lo = hi = va[mode[1], seed[1]]; tlo = thi = tr[mode[1], seed[1]]
        for (j = 2; j <= ns; j++) {
            v = va[mode[1], seed[j]]; t = tr[mode[1], seed[j]]
            if (v < lo) lo = v; if (v > hi) hi = v; if (t < tlo) tlo = t; if (t > thi) thi = t
        }
        printf "\nspread of %s over the seeds (max - min, of the min): validation %.2f%%, training %.2f%%\n", mode[1],
            100 * (hi / lo - 1), 100 * (thi / tlo - 1)
    }' "$W/summary.txt"
plots=()
for m in "${MODES[@]}"; do plots+=("$W/${m}_s${SEEDS[0]}"); done
build/plot "${plots[@]}" --smooth 20 --out "$SVG" >/dev/null
echo "wrote $SVG ($(wc -c <"$SVG") bytes)"
