# shellcheck shell=bash
# Sourced by shell tests (test_resume.sh, test_mpi.sh); not a test itself:
#   . "$(dirname "$0")/testlib.sh" NAME
# goes to the repository root, makes a scratch directory $T (removed on exit),
# and defines ok / bad (one line each; bad counts into $failures), wait_for
# expect_refused and signal_train.
set -u
cd "$(dirname "$0")/.." || exit 1
T=$(mktemp -d "/tmp/repoc_$1.XXXXXX")
# removed by this shell alone: a background job (`cmd &`, `( ... ) &`) killed right after it was forked runs
# the inherited EXIT trap in the child before bash resets it, which removed $T under the test (1 run in 40
# of test_nonregular on 2026-12-04; 200 of 200 in a loop that kills at once)
testlib_pid=$BASHPID
trap '[ "$BASHPID" = "$testlib_pid" ] && rm -rf "$T"' EXIT
failures=0
ok() { echo "  OK      $*"; }
bad() { echo "  NOT OK  $*"; failures=$((failures + 1)); }
wait_for() {  # condition-command, up to 60 s
    for _ in $(seq 600); do eval "$1" && return 0; sleep 0.1; done; return 1
}
# build/train ARGS... must fail with a line containing WANT: expect_refused LABEL WANT ARGS...
expect_refused() {
    local label=$1 want=$2
    shift 2
    if build/train "$@" >"$T/refused.log" 2>&1; then bad "$label: accepted"
    elif grep -qF "$want" "$T/refused.log"; then ok "$label: $(grep -F "$want" "$T/refused.log" | head -c 170)"
    else bad "$label: $(head -c 300 "$T/refused.log")"; fi
}
# SIG SECONDS LOG OUT_DIR ARGS...: build/train ARGS in the background (its output into LOG), sent SIG SECONDS
# after OUT_DIR/run_config.json is written (the end of its setup; the signal handlers follow at once); sets
# rc (its exit status) and ms (from the signal to its exit); killed after 60 s
signal_train() {
    local sig=$1 after=$2 log=$3 dir=$4 p watchdog t0
    shift 4
    touch "$T/marker"; sleep 0.01
    build/train "$@" >"$log" 2>&1 &
    p=$!
    (sleep 60; kill -KILL $p 2>/dev/null) >/dev/null 2>&1 & watchdog=$!
    wait_for "[ '$dir/run_config.json' -nt '$T/marker' ]"
    sleep "$after"
    t0=$(date +%s%N)
    kill -"$sig" $p
    wait $p
    # shellcheck disable=SC2034 # rc and ms: what signal_train leaves its callers
    rc=$?
    # shellcheck disable=SC2034
    ms=$((($(date +%s%N) - t0) / 1000000))
    kill $watchdog 2>/dev/null; wait $watchdog 2>/dev/null
}
