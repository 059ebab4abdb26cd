#!/usr/bin/env bash
# tools/bench.sh: `make bench` (method and results in docs/performance.md).
# Builds build/bench/bench_step, prints the CPU (model, x86-64 level), the instruction
# set the binary was built for and OpenBLAS's core type, the OpenBLAS sgemm rate (at start and
# end, for information: MFU uses the rate each repoc run measures itself), then
# per size times full training steps of repoc in every mode and, when Debian's
# python3-torch imports, the same step in PyTorch (tools/bench_torch.py, same
# weights and tokens), alternating the programs. Never part of `make test`.
#
# Per size and repeat r = 1..BENCH_REPEATS, in this order:
#   repoc rope, repoc repo (swapped in even repeats), [repoc nope, r2n1, n2r1: repeat 1 only],
#   [PyTorch in BENCH_TORCH_MODE]
# so the RePo/RoPE and repoc/PyTorch ratios are medians of ratios of runs made
# side by side. Every repoc run also times attention alone and measures sgemm
# in the same process right after its steps (the MFU denominator).
#
# Environment (defaults):
#   BENCH_SIZES="S M L long"  BENCH_REPEATS=3  BENCH_THREADS=2  BENCH_SGEMM_N=2048
#   BENCH_MODES (default: "rope repo nope r2n1 n2r1" for S and M, "rope repo" for L and long)
#   BENCH_STEPS, BENCH_WARMUP (timed and warm-up steps per run; default S 5 and 2, M L long 2 and 1)
#   BENCH_BUILD=build/portable PORTABLE=1 (what `make bench PORTABLE=1` sets) times the portable build
#   BENCH_COMPUTE ("f32 bf16" where the build and CPU have BF16 products, else "f32"): with bf16, every
#     repeat also times repoc rope and repo with --compute bf16 right after their f32 runs, and PyTorch
#     under autocast(bfloat16) (--amp bf16) after its fp32 run; a table of the bf16/f32 ratios follows
#   BENCH_TORCH=0 skips PyTorch   BENCH_TORCH_MODE=repo (the mode compared; sizes S M L only)
#   BENCH_TORCH_ENV="VAR=value ..." extra environment for the PyTorch runs only (e.g.
#     GLIBC_TUNABLES=glibc.malloc.hugetlb=1; docs/performance.md "Results", the faults/step column)
# Raw JSON lines of every run go to build/bench/results.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${BENCH_SIZES:-"S M L long"}
REPEATS=${BENCH_REPEATS:-3}
THREADS=${BENCH_THREADS:-2}
SGEMM_N=${BENCH_SGEMM_N:-2048}
TORCH_MODE=${BENCH_TORCH_MODE:-repo}
PY=/usr/bin/python3
BIN=${BENCH_BUILD:-build}/bench/bench_step   # make bench PORTABLE=1: build/portable
RESULTS=build/bench/results.jsonl

make --no-print-directory -s check-deps "$BIN" ${BENCH_BUILD:+BUILD=$BENCH_BUILD} ${PORTABLE:+PORTABLE=$PORTABLE}
tmp=$(mktemp -d /tmp/repoc_bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$BIN" "$tmp/bench_step"   # one binary for the whole run, whatever is rebuilt meanwhile
BIN=$tmp/bench_step

have_torch=0
if [ "${BENCH_TORCH:-1}" != 0 ] && "$PY" -c 'import torch' >/dev/null 2>&1; then
    have_torch=1
    torch_version=$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)
fi

# jget KEY: the value of KEY in the flat one-line JSON object on stdin
jget() { sed -n "s/.*\"$1\": *\"\{0,1\}\([^,\"}]*\)\"\{0,1\}[,}].*/\1/p"; }

sgemm() { "$BIN" --sgemm "$SGEMM_N" --threads "$THREADS" --json | jget gflops; }

size_modes() {
    if [ -n "${BENCH_MODES:-}" ]; then echo "$BENCH_MODES"; return; fi
    case $1 in S|M) echo "rope repo nope r2n1 n2r1" ;; *) echo "rope repo" ;; esac
}
size_steps() {   # steps warmup
    case $1 in S) echo "${BENCH_STEPS:-5} ${BENCH_WARMUP:-2}" ;; *) echo "${BENCH_STEPS:-2} ${BENCH_WARMUP:-1}" ;; esac
}
size_bt() { case $1 in S) echo "8 256" ;; M) echo "4 1024" ;; L) echo "2 1024" ;; long) echo "1 4096" ;; esac; }

# record RUN_JSON REP: append to results and to the TSV the summary reads
#   size mode impl rep ms_step tokens_per_s gflops rss loss0 fwd bwd opt attn_us_per_token mfu faults
record() {
    local j=$1 r=$2
    echo "$j" >> "$RESULTS"
    local f
    printf '%s' "$(echo "$j" | jget size) $(echo "$j" | jget mode) $(echo "$j" | jget impl) $r" >> "$tmp/runs.tsv"
    for f in ms_step tokens_per_s gflops peak_rss_mib loss0 fwd_ms bwd_ms opt_ms attn_us_per_token mfu minflt_per_step; do
        v=$(echo "$j" | jget $f); printf ' %s' "${v:-0}" >> "$tmp/runs.tsv"
    done
    echo >> "$tmp/runs.tsv"
    printf '  %-4s %-5s %-5s rep %d: %9.1f ms/step  %8.1f tokens/s  %6.1f GFLOP/s  RSS %7.1f MiB  (fwd %.0f bwd %.0f opt %.0f ms) %s\n' \
        "$(echo "$j" | jget size)" "$(echo "$j" | jget mode)" "$(echo "$j" | jget impl)" "$r" \
        "$(echo "$j" | jget ms_step)" "$(echo "$j" | jget tokens_per_s)" "$(echo "$j" | jget gflops)" \
        "$(echo "$j" | jget peak_rss_mib)" "$(echo "$j" | jget fwd_ms)" "$(echo "$j" | jget bwd_ms)" "$(echo "$j" | jget opt_ms)" \
        "$(echo "$j" | jget sgemm_gflops | sed 's/^\(..*\)$/sgemm \1 GFLOP\/s/')"
}

: > "$RESULTS"
: > "$tmp/runs.tsv"
start=$(date +%s)
echo "== make bench: sizes [$SIZES], repeats $REPEATS, threads $THREADS, $(date -u '+%Y-%m-%d %H:%M UTC')"
"$BIN" --cpu | sed 's/^/   /'   # the CPU model and level, the build's instruction set, OpenBLAS's core
echo "   $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ $have_torch = 1 ]; then echo "   PyTorch $torch_version ($PY): compared in mode $TORCH_MODE on S, M, L${BENCH_TORCH_ENV:+, with $BENCH_TORCH_ENV}"
else echo "   PyTorch: not importable with $PY (or BENCH_TORCH=0): the PyTorch columns are skipped"; fi
COMPUTE=${BENCH_COMPUTE:-$("$BIN" --cpu | grep -q '^bf16 products: unavailable' && echo f32 || echo "f32 bf16")}
echo "   products: $COMPUTE"
sg1=$(sgemm)
echo "   sgemm ${SGEMM_N}x${SGEMM_N}, $THREADS threads: $sg1 GFLOP/s"

for size in $SIZES; do
    read -r steps warmup <<< "$(size_steps "$size")"
    read -r B T <<< "$(size_bt "$size")"
    [ -n "$B" ] || { echo "unknown size $size (S M L long)"; exit 2; }
    modes=$(size_modes "$size")
    torch_here=0
    if [ $have_torch = 1 ] && [ "$size" != long ]; then
        torch_here=1
        "$BIN" --size "$size" --mode "$TORCH_MODE" --save-weights "$tmp/ckpt_$size" > /dev/null
    fi
    echo "-- size $size (B=$B T=$T, $warmup warm-up + $steps timed steps per run, $REPEATS repeats)"
    for r in $(seq 1 "$REPEATS"); do
        order=$modes   # even repeats swap rope and repo, so neither always runs first in its pair
        [ $((r % 2)) = 1 ] || order=$(echo "$modes" | awk '{ for (i = 1; i <= NF; i++) $i = $i == "rope" ? "repo" : $i == "repo" ? "rope" : $i; print }')
        for mode in $order; do
            case $mode in rope|repo) ;; *) [ "$r" = 1 ] || continue ;; esac
            j=$("$BIN" --size "$size" --mode "$mode" --threads "$THREADS" --steps "$steps" --warmup "$warmup" --mfu-sgemm "$SGEMM_N" --json)
            record "$j" "$r"
            case "$COMPUTE $mode" in *bf16*\ rope|*bf16*\ repo)
                j=$("$BIN" --size "$size" --mode "$mode" --compute bf16 --threads "$THREADS" --steps "$steps" --warmup "$warmup" \
                        --mfu-sgemm "$SGEMM_N" --json)
                record "$j" "$r" ;;
            esac
        done
        if [ $torch_here = 1 ]; then
            j=$(env ${BENCH_TORCH_ENV:-} "$PY" tools/bench_torch.py "$tmp/ckpt_$size" --threads "$THREADS" --steps "$steps" \
                    --warmup "$warmup" --B "$B" --T "$T" --size "$size" --mode "$TORCH_MODE")
            record "$j" "$r"
            case $COMPUTE in *bf16*)
                j=$(env ${BENCH_TORCH_ENV:-} "$PY" tools/bench_torch.py "$tmp/ckpt_$size" --threads "$THREADS" --steps "$steps" \
                        --warmup "$warmup" --B "$B" --T "$T" --size "$size" --mode "$TORCH_MODE" --amp bf16)
                record "$j" "$r" ;;
            esac
        fi
    done
done
echo "   sgemm again: $(sgemm) GFLOP/s"
echo

awk -v torch_mode="$TORCH_MODE" -v have_torch=$have_torch -v sizes="$SIZES" '
function median(a, n,    i, j, t) {   # sorts a[1..n]
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
# col: name of the column; collect the values of (size, mode, impl) into tmp[1..]
function collect(s, m, impl, col,    k, n) {
    n = 0
    for (k = 1; k <= nr; k++) if (S[k] == s && M[k] == m && I[k] == impl && (col != "att" || ATT[k] > 0)) tmp[++n] = col == "rss" ? RSS[k] : \
        col == "ms" ? MS[k] : col == "tps" ? TPS[k] : col == "gf" ? GF[k] : col == "fwd" ? FWD[k] : \
        col == "bwd" ? BWD[k] : col == "opt" ? OPT[k] : col == "att" ? ATT[k] : col == "mfu" ? MFU[k] : col == "flt" ? FLT[k] : LOSS[k]
    return n
}
function med(s, m, impl, col,    n) { n = collect(s, m, impl, col); return n ? median(tmp, n) : "" }
# median over repeats r of num(s, m1, impl1)[r] / den(s, m2, impl2)[r], col ms/tps/rss
function ratio(s, m1, i1, m2, i2, col,    k, q, n, a, b, v) {
    n = 0
    for (k = 1; k <= nr; k++) if (S[k] == s && M[k] == m1 && I[k] == i1)
        for (q = 1; q <= nr; q++) if (S[q] == s && M[q] == m2 && I[q] == i2 && R[q] == R[k]) {
            a = col == "ms" ? MS[k] : col == "tps" ? TPS[k] : RSS[k]
            b = col == "ms" ? MS[q] : col == "tps" ? TPS[q] : RSS[q]
            if (b > 0) rr[++n] = a / b
        }
    return n ? median(rr, n) : ""
}
{ nr++; S[nr] = $1; M[nr] = $2; I[nr] = $3; R[nr] = $4; MS[nr] = $5; TPS[nr] = $6; GF[nr] = $7; RSS[nr] = $8
  LOSS[nr] = $9; FWD[nr] = $10; BWD[nr] = $11; OPT[nr] = $12; ATT[nr] = $13; MFU[nr] = $14; FLT[nr] = $15
  if (!((S[nr], M[nr]) in seen)) { seen[S[nr], M[nr]] = 1; order[++no] = S[nr] SUBSEP M[nr] } }
END {
    printf "| size | mode | tokens/s | GFLOP/s | MFU | peak RSS MiB | speed vs PyTorch | RSS vs PyTorch | RePo/RoPE step time |\n"
    printf "|---|---|---:|---:|---:|---:|---:|---:|---:|\n"
    for (o = 1; o <= no; o++) {
        split(order[o], sm, SUBSEP); s = sm[1]; m = sm[2]
        if (med(s, m, "repoc", "tps") == "") continue
        sp = rs = "–"
        if (have_torch && m == torch_mode && med(s, m, "torch", "tps") != "") {
            sp = sprintf("%.2fx", ratio(s, m, "repoc", m, "torch", "tps"))
            rs = sprintf("%.2fx", ratio(s, m, "repoc", m, "torch", "rss"))
        }
        rr_ = m == "repo" && med(s, "rope", "repoc", "ms") != "" ? sprintf("%.3fx", ratio(s, "repo", "repoc", "rope", "repoc", "ms")) : "–"
        printf "| %s | %s | %.0f | %.1f | %.1f%% | %.0f | %s | %s | %s |\n", s, m, med(s, m, "repoc", "tps"),
            med(s, m, "repoc", "gf"), 100 * med(s, m, "repoc", "mfu"), med(s, m, "repoc", "rss"), sp, rs, rr_
    }
    printf "\nper phase, medians in ms (forward; backward; clip + AdamW + zero_grad), page faults per timed step,\n"
    printf "attention fwd+bwd alone (all layers) in us/token:\n"
    printf "| size | mode | program | ms/step | forward | backward | optimizer | faults/step | tokens/s | peak RSS MiB | loss0 | attn us/token |\n"
    printf "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    for (o = 1; o <= no; o++) {
        split(order[o], sm, SUBSEP); s = sm[1]; m = sm[2]
        for (p = 1; p <= 2; p++) {
            impl = p == 1 ? "repoc" : "torch"
            if (med(s, m, impl, "ms") == "") continue
            printf "| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.6f | %s |\n", s, m, impl == "torch" ? "PyTorch" : "repoc",
                med(s, m, impl, "ms"), med(s, m, impl, "fwd"), med(s, m, impl, "bwd"), med(s, m, impl, "opt"), med(s, m, impl, "flt"),
                med(s, m, impl, "tps"), med(s, m, impl, "rss"), med(s, m, impl, "loss"),
                impl == "repoc" ? sprintf("%.2f", med(s, m, impl, "att")) : "–"
            if (impl == "torch") {
                d = med(s, m, "torch", "loss") - med(s, m, "repoc", "loss"); if (d < 0) d = -d
                lossnote = lossnote sprintf("  %s %s: loss0 repoc %.6f, PyTorch %.6f, |diff| %.2e %s\n", s, m,
                    med(s, m, "repoc", "loss"), med(s, m, "torch", "loss"), d, d <= 1e-4 ? "(same model: ok)" : "(MISMATCH: not the same computation)")
            }
        }
    }
    if (lossnote != "") printf "\nsame weights and tokens in both programs, loss of the first forward:\n%s", lossnote
    for (mm = 1; mm <= 2; mm++) {
        m = mm == 1 ? "rope" : "repo"
        if (med("long", m, "repoc", "rss") == "" || med("M", m, "repoc", "rss") == "") continue
        printf "long vs M (%s): peak RSS %.2fx; attention fwd+bwd per token %.2fx (%.2f vs %.2f us/token)\n", m,
            med("long", m, "repoc", "rss") / med("M", m, "repoc", "rss"),
            med("long", m, "repoc", "att") / med("M", m, "repoc", "att"), med("long", m, "repoc", "att"), med("M", m, "repoc", "att")
    }
}' "$tmp/runs.tsv"
case $COMPUTE in *bf16*)
    awk '
    function median(a, n,    i, j, t) {
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    # median over repeats of tokens/s of (s, m, i1) / (s, m2, i2) in the same repeat
    function ratio(s, m, i1, m2, i2,    k, q, n) {
        n = 0
        for (k = 1; k <= nr; k++) if (S[k] == s && M[k] == m && I[k] == i1)
            for (q = 1; q <= nr; q++) if (S[q] == s && M[q] == m2 && I[q] == i2 && R[q] == R[k] && TPS[q] > 0) rr[++n] = TPS[k] / TPS[q]
        return n ? sprintf("%.2fx", median(rr, n)) : "–"
    }
    function med(s, m, i,    k, n) { n = 0; for (k = 1; k <= nr; k++) if (S[k] == s && M[k] == m && I[k] == i) t[++n] = TPS[k]; return n ? sprintf("%.0f", median(t, n)) : "–" }
    { nr++; S[nr] = $1; M[nr] = $2; I[nr] = $3; R[nr] = $4; TPS[nr] = $6
      if (I[nr] == "repoc-bf16" && !((S[nr], M[nr]) in seen)) { seen[S[nr], M[nr]] = 1; order[++no] = S[nr] SUBSEP M[nr] } }
    END {
        printf "\nBF16 products (--compute bf16) against f32, tokens/s, medians of ratios of runs side by side:\n"
        printf "| size | mode | f32 | bf16 | bf16 / f32 | PyTorch fp32 | PyTorch bf16 autocast | repoc bf16 / PyTorch bf16 |\n"
        printf "|---|---|---:|---:|---:|---:|---:|---:|\n"
        for (o = 1; o <= no; o++) {
            split(order[o], sm, SUBSEP); s = sm[1]; m = sm[2]
            printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", s, m, med(s, m, "repoc"), med(s, m, "repoc-bf16"),
                ratio(s, m, "repoc-bf16", m, "repoc"), med(s, m, "torch"), med(s, m, "torch-bf16"), ratio(s, m, "repoc-bf16", m, "torch-bf16")
        }
    }' "$tmp/runs.tsv" ;;
esac
echo
echo "MFU = median over runs of model GFLOP/s / the sgemm GFLOP/s measured in the same process right after the steps;"
echo "speed and RSS vs PyTorch = median over repeats of repoc/PyTorch (mode $TORCH_MODE);"
echo "RePo/RoPE = median over repeats of repoc repo ms/step / rope ms/step. Total $(( $(date +%s) - start )) s; raw runs in $RESULTS"
