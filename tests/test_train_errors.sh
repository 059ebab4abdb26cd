#!/usr/bin/env bash
# Bad configs and bad data stop build/train before any work: each
# case exits non-zero, its message names the culprit (key, file, offset), and
# nothing is written to out_dir.
set -u
cd "$(dirname "$0")/.." || exit 1
T=$(mktemp -d /tmp/repoc_errors.XXXXXX)
trap 'rm -rf "$T"' EXIT
failures=0

build/tools/gen_tokens "$T/good.u16" 5000 64 1 || exit 1
build/tools/gen_tokens "$T/big.u16" 5000 200 1 || exit 1     # ids up to 199: >= vocab 64
touch "$T/afile"

base='"model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64},
      "data": {"train": ["'$T'/good.u16"], "seq_len": 16},
      "optim": {"warmup_steps": 0},
      "train": {"batch_size": 2, "steps": 2, "eval_every": 0}'

case_() {  # name expected-phrase config-body [--set ...]
    local name=$1 phrase=$2 body=$3
    shift 3
    local out="$T/out_$RANDOM"
    printf '{"run": {"out_dir": "%s"}, %s}\n' "$out" "$body" >"$T/cfg.json"
    build/train "$T/cfg.json" "$@" >"$T/log" 2>&1
    local rc=$?
    local msg
    msg=$(grep -m1 "^error" "$T/log")
    if [ $rc -ne 0 ] && grep -qF -- "$phrase" "$T/log" && [ ! -e "$out" ]; then
        echo "  OK      $name: exit $rc, nothing written: $msg"
    else
        echo "  NOT OK  $name: exit $rc, out_dir $([ -e "$out" ] && echo written || echo absent), expected '$phrase':"
        sed 's/^/          /' "$T/log" | tail -5
        failures=$((failures + 1))
    fi
}

case_ "unknown key" "train.stepz: unknown key" "$base" --set train.stepz=3
# BF16 products on a CPU without BF16 instructions (oneDNN capped at AVX2 stands in for one), or without oneDNN
DNNL_MAX_CPU_ISA=AVX2 case_ "compute_dtype bf16 without BF16 instructions" 'train.compute_dtype "bf16": th' "$base" \
    --set train.compute_dtype=bf16
case_ "compute_dtype not f32/bf16" "train.compute_dtype" "$base" --set 'train.compute_dtype="f16"'
case_ "typo with suggestion" "did you mean optim.lr?" '"optim": {"learnig_rate": 1e-3}, "data": {"synthetic": {}}'
case_ "wrong type" "train.batch_size: expected an integer" "$base" --set 'train.batch_size="8"'
case_ "negative steps" "train.steps: expected a non-negative integer, got -5" "$base" --set train.steps=-5
case_ "missing data file" "$T/nothere.u16" "$base" --set "data.train=[\"$T/nothere.u16\"]"
case_ "token id >= vocab" "big.u16': token id 197 at byte offset 52 (token index 26) >= vocab_size 64" "$base" --set "data.train=[\"$T/big.u16\"]"
case_ "unwritable out_dir" "afile" "$base" --set "run.out_dir=\"$T/afile/run\""
case_ "init_from size mismatch" "model.d_model" \
    '"model": {"init_from": "tests/fixtures/olmo2_mix/ckpt", "d_model": 64}, "data": {"synthetic": {}, "seq_len": 64},
     "optim": {"warmup_steps": 0}, "train": {"batch_size": 1, "steps": 1, "eval_every": 0}'
# OLMo's and Dolma's token files: raw uint32 arrays named .npy, refused naming the fix, read with data.format u32
build/tools/gen_tokens "$T/olmo.npy" 5000 64 1 u32 || exit 1
case_ "a headerless .npy" 'olmo.npy'"'"': no NumPy header (the magic \x93NUMPY at byte offset 0): OLMo and Dolma' \
    "$base" --set "data.train=[\"$T/olmo.npy\"]"
case_ "uint32 ids read as u16" "read as uint16, its first 10000 ids are 0 at every odd index: these are uint32 ids" \
    "$base" --set "data.train=[\"$T/olmo.npy\"]" --set 'data.format="u16"'
printf '{"run": {"out_dir": "%s"}, %s}\n' "$T/olmo" "$base" >"$T/cfg.json"
if build/train "$T/cfg.json" --set "data.train=[\"$T/olmo.npy\"]" --set 'data.format="u32"' >"$T/log" 2>&1 &&
    grep -q "^done: steps 0..2" "$T/log"; then echo "  OK      a headerless .npy with data.format u32 trains"
else
    echo "  NOT OK  a headerless .npy with data.format u32: $(tail -2 "$T/log")"
    failures=$((failures + 1))
fi
# synthetic data at a short seq_len: the default families that do not fit are left out with a note; a family
# the user named is refused
syn='"model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64},
      "data": {"synthetic": {}, "seq_len": 64}, "optim": {"warmup_steps": 0},
      "train": {"batch_size": 2, "steps": 2, "eval_every": 0}'
printf '{"run": {"out_dir": "%s"}, %s}\n' "$T/syn64" "$syn" >"$T/cfg.json"
if build/train "$T/cfg.json" >"$T/log" 2>&1 && grep -q "^done: steps 0..2" "$T/log" &&
    grep -q "note: data.synthetic: left out table (66 tokens), longer than data.seq_len 64" "$T/log"; then
    echo "  OK      the synthetic default at seq_len 64 trains, leaving out table with a note"
else
    echo "  NOT OK  the synthetic default at seq_len 64: $(grep -m1 -e "^error" -e "note: data" "$T/log")"
    failures=$((failures + 1))
fi
case_ "a named synthetic family longer than seq_len" \
    "data.seq_len 64 is too short for synthetic family 'table' (needs 66 tokens)" "$syn" \
    --set 'data.synthetic={"weights": {"table": 1, "single": 1}}'
case_ "seq_len too short for every synthetic family" \
    "data.seq_len 8 is too short for every synthetic family: single (11 tokens)" "$syn" --set data.seq_len=8
case_ "malformed JSON" "JSON syntax error" '"train": {"steps": 3,,}'
case_ "init_from missing" "nowhere" '"model": {"init_from": "'$T'/nowhere"}, "data": {"synthetic": {}}'
build/tools/gen_tokens "$T/short.u16" 10 64 1 || exit 1
case_ "validation data shorter than seq_len + 1" \
    "data.val ('$T/short.u16'): 10 tokens, fewer than data.seq_len + 1 = 17 that one row needs" \
    "$base" --set "data.val=[\"$T/short.u16\"]" --set train.eval_every=1
case_ "LoRA dropout 1" "model.lora.dropout" "$base" --set 'model.lora={"rank": 2, "dropout": 1}'
case_ "mixture source shorter than seq_len + 1" \
    "data.train (source 'tiny'): 10 tokens, fewer than data.seq_len + 1 = 17 that one row needs" \
    "$base" --set "data.train=[{\"name\": \"tiny\", \"files\": [\"$T/short.u16\"]}]"
case_ "rows per step overflow" \
    "--set train.grad_accum=9007199254740992: train.grad_accum: 9007199254740992 x train.batch_size 2048 rows per step" \
    "$base" --set train.batch_size=2048 --set train.grad_accum=9007199254740992
case_ "tokens per micro-batch overflow" "train.batch_size: 536870912 x data.seq_len 16 tokens per micro-batch" \
    "$base" --set train.batch_size=536870912
case_ "--set value failing a check between keys" "--set optim.min_lr=1: optim.min_lr: 1 exceeds optim.lr" \
    "$base" --set optim.min_lr=1
# JSONL data where no token carries loss would train at loss 0 and exit 0: refused; a large share of
# records without loss is a warning
for _ in 1 2 3 4; do echo '{"input_ids": [1, 2, 3, 4], "labels": [-100, -100, -100, -100]}'; done >"$T/noloss.jsonl"
jsonl='"model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64},
      "data": {"train": ["'$T'/noloss.jsonl"], "format": "jsonl", "seq_len": 16},
      "optim": {"warmup_steps": 0}, "train": {"batch_size": 2, "steps": 2, "eval_every": 0}'
case_ "JSONL data where no token carries loss"     "$T/noloss.jsonl: no token of the 4 records carries loss (4 of them have none" "$jsonl"
{ cat "$T/noloss.jsonl"; echo '{"input_ids": [1, 2, 3, 4]}'; } >"$T/someloss.jsonl"
printf '{"run": {"out_dir": "%s"}, %s}\n' "$T/someloss" "$jsonl" >"$T/cfg.json"
if build/train "$T/cfg.json" --set "data.train=[\"$T/someloss.jsonl\"]" >"$T/log" 2>&1 &&
    grep -q "warning: 4 of the 5 records of data.train (jsonl) carry no loss" "$T/log"; then
    echo "  OK      JSONL data where most records carry no loss trains with a warning: $(grep -m1 "warning: 4 of" "$T/log")"
else
    echo "  NOT OK  JSONL data where most records carry no loss: no warning"; tail -n 5 "$T/log"
    failures=$((failures + 1))
fi

# a run to resume and to start from: 2 steps, one checkpoint
printf '{"run": {"out_dir": "%s"}, %s}\n' "$T/done" "$base" >"$T/done.json"
build/train "$T/done.json" >"$T/log" 2>&1 || { echo "  NOT OK  the run to resume failed"; cat "$T/log"; exit 1; }
ck="$T/done/step_0000002"
case_ "init_from naming a run directory, other size" \
    "--set model.d_model=64: model.d_model: 64 disagrees with 32 in $ck/config.json (model.init_from); remove the key" \
    "$base" --set "model.init_from=\"$T/done\"" --set model.d_model=64
resume_fails() {  # name phrase --set...   the resumed run stops before touching its run directory
    # (run.lock is the out_dir lock: every run that takes it writes its pid there)
    local name=$1 phrase=$2
    shift 2
    local before
    before=$(cd "$T/done" && find . -type f ! -name run.lock -exec md5sum {} + | sort)
    build/train "$T/done.json" --set train.steps=4 "$@" >"$T/log" 2>&1
    local rc=$?
    if [ $rc -ne 0 ] && grep -qF -- "$phrase" "$T/log" && [ "$before" = "$(cd "$T/done" && find . -type f ! -name run.lock -exec md5sum {} + | sort)" ]; then
        echo "  OK      $name: exit $rc, run directory untouched: $(grep -m1 "^error" "$T/log")"
    else
        echo "  NOT OK  $name: exit $rc, expected '$phrase' and an untouched run directory:"
        sed 's/^/          /' "$T/log" | tail -5
        failures=$((failures + 1))
    fi
}
resume_fails "resume with another model size" \
    "model.d_model: 64 disagrees with 32 in $ck/config.json (the checkpoint this run resumes); a resumed run keeps" \
    --set model.d_model=64
resume_fails "resume with another data.seq_len" \
    "it was trained with data.seq_len 16, this run has 8; which rows each step reads depends on" --set data.seq_len=8
resume_fails "resume with another run.seed" "it was trained with run.seed" --set run.seed=7
resume_fails "resume with another data.order" "it was trained with data.order shuffle, this run has sequential" \
    --set 'data.order="sequential"'
resume_fails "resume with other positions" \
    "model.positions.mode: gives the layers repo, repo, but $ck/config.json (the checkpoint this run resumes) has rope, rope" \
    --set 'model.positions.mode="repo"' --set model.positions.repo_start_layer=0

# a diverging run (lr 1e8) stops naming the step; the checkpoint `latest` names stays complete and loads
out="$T/diverge"
printf '{"run": {"out_dir": "%s"}, %s}\n' "$out" "$base" >"$T/cfg.json"
build/train "$T/cfg.json" --set optim.lr=1e8 --set optim.grad_clip=0 --set optim.schedule=constant \
    --set train.steps=50 --set train.save_every=1 >"$T/log" 2>&1
rc=$?
last=$(head -n 1 "$out/latest" 2>/dev/null)
complete=1
for f in config.json model.safetensors optimizer.safetensors trainer_state.json; do [ -f "$out/$last/$f" ] || complete=0; done
build/train "$T/cfg.json" --set train.steps=50 >"$T/log2" 2>&1
if [ $rc -ne 0 ] && [ $complete = 1 ] &&
    grep -q "step [0-9]*: the loss is not finite; stopping. The last good checkpoint is $out/$last" "$T/log" &&
    grep -q "resumed from $out/$last" "$T/log2"; then
    echo "  OK      NaN loss: exit $rc, '$(grep -o 'step [0-9]*: the loss is not finite' "$T/log")', $last complete and loads"
else
    echo "  NOT OK  NaN loss: exit $rc, last '$last' complete=$complete"; tail -n 3 "$T/log" "$T/log2"
    failures=$((failures + 1))
fi

for prog in build/train build/gradcheck build/bench/bench_step build/bench/bench_load build/tools/gen_tokens; do
    [ -x "$prog" ] || continue
    if "$prog" --help >"$T/help" 2>&1 && grep -qi "usage" "$T/help"; then echo "  OK      $prog --help prints its usage"
    else echo "  NOT OK  $prog --help"; failures=$((failures + 1)); fi
done

echo "test_train_errors: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
