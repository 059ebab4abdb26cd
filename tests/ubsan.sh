#!/usr/bin/env bash
# The C side of the suite once more under UBSan (make test-ubsan; tests/run.sh
# runs it): the programs of build/ubsan (UBSAN=1: -O1, every report fatal,
# float-cast-overflow on) on every C test program, gradcheck --all, and short
# runs of train, eval, analyze and tokenize: a run over token files with
# validation, RePo layers, grad_accum 2 and checkpoints, resumed to a later
# step; a run continued from the OLMo-2 fixture checkpoint on synthetic data;
# eval and analyze on the result; tokenize on a JSONL file whose first
# document has no ids. The shell tests' many other build/train runs (errors,
# signals, MPI) stay with the normal build: under UBSan they would double the
# suite's time for little more coverage of the same code.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" ubsan
B=build/ubsan
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

step() {  # label command...
    local label=$1; shift
    local t0
    t0=$(date +%s%N)
    "$@" >"$T/log" 2>&1
    local rc=$? ms=$((($(date +%s%N) - t0) / 1000000))
    if [ $rc -eq 0 ]; then ok "$label ($ms ms)"
    else bad "$label: exit $rc"; grep -m3 "runtime error" "$T/log"; tail -n 20 "$T/log" | sed 's/^/          /'; fi
}

for t in tests/test_*.c; do
    t=$B/tests/$(basename "$t" .c)
    [ -x "$t" ] || { bad "$t is not built (make build-ubsan)"; continue; }
    step "$(basename "$t")" "$t"
done
# gradcheck --all, its layers two at a time: gradcheck is single-threaded, and as one process under UBSan it
# was 205 s of this script's 222 (Intel Xeon, 2026-12-04). A layer's inputs come from its index, as in --all,
# so this checks exactly what --all checks. The slowest (attention, the whole models) go first.
gradcheck_all() {
    local layers n
    layers=$($B/gradcheck --help 2>&1 | awk '$1 == "*" {print $2}')
    n=$(printf '%s\n' $layers | wc -l)
    [ "$n" -gt 10 ] || { echo "gradcheck --help lists $n layers marked *"; return 1; }
    { printf '%s\n' $layers | grep -E '^attention$|model$'; printf '%s\n' $layers | grep -vE '^attention$|model$'; } |
        xargs -P 2 -I{} sh -c "'$B/gradcheck' --layer {} >'$T/gc.{}.log' 2>&1 || echo {} >>'$T/gc.failed'"
    cat "$T"/gc.*.log
    [ ! -s "$T/gc.failed" ] || { echo "failed: $(cat "$T/gc.failed")"; return 1; }
    [ "$(cat "$T"/gc.*.log | grep -c '^gradcheck: [0-9]* tensors checked, 0 failed')" -eq "$n" ]
}
step "gradcheck --all (its layers, 2 at a time)" gradcheck_all
build/tools/gen_tokens "$T/train.u16" 20000 64 1 || exit 1
cat >"$T/run.json" <<JSON
{"run": {"out_dir": "$T/run", "seed": 3, "threads": 2},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 3, "n_heads": 4, "n_kv_heads": 2, "d_ff": 64,
           "positions": {"mode": "repo", "repo_start_layer": 1}},
 "data": {"train": ["$T/train.u16"], "val": ["$T/train.u16"], "seq_len": 32, "order": "shuffle"},
 "optim": {"lr": 3e-3, "warmup_steps": 2, "z_loss": 1e-4},
 "train": {"batch_size": 2, "grad_accum": 2, "steps": 4, "log_every": 1, "eval_every": 2, "eval_batches": 2,
           "save_every": 2}}
JSON
step "train: 4 steps over token files, RePo, grad_accum 2, validation, checkpoints" $B/train "$T/run.json"
step "train: resumed to step 6" $B/train "$T/run.json" --set train.steps=6
cat >"$T/cont.json" <<JSON
{"run": {"out_dir": "$T/cont", "threads": 2},
 "model": {"init_from": "tests/fixtures/olmo2_mix/ckpt"},
 "data": {"synthetic": {}, "seq_len": 128},
 "optim": {"warmup_steps": 0},
 "train": {"batch_size": 1, "steps": 2, "eval_every": 0}}
JSON
step "train: 2 steps continued from the OLMo-2 fixture on synthetic data" $B/train "$T/cont.json"
step "eval: two task families on the resumed run" \
    $B/eval "$T/run" --items 2 --lengths 128 --tasks single,table --json "$T/eval.json" --threads 2
step "analyze: the resumed run" $B/analyze "$T/run" --out "$T/analyze" --threads 2
printf '{"text": ""}\n{"text": "a"}\n' >"$T/empty.jsonl"
step "tokenize: a JSONL file whose first document has no ids (--no-eos)" $B/tokenize --threads 1 \
    --tokenizer tests/fixtures/tokenizer/gpt2.json --jsonl --no-eos --val 0 --out "$T/empty" "$T/empty.jsonl"
echo "ubsan: $failures failed"
[ "$failures" -eq 0 ]
