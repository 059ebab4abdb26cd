#!/usr/bin/env bash
# The study pipeline (tools/study.sh --quick): stage 1, the gate check, stage 2
# in all five modes, eval with and without YaRN, analyze, and the report. The
# quick run trains too little to learn anything; this checks that every step
# runs and that the report holds every number it should.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/study-quick
rm -rf "$out"
tools/study.sh --quick --out "$out"
r=$out/results.md
fail() { echo "FAIL: $*"; exit 1; }
[ -s "$r" ] || fail "no $r"
for m in rope repo nope r2n1 n2r1; do
    grep -q "^| $m | " "$r" || fail "no row for mode $m"
    [ -d "$out/stage2_$m" ] || fail "no stage-2 run for $m"
    [ -s "$out/eval/${m}_yarn4.json" ] || fail "no YaRN eval for $m"
done
# every accuracy row: family, mode, five accuracies, chance, key-blind, none empty
rows=$(grep -cE '^\| (single|multikey|multivalue|multiquery|distractor|table) \| (rope|repo|nope|r2n1|n2r1) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.e+-]+ \| [0-9.]+ \|$' "$r")
[ "$rows" = 30 ] || fail "expected 30 accuracy rows (6 families x 5 modes), found $rows"
grep -q 'Single needle at the training length T = 64: exact match \*\*[0-9.]*\*\*' "$r" || fail "no gate line"
grep -qE '^\| repo \| single x[0-9]+ L=64 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|' "$r" ||
    fail "no attention/segment row for repo"
grep -q '^  all  ' "$r" || fail "no RePo position statistics"
# the training curves: stage 2 has one smoothed-loss polyline per mode
for f in training_stage1 training_stage2; do [ -s "$out/analysis/$f.svg" ] || fail "no $f.svg from build/plot"; done
n=$(grep -c 'data-panel="training loss" data-series="stage2_[a-z0-9]* loss (smoothed)"' "$out/analysis/training_stage2.svg")
[ "$n" = 5 ] || fail "training_stage2.svg: expected 5 smoothed training-loss curves, found $n"
[ -z "$(git status --porcelain docs/ 2>/dev/null)" ] || fail "the quick run changed docs/"
echo "study --quick: report complete ($(wc -l < "$r") lines)"
