#!/usr/bin/env bash
# train.eval_tasks: synthetic retrieval scored at every evaluation with the
# model as it is then (eval_task, build/eval's code):
#  1. every evaluation line of metrics.jsonl has "retrieval" and
#     "retrieval_tokens" with one entry per family and length;
#  2. the final evaluation's numbers equal build/eval's on the final checkpoint
#     (same families, lengths, items and seed);
#  3. an unknown family, a bad key, a length too short are errors naming the key,
#     before the run writes anything.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" train_tasks

cat >"$T/c.json" <<JSON
{"run": {"out_dir": "$T/r", "seed": 3, "threads": 2},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 2, "d_ff": 64, "positions": {"mode": "repo"}},
 "data": {"synthetic": {"weights": {"single": 1, "distractor": 1}}, "seq_len": 48},
 "optim": {"lr": 1e-2, "warmup_steps": 2},
 "train": {"batch_size": 8, "steps": 30, "log_every": 10, "eval_every": 15, "eval_batches": 2,
           "eval_tasks": {"families": ["single", "distractor"], "lengths": [32, 48], "items": 40, "seed": 5}}}
JSON
if build/train "$T/c.json" >"$T/log" 2>&1; then ok "a 30-step synthetic run with train.eval_tasks"
else bad "the run failed"; tail -5 "$T/log"; fi
grep -q "retrieval single@32 .*distractor@48" "$T/log" && ok "the evaluation line shows each task's accuracy" \
    || bad "no retrieval numbers in the log"

build/eval "$T/r" --tasks single,distractor --lengths 32,48 --items 40 --seed 5 --json "$T/e.json" >"$T/e.log" 2>&1 \
    || { bad "build/eval failed"; tail -3 "$T/e.log"; }
python3 - "$T/r/metrics.jsonl" "$T/e.json" <<'PY' && ok "3 evaluations x 4 tasks; the step-30 accuracies equal build/eval's on the final checkpoint" || bad "retrieval numbers"
import json, sys
evals = [json.loads(l) for l in open(sys.argv[1]) if "val_loss" in l]
keys = {"single@32", "single@48", "distractor@32", "distractor@48"}
assert [e["step"] for e in evals] == [0, 15, 30], evals
for e in evals:
    assert set(e["retrieval"]) == keys and set(e["retrieval_tokens"]) == keys, e
    assert all(0 <= v <= 1 for v in list(e["retrieval"].values()) + list(e["retrieval_tokens"].values())), e
ev = json.load(open(sys.argv[2]))
for t in ev["tasks"]:
    k = "%s@%d" % (t["family"], t["length"])
    print("    %-14s train %.4f / %.4f   eval %.4f / %.4f" % (k, evals[-1]["retrieval"][k], evals[-1]["retrieval_tokens"][k],
                                                         t["accuracy"], t["token_accuracy"]))
    assert evals[-1]["retrieval"][k] == t["accuracy"] and abs(evals[-1]["retrieval_tokens"][k] - t["token_accuracy"]) < 1e-12, (k, t)
PY

expect_err() { expect_refused "$1" "$3" "$T/c.json" --set "$2" --set run.out_dir="$T/err"; }
expect_err "unknown family" 'train.eval_tasks.families=["single","needle"]' "train.eval_tasks.families: unknown family 'needle'"
expect_err "unknown key" 'train.eval_tasks.lenghts=[32]' "train.eval_tasks.lenghts: unknown key"
expect_err "too short" 'train.eval_tasks.lengths=[8]' "length 8 is too short for family 'single'"
expect_err "eval off" 'train.eval_every=0' "train.eval_tasks: given, but train.eval_every is 0"
[ -e "$T/err" ] && bad "a refused run created its out_dir" || ok "no refused run created its out_dir"
echo "test_train_tasks: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
