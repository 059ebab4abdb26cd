#!/usr/bin/env bash
# build/analyze end to end: on the fixture checkpoints (OLMo-2 with
# rope, rope, repo, nope; Llama with GQA, YaRN and two RePo layers) it writes
# positions.csv, analysis.json and the figures with the expected shapes, the
# attention masses of every item add up to 1, the same seed gives the same
# file, a token window gives positions only, a 1-step r2n1 run (rope and nope
# layers, no RePo) gives attention mass but refuses positions, --compare draws
# the grouped bars, PNGs appear exactly when rsvg-convert is on PATH, and every
# bad checkpoint or option stops with a message naming it. Tiny models, one
# thread, a few seconds in all. The JSON checks need jq (skipped without it;
# tests/test_analyze.c checks the sums of the masses on its own).
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/repoc_analyze.XXXXXX)
trap 'rm -rf "$T"' EXIT
failures=0
OLMO=tests/fixtures/olmo2_mix/ckpt
LLAMA=tests/fixtures/llama_gqa/ckpt

PROG=build/analyze
. tests/cli_expect.sh
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }   # name condition
have_jq() { command -v jq >/dev/null; }

echo "positions and attention on $OLMO (one RePo layer, 4 heads)"
expect_ok "3 single items of length 96" "layer 2" "hybrid" "needle" "SEP row" "wrote $T/o/analysis.json" -- \
    $OLMO --items 3 --length 96 --out "$T/o"
check "positions.csv: header and 1 layer x 4 heads x 96 tokens" \
    '[ "$(head -1 $T/o/positions.csv)" = "layer,head,t,z" ] && [ $(wc -l <$T/o/positions.csv) -eq 385 ] &&
     [ "$(cut -d, -f1 $T/o/positions.csv | sort -u | head -1)" = 2 ]'
for f in positions.svg attention.svg; do
    check "$f: one svg element, closed" '[ $(grep -c "<svg " $T/o/$f) -eq 1 ] && tail -1 $T/o/$f | grep -q "</svg>"'
done
if have_jq; then
    J=$T/o/analysis.json
    check "JSON: format, label rope,rope,repo,nope, input of 96 tokens" \
        '[ "$(jq -r ".format, .label, .input.length, (.input.tokens|length)" $J | tr "\n" " ")" = \
           "repoc-analyze rope,rope,repo,nope 96 96 " ]'
    check "JSON: positions of layer 2, 4 heads of 96 z, 6 segments each x 3 items" \
        '[ "$(jq -c "[.positions.layers[].layer, (.positions.layers[0].heads|length),
                      (.positions.layers[0].heads[3].z|length), .positions.layers[0].heads[0].segments]" $J)" = \
           "[2,4,96,18]" ]'
    check "JSON: shares of the segment classes add up to 1" \
        'jq -e ".positions.overall | (.constant + .monotonic + .hybrid - 1 | fabs) < 1e-9" $J >/dev/null'
    check "JSON: attention over layer 2 (the RePo layer); 3 items, each needle+query+rest = 1 within 1e-5" \
        'jq -e "(.attention.layers == [2]) and (.attention.per_item | length == 3 and
                 all(.[]; (.needle + .query + .rest - 1 | fabs) <= 1e-5))" $J >/dev/null'
    check "JSON: needle and query spans of every item lie before the prompt's end" \
        'jq -e "all(.attention.per_item[]; .needle_spans[0][1] <= .query_span[0] and .query_span[1] == 95)" \
            $J >/dev/null'
else
    echo "  SKIP    the JSON checks: jq is not installed (test_analyze checks the mass sums without it)"
fi
$PROG $OLMO --items 3 --length 96 --out "$T/o2" --threads 1 >/dev/null 2>&1
check "same seed, same analysis.json" 'cmp -s $T/o/analysis.json $T/o2/analysis.json'

echo "GQA, YaRN, a token window, chosen layers and heads on $LLAMA"
expect_ok "distractor items, --layers 2, --plot-heads 1, --label" "layer 1" "layer 2" -- \
    $LLAMA --task distractor --items 2 --length 80 --layers 2 --plot-heads 1 --label gqa --out "$T/l"
if have_jq; then
    check "JSON: 2 RePo layers x 2 KV heads; attention over layer 2 only; label gqa" \
        '[ "$(jq -c "[.label, (.positions.layers|length), (.positions.layers[0].heads|length), .attention.layers]" \
           $T/l/analysis.json)" = "[\"gqa\",2,2,[2]]" ]'
fi
check "positions.svg draws head 1 only" 'grep -q "head 1" $T/l/positions.svg && ! grep -q "head 0" $T/l/positions.svg'
build/tools/gen_tokens "$T/tok.u16" 500 64 1 || exit 1
expect_ok "--tokens: positions of one window, no attention" "layer 1" -- \
    $LLAMA --tokens "$T/tok.u16" --offset 100 --length 64 --out "$T/w"
check "token window: CSV of 2 layers x 2 heads x 64, no attention.svg" \
    '[ $(wc -l <$T/w/positions.csv) -eq 257 ] && [ ! -e $T/w/attention.svg ]'
have_jq && check "JSON: input kind tokens at offset 100, attention null" \
    '[ "$(jq -c "[.input.kind, .input.offset, .attention]" $T/w/analysis.json)" = "[\"tokens\",100,null]" ]'

echo "a checkpoint without RePo layers (1 training step, r2n1: rope, rope, nope)"
cat >"$T/train.json" <<EOF
{"run": {"out_dir": "$T/run", "threads": 1},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 3, "n_heads": 4, "d_ff": 64, "positions": {"mode": "r2n1"}},
 "data": {"seq_len": 64, "synthetic": {"weights": {"single": 1}}},
 "optim": {"warmup_steps": 0}, "train": {"batch_size": 1, "steps": 1, "eval_every": 0}}
EOF
if build/train "$T/train.json" >"$T/train.log" 2>&1; then
    expect_fail "positions of a model without RePo" "has no RePo layers (layer positions: rope rope nope)" "$T/run"
    expect_ok "--attention: layers floor(3/3)..2, length T0 = 64 from the run" "layer 1" "layer 2" "length 64" -- \
        "$T/run" --attention --items 2 --out "$T/r"
    have_jq && check "JSON: label r2n1, positions null, attention layers [1,2]" \
        '[ "$(jq -c "[.label, .positions, .attention.layers]" $T/r/analysis.json)" = "[\"r2n1\",null,[1,2]]" ]'
else
    bad "build/train for the r2n1 run directory"; cat "$T/train.log"
fi

echo "--compare and PNG"
expect_ok "--compare three analyses" "| rope,rope,repo,nope |" "| gqa |" "| r2n1 |" "compare_attention.svg" \
    "compare_segments.svg" -- --compare "$T/o/analysis.json" "$T/l/analysis.json" "$T/r/analysis.json" --out "$T/c"
check "compare_segments.svg leaves out r2n1 (no positions)" \
    'grep -q ">gqa<" $T/c/compare_segments.svg && ! grep -q ">r2n1<" $T/c/compare_segments.svg'
mkdir -p "$T/fakebin" "$T/nobin"
printf '#!/bin/sh\n[ "$1" = -o ] && echo png >"$2"\n' >"$T/fakebin/rsvg-convert"
chmod +x "$T/fakebin/rsvg-convert"
PATH="$T/fakebin:$PATH" $PROG $OLMO --items 1 --length 64 --out "$T/p" --threads 1 >"$T/log" 2>&1
check "rsvg-convert on PATH: positions.png and attention.png" '[ -s $T/p/positions.png ] && [ -s $T/p/attention.png ]'
PATH="$T/nobin" $PROG $OLMO --items 1 --length 64 --out "$T/n" --threads 1 >"$T/log" 2>&1
check "no rsvg-convert: SVG only" '[ -s $T/n/positions.svg ] && ! ls $T/n/*.png >/dev/null 2>&1'

echo "errors"
mkdir -p "$T/empty"
expect_fail "missing checkpoint" "does not exist" "$T/nowhere"
expect_fail "directory without a checkpoint" "neither a checkpoint" "$T/empty"
expect_fail "unknown option" "unknown option '--bogus'" $OLMO --bogus
expect_fail "option without its value" "--items: expected a value" $OLMO --items
expect_fail "unknown task" "unknown task 'needle' (single, multikey, multivalue, multiquery, distractor, table)" \
    $OLMO --task needle
expect_fail "length too short for the family" "length 8 is too short for family 'single'" $OLMO --length 8
expect_fail "segment longer than the input" "--segment 64 is longer than the input (32 tokens)" \
    $OLMO --length 32 --segment 64
expect_fail "layer beyond the model" "--layers: layer 4, the model has 4" $OLMO --layers 2-4
expect_fail "head beyond the model" "--plot-heads: head 2, the model has 2 KV heads" $LLAMA --plot-heads 0,2
expect_fail "attention of a token window" "--attention needs synthetic items" $OLMO --tokens "$T/tok.u16" --attention
expect_fail "token window past the end" "runs past its end" $OLMO --tokens "$T/tok.u16" --offset 450 --length 64
expect_fail "--compare without --out" "--compare needs --out" --compare "$T/o/analysis.json"
expect_fail "--compare of a file that is not an analysis" "is not an analysis.json" \
    --compare "$OLMO/config.json" --out "$T/c2"
expect_fail "no checkpoint" "no CHECKPOINT" --items 3
expect_fail "an option given twice" "--out is given twice" $OLMO --out "$T/o1" --out "$T/o2"
# an --out that cannot be written stops analyze before any work
touch "$T/afile"
expect_fail "--out under a file" "--out '$T/afile/o': '$T/afile' is not a directory" $OLMO --out "$T/afile/o"
grep -q "^checkpoint" "$T/log" && bad "--out under a file: the analysis ran before the check"
expect_fail "--compare --out under a file" "--out '$T/afile/c': '$T/afile' is not a directory" \
    --compare "$T/o/analysis.json" --out "$T/afile/c"
$PROG --help >"$T/log" 2>&1 && grep -q "usage" "$T/log" && ok "--help prints the usage" || bad "--help"

echo "test_analyze_cli: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
