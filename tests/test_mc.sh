#!/usr/bin/env bash
# build/eval --mc end to end on tests/fixtures/mc: the output contract of the JSON, the same scores
# through --mc-fields from renamed fields (HellaSwag's ctx/endings, PIQA's goal/sol1/sol2), --mc-limit,
# a file of 10^6 lines (streamed: checked whole, scored in part; refused at its last line when that is
# bad), and every bad record refused naming the file, line and field before the model loads.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" mc
PROG=build/eval
# shellcheck source=cli_expect.sh
. tests/cli_expect.sh
CK=tests/fixtures/mc/ckpt
ITEMS=tests/fixtures/mc/items.jsonl

echo "scores and the JSON contract"
expect_ok "--mc on the fixture" "mc items" "36 items" "acc 0.3333" "acc_norm 0.3056" "items/s" "wrote $T/a.json" -- \
    $CK --mc $ITEMS --json "$T/a.json"
grep -q "synthetic retrieval" "$T/log" && bad "--mc alone ran synthetic tasks"
for key in '"mc":' '"items":' '"acc":' '"acc_stderr":' '"acc_ci":' '"acc_norm":' '"acc_norm_stderr":' \
    '"acc_norm_ci":' '"loglikelihoods":' '"is_greedy":' '"choice_chars":' '"context_tokens":' '"label":'; do
    grep -q "$key" "$T/a.json" || bad "JSON lacks $key"
done
[ "$(grep -c '"context_tokens":' "$T/a.json")" = 36 ] && ok "JSON: 36 per-item records" || bad "JSON: per-item records"
grep -q '"id":[[:space:]]*"item-0"' "$T/a.json" && grep -q '"id":[[:space:]]*7,' "$T/a.json" &&
    ok "ids: the record's, else its index (item 7 has none)" || bad "ids in the JSON"
expect_ok "--compare of the file with itself" "mc/items" "no difference at this n" -- \
    --compare "$T/a.json" "$T/a.json"

echo "field mapping"
sed 's/"context":/"ctx":/; s/"choices":/"endings":/; s/"label":/"gold":/; s/"id":/"ind":/' $ITEMS >"$T/renamed.jsonl"
expect_ok "--mc-fields context=ctx,choices=endings,label=gold,id=ind" "mc renamed" "acc 0.3333" "acc_norm 0.3056" -- \
    $CK --mc "$T/renamed.jsonl" --mc-fields context=ctx,choices=endings,label=gold,id=ind --json "$T/b.json"
if diff <(grep -v '"file"\|seconds' "$T/a.json" | sed -n '/"mc":/,$p' | sed 1,2d) \
        <(grep -v '"file"\|seconds' "$T/b.json" | sed -n '/"mc":/,$p' | sed 1,2d) >/dev/null; then
    ok "renamed fields: the same per-item records"
else bad "renamed fields gave other records"; fi
printf '{"goal": "Open a jar", "sol1": "twist the lid", "sol2": "eat the lid", "label": 0}\n' >"$T/piqa.jsonl"
expect_ok "PIQA layout: choices=sol1+sol2" "mc piqa" "1 items" -- \
    $CK --mc "$T/piqa.jsonl" --mc-fields context=goal,choices=sol1+sol2
printf '{"question": {"stem": "Sky colour?"}, "choices": {"text": ["blue", "green"]}, "label": 1}\n' >"$T/nested.jsonl"
expect_ok "dotted paths: context=question.stem,choices=choices.text" "mc nested" "1 items" -- \
    $CK --mc "$T/nested.jsonl" --mc-fields context=question.stem,choices=choices.text

echo "a file of 10^6 lines"
yes '{"context": "The cat", "choices": ["sat", "ran"], "label": 0}' | head -n 1000000 >"$T/big.jsonl"
expect_ok "10^6 lines, --mc-limit 3" "mc big" "3 items" -- $CK --mc "$T/big.jsonl" --mc-limit 3
cp "$T/big.jsonl" "$T/big_bad.jsonl"
echo '{"context": "The cat", "choices": ["sat", "ran"], "label": 2}' >>"$T/big_bad.jsonl"
expect_fail "10^6 lines and a bad last one" "$T/big_bad.jsonl:1000001: \"label\" is not a choice index in [0, 2)" \
    $CK --mc "$T/big_bad.jsonl" --mc-limit 3
rm -f "$T/big.jsonl" "$T/big_bad.jsonl"

echo "bad input"
bad_record() { # name line phrase
    printf '{"context": "A", "choices": ["b", "c"], "label": 0}\n\n%s\n' "$2" >"$T/bad.jsonl"
    expect_fail "$1" "$T/bad.jsonl:3: $3" $CK --mc "$T/bad.jsonl"
    grep -q "^checkpoint" "$T/log" && bad "$1: found only after loading the model"
}
bad_record "a record without choices" '{"context": "A", "label": 0}' 'no field "choices"'
bad_record "a label out of range" '{"context": "A", "choices": ["b", "c"], "label": 2}' \
    '"label" is not a choice index in [0, 2)'
bad_record "a negative label" '{"context": "A", "choices": ["b", "c"], "label": -1}' '"label" is not a choice index'
bad_record "a label that is a word" '{"context": "A", "choices": ["b", "c"], "label": "B"}' \
    '"label" is not a choice index'
bad_record "a choice that is not a string" '{"context": "A", "choices": ["b", 3], "label": 0}' \
    '"choices"[1] is not a string'
bad_record "an empty choice" '{"context": "A", "choices": ["b", ""], "label": 0}' 'choice 1 ("choices") is empty'
bad_record "an empty context" '{"context": "", "choices": ["b", "c"], "label": 0}' '"context" is empty (the context)'
bad_record "a context of whitespace" '{"context": " \n", "choices": ["b", "c"], "label": 0}' \
    '"context" is empty but for whitespace'
bad_record "choices that are no list" '{"context": "A", "choices": "b", "label": 0}' \
    '"choices" is not a non-empty list of strings'
bad_record "not JSON" '{"context": "A", ' 'not valid JSON'
bad_record "two objects on a line" '{"context": "A", "choices": ["b"], "label": 0} {}' 'byte column 48: more after the JSON object'
expect_fail "a file that does not exist" "cannot open '$T/none.jsonl'" $CK --mc "$T/none.jsonl"
expect_fail "a field spec without =" "--mc-fields: 'context' is not PART=FIELD" $CK --mc $ITEMS --mc-fields context
expect_fail "an unknown part" "--mc-fields: unknown part 'question'" $CK --mc $ITEMS --mc-fields question=q
cp $ITEMS "$T/items.jsonl"
expect_fail "--mc-fields without --mc" "need --mc" $CK --mc-fields context=ctx
expect_fail "two files of one name" "both have the name 'items'" $CK --mc "$ITEMS,$T/items.jsonl"
expect_fail "a checkpoint without tokenizer.json" "has no tokenizer.json" tests/fixtures/olmo2_mix/ckpt --mc $ITEMS
expect_fail "a tokenizer larger than the vocabulary" "the model's vocab_size is 64" \
    tests/fixtures/olmo2_mix/ckpt --mc $ITEMS --tokenizer $CK/tokenizer.json
printf '{"context": "A", "choices": ["%s"], "label": 0}\n' "$(yes 'word' | head -n 60 | tr '\n' ' ')" >"$T/long.jsonl"
expect_fail "a choice longer than the window" "$T/long.jsonl:1: choice 0 has 121 tokens, more than the window of 40" \
    $CK --mc "$T/long.jsonl"

echo "test_mc: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
