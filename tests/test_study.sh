#!/usr/bin/env bash
# The study pipeline, version 3 (tools/study.sh --quick): the prose text tokenized, stage 1 of both tracks
# (syn: Markov filler; prose: the Debian copyright files as filler), the gates, stage 2 in all seven modes
# with three seeds each, eval with and without YaRN, the noisy setting, perplexity of the held-out text,
# analyze, positions over training (train.log_positions, build/plot --positions), and the report with
# means over the seeds and the comparisons that hold in every seed. The quick run trains too little to
# learn anything; this checks that every step runs and that the report holds every number it should.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/study-quick
rm -rf "$out"
docs_before=$(git status --porcelain docs/ 2>/dev/null; git diff docs/ 2>/dev/null | md5sum)   # a tree being edited
tools/study.sh --quick --out "$out"
r=$out/results.md
fail() { echo "FAIL: $*"; exit 1; }
[ -s "$r" ] || fail "no $r"
modes="rope repo nope r2n1 n2r1 repo_wm repo_pdrop"
mre='(rope|repo|nope|r2n1|n2r1|repo_wm|repo_pdrop)'
pm='[-0-9.e+]+ ± [0-9.e+-]+'   # a mean over seeds with its half-range
expect_rows() { # N PATTERN WHAT: the report has N lines matching PATTERN
    local n
    n=$(grep -cE "$2" "$r" || true)
    [ "$n" = "$1" ] || fail "expected $1 $3, found $n"
}
for s in 2 3 4; do
    for m in $modes; do
        for tr in syn prose; do
            [ -d "$out/$tr/stage2_${m}_s$s" ] || fail "no stage-2 run $tr $m seed $s"
            [ -s "$out/eval/${tr}_${m}_s${s}_yarn4.json" ] || fail "no YaRN eval for $tr $m seed $s"
            grep -q "\"seed\":[[:space:]]*$s,\?$" "$out/$tr/stage2_${m}_s$s/run_config.json" || fail "$tr $m: not seed $s"
        done
        [ -s "$out/eval/syn_${m}_s${s}_noisy_yarn4.json" ] || fail "no noisy YaRN eval for $m seed $s"
        grep -q '"ppl":' "$out/eval/prose_${m}_s${s}_ppl4.json" || fail "no 4x perplexity for $m seed $s"
    done
done
# repo_wm: the three maps' stds and the lr multiplier of tools/study.sh; repo_pdrop: the anneal
std=$(sed -n 's/^WM_STD=\([0-9.e-]*\)$/\1/p' tools/study.sh)
for k in gate content final; do
    grep -q "\"repo_${k}_init_std\":[[:space:]]*$std,\?$" "$out/syn/stage2_repo_wm_s2/run_config.json" ||
        fail "repo_wm without repo_${k}_init_std $std"
done
grep -A1 '"lr_mult"' "$out/syn/stage2_repo_wm_s2/run_config.json" | grep -q "\"repo\":[[:space:]]*$(sed -n 's/^WM_LR_MULT=//p' tools/study.sh)$" ||
    fail "repo_wm without its lr_mult"
grep -q '"repo_pdrop"' "$out/prose/stage2_repo_pdrop_s3/metrics.jsonl" || fail "repo_pdrop: no p logged"
# the prose filler is the held-out text in eval, the training text in training
grep -q '"filler_file":"[^"]*prose_train_000000.bin"' "$out/logs/prose_stage1.log" || fail "prose: no text filler"
grep -q 'the filler is text: windows of [^ ]*prose_val_000000.bin' "$out/logs/eval_prose_rope_s2.log" ||
    fail "prose eval not on the held-out text"
# the report: both gates, the claims table (one row per metric, a cell per comparison), per-mode tables
grep -qE '^- syn, T = 64: exact match \*\*[0-9.]+\*\*' "$r" || fail "no syn gate line"
grep -qE '^- prose, T = 128: exact match \*\*[0-9.]+\*\*' "$r" || fail "no prose gate line"
cell='[-+][0-9.]+ (▲|▼|·)'
expect_rows 19 "^\| (syn|prose) \| [a-z0-9× YaRN]+ \|( $cell \|){8}$" "claim rows (8 syn, 11 prose metrics)"
expect_rows 14 "^\| $mre( \| $pm){7} \|$" "per-mode rows (7 modes x 2 tracks)"
fam='(single|multikey|multivalue|multiquery|distractor|table)'
expect_rows 84 "^\| (syn|prose) \| $fam \| $mre( \| $pm){5} \| [0-9.]+ \|$" "per-family rows (2 tracks x 6 families x 7 modes)"
expect_rows 14 "^\| $mre( \| $pm){5} \|$" "noisy and perplexity rows"
expect_rows 24 "^\| (syn|prose) \| repo(_wm|_pdrop)? \| [0-9]+ \| $pm \| $pm \| $pm \| ($pm|—) \| $pm \| $pm \|$" \
    "rows of positions over training (2 tracks x 3 modes x 4 steps)"
expect_rows 7 "^\| $mre \| single L=64 \| $pm \|" "attention rows"
n=$(grep -c 'data-panel="hybrid segments" data-series="stage2_repo[a-z_]*_s2 layer [0-9]"' "$out/analysis/syn_positions_training.svg")
[ "$n" = 9 ] || fail "syn_positions_training.svg: expected 9 hybrid-share curves (3 modes x 3 RePo layers), found $n"
for m in repo repo_wm repo_pdrop; do
    [ -s "$out/analysis/syn_${m}_s2/positions.svg" ] || fail "no example positions figure for $m"
done
for f in syn_training_stage1 prose_training_stage1 syn_training_stage2 prose_training_stage2; do
    [ -s "$out/analysis/$f.svg" ] || fail "no $f.svg from build/plot"
done
n=$(grep -c 'data-panel="training loss" data-series="stage2_[a-z0-9_]* loss (smoothed)"' "$out/analysis/prose_training_stage2.svg")
[ "$n" = 7 ] || fail "prose_training_stage2.svg: expected 7 smoothed training-loss curves, found $n"
[ "$(git status --porcelain docs/ 2>/dev/null; git diff docs/ 2>/dev/null | md5sum)" = "$docs_before" ] ||
    fail "the quick run changed docs/"
echo "study --quick: report complete ($(wc -l < "$r") lines)"
