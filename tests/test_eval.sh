#!/usr/bin/env bash
# build/eval end to end: on the OLMo-2 fixture checkpoint (vocab 64 =
# the synthetic range with the defaults) it prints the family x length table and
# writes JSON, reproducibly from the seed; perplexity on a token file; a run
# directory from a 2-step build/train run supplies its seq_len and generator
# settings; and every bad checkpoint or option stops with a message and a
# non-zero exit. Nothing heavy: the models are tiny, so build/eval runs on one
# thread (a second thread only adds waits on a busy machine), except for one
# small run with two: results must not depend on the threads.
set -u
cd "$(dirname "$0")/.." || exit 1
T=$(mktemp -d /tmp/repoc_eval.XXXXXX)
trap 'rm -rf "$T"' EXIT
failures=0
CK=tests/fixtures/olmo2_mix/ckpt

PROG=build/eval
# shellcheck source=cli_expect.sh
. tests/cli_expect.sh

echo "table and JSON on $CK"
expect_ok "six families x two lengths" "family" "L=128" "L=256" "chance" "key-blind" \
    single multikey multivalue multiquery distractor table "mean" "wrote $T/a.json" -- \
    $CK --items 5 --lengths 128,256 --seed 3 --json "$T/a.json"
n=$(grep -c '"family"' "$T/a.json" 2>/dev/null)
if [ "$n" = 12 ] && grep -q '"format":.*"repoc-eval"' "$T/a.json" && grep -q '"key_blind"' "$T/a.json"; then
    ok "JSON: 12 task entries with accuracy, chance and key_blind"
else bad "JSON: $n task entries in $T/a.json"; fi
if [ "$(grep -c '"per_item"' "$T/a.json")" = 12 ] && [ "$(grep -c '"ci":' "$T/a.json")" = 12 ] &&
   [ "$(grep -c '"score":' "$T/a.json")" = 60 ]; then
    ok "JSON: every task has its Wilson interval and 5 per-item scores"
else bad "JSON: per_item, ci or score missing in $T/a.json"; fi
if command -v python3 >/dev/null && ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/a.json" 2>/dev/null; then
    bad "JSON: $T/a.json does not parse"
fi
build/eval $CK --items 5 --lengths 128,256 --seed 3 --json "$T/b.json" --threads 1 >/dev/null 2>&1
small="--items 2 --lengths 128 --tasks single,table --seed 4"
build/eval $CK $small --json "$T/c.json" --threads 1 >/dev/null 2>&1
build/eval $CK $small --json "$T/d.json" --threads 2 >/dev/null 2>&1
if diff <(grep -v seconds "$T/a.json") <(grep -v seconds "$T/b.json") >/dev/null &&
   diff <(grep -v seconds "$T/c.json") <(grep -v seconds "$T/d.json") >/dev/null; then
    ok "same seed, same results (and with 1 or 2 threads)"
else bad "same seed gave other results"; fi
expect_ok "--compare of two runs with the same seed" "single@128" "table@256" "no difference at this n" -- \
    --compare "$T/a.json" "$T/b.json"
grep -qE " (better|worse)$" "$T/log" && bad "--compare: a verdict other than no difference for the same items"

echo "perplexity, YaRN, a run directory"
build/tools/gen_tokens "$T/tok.u16" 3000 64 1 || exit 1
expect_ok "--ppl on a token file (11 windows of 256)" "11 windows of 256" "ppl" "(window: the default 256: the checkpoint records no training length" -- \
    $CK --ppl "$T/tok.u16" --json "$T/p.json"
grep -q '"ppl":' "$T/p.json" && ! grep -q '"family"' "$T/p.json" && ok "--ppl alone: no tasks in the JSON" \
    || bad "--ppl JSON"
expect_ok "--yarn-factor 2 --yarn-orig 64" "YaRN from --yarn-factor: factor 2, original_max_position_embeddings 64 (--yarn-orig)" "yarn: factor=2 original_max=64" -- $CK --tasks single --items 2 --lengths 128 \
    --yarn-factor 2 --yarn-orig 64 --json "$T/y.json"
grep -q '"original_max_position_embeddings":.*64' "$T/y.json" && ok "JSON records YaRN" || bad "JSON lacks YaRN"
cat >"$T/train.json" <<EOF
{"run": {"out_dir": "$T/run", "threads": 2},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64,
           "positions": {"mode": "repo", "repo_start_layer": 1}},
 "data": {"seq_len": 80, "synthetic": {"weights": {"single": 1, "table": 1}}},
 "optim": {"warmup_steps": 0}, "train": {"batch_size": 2, "steps": 2, "eval_every": 0}}
EOF
if build/train "$T/train.json" >"$T/train.log" 2>&1; then
    expect_ok "run dir: training length 80 -> lengths 80,160,320; trained families only" \
        "trained with seq_len 80" "L=80" "L=160" "L=320" "table" -- "$T/run" --items 2 --json "$T/r.json"
    grep -q '"multikey"' "$T/r.json" && bad "families with weight 0 were evaluated by default" \
        || ok "families with weight 0 are left out by default"
    expect_ok "run dir: --yarn-factor takes L0 from trainer_state.json" "original_max_position_embeddings 80 (the training length)" -- "$T/run" --items 1 \
        --tasks single --lengths 160 --yarn-factor 2 --json "$T/ry.json"
    grep -q '"original_max_position_embeddings":.*80' "$T/ry.json" && ok "YaRN L0 = 80" || bad "YaRN L0 != 80"
    # a damaged trainer_state.json: seq_len 1e300 (a cast of it to an integer would be undefined)
    cp -r "$T/run" "$T/bad_run"
    st=$(ls -d "$T/bad_run"/step_*/trainer_state.json | tail -n 1)
    sed -i 's/"seq_len":[[:space:]]*80/"seq_len": 1e300/' "$st"
    expect_fail "run dir with seq_len 1e300 in trainer_state.json" \
        "trainer_state.json: config.data.seq_len is 1.0000000000000001e+300, not a positive integer" \
        "$T/bad_run" --items 1 --tasks single --lengths 160
else
    bad "build/train for the run directory"; cat "$T/train.log"
fi

echo "errors"
mkdir -p "$T/empty"
expect_fail "missing checkpoint" "does not exist" "$T/nowhere"
expect_fail "directory without a checkpoint" "neither a checkpoint" "$T/empty"
# a NaN in the weights (element 5 of lm_head.weight, the first F32 tensor of the mc fixture) is refused: before,
# build/eval ran to exit 0 and printed nll nan
cp -r tests/fixtures/mc/ckpt "$T/nan_ckpt"
hdr=$(od -An -tu8 -N8 "$T/nan_ckpt/model.safetensors" | tr -d ' ')
printf '\000\000\300\177' | dd of="$T/nan_ckpt/model.safetensors" bs=1 seek=$((8 + hdr + 20)) conv=notrunc 2>/dev/null
expect_fail "a NaN weight" "tensor lm_head.weight holds 1 values that are not finite (the first, element 5, is nan)" \
    "$T/nan_ckpt" --tasks single --lengths 40 --items 1
expect_fail "unknown option" "unknown option '--bogus'" $CK --bogus
expect_fail "unknown task" "unknown task 'needle' (all, single, multikey, multivalue, multiquery, distractor, table)" \
    $CK --tasks single,needle
expect_fail "bad length" "--lengths: expected an integer" $CK --lengths 128,abc
expect_fail "length too short for a family" "too short for family 'table'" $CK --lengths 40
expect_fail "synthetic range beyond the vocabulary" "do not fit vocab_size 64" $CK --synthetic '{"first_id": 10}'
expect_fail "bad --synthetic JSON" "not valid JSON" $CK --synthetic '{"alphabet": }'
expect_fail "length beyond memory" "for the KV cache" $CK --lengths 2000000000 --tasks single
expect_fail "YaRN without a training length" "--yarn-orig" $CK --yarn-factor 2
expect_fail "missing --ppl file" "$T/none.u16" $CK --ppl "$T/none.u16"
build/tools/gen_tokens "$T/short.u16" 10 64 1 || exit 1
expect_fail "--ppl file shorter than one window" \
    "--ppl '$T/short.u16': 10 tokens, fewer than one window of --seq-len + 1 = 17" $CK --ppl "$T/short.u16" --seq-len 16
grep -q "^checkpoint" "$T/log" && bad "--ppl file shorter than one window: found only after loading the model"
expect_fail "no checkpoint" "no CHECKPOINT" --items 3
expect_fail "an option given twice" "--json is given twice" $CK --json "$T/x1.json" --json "$T/x2.json"
# an output that cannot be written stops eval before any work (the model is not even loaded)
touch "$T/afile"
expect_fail "--json in a missing directory" "--json '$T/nodir/e.json' cannot be written (No such file or directory)" \
    $CK --items 2 --lengths 128 --tasks single --json "$T/nodir/e.json"
grep -q "exact" "$T/log" && bad "--json in a missing directory: the tasks ran before the check"
expect_fail "--json under a file" "--json '$T/afile/e.json' cannot be written (Not a directory)" \
    $CK --items 2 --lengths 128 --tasks single --json "$T/afile/e.json"
expect_fail "--json naming a directory" "--json '$T/empty' is a directory: give a file name" \
    $CK --items 2 --lengths 128 --tasks single --json "$T/empty"
grep -q "exact" "$T/log" && bad "--json naming a directory: the tasks ran before the check"
build/eval --help >"$T/log" 2>&1 && grep -q "usage" "$T/log" && ok "--help prints the usage" || bad "--help"

echo "test_eval: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
