# shellcheck shell=bash
# Sourced by the shell tests of the checkpoint-reading programs (test_eval.sh,
# test_analyze_cli.sh); not a test itself. Before sourcing, set PROG (the
# program, e.g. build/eval), T (a scratch directory) and failures=0. Every run
# appends --threads 1 and leaves its output in $T/log.

ok()  { echo "  OK      $1"; }
bad() { echo "  NOT OK  $1"; failures=$((failures + 1)); [ -f "$T/log" ] && sed 's/^/          /' "$T/log" | tail -8; }

# runs $PROG with the arguments; passes when it exits 0 and prints every pattern
expect_ok() {   # name pattern... -- args...
    local name=$1; shift
    local pats=()
    while [ "$1" != "--" ]; do pats+=("$1"); shift; done
    shift
    $PROG "$@" --threads 1 >"$T/log" 2>&1
    local rc=$? miss=""
    for p in "${pats[@]}"; do grep -qF -- "$p" "$T/log" || miss="$miss '$p'"; done
    if [ $rc -eq 0 ] && [ -z "$miss" ]; then ok "$name"; else bad "$name: exit $rc, missing:$miss"; fi
}

# passes when $PROG exits non-zero (not by a signal) and prints the phrase
expect_fail() {   # name phrase args...
    local name=$1 phrase=$2; shift 2
    $PROG "$@" --threads 1 >"$T/log" 2>&1
    local rc=$?
    if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -qF -- "$phrase" "$T/log"; then
        ok "$name: exit $rc: $(grep -m1 -F -- "$phrase" "$T/log")"
    else bad "$name: exit $rc, expected '$phrase'"; fi
}
