# Sourced by shell tests (test_resume.sh, test_mpi.sh); not a test itself:
#   . "$(dirname "$0")/testlib.sh" NAME
# goes to the repository root, makes a scratch directory $T (removed on exit),
# and defines ok / bad (one line each; bad counts into $failures), wait_for
# and expect_refused.
set -u
cd "$(dirname "$0")/.." || exit 1
T=$(mktemp -d "/tmp/repoc_$1.XXXXXX")
trap 'rm -rf "$T"' EXIT
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
