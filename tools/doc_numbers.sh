#!/usr/bin/env bash
# The numbers README.md and docs/ quote from a command, measured again and compared with what the text
# says (tests/test_doc_numbers.sh runs the quick ones in `make test`), or written into the text (--update).
#   tools/doc_numbers.sh [--update] [--all]
# Quick (seconds): docs/checking.md's gradient-check count (exact: the same on every machine) and largest
# relative error: a measurement, whose last digits move between CPUs and libraries, so what the check holds
# it to is the bound the docs promise (every tensor within 1e-6); a value other than the quoted one is a
# warning (--update writes it), not a failure.
# --all adds the slow ones: README's quickstart summary (make quickstart) and docs/finetune.md's table
# (tools/sft_example.sh). Exit 1 when a number drifted (without --update), naming the file, what it says
# and what the command gives.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
update=0 all=0
for a in "$@"; do
    case $a in --update) update=1 ;; --all) all=1 ;; *) echo "usage: tools/doc_numbers.sh [--update] [--all]" >&2; exit 2 ;; esac
done
drift=0
# measured FILE LABEL SAID MEASURED BOUND SED-EXPRESSION: a measurement the text quotes; it must be <= BOUND,
# and another value than the quoted one is only a warning
measured() {
    if ! awk -v m="$4" -v b="$5" 'BEGIN { exit !(m + 0 <= b + 0) }'; then
        echo "  OVER    $1: $2 is $4, above the bound $5 the text promises"; drift=1; return
    fi
    if [ "$3" = "$4" ]; then echo "  same    $1: $2 $3 (bound $5)"; return; fi
    if [ $update = 1 ]; then sed -i "$6" "$1" && echo "  updated $1: $2 $3 -> $4"; return; fi
    echo "  warning $1: $2 says $3, this machine gives $4, within the bound $5 (tools/doc_numbers.sh --update writes it)"
}
# expect FILE LABEL SAID MEASURED SED-EXPRESSION (applied with --update)
expect() {
    if [ "$3" = "$4" ]; then echo "  same    $1: $2 $3"; return; fi
    if [ $update = 1 ]; then sed -i "$5" "$1" && echo "  updated $1: $2 $3 -> $4"; return; fi
    echo "  DRIFT   $1: $2 says $3, the command gives $4 (tools/doc_numbers.sh --update writes it)"
    drift=1
}
[ -x build/gradcheck ] || { echo "doc_numbers: build/gradcheck missing (make)" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# GRADCHECK_LOG: the output of a `build/gradcheck --all` just run (make test's), instead of running it again
if [ -n "${GRADCHECK_LOG:-}" ] && [ -s "$GRADCHECK_LOG" ] && [ "$GRADCHECK_LOG" -nt build/gradcheck ]; then
    cp "$GRADCHECK_LOG" "$log"
else
    build/gradcheck --all >"$log" 2>&1 || { echo "doc_numbers: build/gradcheck --all failed" >&2; exit 1; }
fi
count=$(sed -n 's/^gradcheck: \([0-9]*\) tensors checked.*/\1/p' "$log")
said=$(grep -o '`gradcheck: [0-9]*' docs/checking.md | grep -o '[0-9]*$')
expect docs/checking.md "the gradient-check count" "$said" "$count" "s/\`gradcheck: $said\$/\`gradcheck: $count/"
maxrel=$(grep -o 'max rel err [0-9.e+-]*' "$log" | awk '{print $4}' | sort -g | tail -1 | xargs printf '%.1e' | sed 's/e\([-+]\)0/e\1/')
said=$(grep -o 'largest relative error was [0-9.e+-]*' docs/checking.md | awk '{print $5}')
measured docs/checking.md "the largest relative error (seed 1)" "$said" "$maxrel" 1e-6 "s/largest relative error was $said/largest relative error was $maxrel/"
if [ $all = 1 ]; then
    make --no-print-directory quickstart >"$log" 2>&1 || { echo "doc_numbers: make quickstart failed" >&2; exit 1; }
    for stage in "stage 1" "stage 2"; do
        got=$(grep "^  $stage" "$log" | grep -o 'val loss [0-9.]* -> [0-9.]*')
        said=$(grep "^  $stage" README.md | grep -o 'val loss [0-9.]* -> [0-9.]*')
        expect README.md "quickstart $stage" "$said" "$got" "s/^\(  $stage.*\)$said/\1$got/"
    done
    tools/sft_example.sh "$(mktemp -d)" >"$log" 2>&1 || { echo "doc_numbers: tools/sft_example.sh failed" >&2; exit 1; }
    for row in "base (before)" "base + LoRA adapter" "merged"; do
        got=$(grep -F "| $row" "$log" | tail -1 | cut -d'|' -f3-5 | tr -d ' ')
        said=$(grep -F "| $row" docs/finetune.md | head -1 | cut -d'|' -f3-5 | tr -d ' ')
        expect docs/finetune.md "the fine-tuning table's '$row'" "$said" "$got" "/^| $row/s/.*/$(grep -F "| $row" "$log" | tail -1 | sed 's/[\/&`]/\\&/g')/"
    done
fi
exit $drift
