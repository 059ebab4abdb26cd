#!/usr/bin/env bash
# tools/bench_engines.sh (make bench-engines): the engine choice of the products (model/engine.h) against
# every engine it chooses from, and against PyTorch, side by side in one run (docs/cpus.md, "Engines
# per CPU"). Per size and repeat, alternated, the training step of bench_step in mode repo (tokens/s):
#   openblas  f32 on OpenBLAS (--f32-engine openblas)    onednn  f32 on oneDNN's FP32 matmul
#   default   what a run gets with nothing set (f32, --f32-engine auto)
#   bf16      --compute bf16 (where the CPU has BF16 products)   auto  --compute auto
#   torch-fp32, torch-bf16: PyTorch 1.13 (tools/bench_torch.py, same weights and tokens) in fp32 and under
#     autocast(bfloat16), each run once with the environment as it is and once with OpenBLAS's own choice
#     of kernels (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed, for that PyTorch run alone) when the
#     environment sets them: its best is the one compared
# and prints the targets of the engine choice: default / the best f32 engine, auto / the faster of the best
# f32 and bf16, repoc's best / PyTorch's best, each from the best run of its variant (on a shared machine the
# least disturbed one; every run is in build/bench/engines.jsonl). Never part of make test.
# Environment (defaults): BENCH_SIZES="S M L" BENCH_REPEATS=2 BENCH_THREADS=2 BENCH_TORCH=1 (0: skip)
#   BENCH_TORCH_SIZES="S M" (PyTorch's L step takes about half a minute on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${BENCH_SIZES:-"S M L"}
REPEATS=${BENCH_REPEATS:-2}
THREADS=${BENCH_THREADS:-2}
TORCH_SIZES=${BENCH_TORCH_SIZES:-"S M"}
BIN=build/bench/bench_step
PY=/usr/bin/python3
make --no-print-directory "$BIN" >/dev/null
export REPOC_CACHE_DIR=${REPOC_CACHE_DIR:-$(mktemp -d /tmp/repoc_bench_engines.XXXXXX)}   # a fresh timing
tmp=$(mktemp -d /tmp/repoc_bench_engines_w.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
out=build/bench/engines.jsonl
mkdir -p build/bench
: >"$out"
torch=0
[ "${BENCH_TORCH:-1}" = 1 ] && "$PY" -c 'import torch' 2>/dev/null && torch=1
bf16=0
"$BIN" --cpu | grep -q '^bf16 products: bf16' && bf16=1
"$BIN" --cpu
echo "environment: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset}; load $(cut -d' ' -f1-3 /proc/loadavg)"

steps_of() { case $1 in S) echo "--steps 5 --warmup 2" ;; *) echo "--steps 2 --warmup 1" ;; esac; }
run() {  # size label args...: one bench_step run, its JSON line tagged with the label
    local size=$1 label=$2
    shift 2
    # shellcheck disable=SC2046 # each word of the $(...) is an argument of its own
    "$BIN" --size "$size" --mode repo --threads "$THREADS" $(steps_of "$size") --no-attn --mfu-sgemm 0 --json "$@" |
        tail -n 1 | sed "s/^{/{\"label\": \"$label\", /" >>"$out"
}
run_torch() {  # size label amp env...
    local size=$1 label=$2 amp=$3 B T
    shift 3
    B=$(grep -m1 "\"size\": \"$size\"" "$out" | grep -o '"B": [0-9]*' | grep -o '[0-9]*$')   # (grep -m1, not
    T=$(grep -m1 "\"size\": \"$size\"" "$out" | grep -o '"T": [0-9]*' | grep -o '[0-9]*$')   # head: pipefail)
    # shellcheck disable=SC2046 # each word of the $(...) is an argument of its own
    env "$@" "$PY" tools/bench_torch.py "$tmp/ckpt_$size" --threads "$THREADS" --B "$B" --T "$T" --size "$size" \
        --mode repo --amp "$amp" $(steps_of "$size") 2>/dev/null | tail -n 1 | sed "s/^{/{\"label\": \"$label\", /" >>"$out"
}
for size in $SIZES; do
    for _ in $(seq "$REPEATS"); do
        run "$size" openblas --f32-engine openblas
        run "$size" onednn --f32-engine onednn
        run "$size" default
        [ $bf16 = 1 ] && run "$size" bf16 --compute bf16
        run "$size" auto --compute auto
    done
    if [ $torch = 1 ] && [[ " $TORCH_SIZES " == *" $size "* ]]; then
        "$BIN" --size "$size" --mode repo --save-weights "$tmp/ckpt_$size" >/dev/null
        for amp in none bf16; do
            run_torch "$size" "torch-$amp" "$amp" OMP_NUM_THREADS="$THREADS"
            if [ -n "${OPENBLAS_CORETYPE:-}${OPENBLAS_L2_SIZE:-}" ]; then
                run_torch "$size" "torch-$amp" "$amp" -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS="$THREADS"
            fi
        done
    fi
    echo "done: $size ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
done
"$PY" - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def tps(size, label):  # the best run: on a shared machine the least disturbed one
    v = [r["tokens_per_s"] for r in rows if r.get("size") == size and r["label"] == label]
    return max(v) if v else None
sizes = []
for r in rows:
    if r.get("size") not in sizes: sizes.append(r.get("size"))
print("\n| size | OpenBLAS f32 | oneDNN f32 | default (engine) | bf16 | auto (chose) | default / best f32 | auto / best of f32, bf16 | PyTorch fp32 | PyTorch bf16 | repoc best / PyTorch best |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for s in sizes:
    ob, od, de, bf, au = (tps(s, k) for k in ("openblas", "onednn", "default", "bf16", "auto"))
    eng = next(r["f32_engine"] for r in rows if r.get("size") == s and r["label"] == "default")
    chose = next(r["compute"] for r in rows if r.get("size") == s and r["label"] == "auto")
    tf, tb = tps(s, "torch-none"), tps(s, "torch-bf16")
    best32 = max(ob, od); best = max(best32, bf or 0)
    f = lambda x: "%.0f" % x if x else "–"
    print("| %s | %s | %s | %s (%s) | %s | %s (%s) | %.2f | %.2f | %s | %s | %s |" % (
        s, f(ob), f(od), f(de), eng, f(bf), f(au), chose, de / best32, au / best, f(tf), f(tb),
        "%.2fx" % (best / max(tf or 0, tb or 0)) if (tf or tb) else "–"))
print("\ntokens/s, the best run of each (the least disturbed on a shared machine); raw runs in " + sys.argv[1])
PY
