#!/usr/bin/env bash
# The engine choice for the products (model/engine.h) on CPUs this machine is not:
#  1. an unknown CPU, simulated with OPENBLAS_CORETYPE=Prescott (OpenBLAS's SSE3 kernels, what Debian's 0.3.21
#     runs on CPUs newer than its table) set for the child processes here alone, never for the suite: rule 2
#     takes oneDNN without timing, and the parity test passes on that path;
#  2. an older instruction set, simulated with DNNL_MAX_CPU_ISA=AVX2 (child processes only): no BF16 products,
#     so compute_dtype "auto" is f32 and an explicit "bf16" is refused, and the parity test passes there;
#  3. the decisions, from rates written into the cache (the file the timing fills): oneDNN only at >= 1.05x
#     OpenBLAS, bf16 "auto" only at >= 1.1x the FP32 engine, an explicit "bf16" that measures slower runs with
#     a warning giving both rates, and the time estimate uses the engine chosen;
#  4. the choice recorded in trainer_state.json and kept on resume though the rates changed since (a checkpoint
#     without it, of an earlier version, read as OpenBLAS);
#  5. train.f32_engine given, and refused when it is not a known engine.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" engine
export REPOC_CACHE_DIR="$T/cache"   # this test's own cache, never the user's

config() {  # file out_dir compute_dtype f32_engine steps (every config the same shapes: one cache line)
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "seed": 1, "threads": 1, "resume": "auto"},
 "model": {"vocab_size": 64, "d_model": 64, "n_layers": 2, "n_heads": 4, "d_ff": 128, "positions": {"mode": "repo"}},
 "data": {"seq_len": 128, "synthetic": {}},
 "train": {"batch_size": 2, "steps": $5, "log_every": 1, "eval_every": 0, "save_every": 2, "keep_last": 1,
           "compute_dtype": "$3", "f32_engine": "$4"}}
JSON
}
expect_line() {  # label pattern log
    if grep -q -- "$2" "$3"; then ok "$1: $(grep -m1 -- "$2" "$3" | head -c 200)"
    else bad "$1: no line matching '$2' in: $(head -c 600 "$3")"; fi
}
bf16_here() { build/bench/bench_step --cpu | grep -q '^bf16 products: bf16'; }

# 1. an unknown CPU
config "$T/plan.json" "$T/plan" auto auto 2
OPENBLAS_CORETYPE=Prescott build/train "$T/plan.json" --plan >"$T/prescott.log" 2>&1
if grep -q 'OpenBLAS: .*Prescott\|core Prescott' "$T/prescott.log" || OPENBLAS_CORETYPE=Prescott build/bench/bench_step --cpu | grep -q 'core Prescott'; then
    if build/bench/bench_step --cpu | grep -q 'x86-64-v[34]'; then
        expect_line "OPENBLAS_CORETYPE=Prescott: oneDNN by rule 2" \
            'f32 products: oneDNN.*OpenBLAS.s core Prescott has SSE kernels only' "$T/prescott.log"
    else ok "OPENBLAS_CORETYPE=Prescott: this CPU has no AVX2, rule 2 does not apply"; fi
    if OPENBLAS_CORETYPE=Prescott build/tests/test_parity >"$T/parity_prescott.log" 2>&1; then
        ok "test_parity with OpenBLAS on its Prescott kernels: $(tail -n 1 "$T/parity_prescott.log")"
    else bad "test_parity with OPENBLAS_CORETYPE=Prescott: $(grep -m3 'NOT OK' "$T/parity_prescott.log")"; fi
else ok "this OpenBLAS ignores OPENBLAS_CORETYPE (not a DYNAMIC_ARCH build): nothing to simulate"; fi

# 2. an older instruction set for oneDNN
DNNL_MAX_CPU_ISA=AVX2 build/train "$T/plan.json" --plan >"$T/avx2.log" 2>&1
expect_line "DNNL_MAX_CPU_ISA=AVX2: compute_dtype auto is f32" 'compute dtype: f32 (train.compute_dtype "auto": this CPU has no BF16' "$T/avx2.log"
expect_line "DNNL_MAX_CPU_ISA=AVX2: an FP32 engine chosen" '^f32 products: ' "$T/avx2.log"
config "$T/bf16.json" "$T/bf16" bf16 auto 2
if DNNL_MAX_CPU_ISA=AVX2 build/train "$T/bf16.json" >"$T/avx2_bf16.log" 2>&1; then bad "DNNL_MAX_CPU_ISA=AVX2: bf16 accepted"
else expect_line "DNNL_MAX_CPU_ISA=AVX2: bf16 refused" 'compute_dtype "bf16": this CPU has no BF16' "$T/avx2_bf16.log"; fi
if DNNL_MAX_CPU_ISA=AVX2 build/tests/test_parity >"$T/parity_avx2.log" 2>&1; then
    ok "test_parity with oneDNN limited to AVX2: $(tail -n 1 "$T/parity_avx2.log")"
else bad "test_parity with DNNL_MAX_CPU_ISA=AVX2: $(grep -m3 'NOT OK' "$T/parity_avx2.log")"; fi

# 3. decisions from rates written into the cache
rm -rf "$T/cache"
build/train "$T/plan.json" --plan >"$T/probe.log" 2>&1
if [ ! -s "$T/cache/engine.tsv" ]; then bad "the timing wrote no cache: $(head -c 400 "$T/probe.log")"; fi
build/train "$T/plan.json" --plan >"$T/probe2.log" 2>&1
expect_line "a second run reads the cache" 'f32 products: .*cached\|SSE kernels only' "$T/probe2.log"
rates() {  # openblas onednn bf16 (GFLOP/s): every line of the cache gets these rates
    awk -F'\t' -v a="$1" -v b="$2" -v c="$3" 'BEGIN{OFS="\t"} {print $1, a, b, c}' "$T/cache/engine.tsv" >"$T/cache/x" &&
        mv "$T/cache/x" "$T/cache/engine.tsv"
}
generic=0
grep -q 'SSE kernels only' "$T/probe.log" && generic=1
config "$T/f32.json" "$T/f32" f32 auto 2   # the FP32 engine alone: the BF16 rate is not needed
decide() {  # label "openblas onednn bf16" config pattern: a --plan with those rates cached says pattern
    rates $2
    build/train "$3" --plan >"$T/decide.log" 2>&1
    expect_line "$1" "$4" "$T/decide.log"
}
if [ $generic = 0 ]; then
    decide "oneDNN at 1.04x OpenBLAS: OpenBLAS stays" "100 104 0" "$T/f32.json" \
        'f32 products: OpenBLAS, core .*cached 100 GFLOP/s against oneDNN.s 104'
    expect_line "the time estimate uses that engine" 'measured sgemm' "$T/decide.log"
    decide "oneDNN at 1.06x OpenBLAS: oneDNN" "100 106 0" "$T/f32.json" \
        'f32 products: oneDNN.*cached 106 GFLOP/s against OpenBLAS.s 100'
    expect_line "the time estimate uses that engine" 'measured oneDNN f32 matmul' "$T/decide.log"
fi
if bf16_here; then
    decide "bf16 at 1.09x: auto takes f32" "100 100 109" "$T/plan.json" \
        'compute dtype: f32 (train.compute_dtype "auto": BF16 products cached 109'
    decide "bf16 at 1.11x: auto takes bf16" "100 100 111" "$T/plan.json" \
        'compute dtype: bf16 (train.compute_dtype "auto": BF16 products cached 111'
    expect_line "the time estimate uses BF16's rate" 'measured BF16 product' "$T/decide.log"
    decide "an explicit bf16 slower than f32: runs, with a warning giving both rates" "100 100 70" "$T/bf16.json" \
        'warning: train.compute_dtype "bf16" runs, but it does not pay on this CPU: BF16 products cached 70 GFLOP/s against FP32.s 100'
else ok "no BF16 products on this CPU or build: the bf16 decisions are not exercised"; fi
if bf16_here && [ $generic = 0 ]; then # a run that needs BF16's rate times it alone: the FP32 rates stay
    rates 100 104 0
    build/train "$T/bf16.json" --plan >"$T/more.log" 2>&1
    if awk -F'\t' '$2 != "100.0" || $3 != "104.0" || !($4 > 0) {bad = 1} END {exit bad}' "$T/cache/engine.tsv"; then
        ok "a run that needs BF16's rate times it alone: the FP32 rates the runs before it decided on are kept"
    else bad "after a bf16 run the cache reads: $(cut -f2- "$T/cache/engine.tsv" | tr '\t\n' ' |')"; fi
    build/train "$T/f32.json" --plan >"$T/decide.log" 2>&1
    expect_line "so the FP32 engine stays OpenBLAS" 'f32 products: OpenBLAS, core .*cached 100 GFLOP/s against oneDNN.s 104' \
        "$T/decide.log"
fi

# 4. the choice recorded and kept on resume
if [ $generic = 0 ]; then
    rates 100 150 0
    config "$T/run.json" "$T/run" f32 auto 2
    build/train "$T/run.json" >"$T/run1.log" 2>&1 || bad "the first run failed: $(tail -n 3 "$T/run1.log")"
    st="$T/run/$(head -n 1 "$T/run/latest")/trainer_state.json"
    if grep -q '^[[:space:]]"f32_engine":[[:space:]]*"onednn"' "$st" && grep -q '^[[:space:]]"compute_dtype":[[:space:]]*"f32"' "$st"; then
        ok "trainer_state.json records f32_engine onednn and compute_dtype f32"
    else bad "trainer_state.json: $(grep -E 'f32_engine|compute_dtype' "$st" | tr -d '\t\n')"; fi
    rates 150 100 0
    config "$T/run.json" "$T/run" f32 auto 4
    build/train "$T/run.json" >"$T/run2.log" 2>&1 || bad "the resumed run failed: $(tail -n 3 "$T/run2.log")"
    expect_line "resumed with auto: the checkpoint's engine kept though OpenBLAS now measures faster" \
        'f32 products: onednn, as .* was computed with' "$T/run2.log"
    config "$T/run.json" "$T/run" f32 openblas 6
    build/train "$T/run.json" >"$T/run3.log" 2>&1 || bad "the run resumed on openblas failed: $(tail -n 3 "$T/run3.log")"
    expect_line "resumed with another engine given: said" 'note: .* was computed with f32 products on onednn, this run uses openblas' "$T/run3.log"
    # a checkpoint of a version before train.f32_engine: its products were OpenBLAS's, which auto keeps
    st="$T/run/$(head -n 1 "$T/run/latest")/trainer_state.json"
    sed -i '/"f32_engine":/d' "$st"
    rates 100 150 0
    config "$T/run.json" "$T/run" f32 auto 8
    build/train "$T/run.json" >"$T/run4.log" 2>&1 || bad "the run resumed from an older checkpoint failed: $(tail -n 3 "$T/run4.log")"
    expect_line "resumed with auto from a checkpoint without f32_engine: OpenBLAS, what every earlier version used" \
        'f32 products: openblas, as .* was computed with' "$T/run4.log"
fi

# 5. given, and refused
config "$T/given.json" "$T/given" f32 openblas 2
build/train "$T/given.json" --plan >"$T/given.log" 2>&1
expect_line "train.f32_engine openblas given" 'f32 products: openblas (train.f32_engine)' "$T/given.log"
config "$T/bad.json" "$T/bad" f32 mkl 2
expect_refused "train.f32_engine mkl" 'train.f32_engine' "$T/bad.json"

echo "test_engine: $failures failed"
[ "$failures" -eq 0 ]
