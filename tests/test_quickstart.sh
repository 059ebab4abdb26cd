#!/usr/bin/env bash
# tools/quickstart.sh (make quickstart) works every time it runs in the same
# checkout: the second run starts over in the same output directory, says so,
# and ends with its summary. A few steps of each stage, in a scratch directory.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" quickstart

export QUICKSTART_OUT="$T/qs"
export QUICKSTART_SET="train.steps=4 train.log_every=1 train.eval_every=2 train.eval_batches=1 optim.warmup_steps=1 run.threads=1"
for run in 1 2; do
    if tools/quickstart.sh >"$T/log$run" 2>&1; then ok "run $run exits 0"
    else bad "run $run failed: $(tail -n 3 "$T/log$run")"; fi
    if grep -q "== quickstart summary" "$T/log$run" &&
        grep -q "checkpoint $T/qs/repo/step_0000004" "$T/log$run"; then ok "run $run ends with the summary"
    else bad "run $run has no summary: $(tail -n 3 "$T/log$run")"; fi
done
line="quickstart: starting over in $T/qs (the previous run's checkpoints are replaced)"
if ! grep -qF "$line" "$T/log1" && grep -qF "$line" "$T/log2"; then ok "the second run says it starts over"
else bad "the start-over line: run 1 $(grep -c 'starting over' "$T/log1"), run 2 $(grep -c 'starting over' "$T/log2")"; fi
steps=$(grep -c '"loss"' "$T/qs/rope/metrics.jsonl")
if [ "$steps" = 4 ]; then ok "stage 1's metrics.jsonl holds the second run's 4 steps only"
else bad "stage 1's metrics.jsonl holds $steps step lines"; fi
exit $((failures > 0))
