#!/usr/bin/env bash
# Data-parallel training under MPI: build/mpi/train (make MPI=1)
# with 2 ranks on a tiny model (vocab 64, d 64, 2 layers, RePo in layer 1).
#  1. 5 steps with 2 ranks x grad_accum 1 equal 5 steps with 1 rank x
#     grad_accum 2 (the same global batch): losses within 1e-6 relative, every
#     tensor's weight update and AdamW moments within 1e-5 relative L2 error;
#     with and without train.shard_optimizer, sequential and shuffled data,
#     and sharded with frozen tensors; with train.compute_dtype "bf16" (BF16 products) too, LoRA on a BF16
#     base included (skipped where the build or CPU has no BF16 products). eps = 1 is far above every |g|, so an
#     update is proportional to its gradient and rounding is not amplified.
#     train.grad_wire_dtype bf16 (BF16 on the wire, FP32 sums) within a tolerance derived below from bf16's
#     rounding; its bytes per step (measured) half of f32's; its resume exact.
#  2. A run saved by 2 ranks and resumed by 1, and the reverse, equals the
#     uninterrupted 1-rank run within the same tolerances; the same for 3
#     ranks against 1, and saved by 2 ranks, resumed by 3.
#  3. SIGKILL to rank 1 stops the whole job with mpirun's message naming the
#     signal; the last checkpoint is complete and 2 ranks resume from it.
#  4. SIGINT to one rank: both stop after the same step, save, exit 0; the
#     same for SIGUSR1 to mpirun, which forwards it to every rank.
#  5. A fatal error on every rank (divergence), or on rank 1 alone (a missing
#     file, a config error), stops the job with the message.
#  6. One run per out_dir: rank 0 alone holds the lock (every job above ran
#     2 or 3 ranks on one out_dir); a 2-rank job on an out_dir that a 1-rank
#     run holds exits 1 naming the holder's pid.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" mpi
export OMP_NUM_THREADS=1
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np 2"
TOL=1e-5

build/tools/gen_tokens "$T/train.u16" 100000 64 1 || exit 1

config() {  # file out_dir order grad_accum steps save_every shard [more JSON for "optim"]; batch_size $BATCH or 2,
            # more JSON for "model" in $MODEL
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "seed": 3, "threads": 1},
 "model": {"init_from": "$T/init/step_0000001" ${MODEL:-}},
 "data": {"train": ["$T/train.u16"], "seq_len": 32, "order": "$3"},
 "optim": {"lr": 1e-2, "schedule": "constant", "warmup_steps": 0, "eps": 1.0, "weight_decay": 0.1,
           "grad_clip": 1.0, "z_loss": 1e-4 ${8:-}},
 "train": {"batch_size": ${BATCH:-2}, "grad_accum": $4, "steps": $5, "log_every": 1, "eval_every": 0,
           "save_every": $6, "keep_last": 2, "shard_optimizer": $7}}
JSON
}
run1() { build/mpi/train "$@" >>"$T/log" 2>&1; }        # one rank
run2() { $MPIRUN build/mpi/train "$@" >>"$T/log" 2>&1; } # two ranks
run3() { mpirun --allow-run-as-root --oversubscribe -np 3 build/mpi/train "$@" >>"$T/log" 2>&1; }
final_ckpt() { echo "$1/$(head -n 1 "$1/latest")"; }
losses() { grep -o '"step": [0-9]*, "loss": [^,]*' "$1/metrics.jsonl" | sed 's/.*"loss": //'; }
same_run() {  # label dir dir_ref: losses within 1e-6 relative (+ EPS_LOSS x |L_t - L_1|), updates within TOL,
              # moments within TOL_MOMENTS (or TOL)
    local worst
    worst=$(paste <(losses "$2") <(losses "$3") | awk -v n="$(losses "$3" | wc -l)" -v e="${EPS_LOSS:-0}" '
        c == 0 { first = $2 }
        { d = $1 - $2; if (d < 0) d = -d; m = $2 - first; if (m < 0) m = -m
          r = d / (1e-6 * $2 + e * m); if (r > w) w = r; c++ }
        END { if (c != n || c == 0) print "lines"; else printf "%.2e", w }')
    if [ "$worst" != lines ] && awk -v w="$worst" 'BEGIN { exit !(w <= 1) }'
    then ok "$1: $(losses "$3" | wc -l) losses, worst difference $worst of its tolerance (1e-6 relative${EPS_LOSS:+ + $EPS_LOSS x |L_t - L_1|})"
    else bad "$1: losses differ (worst $worst of the tolerance)"; paste <(losses "$2") <(losses "$3") | head -6; fi
    if build/tools/ckpt_compare "$T/init/step_0000001" "$(final_ckpt "$2")" "$(final_ckpt "$3")" $TOL ${TOL_MOMENTS:-} \
        >"$T/cmp" 2>&1
    then ok "$1: $(grep -o 'model.safetensors.*' "$T/cmp" | head -1)"; ok "$1: $(grep -o 'optimizer.safetensors.*' "$T/cmp")"
    else bad "$1: checkpoints differ"; sed 's/^/          /' "$T/cmp" | head -8; fi
}

# the common starting point: a fresh model after one step of lr 1e-30 (bit-identical to the initialisation)
cat >"$T/init.json" <<JSON
{"run": {"out_dir": "$T/init", "seed": 3, "threads": 1},
 "model": {"vocab_size": 64, "d_model": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "d_ff": 128,
           "positions": {"mode": "repo", "repo_start_layer": 1}},
 "data": {"train": ["$T/train.u16"], "seq_len": 32},
 "optim": {"lr": 1e-30, "warmup_steps": 0},
 "train": {"batch_size": 2, "steps": 1, "eval_every": 0}}
JSON
run1 "$T/init.json" || { bad "the initial checkpoint failed"; tail -20 "$T/log"; exit 1; }

echo "2 ranks x grad_accum 1 against 1 rank x grad_accum 2, 5 steps"
for order in sequential shuffle; do
    config "$T/c.json" "$T/ref_$order" $order 2 5 0 true
    run1 "$T/c.json" || bad "$order: the 1-rank run failed"
    for shard in true false; do
        config "$T/c.json" "$T/two_${order}_$shard" $order 1 5 0 $shard
        run2 "$T/c.json" || bad "$order, shard_optimizer $shard: the 2-rank run failed"
        same_run "$order, shard_optimizer $shard" "$T/two_${order}_$shard" "$T/ref_$order"
    done
done
frozen=', "freeze": ["model.layers.0.mlp.*", "model.norm.weight"]'
config "$T/c.json" "$T/ref_frozen" shuffle 2 5 0 true "$frozen"
run1 "$T/c.json" || bad "frozen: the 1-rank run failed"
config "$T/c.json" "$T/two_frozen" shuffle 1 5 0 true "$frozen"
run2 "$T/c.json" || bad "frozen: the 2-rank run failed"
same_run "shuffle, sharded, 4 tensors frozen" "$T/two_frozen" "$T/ref_frozen"
lora=', "base_dtype": "bf16", "lora": {"rank": 4, "alpha": 8}'
MODEL=$lora config "$T/c.json" "$T/ref_lora" shuffle 2 5 0 true
run1 "$T/c.json" || bad "lora: the 1-rank run failed"
MODEL=$lora config "$T/c.json" "$T/two_lora" shuffle 1 5 0 true
run2 "$T/c.json" || bad "lora: the 2-rank run failed"
same_run "shuffle, sharded, LoRA on a BF16 base (RePo trained fully)" "$T/two_lora" "$T/ref_lora"

echo "train.compute_dtype bf16: 2 ranks x grad_accum 1 against 1 rank x grad_accum 2"
if build/bench/bench_step --cpu | grep -q "^bf16 products: unavailable"; then
    echo "SKIP: $(build/bench/bench_step --cpu | grep '^bf16 products')"
else
    for shard in true false; do
        config "$T/c.json" "$T/ref_bfc" shuffle 2 5 0 true
        run1 "$T/c.json" --set train.compute_dtype=bf16 || bad "bf16 products: the 1-rank run failed"
        config "$T/c.json" "$T/two_bfc_$shard" shuffle 1 5 0 $shard
        run2 "$T/c.json" --set train.compute_dtype=bf16 || bad "bf16 products: the 2-rank run failed"
        same_run "bf16 products, shuffle, shard_optimizer $shard" "$T/two_bfc_$shard" "$T/ref_bfc"
        rm -rf "$T/ref_bfc"
    done
    MODEL=$lora config "$T/c.json" "$T/ref_lora_bfc" shuffle 2 5 0 true
    run1 "$T/c.json" --set train.compute_dtype=bf16 || bad "bf16 products, lora: the 1-rank run failed"
    MODEL=$lora config "$T/c.json" "$T/two_lora_bfc" shuffle 1 5 0 true
    run2 "$T/c.json" --set train.compute_dtype=bf16 || bad "bf16 products, lora: the 2-rank run failed"
    same_run "bf16 products, LoRA on a BF16 base, sharded" "$T/two_lora_bfc" "$T/ref_lora_bfc"
fi

echo "train.grad_wire_dtype bf16: 2 ranks x grad_accum 1 against 1 rank x grad_accum 2 (f32 sums)"
# The tolerance, derived (docs/mpi.md, "BF16 on the wire"): rounding to nearest even bf16 errs by at most
# u = 2^-9 of the value rounded. Rank 0's chunk sums to R(a + R(b)) (rank 1's half b rounded when sent, the
# total when it is gathered), so |error| <= u|b| + u|a + R(b)| <= u|g| + u(1+u)|b| with g = a + b; per tensor,
# with neither half larger than the whole (|b| <= |g|), the gradient errs by eps = u(2+u) relative. With
# eps = 1 the update is linear in the gradients, clipping scales them by 1/|g| (also within eps), so the
# updates are within eps, the first moments too and the second (squares) within 2 eps + eps^2; the 1e-5 of
# the f32 comparison above is added for the order of the sums. A loss moves by at most eps of how far the
# weights moved it: eps x |L_t - L_1|.
eps=$(awk 'BEGIN { u = 2 ^ -9; printf "%.6e", u * (2 + u) }')
wire_tol=$(awk -v e="$eps" -v t=$TOL 'BEGIN { printf "%.6e", e + t }')
wire_tol_m=$(awk -v e="$eps" -v t=$TOL 'BEGIN { printf "%.6e", 2 * e + e * e + t }')
for shard in true false; do
    config "$T/c.json" "$T/wire_$shard" shuffle 1 5 0 $shard
    run2 "$T/c.json" --set train.grad_wire_dtype=bf16 || bad "bf16 wire, shard_optimizer $shard: the 2-rank run failed"
    TOL=$wire_tol TOL_MOMENTS=$wire_tol_m EPS_LOSS=$eps \
        same_run "bf16 wire, shard_optimizer $shard" "$T/wire_$shard" "$T/ref_shuffle"
done
MODEL=$lora config "$T/c.json" "$T/wire_lora" shuffle 1 5 0 true
run2 "$T/c.json" --set train.grad_wire_dtype=bf16 || bad "bf16 wire, lora: the 2-rank run failed"
TOL=$wire_tol TOL_MOMENTS=$wire_tol_m EPS_LOSS=$eps same_run "bf16 wire, LoRA on a BF16 base, sharded" "$T/wire_lora" "$T/ref_lora"
wire() { grep -o '"wire_bytes": [0-9]*' "$1/metrics.jsonl" | head -1 | sed 's/.*: //'; }
config "$T/c.json" "$T/f32_rep" shuffle 1 5 0 false
run2 "$T/c.json" || bad "f32 wire, replicated: the 2-rank run failed"
# replicated, a step sends the gradient ring and the two sums of the loss (8 bytes each): 2 bf16 - f32 = 16
f=$(wire "$T/f32_rep"); h=$(wire "$T/wire_false")
if [ -n "$f" ] && [ -n "$h" ] && [ $((2 * h - f)) -eq 16 ]
then ok "bytes sent per step and rank (measured): f32 $f, bf16 $h: the gradients' bytes halved (+16 for the loss sums)"
else bad "bytes sent per step: f32 '$f', bf16 '$h'"; fi
config "$T/c.json" "$T/wire_resumed" shuffle 1 3 0 true
run2 "$T/c.json" --set train.grad_wire_dtype=bf16 && run2 "$T/c.json" --set train.grad_wire_dtype=bf16 --set train.steps=5 ||
    bad "bf16 wire: the resumed 2-rank run failed"
a=$(final_ckpt "$T/wire_true"); c=$(final_ckpt "$T/wire_resumed")
if cmp -s "$a/model.safetensors" "$c/model.safetensors" && cmp -s "$a/optimizer.safetensors" "$c/optimizer.safetensors"
then ok "bf16 wire, sharded: 3 steps + resume 2 == 5 steps, bit for bit"
else bad "bf16 wire, sharded: the resumed run differs"; fi

echo "train.overlap_grad_reduce: each layer's gradients summed while the layers below run their backward (the"
echo "default, every 2-rank run above) against the whole arena after the backward: 2 ranks in f32 give the same bits"
grep -q "gradient sum: each layer's during the backward" "$T/log" && ok "the runs above overlapped (their log says so)" ||
    bad "no run above says it overlapped the gradient sum"
for shard in true false; do
    config "$T/c.json" "$T/serial_$shard" shuffle 1 5 0 $shard
    run2 "$T/c.json" --set train.overlap_grad_reduce=false || bad "no overlap, shard_optimizer $shard: the run failed"
    a=$(final_ckpt "$T/two_shuffle_$shard"); b=$(final_ckpt "$T/serial_$shard")
    if cmp -s "$a/model.safetensors" "$b/model.safetensors" && cmp -s "$a/optimizer.safetensors" "$b/optimizer.safetensors"
    then ok "shard_optimizer $shard: overlapped and not, 5 steps: the same weights and moments, bit for bit"
    else bad "shard_optimizer $shard: overlapped and not differ"; fi
done
for ov in true false; do # grad_accum 2: only the last micro-batch's backward posts its layers
    BATCH=1 config "$T/c.json" "$T/accum_$ov" shuffle 2 5 0 true
    run2 "$T/c.json" --set train.overlap_grad_reduce=$ov || bad "grad_accum 2, overlap $ov: the run failed"
done
a=$(final_ckpt "$T/accum_true"); b=$(final_ckpt "$T/accum_false")
if cmp -s "$a/model.safetensors" "$b/model.safetensors" && cmp -s "$a/optimizer.safetensors" "$b/optimizer.safetensors"
then ok "grad_accum 2: overlapped and not, the same bits"; else bad "grad_accum 2: overlapped and not differ"; fi
BATCH=1 same_run "2 ranks x batch 1 x grad_accum 2, overlapped, against 1 rank x batch 2 x grad_accum 2" \
    "$T/accum_true" "$T/ref_shuffle"

echo "bf16 AdamW state with recompute on 2 ranks: sharded == replicated, and exact resume of the sharded state"
bf16=', "state_dtype": "bf16"'
for shard in true false; do
    config "$T/c.json" "$T/bf16_$shard" shuffle 1 5 0 $shard "$bf16"
    run2 "$T/c.json" --set train.recompute=true || bad "bf16, shard_optimizer $shard: the 2-rank run failed"
done
config "$T/c.json" "$T/bf16_resumed" shuffle 1 3 0 true "$bf16"
run2 "$T/c.json" --set train.recompute=true && run2 "$T/c.json" --set train.recompute=true --set train.steps=5 ||
    bad "bf16: the resumed 2-rank run failed"
a=$(final_ckpt "$T/bf16_true"); b=$(final_ckpt "$T/bf16_false"); c=$(final_ckpt "$T/bf16_resumed")
if cmp -s "$a/model.safetensors" "$b/model.safetensors" && cmp -s "$a/optimizer.safetensors" "$b/optimizer.safetensors"
then ok "bf16 state: sharded and replicated give bit-identical weights and moments"
else bad "bf16 state: sharded and replicated differ"; fi
if cmp -s "$a/model.safetensors" "$c/model.safetensors" && cmp -s "$a/optimizer.safetensors" "$c/optimizer.safetensors"
then ok "bf16 state, sharded: 3 steps + resume 2 == 5 steps, bit for bit (the moments gathered from both ranks)"
else bad "bf16 state, sharded: the resumed run differs"; fi

echo "save with one world size, resume with the other (shuffle, sharded)"
run_ranks() {  # ranks out_dir steps: shuffle, sharded, a global batch of 4 rows
    config "$T/c.json" "$2" shuffle $((2 / $1)) "$3" 0 true
    if [ "$1" = 1 ]; then run1 "$T/c.json"; else run2 "$T/c.json"; fi
}
for pair in "2 1" "1 2"; do
    set -- $pair
    d="$T/resume_$1_$2"
    run_ranks "$1" "$d" 3 || bad "$1 -> $2 ranks: the first part failed"
    run_ranks "$2" "$d" 5 || bad "$1 -> $2 ranks: the second part failed"
    grep -q "resumed from $d/step_0000003" "$T/log" && ok "$1 -> $2 ranks: resumed from step 3" || bad "$1 -> $2: no resume"
    same_run "saved by $1 rank(s) at step 3, resumed by $2" "$d" "$T/ref_shuffle"
done

echo "3 ranks: a global batch of 6 rows (1 x 2 x 3, 2 x 3 x 1, 3 x 2 x 1); the slices cut through tensors"
BATCH=2 config "$T/c.json" "$T/ref6" shuffle 3 5 0 true
run1 "$T/c.json" || bad "3 ranks: the 1-rank reference failed"
BATCH=2 config "$T/c.json" "$T/three" shuffle 1 5 0 true
run3 "$T/c.json" || bad "3 ranks: the run failed"
same_run "3 ranks x grad_accum 1 against 1 rank x grad_accum 3" "$T/three" "$T/ref6"
BATCH=3 config "$T/c.json" "$T/2to3" shuffle 1 3 0 true
run2 "$T/c.json" || bad "2 -> 3 ranks: the 2-rank part failed"
BATCH=2 config "$T/c.json" "$T/2to3" shuffle 1 5 0 true
run3 "$T/c.json" || bad "2 -> 3 ranks: the 3-rank part failed"
same_run "saved by 2 ranks (batch_size 3) at step 3, resumed by 3 (batch_size 2)" "$T/2to3" "$T/ref6"

rank_pid() {  # config-file rank: the pid of that rank of the job running config-file
    local p
    for p in $(pgrep -f "build/mpi/train $1"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && { echo "$p"; return; }
    done
}

echo "SIGKILL to rank 1 of a running job"
config "$T/kill.json" "$T/kill" sequential 1 100000 2 true
timeout 120 $MPIRUN build/mpi/train "$T/kill.json" >"$T/kill.log" 2>&1 &
job=$!
wait_for "[ -f '$T/kill/latest' ]" || bad "kill: no checkpoint within 60 s"
victim=$(rank_pid "$T/kill.json" 1)
survivor=$(rank_pid "$T/kill.json" 0)
kill -KILL "$victim" 2>/dev/null
wait $job
rc=$?
msg=$(grep -m1 "exited on signal 9" "$T/kill.log")
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ -n "$msg" ]; then ok "kill: mpirun exit $rc: $(echo $msg)"
else bad "kill: mpirun exit $rc, message '$msg'"; tail -20 "$T/kill.log"; fi
if [ -n "$survivor" ] && wait_for "! kill -0 $survivor 2>/dev/null"; then ok "kill: rank 0 (pid $survivor) was stopped too"
else bad "kill: rank 0 (pid '$survivor') is still running"; ps -o pid,stat,etime,cmd -p "$survivor"; fi
last=$(head -n 1 "$T/kill/latest")
complete=1
for f in config.json model.safetensors optimizer.safetensors trainer_state.json; do
    [ -f "$T/kill/$last/$f" ] || complete=0
done
n=$((10#${last#step_}))
if [ $complete = 1 ] && $MPIRUN build/mpi/train "$T/kill.json" --set train.steps=$((n + 2)) >"$T/resume.log" 2>&1 &&
    grep -q "resumed from $T/kill/$last" "$T/resume.log" && [ -f "$T/kill/step_$(printf %07d $((n + 2)))/model.safetensors" ]
then ok "kill: the last checkpoint ($last) is complete; 2 ranks resumed from it and reached step $((n + 2))"
else bad "kill: checkpoint $last complete=$complete, resume failed"; tail -5 "$T/resume.log"; fi

stops_cleanly() {  # label name signal rank1|mpirun phrase: the signal mid-run, then every rank saves and exits 0
    local label=$1 name=$2 sig=$3 target=$4 phrase=$5 job rc stopped
    echo "$label"
    config "$T/$name.json" "$T/$name" shuffle 1 100000 0 true
    $MPIRUN build/mpi/train "$T/$name.json" >"$T/$name.log" 2>&1 &
    job=$!
    wait_for "[ -s '$T/$name/metrics.jsonl' ]" || bad "$label: no step logged within 60 s"
    if [ "$target" = mpirun ]; then kill -"$sig" $job; else kill -"$sig" "$(rank_pid "$T/$name.json" 1)" 2>/dev/null; fi
    wait $job
    rc=$?
    stopped=$(head -n 1 "$T/$name/latest" 2>/dev/null)
    if [ $rc -eq 0 ] && [ -n "$stopped" ] && grep -q "$phrase" "$T/$name.log"
    then ok "$label: the ranks stopped after the same step, saved $stopped, exit 0"
    else bad "$label: exit $rc, checkpoint '$stopped'"; tail -5 "$T/$name.log"; fi
}
stops_cleanly "SIGINT to rank 1 only" int INT rank1 "stopped by a signal to another rank"
stops_cleanly "SIGUSR1 to mpirun, which forwards it" usr1 USR1 mpirun "stopped by signal 10"

echo "a fatal error on the ranks"
config "$T/div.json" "$T/div" shuffle 1 50 1 true
timeout 120 $MPIRUN build/mpi/train "$T/div.json" --set optim.lr=1e8 --set optim.grad_clip=0 >"$T/div.log" 2>&1
rc=$?
msg=$(grep -m1 "^error (rank [01] of 2" "$T/div.log")
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ -n "$msg" ]; then ok "divergence: exit $rc: $msg"
else bad "divergence: exit $rc, message '$msg'"; tail -10 "$T/div.log"; fi

# mpirun's MPMD form gives rank 1 its own arguments: a fatal error on that rank alone
one_rank_fails() {  # label expected-phrase rank-1 arguments...
    local label=$1 phrase=$2
    shift 2
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 1 build/mpi/train "$T/one.json" : \
        -np 1 build/mpi/train "$T/one.json" "$@" >"$T/one.log" 2>&1
    local rc=$? msg
    msg=$(grep -m1 "error.*$phrase" "$T/one.log")
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ -n "$msg" ]; then ok "$label: exit $rc: $msg"
    else bad "$label: exit $rc, no '$phrase' message"; tail -10 "$T/one.log"; fi
}
config "$T/one.json" "$T/one" shuffle 1 50 0 true
one_rank_fails "a missing data file on rank 1 only" "rank 1 of 2.*nothere.u16" --set "data.train=[\"$T/nothere.u16\"]"
one_rank_fails "a config error on rank 1 only" "train.stepz: unknown key" --set train.stepz=3

echo "one run per out_dir"
config "$T/lock.json" "$T/lock" shuffle 1 1000000 0 true
build/mpi/train "$T/lock.json" >"$T/lock1.log" 2>&1 &
holder=$!
wait_for "[ -s '$T/lock/metrics.jsonl' ]"
timeout 120 $MPIRUN build/mpi/train "$T/lock.json" >"$T/lock2.log" 2>&1
rc=$?
msg=$(grep -m1 "is in use by another run (pid $holder holds" "$T/lock2.log")
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ -n "$msg" ]; then ok "a 2-rank job on a held out_dir: exit $rc: ${msg#*error}"
else bad "a 2-rank job on a held out_dir: exit $rc"; tail -5 "$T/lock2.log"; fi
kill -KILL $holder; wait $holder 2>/dev/null

echo "test_mpi: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
