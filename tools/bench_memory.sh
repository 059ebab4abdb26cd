#!/usr/bin/env bash
# tools/bench_memory.sh: `make bench-memory`. For each case, the memory plan of
# build/train against its measured peak RSS (getrusage, printed at the end of
# the run), seconds per step (the last of 2 steps) and model GFLOP/s
# (6·P·tokens + causal attention 6·B·H·T²·hd per layer, per step; the recomputed
# forward is not counted; with a frozen BF16 base (LoRA) 4·P·tokens, P counting the BF16
# base too: frozen weights get no gradient). Cases (BENCH_MEMORY_CASES, default "1b-4096 1b-1024 S M L"):
#   1b-4096  a generated OLMo-2-1B-shape BF16 checkpoint (bench/bench_load.c --generate),
#            model.init_from it, RePo layers 5-15, T=4096 B=1, recompute, bf16 AdamW state
#   1b-1024  the same at T=1024
#   lora-2048       LoRA rank 16 (alpha 32) on all seven projections of that checkpoint, base kept in
#                   BF16 (model.base_dtype), T=2048 B=1, recompute, f32 AdamW state
#   lora-repo-2048  the same with RePo layers 5-15, the RePo module trained fully
#   S M L    the `make bench` sizes (tools/bench.sh) with build/train, RePo, f32 state, no recompute
# BENCH_MEMORY_COMPUTE=bf16 runs every case with train.compute_dtype "bf16" (BF16 products; default f32).
# Also checks that the 1B shape at T=1024 with f32 state and recompute is refused at once
# when it does not fit. Needs ~21 GiB free for the 1B cases: run nothing else big meanwhile.
# Prints one Markdown table row per case; logs in build/bench/memory/.
set -euo pipefail
cd "$(dirname "$0")/.."
CASES=${BENCH_MEMORY_CASES:-"1b-4096 1b-1024 S M L"}
THREADS=${BENCH_THREADS:-2}
make --no-print-directory -s build/train build/bench/bench_load
OUT=build/bench/memory
mkdir -p "$OUT"
T=$(mktemp -d /tmp/repoc_bench_memory.XXXXXX)
trap 'rm -rf "$T"' EXIT
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "CPU: $cpu, $THREADS threads; $(grep MemTotal /proc/meminfo | tr -s ' '); products ${BENCH_MEMORY_COMPUTE:-f32}"

config() {  # file case -> the case's config
    local model init="" B=1 seq state=f32 rec=false pos
    case $2 in
    1b-*) init="\"init_from\": \"$T/olmo2-1b\","; model=""; seq=${2#1b-}; state=bf16; rec=true ;;
    lora-*) init="\"init_from\": \"$T/olmo2-1b\", \"base_dtype\": \"bf16\","; seq=${2##*-}; rec=true
            model='"lora": {"rank": 16, "alpha": 32},' ;;
    S) model='"vocab_size": 4096, "d_model": 256, "n_layers": 4, "n_heads": 8, "d_ff": 1024,'; B=8; seq=256 ;;
    M) model='"vocab_size": 32000, "d_model": 512, "n_layers": 8, "n_heads": 8, "d_ff": 1376,'; B=4; seq=1024 ;;
    L) model='"vocab_size": 50304, "d_model": 768, "n_layers": 12, "n_heads": 12, "d_ff": 3072,'; B=2; seq=1024 ;;
    esac
    case $2 in
    S|M|L) pos='"positions": {"mode": "repo", "repo_start_layer": null}' ;;
    lora-2048) pos='"positions": {"mode": "rope"}' ;;
    *) pos='"positions": {"mode": "repo", "repo_start_layer": 5}' ;;
    esac
    cat > "$1" <<JSON
{"run": {"out_dir": "$T/run", "seed": 1, "threads": $THREADS, "resume": "never", "overwrite": true},
 "model": {$init $model $pos},
 "data": {"synthetic": {}, "seq_len": $seq},
 "optim": {"lr": 1e-5, "warmup_steps": 0, "state_dtype": "$state"},
 "train": {"batch_size": $B, "steps": 2, "log_every": 1, "eval_every": 0, "save_every": 0, "recompute": $rec,
           "compute_dtype": "${BENCH_MEMORY_COMPUTE:-f32}"}}
JSON
}

case " $CASES " in *" 1b-"*|*" lora-"*)
    [ -d "$T/olmo2-1b" ] || build/bench/bench_load --generate "$T/olmo2-1b" > /dev/null ;;
esac
case " $CASES " in *" 1b-"*)
    config "$T/refuse.json" 1b-1024
    start=$(date +%s%N)
    if build/train "$T/refuse.json" --set optim.state_dtype=f32 > "$OUT/refuse.log" 2>&1; then
        echo "note: the 1B shape at T=1024 with f32 state fits here (more than $(grep -o 'needs [0-9.]* GiB' "$OUT/refuse.log") free)"
    else
        echo "1B, T=1024, f32 state: refused in $(( ($(date +%s%N) - start) / 1000000 )) ms: $(grep -o 'needs .* available' "$OUT/refuse.log")"
    fi ;;
esac

echo "| case | command | plan MiB | peak RSS MiB | plan/measured | s/step | model GFLOP/s |"
echo "|---|---|---|---|---|---|---|"
for c in $CASES; do
    config "$T/$c.json" "$c"
    log="$OUT/$c.log"
    build/train "$T/$c.json" > "$log" 2>&1 || { echo "| $c | failed: $(tail -n 1 "$log") |"; continue; }
    plan=$(grep -o "^  peak RSS  *[0-9.]* MiB" "$log" | grep -o "[0-9.]*")
    meas=$(grep "^peak RSS" "$log" | grep -o "[0-9][0-9]*")
    ms=$(grep "^step .*ms" "$log" | tail -n 1 | grep -o "[0-9.]* ms" | grep -o "[0-9.]*")
    read -r P B seq D L per <<< "$(awk '
        /^  parameters [0-9]/ { P = $2 }
        /^  frozen base in BF16: [0-9]/ { P16 = $5 }
        /^model: [a-z0-9]+  V=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        /^memory plan \(B=/ { split($3, b, "="); split($4, t, "[=,]"); v["B"] = b[2]; v["T"] = t[2] }
        END { print P + P16, v["B"], v["T"], v["D"], v["L"], (P16 > 0 ? 4 : 6) }' "$log")"
    awk -v c="$c" -v plan="$plan" -v meas="$meas" -v ms="$ms" -v P="$P" -v B="$B" -v T="$seq" -v D="$D" -v L="$L" -v per="$per" \
        -v cmd="BENCH_MEMORY_CASES=$c${BENCH_MEMORY_COMPUTE:+ BENCH_MEMORY_COMPUTE=$BENCH_MEMORY_COMPUTE} make bench-memory" 'BEGIN {
        flops = per * P * B * T + L * 6 * B * T * T * D   # H·hd = D
        printf "| %s | `%s` | %.0f | %.0f | %.3f | %.1f | %.1f |\n", c, cmd, plan, meas, plan / meas, ms / 1000, flops / (ms / 1000) / 1e9 }'
done
