#!/usr/bin/env bash
# The DiLoCo outer loop (train.outer, train/outer.h) under MPI (build/mpi/train), 2 ranks, a tiny model:
#  1. config errors name their key: every < 1, outer keys without every, train.outer with
#     train.shard_optimizer true; the memory plan has the outer state's row (2 x the gradients); run.link_gbps
#     prints the link plan (train/linkplan.h; its numbers: tests/test_linkplan.c), 0 is refused;
#  2. a run stopped mid-phase (step 3 of H = 2, and so the ranks' parameters differ) and resumed equals the
#     uninterrupted run bit for bit: weights, AdamW moments and outer.safetensors (kept copy, momentum,
#     rank 1's parameters and moments), with f32 and with bf16 on the wire, and with LoRA; the save at
#     step 6, an outer step, checks that the ranks' weights are identical again;
#  3. bytes on the wire (measured): an inner step sends only the loss sum (8 bytes per rank), an outer
#     step as much more as a synchronous step's gradient ring, f32 (4 bytes per trained parameter) or
#     bf16 (2);
#  4. resuming a mid-phase checkpoint with another number of ranks is refused naming outer.safetensors.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" mpi_diloco
export OMP_NUM_THREADS=1
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np 2"

build/tools/gen_tokens "$T/train.u16" 50000 64 1 || exit 1
diloco() {  # file out_dir steps save_every outer-json [more "train" keys]; model keys from $MODEL
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "seed": 5, "threads": 1},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 2, "d_ff": 64, "positions": {"mode": "repo"} ${MODEL:-}},
 "data": {"train": ["$T/train.u16"], "seq_len": 16, "order": "shuffle"},
 "optim": {"lr": 1e-2, "schedule": "constant", "warmup_steps": 1, "weight_decay": 0.1, "z_loss": 1e-4},
 "train": {"batch_size": 2, "steps": $3, "log_every": 1, "eval_every": 0, "save_every": $4, "keep_last": 5,
           "outer": $5 ${6:-}}}
JSON
}
run2() { $MPIRUN build/mpi/train "$@" >>"$T/log" 2>&1; }
H2='{"every": 2}'

echo "config errors name the key"
diloco "$T/e.json" "$T/e" 4 0 '{"every": 0}'
expect_refused "every 0" "train.outer.every" "$T/e.json"
diloco "$T/e.json" "$T/e" 4 0 '{"lr": 0.5}'
expect_refused "lr without every" "train.outer.every: missing: train.outer.lr is given" "$T/e.json"
diloco "$T/e.json" "$T/e" 4 0 "$H2" ', "shard_optimizer": true'
expect_refused "with sharded AdamW" "train.shard_optimizer: true, but train.outer" "$T/e.json"
diloco "$T/p.json" "$T/p" 4 0 "$H2"
build/train "$T/p.json" --plan --set model.d_model=256 --set model.d_ff=1024 >"$T/plan.log" 2>&1
# MiB printed to 0.1: twice the gradients' row within the two roundings
awk '/^  gradients / { g = $2 } /^  DiLoCo outer state / { o = $4 } END { d = o - 2 * g; if (d < 0) d = -d
    exit !(g > 1 && d <= 0.15) }' "$T/plan.log" &&
    ok "memory plan: $(grep -m1 'DiLoCo outer state' "$T/plan.log" | tr -s ' ') = 2 x the gradients" ||
    bad "memory plan: no outer row of twice the gradients"; grep -E "gradients|DiLoCo" "$T/plan.log"

build/train "$T/p.json" --plan --set run.link_gbps=1 >"$T/link.log" 2>&1
grep -q "^  this link favours: " "$T/link.log" && ok "run.link_gbps 1: $(grep -m1 'favours' "$T/link.log" | cut -c3-90)" ||
    bad "run.link_gbps 1: no link plan"
expect_refused "run.link_gbps 0" "run.link_gbps" "$T/p.json" --set run.link_gbps=0

same_files() {  # label dir_a dir_b: every file of the final checkpoints equal
    local a b f diff="" n=0
    a="$2/$(head -n 1 "$2/latest")"; b="$3/$(head -n 1 "$3/latest")"
    for f in model.safetensors adapter_model.safetensors optimizer.safetensors outer.safetensors; do
        [ -f "$b/$f" ] || continue
        n=$((n + 1))
        cmp -s "$a/$f" "$b/$f" || diff="$diff $f"
    done
    if [ -z "$diff" ] && [ -f "$b/outer.safetensors" ]; then ok "$1: bit for bit ($n safetensors files)"
    else bad "$1: differ:${diff:- no outer.safetensors}"; fi
}
resume_case() {  # label wire name: 6 steps of H = 2 against 3 (stopped mid-phase) + 3
    diloco "$T/u.json" "$T/u_$3" 6 0 "$H2" ", \"grad_wire_dtype\": \"$2\""
    run2 "$T/u.json" || bad "$1: the uninterrupted run failed"
    diloco "$T/r.json" "$T/r_$3" 3 0 "$H2" ", \"grad_wire_dtype\": \"$2\""
    run2 "$T/r.json" && run2 "$T/r.json" --set train.steps=6 || bad "$1: the resumed run failed"
    grep -q "resumed from $T/r_$3/step_0000003" "$T/log" || bad "$1: no resume from step 3"
    same_files "$1: 3 steps (mid-phase) + resume 3 == 6 steps" "$T/r_$3" "$T/u_$3"
}
echo "exact resume"
resume_case "H=2, f32 wire" f32 f32
resume_case "H=2, bf16 wire" bf16 bf16
MODEL=', "lora": {"rank": 4, "alpha": 8}' resume_case "H=2, LoRA (adapters and RePo weights trained), f32 wire" f32 lora

echo "bytes on the wire per step (rank 0, measured)"
wire() { grep -o '"wire_bytes": [0-9]*' "$1/metrics.jsonl" | sed 's/.*: //' | tr '\n' ' '; }
diloco "$T/s.json" "$T/sync" 3 0 null ", \"shard_optimizer\": false"
run2 "$T/s.json" || bad "synchronous: the run failed"
sync=$(wire "$T/sync" | cut -d' ' -f1)
for w in f32 bf16; do
    diloco "$T/b.json" "$T/bytes_$w" 6 0 '{"every": 3}' ", \"grad_wire_dtype\": \"$w\""
    run2 "$T/b.json" || bad "bytes, $w: the run failed"
    got=$(wire "$T/bytes_$w")
    # inner steps: the loss and z-loss sums (8 bytes each); outer steps: those and Δ's ring
    echo "$got" | awk -v s="$sync" -v w=$w '{ ring = s - 16; if (w == "bf16") ring /= 2
        exit !(NF == 6 && $1 == 16 && $2 == 16 && $3 == 16 + ring && $4 == 16 && $5 == 16 && $6 == 16 + ring) }' &&
        ok "H=3, $w wire: bytes per step $got(synchronous f32: $sync per step)" ||
        bad "H=3, $w wire: bytes per step $got(synchronous: $sync)"
done

echo "another number of ranks"
diloco "$T/r.json" "$T/r_f32" 3 0 "$H2" ', "grad_wire_dtype": "f32"'
build/mpi/train "$T/r.json" --set train.steps=8 --set train.batch_size=4 >"$T/one.log" 2>&1
if grep -q "outer.safetensors: written by 2 ranks, this run has 1" "$T/one.log"
then ok "1 rank on a 2-rank checkpoint: $(grep -o 'outer.safetensors: written by.*has 1' "$T/one.log")"
else bad "1 rank on a 2-rank checkpoint: not refused"; tail -3 "$T/one.log"; fi

# shellcheck disable=SC2154 # failures: testlib.sh's counter
echo "test_mpi_diloco: $([ "$failures" -eq 0 ] && echo all OK || echo FAILED)"
[ "$failures" -eq 0 ]
