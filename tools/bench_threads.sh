#!/usr/bin/env bash
# tools/bench_threads.sh (`make bench-threads`): what scales from 1 to 2 threads (docs/cpus.md,
# "Decisions on the Intel Xeon"). Per size and repeat it runs build/bench/bench_step in mode repo with 1 thread and with 2
# (the order swapped in even repeats), and prints per phase (step, forward, backward, optimizer) the
# median over repeats of t(1 thread) / t(2 threads): 2.0 is perfect scaling, below 1.0 two threads
# are slower. Never part of `make test`.
# Environment (defaults): THREADS_SIZES="S M L"  THREADS_REPEATS=3  THREADS_B (the size's B)
#   THREADS_ENV="VAR=value ..." extra environment for every run (e.g. OMP_WAIT_POLICY=passive)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${THREADS_SIZES:-"S M L"}
REPEATS=${THREADS_REPEATS:-3}
BIN=build/bench/bench_step
make --no-print-directory -s check-deps "$BIN"
tmp=$(mktemp -d /tmp/repoc_threads.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$BIN" "$tmp/bench_step"   # one binary for the whole run

jget() { sed -n "s/.*\"$1\": *\"\{0,1\}\([^,\"}]*\)\"\{0,1\}[,}].*/\1/p"; }
echo "== 1 vs 2 threads: sizes [$SIZES], repeats $REPEATS, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$tmp/bench_step" --cpu | sed 's/^/   /'
for size in $SIZES; do
    case $size in S) steps="--steps 5 --warmup 2" ;; *) steps="--steps 2 --warmup 1" ;; esac
    : > "$tmp/$size.tsv"
    for r in $(seq "$REPEATS"); do
        order="1 2"; [ $((r % 2)) = 0 ] && order="2 1"
        for th in $order; do
            j=$(env ${THREADS_ENV:-} "$tmp/bench_step" --size "$size" --mode repo --threads "$th" $steps \
                ${THREADS_B:+--B $THREADS_B} --mfu-sgemm 0 --no-attn --json)
            line="$r $th $(for k in ms_step fwd_ms bwd_ms opt_ms; do printf '%s ' "$(echo "$j" | jget $k)"; done)"
            echo "$line" >> "$tmp/$size.tsv"
            printf '  %-4s rep %d, %d thread(s): %9.1f ms/step (fwd %.0f bwd %.0f opt %.0f ms), load %s\n' "$size" \
                $line "$(cut -d' ' -f1 /proc/loadavg)"
        done
    done
    # per repeat r and phase: t1 / t2; the median over repeats
    awk -v size="$size" '
        { t[$1, $2, 1] = $3; t[$1, $2, 2] = $4; t[$1, $2, 3] = $5; t[$1, $2, 4] = $6; if ($1 > n) n = $1 }
        function median(a, k,   i, j, x) {
            for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
            return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        }
        END {
            split("step forward backward optimizer", name, " ")
            printf "  %-4s speed-up 1 -> 2 threads (median of %d alternated pairs):", size, n
            for (p = 1; p <= 4; p++) {
                k = 0
                for (r = 1; r <= n; r++) if (t[r, 2, p] > 0) a[++k] = t[r, 1, p] / t[r, 2, p]
                printf " %s %.2fx", name[p], k ? median(a, k) : 0
            }
            printf "\n"
        }' "$tmp/$size.tsv"
done
