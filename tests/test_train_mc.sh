#!/usr/bin/env bash
# train.eval_tasks "mc": multiple-choice files scored at every evaluation with the training model's weights
# and the run's tokenizer (build/eval --mc's code), from the tiny OLMo-2 checkpoint of tests/fixtures/mc:
#  1. every evaluation line of metrics.jsonl (steps 0, 2, 4) has mc NAME/acc and NAME/acc_norm for each
#     file, equal (exactly: the same count of right items over the same n) to build/eval --mc on the
#     checkpoint saved at that step (step 0: the fixture itself), with the same threads and FP32 engine;
#  2. build/plot draws them in a multiple-choice panel, one curve per file and metric;
#  3. the memory plan's eval row counts the scorer;
#  4. the evaluation changes no training state: the losses equal a run without it, and a run resumed
#     from the step-2 checkpoint continues with bit-identical losses and the same scores;
#  5. a bad file, key or window is refused naming the file and line (or key) before out_dir is written;
#  6. SIGTERM during a long evaluation stops it within milliseconds, with nothing logged for it.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" train_mc

FIX=tests/fixtures/mc
head -n 12 $FIX/items.jsonl >"$T/few.jsonl"
config() { # file out_dir eval_tasks
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "seed": 3, "threads": 2},
 "model": {"init_from": "$FIX/ckpt"},
 "data": {"synthetic": {"weights": {"single": 1}}, "seq_len": 32},
 "optim": {"lr": 1e-2, "warmup_steps": 1},
 "train": {"batch_size": 4, "steps": 4, "log_every": 1, "eval_every": 2, "eval_batches": 1, "save_every": 2,
           "keep_last": 5, "f32_engine": "openblas", "eval_tasks": $3}}
JSON
}
MC='{"mc": ["'$FIX/items.jsonl'", "'$T/few.jsonl'"]}'
config "$T/c.json" "$T/r" "$MC"
if build/train "$T/c.json" >"$T/log" 2>&1; then ok "a 4-step run from $FIX/ckpt with two multiple-choice files"
else bad "the run failed"; tail -5 "$T/log"; fi
grep -q "| mc items/acc 0.3333, items/acc_norm 0.3056, few/acc" "$T/log" &&
    ok "the evaluation line shows each file's acc and acc_norm" || bad "no mc numbers on the terminal"

eval_mc() { # checkpoint json
    build/eval "$1" --mc "$FIX/items.jsonl,$T/few.jsonl" --threads 2 --f32-engine openblas --json "$2" >"$T/e.log" 2>&1 ||
        { bad "build/eval $1 failed"; tail -3 "$T/e.log"; }
}
eval_mc $FIX/ckpt "$T/e0.json"
eval_mc "$T/r/step_0000002" "$T/e2.json"
eval_mc "$T/r/step_0000004" "$T/e4.json"
python3 - "$T" <<'PY' && ok "3 evaluations x 2 files: acc and acc_norm equal build/eval --mc's on the checkpoint of each step" || bad "mc numbers"
import json, sys
T = sys.argv[1]
evals = [json.loads(l) for l in open(T + "/r/metrics.jsonl") if "val_loss" in l]
assert [e["step"] for e in evals] == [0, 2, 4], evals
for e in evals:
    ev = json.load(open("%s/e%d.json" % (T, e["step"])))["mc"]
    assert set(e["mc"]) == {"items/acc", "items/acc_norm", "few/acc", "few/acc_norm"}, e
    for name in ("items", "few"):
        for m in ("acc", "acc_norm"):
            got, want = e["mc"][name + "/" + m], ev[name][m]
            print("    step %d %-14s train %.6f  eval %.6f (n %d)" % (e["step"], name + "/" + m, got, want, ev[name]["n"]))
            assert round(got * ev[name]["n"]) == round(want * ev[name]["n"]) and abs(got - want) < 1e-12, (e, name, m)
PY

if build/plot "$T/r" --out "$T/p.svg" >"$T/plot.log" 2>&1 && grep -q 'data-panel="multiple-choice accuracy (acc, acc_norm)"' "$T/p.svg"; then
    n=$(grep -c 'data-panel="multiple-choice accuracy[^"]*" data-series="r \(items\|few\)/acc\(_norm\)\?"' "$T/p.svg")
    [ "$n" = 4 ] && ok "build/plot: the multiple-choice panel with its 4 curves (items/acc ... few/acc_norm)" ||
        bad "build/plot: $n multiple-choice curves, expected 4"
else bad "build/plot: no multiple-choice panel ($(cat "$T/plot.log"))"; fi

row() { build/train "$@" --plan 2>&1 | grep "eval tasks (KV)"; }
config "$T/none.json" "$T/none" null
if [ -n "$(row "$T/c.json")" ] && [ -z "$(row "$T/none.json")" ]; then ok "memory plan: $(row "$T/c.json" | tr -s ' ')"
else bad "memory plan: no eval row for the multiple-choice scorer"; fi
mib() { row "$@" | awk '{print $4}'; }
small=$(mib "$T/c.json"); big=$(mib "$T/c.json" --set train.eval_tasks.mc_window=8192)
awk -v a="$small" -v b="$big" 'BEGIN { exit !(b > a + 1) }' && ok "memory plan: the eval row grows with mc_window ($small MiB at 40 tokens, $big MiB at 8192)" ||
    bad "memory plan: the eval row does not count the window ($small, $big MiB)"

echo "training state"
losses() { grep -o '"step": [0-9]*, "loss": [^,]*' "$1/metrics.jsonl"; }
build/train "$T/none.json" >"$T/none.log" 2>&1 || bad "the run without evaluation tasks failed"
[ "$(losses "$T/r")" = "$(losses "$T/none")" ] && ok "training losses bit-identical to the run without mc ($(losses "$T/r" | wc -l) steps)" ||
    bad "the evaluation changed training: $(diff <(losses "$T/r") <(losses "$T/none") | head -3)"
config "$T/res.json" "$T/res" "$MC"
build/train "$T/res.json" --set run.resume="$T/r/step_0000002" >"$T/res.log" 2>&1 || { bad "the resumed run failed"; tail -3 "$T/res.log"; }
python3 - "$T/r/metrics.jsonl" "$T/res/metrics.jsonl" <<'PY' && ok "resumed from step 2: steps 3, 4 and the evaluations at 2 and 4 bit-identical to the run's" || bad "the resumed run differs"
import json, sys
def after2(path):  # the training steps after 2 and the evaluations from 2 on, without the timings
    out = []
    for l in open(path):
        j = json.loads(l)
        if j["step"] > 2 or (j["step"] == 2 and "val_loss" in j):
            out.append({k: v for k, v in j.items() if k not in ("ms", "tokens_per_s")})
    return out
a, b = after2(sys.argv[1]), after2(sys.argv[2])
assert len(a) == 4 and a == b, (a, b)
PY

echo "refused before out_dir is written"
printf '{"context": "A b", "choices": [" c", " d"], "label": 0}\n\n{"context": "A b", "choices": [" c", " d"], "label": 2}\n' >"$T/bad.jsonl"
cp "$T/few.jsonl" "$T/dir_few.jsonl"; mkdir -p "$T/other"; cp "$T/few.jsonl" "$T/other/few.jsonl"
expect_err() { expect_refused "$1" "$3" "$T/c.json" --set "train.eval_tasks=$2" --set run.out_dir="$T/err"; }
expect_err "a label out of range at line 3" '{"mc": ["'$T/bad.jsonl'"]}' "$T/bad.jsonl:3: \"label\" is not a choice index in [0, 2)"
expect_err "a file that does not exist" '{"mc": ["'$T/none.jsonl'"]}' "cannot open '$T/none.jsonl'"
expect_err "a choice longer than the window" '{"mc": ["'$FIX/items.jsonl'"], "mc_window": 3}' "$FIX/items.jsonl:"
grep -q "more than the window of 3" "$T/refused.log" || bad "the window's message: $(tail -1 "$T/refused.log")"
expect_err "fields that the file lacks" '{"mc": ["'$T/few.jsonl'"], "mc_fields": "context=ctx"}' "$T/few.jsonl:1: no field \"ctx\""
expect_err "a bad mc_fields" '{"mc": ["'$T/few.jsonl'"], "mc_fields": "context"}' "train.eval_tasks.mc_fields: --mc-fields: 'context' is not PART=FIELD"
expect_err "an unknown key" '{"mc": ["'$T/few.jsonl'"], "mc_limt": 3}' "train.eval_tasks.mc_limt: unknown key"
expect_err "mc_limit 0" '{"mc": ["'$T/few.jsonl'"], "mc_limit": 0}' "train.eval_tasks.mc_limit: expected an integer >= 1"
expect_err "mc_limit without mc" '{"mc_limit": 3}' "mc_fields, mc_delimiter, mc_limit or mc_window given without mc"
expect_err "two files of one name" '{"mc": ["'$T/few.jsonl'", "'$T/other/few.jsonl'"]}' "both have the name 'few'"
expect_refused "no tokenizer" "train.eval_tasks.mc: no tokenizer" "$T/c.json" --set run.out_dir="$T/err" \
    --set model.init_from=null --set model.vocab_size=1001 --set model.d_model=32 --set model.n_layers=1 \
    --set model.n_heads=2 --set model.d_ff=64
[ -e "$T/err" ] && bad "a refused run created its out_dir" || ok "no refused run created its out_dir"

echo "a signal during the evaluation"
for _ in $(seq 200); do cat $FIX/items.jsonl; done >"$T/long.jsonl"   # 7200 items: seconds of scoring
d="$T/stop"
config "$T/stop.json" "$d" '{"mc": ["'$T/long.jsonl'"]}'
signal_train TERM 0.5 "$T/stop.log" "$d" "$T/stop.json"   # 0.5 s: inside the step-0 evaluation
if [ $rc -eq 0 ] && grep -q "stopped by signal 15" "$T/stop.log" && ! grep -q '"val_loss"' "$d/metrics.jsonl" && [ $ms -lt 1000 ]
then ok "SIGTERM during the scoring of 7200 items: exit 0 after $ms ms, nothing logged"
else bad "SIGTERM during the scoring: exit $rc after $ms ms, $(tail -2 "$T/stop.log")"; fi
echo "test_train_mc: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
