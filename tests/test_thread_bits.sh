#!/usr/bin/env bash
# The same bits at any thread count: a few training steps with OMP_NUM_THREADS=1 and =16 (above this
# machine's cores: OpenMP runs them anyway) give byte-identical checkpoints and the same logged losses to the last
# digit, in f32 and in bf16 products, on a GQA model with RePo layers whose attention backward takes the split by key and
# query block at 16 threads (fewer (batch, kv head) pairs than 2/3 of the threads: model/attention.c)
# and the one task per kv head at 1 (docs/performance.md, "Past 2 cores"). Head size 32 and T 256: on a CPU with
# AMX, bf16 attention runs on its tiles (model/tile_amx.h).
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" thread_bits
build/tools/gen_tokens "$T/tok.u16" 30000 64 1 >/dev/null || exit 1
for dtype in f32 bf16; do
    for th in 1 16; do
        cat >"$T/c.json" <<JSON
{"run": {"out_dir": "$T/$dtype-$th", "seed": 5},
 "model": {"arch": "llama", "vocab_size": 64, "d_model": 128, "n_layers": 3, "n_heads": 4, "n_kv_heads": 2,
           "d_ff": 256, "positions": {"mode": "repo"}},
 "data": {"train": ["$T/tok.u16"], "val": ["$T/tok.u16"], "seq_len": 256},
 "optim": {"warmup_steps": 2},
 "train": {"batch_size": 2, "steps": 6, "log_every": 1, "eval_every": 3, "eval_batches": 2, "save_every": 6,
           "compute_dtype": "$dtype"}}
JSON
        OMP_NUM_THREADS=$th build/train "$T/c.json" >"$T/$dtype-$th.log" 2>&1 || bad "$dtype, $th threads: $(tail -n 1 "$T/$dtype-$th.log")"
    done
    a="$T/$dtype-1" b="$T/$dtype-16"
    losses() { grep -o '"[a-z_]*loss": [^,]*' "$1/metrics.jsonl"; }
    if grep -q "OpenMP 16" "$b.log" && cmp -s "$a/step_0000006/model.safetensors" "$b/step_0000006/model.safetensors" &&
        [ -n "$(losses "$a")" ] && cmp -s <(losses "$a") <(losses "$b"); then
        ok "$dtype: 1 and 16 threads, 6 steps: the same weights byte for byte and the same $(losses "$a" | wc -l) losses"
    else bad "$dtype: 1 and 16 threads differ: $(diff <(losses "$a") <(losses "$b") | head -2 | tr '\n' ' ')"; fi
done
exit $((failures > 0))
