#!/usr/bin/env bash
# The study pipeline (tools/study.sh --quick): stage 1, the gate check, stage 2
# in all eight modes (five position plans, three RePo variants), eval with and
# without YaRN and in the noisy setting, analyze, positions over training
# (train.log_positions, build/plot --positions), and the report. The
# quick run trains too little to learn anything; this checks that every step
# runs and that the report holds every number it should.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/study-quick
rm -rf "$out"
docs_before=$(git status --porcelain docs/ 2>/dev/null; git diff docs/ 2>/dev/null | md5sum)   # a tree being edited
tools/study.sh --quick --out "$out"
r=$out/results.md
fail() { echo "FAIL: $*"; exit 1; }
[ -s "$r" ] || fail "no $r"
modes="rope repo nope r2n1 n2r1 repo_lr10 repo_lr100 repo_init"
mre='(rope|repo|nope|r2n1|n2r1|repo_lr10|repo_lr100|repo_init)'
for m in $modes; do
    grep -q "^| $m | " "$r" || fail "no row for mode $m"
    [ -d "$out/stage2_$m" ] || fail "no stage-2 run for $m"
    [ -s "$out/eval/${m}_yarn4.json" ] || fail "no YaRN eval for $m"
    [ -s "$out/eval/${m}_noisy_yarn4.json" ] || fail "no noisy YaRN eval for $m"
done
grep -A1 '"lr_mult"' "$out/stage2_repo_lr100/run_config.json" | grep -q '"repo":[[:space:]]*100$' ||
    fail "repo_lr100 without lr_mult 100"
std=$(sed -n 's/^REPO_INIT_STD=\([0-9.e-]*\) .*/\1/p' tools/study.sh)
grep -q "\"repo_final_init_std\":[[:space:]]*$std,\?$" "$out/stage2_repo_init/run_config.json" ||
    fail "repo_init without repo_final_init_std $std"
# every accuracy row: family, mode, five accuracies, chance, key-blind, none empty
acc='\| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.e+-]+ \| [0-9.]+ \|$'
rows=$(grep -cE "^\| (single|multikey|multivalue|multiquery|distractor|table) \| $mre $acc" "$r")
[ "$rows" = 48 ] || fail "expected 48 accuracy rows (6 families x 8 modes), found $rows"
rows=$(sed -n '/^### Noisy context/,/^### Attention/p' "$r" | grep -cE "^\| $mre $acc")
[ "$rows" = 8 ] || fail "expected 8 noisy-context rows, found $rows"
# positions over training: start, thirds, end for each RePo mode; the overhead of measuring them
rows=$(grep -cE '^\| repo(_lr10|_lr100|_init)? \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \| [-+0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$' "$r")
[ "$rows" -ge 12 ] || fail "expected >= 12 rows of positions over training (4 RePo modes), found $rows"
[ "$(grep -cE '^\| repo(_lr10|_lr100|_init)? \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+% \|$' "$r")" = 4 ] ||
    fail "no overhead row for each RePo mode"
n=$(grep -c 'data-panel="hybrid segments" data-series="stage2_repo[a-z0-9_]* layer [0-9]"' "$out/analysis/positions_training.svg")
[ "$n" = 12 ] || fail "positions_training.svg: expected 12 hybrid-share curves (4 modes x 3 RePo layers), found $n"
for m in repo repo_lr10 repo_lr100 repo_init; do
    [ -s "$out/analysis/$m/positions.svg" ] || fail "no example positions figure for $m"
done
grep -q 'Single needle at the training length T = 64: exact match \*\*[0-9.]*\*\*' "$r" || fail "no gate line"
for m in repo repo_lr10 repo_lr100 repo_init; do
    grep -qE "^\| $m \| single x[0-9]+ L=64 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|" "$r" ||
        fail "no attention/segment row for $m"
done
grep -qE '^\| rope \| distractor x[0-9]+ L=64 \|' "$r" || fail "no noisy/distractor attention rows"
grep -q '^  all  ' "$r" || fail "no RePo position statistics"
# the training curves: stage 2 has one smoothed-loss polyline per mode
for f in training_stage1 training_stage2; do [ -s "$out/analysis/$f.svg" ] || fail "no $f.svg from build/plot"; done
n=$(grep -c 'data-panel="training loss" data-series="stage2_[a-z0-9_]* loss (smoothed)"' "$out/analysis/training_stage2.svg")
[ "$n" = 8 ] || fail "training_stage2.svg: expected 8 smoothed training-loss curves, found $n"
[ "$(git status --porcelain docs/ 2>/dev/null; git diff docs/ 2>/dev/null | md5sum)" = "$docs_before" ] ||
    fail "the quick run changed docs/"
echo "study --quick: report complete ($(wc -l < "$r") lines)"
