#!/usr/bin/env bash
# Thread defaults on a machine where another job holds a core (a 2-thread run with libgomp's default
# spinning took 14x the time of 1 thread). Times build/train on the quickstart model (STEPS steps, on the
# tokenized fixture text) and build/generate on a wider model (one whose steps use 2 threads), under: the
# programs' default (common/threads.h: the idle cores at start, a short spin), libgomp's own spin
# (GOMP_SPINCOUNT=300000, what the programs ran with before), OMP_WAIT_POLICY=passive, and 1 thread;
# SPINS="1000 100000" adds GOMP_SPINCOUNT values. Only "threads1" sets the count; the others leave it to the
# program. A spinning loop holds the last core (BUSY=0: none). The settings alternate ROUNDS times (the
# machine is shared and noisy); prints the mean seconds of each and its ratio to the best.
# Usage: tools/bench_busy.sh [ROUNDS] (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
steps=${STEPS:-60}
T=$(mktemp -d /tmp/repoc_busy.XXXXXX)
busy_pid=
cleanup() { [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
[ -x build/train ] && [ -x build/generate ] || { echo "bench_busy: run make first" >&2; exit 1; }
F=tests/fixtures/tokenizer
# shellcheck disable=SC2046 # each word of the $(...) is an argument of its own
build/tokenize --tokenizer $F/gpt2.json --val 0 --out "$T/d" $(for _ in 1 2 3 4 5 6 7 8; do echo $F/sample.txt; done) \
    >/dev/null 2>&1
cfg() {  # out_dir threads d_model d_ff steps: configs/quickstart_rope.json on the fixture text, vocab 1024
    sed -e "s|runs/quickstart/rope|$1|" -e "s|\"threads\": 0|\"threads\": $2|" -e "s|\"d_model\": 128|\"d_model\": $3|" \
        -e "s|\"d_ff\": 384|\"d_ff\": $4|" -e "s|\"steps\": 300|\"steps\": $5|" -e 's|"eval_every": 100|"eval_every": 0|' \
        -e 's|"vocab_size": 64|"vocab_size": 1024|' -e 's|"warmup_steps": 30|"warmup_steps": 0|' \
        -e "s|\"synthetic\": {}|\"train\": [\"$T/d_train_000000.bin\"]|" configs/quickstart_rope.json
}
cfg "$T/gen" 0 512 1536 2 >"$T/gen.json"
build/train "$T/gen.json" >/dev/null   # the checkpoint generate reads
cp $F/gpt2.json "$T/gen/$(cat "$T/gen/latest")/tokenizer.json"
cfg "$T/run" 0 128 384 "$steps" >"$T/t0.json"
cfg "$T/run" 1 128 384 "$steps" >"$T/t1.json"
now() { date +%s.%N; }
train_s() {  # threads env...
    local c=$1 t0; shift; t0=$(now)
    env "$@" build/train "$T/t$c.json" --set run.overwrite=true >/dev/null
    echo "$(now) - $t0" | bc
}
gen_s() {  # threads env...
    local c=$1 t0; shift; t0=$(now)
    local t=(); [ "$c" != 0 ] && t=(--threads "$c")
    env "$@" build/generate "$T/gen" "${t[@]}" --prompt "int main(void) {" --max-new-tokens 200 --temperature 0 \
        --ignore-eos >/dev/null 2>"$T/gen.err" || { cat "$T/gen.err" >&2; exit 1; }
    echo "$(now) - $t0" | bc
}
labels=(default libgomp passive threads1)
envs=("X=1" "GOMP_SPINCOUNT=300000" "OMP_WAIT_POLICY=passive" "X=1")
threads=(0 0 0 1)
for s in ${SPINS:-}; do labels+=("spin$s"); envs+=("GOMP_SPINCOUNT=$s"); threads+=(0); done
if [ "${BUSY:-1}" = 1 ]; then
    ( exec taskset -c "$(($(nproc) - 1))" sh -c 'while :; do :; done' ) & busy_pid=$!
fi
echo "bench_busy: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores," \
     "busy loop on the last core: ${BUSY:-1}, load $(cut -d' ' -f1 /proc/loadavg), $rounds rounds"
declare -A sum
for _ in $(seq "$rounds"); do
    for i in "${!labels[@]}"; do
        l=${labels[$i]}
        sum[train_$l]=$(echo "${sum[train_$l]:-0} + $(train_s "${threads[$i]}" "${envs[$i]}")" | bc)
        sum[gen_$l]=$(echo "${sum[gen_$l]:-0} + $(gen_s "${threads[$i]}" "${envs[$i]}")" | bc)
    done
done
for p in train gen; do
    best=$(for l in "${labels[@]}"; do echo "${sum[${p}_$l]}"; done | sort -g | head -1)
    for l in "${labels[@]}"; do
        printf '  %-6s %-12s %7.2f s per run   %.2fx the best\n' "$p" "$l" "$(echo "${sum[${p}_$l]} / $rounds" | bc -l)" \
            "$(echo "${sum[${p}_$l]} / $best" | bc -l)"
    done
done
