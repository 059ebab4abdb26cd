#!/usr/bin/env bash
# Exact resume, on a tiny model over token files:
#  1. a run of 2N steps, and the same run stopped by SIGINT (it finishes the
#     step, saves, exits 0) then resumed, give bit-identical losses in
#     metrics.jsonl and bit-identical final weights and AdamW moments;
#  2. the same when the run is killed with SIGKILL after its step-N checkpoint;
#  both for sequential and shuffled data, with grad_accum 1 and 2;
#  3. the same (SIGINT + resume) with model.positions.repo_pdrop annealing, which is logged while p > 0,
#     and with train.compute_dtype "bf16" (BF16 products; skipped where the build or CPU has none);
#  4. SIGKILL at random moments while checkpoints are being written (every
#     step), 20 times: each next start resumes from a complete checkpoint.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" resume

build/tools/gen_tokens "$T/train.u16" 100000 64 1 || exit 1

config() {  # file out_dir order grad_accum steps save_every [repo_pdrop JSON]
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "seed": 3, "threads": 2, "resume": "auto"},
 "model": {"vocab_size": 64, "d_model": 64, "n_layers": 3, "n_heads": 4, "n_kv_heads": 2, "d_ff": 128,
           "positions": {"mode": "repo", "repo_start_layer": 1, "repo_pdrop": ${7:-null}}},
 "data": {"train": ["$T/train.u16"], "val": ["$T/train.u16"], "seq_len": 64, "order": "$3"},
 "optim": {"lr": 3e-3, "warmup_steps": 3, "z_loss": 1e-4},
 "train": {"batch_size": 2, "grad_accum": $4, "steps": $5, "log_every": 1, "eval_every": 10, "eval_batches": 2,
           "save_every": $6, "keep_last": 2}}
JSON
}
losses() { grep -o '"step": [0-9]*, "\(val_\)\?loss": [^,]*' "$1/metrics.jsonl"; }   # train and validation
final_ckpt() { echo "$1/$(head -n 1 "$1/latest")"; }
same_run() {  # label dir_a dir_b
    local a b
    a=$(final_ckpt "$2"); b=$(final_ckpt "$3")
    if [ "$(losses "$2")" = "$(losses "$3")" ] && [ -n "$(losses "$2")" ]; then ok "$1: metrics.jsonl train and validation losses bit-identical ($(losses "$2" | wc -l) lines)"
    else bad "$1: metrics.jsonl losses differ"; diff <(losses "$2") <(losses "$3") | head -5; fi
    if cmp -s "$a/model.safetensors" "$b/model.safetensors" && cmp -s "$a/optimizer.safetensors" "$b/optimizer.safetensors"
    then ok "$1: final weights and AdamW moments bit-identical ($(basename "$a"))"
    else bad "$1: final weights differ ($a vs $b)"; fi
}

STEPS=600   # long enough that the signals below always land before the run ends: 120 steps of this model took
            # 0.13 s with oneDNN's FP32 products on an AMD EPYC (Zen 5), less than wait_for's 0.1 s poll and a start
for order in sequential shuffle; do
    for accum in 1 2; do
        label="$order, grad_accum $accum"
        echo "$label"
        config "$T/ref.json" "$T/ref_${order}_$accum" "$order" "$accum" $STEPS 20
        build/train "$T/ref.json" >"$T/ref.log" 2>&1 || { bad "$label: reference run failed"; cat "$T/ref.log"; continue; }

        # SIGINT as soon as the first step is logged, then resume
        d="$T/int_${order}_$accum"
        config "$T/int.json" "$d" "$order" "$accum" $STEPS 0
        build/train "$T/int.json" >"$T/int.log" 2>&1 &
        pid=$!
        wait_for "[ -s '$d/metrics.jsonl' ]"
        kill -INT $pid 2>/dev/null
        wait $pid
        rc=$?
        stopped=$(head -n 1 "$d/latest" 2>/dev/null)
        if [ $rc -eq 0 ] && [ -n "$stopped" ] && [ "$stopped" != "step_$(printf %07d $STEPS)" ]; then
            ok "$label: SIGINT: exit 0 with a checkpoint at $stopped"
        else bad "$label: SIGINT: exit $rc, checkpoint '$stopped' (expected one before step $STEPS)"; fi
        build/train "$T/int.json" >>"$T/int.log" 2>&1 || bad "$label: resume after SIGINT failed"
        same_run "$label, SIGINT + resume" "$T/ref_${order}_$accum" "$d"

        # SIGKILL once a checkpoint exists (step 20 or a later one), then resume
        d="$T/kill_${order}_$accum"
        config "$T/kill.json" "$d" "$order" "$accum" $STEPS 20
        build/train "$T/kill.json" >"$T/kill.log" 2>&1 &
        pid=$!
        wait_for "[ -f '$d/latest' ]"
        kill -KILL $pid 2>/dev/null
        wait $pid 2>/dev/null
        build/train "$T/kill.json" >>"$T/kill.log" 2>&1 || bad "$label: resume after SIGKILL failed"
        from=$(grep -o "resumed from .*step_[0-9]*" "$T/kill.log" | grep -o "step_[0-9]*$")
        if [ -n "$from" ] && [ "$((10#${from#step_}))" -lt $STEPS ]; then ok "$label: SIGKILL after the $from checkpoint: resumed from it"
        else bad "$label: the SIGKILL run did not resume from a checkpoint before step $STEPS ('$from')"; fi
        same_run "$label, SIGKILL + resume" "$T/ref_${order}_$accum" "$d"
    done
done

echo "repo_pdrop {init 0.8, anneal_steps 60}: SIGINT + resume"
pd='{"init": 0.8, "anneal_steps": 60}'
config "$T/pd_ref.json" "$T/pd_ref" sequential 1 $STEPS 0 "$pd"
if build/train "$T/pd_ref.json" >"$T/pd_ref.log" 2>&1; then
    m="$T/pd_ref/metrics.jsonl"
    if grep -q '"step": 1,.*"repo_pdrop": 0.8000' "$m" && grep -q '"step": 60,.*"repo_pdrop": 0.0133' "$m" &&
        ! grep '"step": 6[1-9],\|"step": [7-9][0-9],\|"step": 1[0-9][0-9],' "$m" | grep -q repo_pdrop
    then ok "repo_pdrop: 0.8 on step 1, 0.8/60 on step 60, not logged after"
    [ "$(losses "$T/pd_ref" | head -n 2)" != "$(losses "$T/ref_sequential_1" | head -n 2)" ] &&
        ok "repo_pdrop: the losses differ from the same run without it" || bad "repo_pdrop: no effect on the losses"
    else bad "repo_pdrop: not logged as p0 max(0, 1 - step/n)"; grep -o '"step": [0-9]*,\|"repo_pdrop": [^,}]*' "$m" | head -6; fi
    d="$T/pd_int"
    config "$T/pd_int.json" "$d" sequential 1 $STEPS 0 "$pd"
    build/train "$T/pd_int.json" >"$T/pd_int.log" 2>&1 &
    pid=$!
    wait_for "[ -s '$d/metrics.jsonl' ]"
    kill -INT $pid 2>/dev/null
    wait $pid
    stopped=$(head -n 1 "$d/latest" 2>/dev/null)
    echo "  stopped at $stopped"
    build/train "$T/pd_int.json" >>"$T/pd_int.log" 2>&1 || bad "repo_pdrop: resume after SIGINT failed"
    same_run "repo_pdrop, SIGINT + resume" "$T/pd_ref" "$d"
else bad "repo_pdrop: reference run failed"; tail -5 "$T/pd_ref.log"; fi

echo "train.compute_dtype bf16: SIGINT + resume"
if build/bench/bench_step --cpu | grep -q "^bf16 products: unavailable"; then
    echo "SKIP: $(build/bench/bench_step --cpu | grep '^bf16 products')"
else
    config "$T/bf_ref.json" "$T/bf_ref" shuffle 2 $STEPS 0
    if build/train "$T/bf_ref.json" --set train.compute_dtype=bf16 >"$T/bf_ref.log" 2>&1; then
        grep -q "BF16 products (oneDNN" "$T/bf_ref.log" && ok "bf16: the start-up lines name the BF16 engine" ||
            bad "bf16: no BF16 products line at start"
        [ "$(losses "$T/bf_ref" | tail -n 3)" != "$(losses "$T/ref_shuffle_2" | tail -n 3)" ] &&
            ok "bf16: the losses differ from the f32 run's (BF16 operands are in use)" || bad "bf16: same losses as f32"
        d="$T/bf_int"
        config "$T/bf_int.json" "$d" shuffle 2 $STEPS 0
        build/train "$T/bf_int.json" --set train.compute_dtype=bf16 >"$T/bf_int.log" 2>&1 &
        pid=$!
        wait_for "[ -s '$d/metrics.jsonl' ]"
        kill -INT $pid 2>/dev/null
        wait $pid
        echo "  stopped at $(head -n 1 "$d/latest" 2>/dev/null)"
        build/train "$T/bf_int.json" --set train.compute_dtype=bf16 >>"$T/bf_int.log" 2>&1 || bad "bf16: resume failed"
        same_run "bf16, shuffle, grad_accum 2, SIGINT + resume" "$T/bf_ref" "$d"
    else bad "bf16: reference run failed"; tail -5 "$T/bf_ref.log"; fi
fi

echo "SIGKILL at random moments while checkpoints are written (every step)"
d="$T/chaos"
config "$T/chaos.json" "$d" shuffle 1 100000 1
good=0
for trial in $(seq 20); do
    build/train "$T/chaos.json" >"$T/chaos.log" 2>&1 &
    pid=$!
    sleep "0.$(printf %03d $((RANDOM % 400 + 150)))"
    kill -KILL $pid 2>/dev/null
    wait $pid 2>/dev/null
    if [ -f "$d/latest" ]; then
        last=$(head -n 1 "$d/latest")
        n=$((10#${last#step_}))
        # the next start must resume from a complete checkpoint and take one more step
        if build/train "$T/chaos.json" --set train.steps=$((n + 1)) --set optim.warmup_steps=0 >"$T/chaos2.log" 2>&1 &&
            grep -q "resumed from $d/step_" "$T/chaos2.log"; then good=$((good + 1))
        else bad "trial $trial: could not resume after SIGKILL (latest = $last)"; tail -3 "$T/chaos2.log"; fi
    else
        good=$((good + 1))   # killed before the first checkpoint: the next start begins afresh
    fi
done
[ $good -eq 20 ] && ok "20 of 20 random SIGKILLs: the next start resumed from a complete checkpoint"
left=$(ls -d "$d"/*.tmp.* 2>/dev/null | wc -l)
[ "$left" -eq 0 ] && ok "no temporary files left after the last clean start" || bad "$left temporary files left in $d"

echo "test_resume: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
