#!/usr/bin/env bash
# A training run on a two-source mixture (data/mixture.h), end to end:
#  1. metrics.jsonl has tokens seen per source (summing to tokens_seen, in the
#     ratio of the weights) and, at every evaluation, a loss per data.val
#     source whose batch-weighted mean is val_loss;
#  2. each source's validation loss equals build/eval --ppl on the same file
#     and windows;
#  3. a run resumed from its middle checkpoint gives bit-identical losses;
#  4. a small source that wraps prints a note; with "exhausted": "stop" it
#     ends the run instead;
#  5. config errors name the key: weight <= 0, no files, a name twice.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" mixture

build/tools/gen_tokens "$T/web.u16" 40000 64 1 || exit 1
build/tools/gen_tokens "$T/code.u16" 300 64 2 || exit 1

config() {  # file out_dir code_exhausted
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "seed": 3, "threads": 2, "resume": "auto"},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 2, "d_ff": 64},
 "data": {"train": [{"name": "web", "files": ["$T/web.u16"], "weight": 0.75},
                    {"name": "code", "files": ["$T/code.u16"], "weight": 0.25, "exhausted": "$3"}],
          "val": [{"name": "web", "files": ["$T/web.u16"]}, {"name": "code", "files": ["$T/code.u16"]}],
          "seq_len": 32, "order": "sequential"},
 "optim": {"lr": 3e-3, "warmup_steps": 2, "schedule": "wsd", "decay_steps": 4},
 "train": {"batch_size": 4, "steps": 12, "log_every": 1, "eval_every": 4, "eval_batches": 3,
           "save_every": 4, "keep_last": 4}}
JSON
}

config "$T/a.json" "$T/a" wrap
if build/train "$T/a.json" >"$T/a.log" 2>&1; then ok "a 12-step run on a two-source mixture"
else bad "training on a mixture failed"; tail -5 "$T/a.log"; fi

# what the run will read, said at its start: 128 tokens a step, 96 of web's 40000 and 32 of code's 300
grep -q "^data: source 'web': 40000 tokens, 96 a step (share 0.750): one pass over them takes 416.7 steps (this run of 12 steps: 0.03 passes); used up, it starts again" "$T/a.log" &&
    grep -q "^data: source 'code': 300 tokens, 32 a step (share 0.250): one pass over them takes 9.4 steps (this run of 12 steps: 1.28 passes); used up, it starts again (exhausted \"wrap\")" "$T/a.log" &&
    ok "at start: each source's tokens, steps per pass and what happens at its end" || bad "no data summary: $(grep "^data:" "$T/a.log")"
# code: 300 tokens = 9 windows of 32 + 1 -> 2 batches of 4; web: 3 (eval_batches)
python3 - "$T/a/metrics.jsonl" <<'PY' && ok "metrics.jsonl: source_tokens sum to tokens_seen in the ratio 3:1; val_loss = the batch-weighted mean of val_loss_source" || bad "metrics.jsonl per-source numbers"
import json, sys
steps = evals = 0
for line in open(sys.argv[1]):
    j = json.loads(line)
    if "loss" in j:
        st = j["source_tokens"]
        assert sum(st.values()) == j["tokens_seen"], j
        assert abs(st["web"] - 3 * st["code"]) <= 4 * 32, st
        steps += 1
    if "val_loss" in j:
        l, b = j["val_loss_source"], j["val_batches_source"]
        assert b == {"web": 3, "code": 2}, b
        mean = sum(l[k] * b[k] for k in l) / sum(b.values())
        assert abs(mean - j["val_loss"]) < 1e-12, j
        evals += 1
assert steps == 12 and evals == 4, (steps, evals)
PY
grep -q "web .*%, code .*%" "$T/a.log" && ok "the log line shows each source's share of the tokens" || bad "no per-source share in the log"
grep -q "note: data.train source 'code' (300 tokens) wraps around" "$T/a.log" && ok "the small source wraps around with a note" \
    || bad "no wrap note for source code"

# 2. the last evaluation (step 12, the final weights) against build/eval on the same windows
for src in web code; do
    case $src in web) n=12 ;; code) n=8 ;; esac
    build/eval "$T/a" --ppl "$T/$src.u16" --seq-len 32 --max-windows $n --json "$T/eval_$src.json" >"$T/eval_$src.log" 2>&1 \
        || { bad "build/eval --ppl $src failed"; tail -3 "$T/eval_$src.log"; continue; }
    python3 - "$T/a/metrics.jsonl" "$T/eval_$src.json" $src <<'PY' && ok "$src: val loss at step 12 = build/eval --ppl nll over the same $n windows" || bad "$src: val loss differs from build/eval"
import json, sys
last = [json.loads(l) for l in open(sys.argv[1]) if "val_loss" in l][-1]
ev = json.load(open(sys.argv[2]))
def find(o):
    if isinstance(o, dict):
        if "nll" in o: return o
        for v in o.values():
            r = find(v)
            if r: return r
    if isinstance(o, list):
        for v in o:
            r = find(v)
            if r: return r
p = find(ev)
got = last["val_loss_source"][sys.argv[3]]
print("    train %.9f  eval %.9f  windows %s" % (got, p["nll"], p.get("windows")))
assert last["step"] == 12 and abs(got - p["nll"]) <= 2e-6 * max(1, abs(p["nll"])), (got, p)
PY
done

# 3. resume from the step-4 checkpoint into another directory: the same losses after it
config "$T/b.json" "$T/b" wrap
build/train "$T/b.json" --set run.resume="$T/a/step_0000004" >"$T/b.log" 2>&1 || { bad "resume failed"; tail -3 "$T/b.log"; }
after() { python3 -c "
import json, sys
for l in open('$1'):
    j = json.loads(l)
    if j['step'] > 4 or ('val_loss' in j and j['step'] == 4): print(l.strip().split(', \"tokens_per_s')[0], j.get('source_tokens'), j.get('val_loss_source'))"; }
if [ -n "$(after "$T/a/metrics.jsonl")" ] && [ "$(after "$T/a/metrics.jsonl")" = "$(after "$T/b/metrics.jsonl")" ]; then
    ok "resumed at step 4: losses, per-source tokens and validation losses bit-identical ($(after "$T/b/metrics.jsonl" | wc -l) lines)"
else bad "resumed run differs"; diff <(after "$T/a/metrics.jsonl") <(after "$T/b/metrics.jsonl") | head -4; fi

# 4. "exhausted": "stop": code's second pass would begin in step 11
config "$T/c.json" "$T/c" stop
build/train "$T/c.json" >"$T/c.log" 2>&1 || bad "the stopping run failed"
if grep -q "data.train source 'code' is used up (300 tokens, read once by step 10) and has \"exhausted\": \"stop\"" "$T/c.log" \
   && [ "$(head -n 1 "$T/c/latest")" = step_0000010 ]; then ok "exhausted stop: the run ends after step 10 with a checkpoint"
else bad "exhausted stop did not end the run at step 10"; tail -4 "$T/c.log"; fi

# before step 1: 64 rows a step, 16 of them from code's 9 windows
build/train "$T/c.json" --set train.batch_size=64 --set run.out_dir="$T/c0" >"$T/c0.log" 2>&1 || bad "the run stopping at once failed"
if grep -q "ending the run before step 1" "$T/c0.log" && grep -q "done: no step ran (the run stays at step 0 of 12)" "$T/c0.log" &&
   ! grep -q "loss 0.0000 -> 0.0000" "$T/c0.log"; then ok "exhausted stop before step 1: $(grep '^done' "$T/c0.log")"
else bad "exhausted stop before step 1"; tail -3 "$T/c0.log"; fi

# 5. bad sources, named in the error
expect_err() { expect_refused "$1" "$3" "$T/a.json" --set "data.train=$2" --set run.out_dir="$T/err"; }
expect_err "weight 0" '[{"name": "w", "files": ["x"], "weight": 0}]' "data.train[0].weight: expected a finite number > 0"
expect_err "no files" '[{"name": "w", "files": [], "weight": 1}]' "data.train[0].files: source 'w' has no files"
expect_err "name twice" '[{"name": "w", "files": ["x"]}, {"name": "w", "files": ["y"]}]' "data.train[1].name: source name 'w' given twice"
expect_err "missing file" "[{\"name\": \"w\", \"files\": [\"$T/none.u16\"]}]" "cannot open token file '$T/none.u16': No such file"
[ -e "$T/err" ] && bad "a failed run created its out_dir" || ok "no failed run created its out_dir"
echo "test_mixture: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
