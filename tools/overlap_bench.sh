#!/usr/bin/env bash
# tools/overlap_bench.sh: time per step of 2 MPI ranks with the gradient sum overlapped with the backward
# (train.overlap_grad_reduce true, the default) and after it (false), side by side, on this machine's
# loopback: Open MPI's shared memory, then TCP over lo shaped by a token bucket (tc tbf) to an ordinary
# network's rate (docs/mpi.md, "Overlap with the backward"). The 51M-parameter OLMo-2 of docs/mpi.md's
# measurements (vocab 16384, d_model 512, 10 layers, 8 heads, d_ff 1536, seq_len 256, batch_size 4 per rank,
# one thread per rank), OVERLAP_STEPS steps (8), OVERLAP_ROUNDS rounds (2) of on and off alternated.
# OVERLAP_RATES: tbf rates for lo (default "2gbit": both directions of a 2-rank ring pass lo's one queue, so
# 2 Gbit/s on lo is a full-duplex 1 Gb/s link); shaping needs root and tc, and is removed on exit.
# Prints, per run, the median step time and the median exposed communication (`comm_ms`) of steps 2 to the
# last, then the medians per setting and their ratio. OVERLAP_SETS: more `--set key=value` for every run (e.g.
# "train.grad_wire_dtype=bf16 train.shard_optimizer=false"). Never part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${OVERLAP_STEPS:-8}
ROUNDS=${OVERLAP_ROUNDS:-2}
RATES=${OVERLAP_RATES:-2gbit}
SETS=()
for kv in ${OVERLAP_SETS:-}; do SETS+=(--set "$kv"); done
make --no-print-directory -s MPI=1 build/mpi/train
make --no-print-directory -s build/tools/gen_tokens
W=$(mktemp -d /tmp/repoc_overlap.XXXXXX)
cleanup() { tc qdisc del dev lo root 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
build/tools/gen_tokens "$W/t.u16" 4000000 16384 1 >/dev/null
MPIRUN=(mpirun --oversubscribe -np 2)
[ "$(id -u)" -ne 0 ] || MPIRUN+=(--allow-run-as-root)
cat >"$W/c.json" <<JSON
{"run": {"out_dir": "$W/run", "seed": 1, "threads": 1, "resume": "never", "overwrite": true},
 "model": {"vocab_size": 16384, "d_model": 512, "n_layers": 10, "n_heads": 8, "d_ff": 1536},
 "data": {"train": ["$W/t.u16"], "seq_len": 256},
 "optim": {"lr": 3e-4},
 "train": {"batch_size": 4, "steps": $STEPS, "log_every": 1, "eval_every": 0, "save_every": 0}}
JSON
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { grep -o "\"$1\": [0-9.e+-]*" "$W/run/metrics.jsonl" | sed 's/.*: //' | tail -n +2; }
run() { # label overlap mpi-options...: one run, its medians appended to $W/<label>-<overlap>
    local label=$1 ov=$2 l0
    shift 2
    l0=$(cut -d' ' -f1 /proc/loadavg)
    "${MPIRUN[@]}" "$@" build/mpi/train "$W/c.json" --set "train.overlap_grad_reduce=$ov" "${SETS[@]}" >"$W/log" 2>&1 ||
        { tail -5 "$W/log"; exit 1; }
    local ms comm
    ms=$(field ms | median) comm=$(field comm_ms | median)
    printf '%-22s overlap %-5s step %7.1f ms  comm %7.1f ms  load %s -> %s  %s UTC\n' "$label" "$ov" "$ms" "$comm" \
        "$l0" "$(cut -d' ' -f1 /proc/loadavg)" "$(date -u +%H:%M:%S)"
    echo "$ms $comm" >>"$W/$label-$ov"
}
settings=("shm")
tcp=(--mca pml ob1 --mca btl "tcp,self" --mca btl_tcp_if_include lo)
for rate in $RATES; do
    if tc qdisc replace dev lo root tbf rate "$rate" burst 256kb latency 100ms 2>/dev/null; then
        tc qdisc del dev lo root
        settings+=("tcp-$rate")
    else echo "no tc tbf on lo here (needs root): TCP at $rate skipped"; fi
done
echo "$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc --all) cores, $STEPS steps, $ROUNDS rounds${OVERLAP_SETS:+, --set $OVERLAP_SETS}"
for s in "${settings[@]}"; do
    for ((r = 0; r < ROUNDS; r++)); do
        for ov in true false; do
            if [ "$s" = shm ]; then run "$s" "$ov"
            else
                tc qdisc replace dev lo root tbf rate "${s#tcp-}" burst 256kb latency 100ms
                run "$s" "$ov" "${tcp[@]}"
                tc qdisc del dev lo root
            fi
        done
    done
done
echo
echo "| link | overlap: median step | median comm | no overlap: median step | median comm | no overlap / overlap |"
echo "|---|---|---|---|---|---|"
for s in "${settings[@]}"; do
    on=$(cut -d' ' -f1 "$W/$s-true" | median) off=$(cut -d' ' -f1 "$W/$s-false" | median)
    con=$(cut -d' ' -f2 "$W/$s-true" | median) coff=$(cut -d' ' -f2 "$W/$s-false" | median)
    awk -v s="$s" -v a="$on" -v b="$con" -v c="$off" -v d="$coff" \
        'BEGIN { printf "| %s | %.0f ms | %.0f ms | %.0f ms | %.0f ms | %.2fx |\n", s, a, b, c, d, c / a }'
done
