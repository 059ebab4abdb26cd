#!/usr/bin/env bash
# The study pipeline, version 4 (tools/study.sh --quick): the prose text tokenized, stage 1, the
# calibration (the band of the primary metric, the lr pilot, repo_wm's width on the stage-1 checkpoint),
# stage 2 in the six modes with three seeds each (r1n3 as a per-layer list, repo_wm with the calibrated
# std and lr multiplier, the release's schedule shape and z-loss), eval with and without YaRN on held-out
# text, the noisy setting as its own family, perplexity, the comparisons over the seeds with the pooled
# metric, and the report with the verdict. The quick run trains too little to learn anything; this
# checks that every step runs, that each setting reached the runs, and that the report holds every
# number the rule needs.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/study-quick
rm -rf "$out"
docs_before=$(git status --porcelain docs/ 2>/dev/null; git diff docs/ 2>/dev/null | md5sum)   # a tree being edited
tools/study.sh --quick --out "$out"
r=$out/results.md
fail() { echo "FAIL: $*"; exit 1; }
[ -s "$r" ] || fail "no $r"
modes="rope nope r1n3 r2n1 repo_wm repo"
for s in 2 3 4; do
    for m in $modes; do
        run=$out/stage2_${m}_s$s
        [ -d "$run" ] || fail "no stage-2 run $m seed $s"
        grep -q "\"seed\":[[:space:]]*$s,\?$" "$run/run_config.json" || fail "$m: not seed $s"
        grep -q '"schedule":[[:space:]]*"linear"' "$run/run_config.json" || fail "$m: not the linear schedule"
        grep -q '"z_loss":[[:space:]]*0.0001' "$run/run_config.json" || fail "$m: no z-loss 1e-4"
        grep -q '"retrieval"' "$run/metrics.jsonl" || fail "$m seed $s: no learning curve (train.eval_tasks)"
        for f in "" _noisy _long _yarn2 _yarn4 _ppl2 _ppl4; do
            [ -s "$out/eval/${m}_s$s$f.json" ] || fail "no eval $m seed $s $f"
        done
        grep -q '"family":[[:space:]]*"noisy"' "$out/eval/${m}_s${s}_noisy.json" || fail "the noisy setting is not named noisy"
        grep -q '"per_item"' "$out/eval/${m}_s$s.json" || fail "no per-item scores for $m seed $s"
    done
done
# r1n3: rope, then nope in layers 1-3; repo_wm: the calibrated std in all three maps and the lr multiplier
grep -A5 '"layers"' "$out/stage2_r1n3_s2/run_config.json" | tr -d ' \t\n' | grep -q '\["rope","nope","nope","nope"\]' ||
    fail "r1n3 is not rope, nope, nope, nope"
std=$(sed -n 's/^| \([0-9.]*\) | .* | yes |$/\1/p' "$r" | head -n 1)
[ -n "$std" ] || grep -q 'the primary RePo mode is `repo`' "$r" || fail "the width table chose no std"
if [ -n "$std" ]; then
    for k in gate content final; do
        grep -q "\"repo_${k}_init_std\":[[:space:]]*$std,\?$" "$out/stage2_repo_wm_s2/run_config.json" ||
            fail "repo_wm without repo_${k}_init_std $std"
    done
fi
n=$(wc -l < "$out/cal/width.txt")
[ "$n" = 7 ] || fail "the width calibration measured $n stds, expected 7"
awk '$2 + 0 <= 0 { exit 1 }' "$out/cal/width.txt" || fail "a width run logged no mean |z|: $(cat "$out/cal/width.txt")"
# the prose filler is the held-out text in eval, the training text in training
grep -q '"filler_file":"[^"]*prose_train_000000.bin"' "$out/logs/stage1.log" || fail "no text filler in training"
grep -q 'the filler is text: windows of [^ ]*prose_val_000000.bin' "$out/logs/eval_rope_s2.log" ||
    fail "eval not on the held-out text"
# the comparisons: over three seeds, with the pooled metric M
for c in adaptation claim attribution r2n1 repo_vs_wm; do
    f=$out/compare/$c.json
    [ -s "$f" ] || fail "no comparison $c"
    grep -q '"seeds":[[:space:]]*3' "$f" || fail "$c: not over three seeds"
    grep -q '"pool":' "$f" || fail "$c: no pooled metric"
    [ -s "$out/compare/${c}_yarn4.json" ] || fail "no YaRN comparison $c"
done
# the report: calibration tables, the three steps of the rule and one verdict sentence, every comparison
expect_rows() { # N PATTERN WHAT: the report has N lines matching PATTERN
    local n
    n=$(grep -cE "$2" "$r" || true)
    [ "$n" = "$1" ] || fail "expected $1 $3, found $n"
}
expect_rows 7 '^\| (single|multikey|multivalue|multiquery|distractor|table|noisy) \| [0-9.]+ \| (yes|no) \|$' "band rows"
expect_rows 2 '^\| 1(\.19)?e-3 \| [0-9.]+ \| (yes|no) \|$' "lr pilot rows"
expect_rows 7 '^\| 0\.[0-9]+ \| [0-9.e+-]+ \| [0-9.]+ \| [0-9.e+-]+ \| (yes|no) \|$' "width rows"
iv='\[[-+][0-9.]+, [-+][0-9.]+\]'
expect_rows 1 "^1\. \*\*Adaptation check\*\*: M\(nope\) − M\(rope\) = \*\*[-+][0-9.]+\*\* $iv \(per seed ([-+][0-9.]+(, )?){3}\)\.$" "adaptation line"
expect_rows 1 "^2\. \*\*The claim\*\*: M\(repo(_wm)?\) − M\(rope\) = \*\*[-+][0-9.]+\*\* $iv" "claim line"
expect_rows 1 "^3\. \*\*Attribution\*\*: M\(repo(_wm)?\) − M\(r1n3\)" "attribution line"
expect_rows 1 '^\*\*Verdict:\*\* ' "verdict sentence"
expect_rows 5 "^\| [a-z0-9_]+ − [a-z0-9_]+ \| \*\*M\*\* \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \| [-+][0-9.]+ \| $iv \| ([-+][0-9.]+(, )?){3} \| (better|worse|no difference at this n) \|$" \
    "pooled comparison rows"
expect_rows 36 '^\| [a-z0-9_]+ \| (single|multikey|multivalue|multiquery|distractor|table) \|( [0-9.]+ \|){5}$' \
    "per-family rows (6 modes x 6 families)"
expect_rows 6 '^\| [a-z0-9_]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$' "perplexity rows"
expect_rows 6 '^\| repo(_wm)? s[234] \| [0-9.]+ \[[0-9.]+, [0-9.]+\] \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| \[[-0-9.]+, [-0-9.]+\] \|( [0-9.]+ \|){3}$' \
    "analysis rows (2 RePo modes x 3 seeds: boundaries, distance to the query, range)"
for m in repo_wm repo; do
    for f in ranges boundaries mechanism; do
        [ -s "$out/analysis/${m}_s2/$f.svg" ] || fail "no $f.svg of $m"
    done
done
for f in training_stage1 training_stage2 positions_training; do
    [ -s "$out/analysis/$f.svg" ] || fail "no $f.svg from build/plot"
done
[ "$(git status --porcelain docs/ 2>/dev/null; git diff docs/ 2>/dev/null | md5sum)" = "$docs_before" ] ||
    fail "the quick run changed docs/"
echo "study --quick: report complete ($(wc -l < "$r") lines)"
