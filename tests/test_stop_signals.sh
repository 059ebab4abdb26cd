#!/usr/bin/env bash
# A signal during a long evaluation stops build/train between eval batches (or
# inside one long train.eval_tasks item, within a row of its cache attention):
# no further step, a checkpoint of the step reached, exit 0, and no "final
# validation loss" unless it was measured on the saved weights. SIGHUP (a
# closed terminal) is handled like SIGTERM.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" stop_signals

build/tools/gen_tokens "$T/train.u16" 50000 64 1 || exit 1
config() {  # out_dir eval_batches
    cat >"$T/cfg.json" <<JSON
{"run": {"out_dir": "$1", "seed": 3, "threads": 1},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64},
 "data": {"train": ["$T/train.u16"], "val": ["$T/train.u16"], "seq_len": 32},
 "optim": {"warmup_steps": 0},
 "train": {"batch_size": 2, "steps": 1000, "log_every": 1, "eval_every": 2, "eval_batches": $2, "save_every": 0}}
JSON
}
last_step() { grep -o '"step": [0-9]*, "loss"' "$1/metrics.jsonl" | tail -1 | grep -o '[0-9]*'; }

for sig in TERM HUP INT; do
    d="$T/run_$sig"
    config "$d" 100000   # an evaluation of minutes: only a prompt stop ends the run in time
    build/train "$T/cfg.json" --set train.eval_every=0 --set train.steps=2 >/dev/null 2>&1 || bad "setup run failed"
    # resume at step 2: the first thing it does is the step-2 evaluation (100000 batches)
    signal_train $sig 0.5 "$T/log" "$d" "$T/cfg.json"   # 0.5 s: inside the evaluation
    if [ $rc -eq 0 ] && [ "$(last_step "$d")" = 2 ] && grep -q "stopped by signal" "$T/log" &&
        ! grep -q '"val_loss"' "$d/metrics.jsonl" && ! grep -q "final validation loss" "$T/log" && [ $ms -lt 20000 ]
    then ok "SIG$sig during an evaluation: exit 0 after $ms ms, no further step, no stale final loss"
    else bad "SIG$sig during an evaluation: exit $rc after $ms ms, last step $(last_step "$d"), $(tail -2 "$T/log")"; fi
done

# a signal inside one long eval task (one item of 40000 tokens: a prefill of tens of seconds, a chunk
# of 1024 tokens of several) stops it within a row of the cache attention, as between eval batches
d="$T/run_task"
config "$d" 1
tasks='train.eval_tasks={"families": ["single"], "lengths": [40000], "items": 1}'
build/train "$T/cfg.json" --set train.eval_every=0 --set train.steps=2 >/dev/null 2>&1 || bad "setup run failed"
signal_train TERM 1 "$T/log" "$d" "$T/cfg.json" --set "$tasks"   # 1 s: inside the task's prefill
if [ $rc -eq 0 ] && [ "$(last_step "$d")" = 2 ] && grep -q "stopped by signal 15" "$T/log" &&
    ! grep -q '"val_loss"' "$d/metrics.jsonl" && [ $ms -lt 3000 ]
then ok "SIGTERM inside a 40000-token eval task: exit 0 after $ms ms, no further step, nothing logged"
else bad "SIGTERM inside an eval task: exit $rc after $ms ms, last step $(last_step "$d"), $(tail -2 "$T/log")"; fi

echo "the final validation loss is the one of the saved weights"
d="$T/stop_after_eval"
config "$d" 1
build/train "$T/cfg.json" >"$T/log" 2>&1 &   # evals every 2 steps, stopped at step 3 or later
p=$!
wait_for "[ \"\$(last_step '$d' 2>/dev/null)\" -ge 3 ] 2>/dev/null"
kill -TERM $p; wait $p
s=$(last_step "$d")
if [ -n "$s" ] && [ "$s" -ge 3 ] && ! grep -q "final validation loss" "$T/log"
then ok "stopped at step $s, after an evaluation of an earlier step: that stale loss is not reported as final"
else bad "stopped at step $s: $(grep "final validation loss" "$T/log") (last evaluation: $(grep -o '"step": [0-9]*, "val_loss"' "$d/metrics.jsonl" | tail -1))"; fi
d="$T/stale"
config "$d" 2
build/train "$T/cfg.json" --set train.steps=3 >"$T/log" 2>&1   # evals at steps 0 and 2, ends at 3
final=$(grep -o "final validation loss [0-9.]*" "$T/log")
last_val=$(grep '"val_loss"' "$d/metrics.jsonl" | tail -1)
# steps 0, 2 (in the loop) and 3 (the end-of-run one on the saved weights)
if [ -n "$final" ] && echo "$last_val" | grep -q '"step": 3,'; then ok "ends with an evaluation at step 3: $final"
else bad "end-of-run evaluation: '$final', last val line '$last_val'"; fi

echo "test_stop_signals: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
