#!/usr/bin/env bash
# build/analyze end to end: on the fixture checkpoints (OLMo-2 with
# rope, rope, repo, nope; Llama with GQA, YaRN and two RePo layers) it writes
# positions.csv, analysis.json and the figures with the expected shapes, the
# attention masses of every item add up to 1, the same seed gives the same
# file, a token window gives positions only, a 1-step r2n1 run (rope and nope
# layers, no RePo) gives attention mass but refuses positions, --compare draws
# the grouped bars, PNGs appear exactly when rsvg-convert is on PATH, the
# paper's analyses (--ranges with and without YaRN, boundary alignment, query
# distance) write consistent CSV and JSON, --text gives one row per token and
# head, and every bad checkpoint or option stops with a message naming it. Tiny models, one
# thread, a few seconds in all. The JSON checks need jq (skipped without it;
# tests/test_analyze.c checks the sums of the masses on its own).
set -u
cd "$(dirname "$0")/.." || exit 1
T=$(mktemp -d /tmp/repoc_analyze.XXXXXX)
trap 'rm -rf "$T"' EXIT
failures=0
OLMO=tests/fixtures/olmo2_mix/ckpt
LLAMA=tests/fixtures/llama_gqa/ckpt

PROG=build/analyze
# shellcheck source=cli_expect.sh
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

echo "the paper's analyses: ranges, boundary alignment, query distance on $OLMO"
expect_ok "--ranges 1,2 --ranges-yarn, needle at depth 0.5" "boundary alignment" "query distance" \
    "L=192 (2x, YaRN 2)" "wrote $T/z/ranges.svg" "wrote $T/z/boundaries.svg" "wrote $T/z/mechanism.svg" -- \
    $OLMO --items 3 --length 96 --depth 0.5 --ranges 1,2 --ranges-yarn --out "$T/z"
check "boundaries.csv: 4 heads, layer 2 over its heads, all; mechanism.csv the same rows" \
    '[ $(wc -l <$T/z/boundaries.csv) -eq 7 ] &&
     [ "$(head -1 $T/z/boundaries.csv)" = "layer,head,share,lo,hi,chance,enrichment,best,items" ] &&
     [ "$(cut -d, -f1,2 $T/z/boundaries.csv | tail -2 | tr "\n" " ")" = \
       "2,all all,all " ] && [ "$(cut -d, -f1,2 $T/z/mechanism.csv)" = "$(cut -d, -f1,2 $T/z/boundaries.csv)" ]'
check "mechanism.csv: ratio = needle_query / filler_query on every row" \
    'awk -F, "NR > 1 && (\$5 - \$3 / \$4 > 1e-5 || \$3 / \$4 - \$5 > 1e-5) { bad = 1 } END { exit bad }" $T/z/mechanism.csv'
check "ranges.csv: 3 runs (96, 192, 192 with YaRN 2) x 4 heads" \
    '[ $(wc -l <$T/z/ranges.csv) -eq 13 ] && [ "$(cut -d, -f1,3 $T/z/ranges.csv | sort -u | tr "\n" " ")" = \
       "192, 192,2 96, length,yarn_factor " ]'
if have_jq; then
    # shellcheck disable=SC2034 # J: read by the checks' commands, which check evaluates
    J=$T/z/analysis.json
    # single items with the needle mid-filler: its start and end, the query's start and the answer's start are
    # 4 boundary gaps of the 95
    check "JSON: chance = 4/95 for every item, 10 large gaps per item (so at most 4/10 on them), shares in [0, 1]" \
        'jq -e ".positions.boundaries | (.chance_per_item | all(. == 4/95)) and .large_per_item == 10 and
                (.overall.best - 0.4 | fabs) < 1e-12 and
                ([.layers[].heads[] | .share >= 0 and .share <= 1 and .lo <= .hi] | all)" $J >/dev/null'
    check "JSON: the 1x range run measures the same max - min as the positions (same items, same length)" \
        'jq -e "[.positions.layers[0].heads[].range] as \$p | [.ranges.runs[0].layers[0].heads[].range] as \$r |
                [range(4) | (\$p[.] - \$r[.]) | fabs < 1e-6 * (1 + fabs)] | all" $J >/dev/null'
    check "JSON: runs of length 96, 192, 192 with YaRN factors null, null, 2; span <= range on every head" \
        '[ "$(jq -c "[.ranges.runs[] | [.length, .yarn_factor]]" $J)" = "[[96,null],[192,null],[192,2]]" ] &&
         jq -e "[.ranges.runs[].layers[].heads[] | .span <= .range] | all" $J >/dev/null'
fi

echo "--text on tests/fixtures/mc/ckpt (rope, repo, nope; 2 KV heads; its tokenizer.json; 40 positions)"
MC=tests/fixtures/mc/ckpt
expect_ok "--text, the checkpoint's tokenizer" "text from --text" "layer 1" "wrote $T/x/text_layer1.svg" -- \
    $MC --text "The cat sat on the mat, \"quoted\"." --out "$T/x"
if have_jq; then
    n=$(jq ".input.tokens | length" $T/x/analysis.json)
    check "text_positions.csv: one row per token and head (1 layer x 2 heads x $n tokens), a piece per token" \
        '[ $(wc -l <$T/x/text_positions.csv) -eq $((2 * n + 1)) ] &&
         [ "$(head -1 $T/x/text_positions.csv)" = "layer,head,t,token,piece,z" ] &&
         [ "$(jq ".input.pieces | length" $T/x/analysis.json)" = "$n" ] &&
         [ "$(jq -r ".input.kind, .attention, .ranges" $T/x/analysis.json | tr "\n" " ")" = "text null null " ]'
    check "text_positions.csv: the z of head 1 are the JSON's" \
        '[ "$(grep "^1,1," $T/x/text_positions.csv | awk -F, "{ printf \"%.5g \", \$NF }")" = \
           "$(jq ".positions.layers[0].heads[1].z[]" $T/x/analysis.json | awk "{ printf \"%.5g \", \$1 }")" ]'
fi
printf 'The cat sat on the mat.\n' >"$T/text.txt"
expect_ok "--text-file, --tokenizer the fixture's directory" "text from $T/text.txt" -- \
    $MC --text-file "$T/text.txt" --tokenizer $MC
long=$(for _ in $(seq 30); do printf 'the cat sat '; done)

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
expect_fail "--text without a tokenizer" "has no tokenizer.json" $OLMO --text "hello"
expect_fail "--tokenizer that does not exist" "--tokenizer '$T/nowhere' does not exist" \
    $MC --text "hello" --tokenizer "$T/nowhere"
expect_fail "empty --text" "--text: the text is empty" $MC --text ""
: >"$T/empty.txt"
expect_fail "empty --text-file" "--text-file: the text is empty" $MC --text-file "$T/empty.txt"
expect_fail "missing --text-file" "--text-file '$T/nowhere.txt': No such file" $MC --text-file "$T/nowhere.txt"
expect_fail "--text longer than the model addresses" "above what the model can address: 40 positions" \
    $MC --text "$long"
expect_fail "--text with --attention" "--attention needs synthetic items" $MC --text "hi" --attention
expect_fail "--text with --ranges" "--ranges measures synthetic items or a token window" $MC --text "hi" --ranges 1,2
expect_fail "--tokenizer without a text" "--tokenizer is read with --text" $OLMO --tokenizer $MC
expect_fail "--ranges-yarn without --ranges" "--ranges-yarn adds YaRN runs to --ranges" $OLMO --ranges-yarn
expect_fail "--ranges-yarn on a model with YaRN" "--ranges-yarn: the model already has YaRN" \
    $LLAMA --ranges 1,2 --ranges-yarn
expect_fail "--ranges past the token file" "(the longest of --ranges)" \
    $LLAMA --tokens "$T/tok.u16" --length 64 --ranges 1,8
expect_fail "--top-frac out of range" "--top-frac: expected a share in (0, 1]" $OLMO --top-frac 1.5
[ -d "$T/run" ] && expect_fail "--ranges on a model without RePo" "--ranges: $T/run/" "$T/run" --attention --ranges 1,2
$PROG --help >"$T/log" 2>&1 && grep -q "usage" "$T/log" && ok "--help prints the usage" || bad "--help"

echo "test_analyze_cli: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
