#!/usr/bin/env bash
# A FIFO (or any file that is not a regular file) where a program reads a
# token file, a config, a checkpoint's config.json, safetensors or
# trainer_state.json: exit 1 at once naming the file, never a hang (open(2) of
# a FIFO blocks until a writer comes, so the type is checked first). A token
# file that shrinks while training reads it through mmap: exit 1 naming the
# file (not a silent SIGBUS, exit 135), the last checkpoint intact.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" nonregular

build/tools/gen_tokens "$T/good.u16" 5000 64 1 || exit 1
mkfifo "$T/fifo.u16" "$T/fifo.json"
base='"model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64},
      "data": {"train": ["'$T'/good.u16"], "seq_len": 16},
      "optim": {"warmup_steps": 0}, "train": {"batch_size": 2, "steps": 2, "eval_every": 0}'

fails_fast() {  # name phrase command...
    local name=$1 phrase=$2; shift 2
    timeout 20 "$@" >"$T/log" 2>&1
    local rc=$?
    if [ $rc -eq 1 ] && grep -qF -- "$phrase" "$T/log"; then ok "$name: exit 1: $(grep -m1 -F -- "$phrase" "$T/log")"
    else bad "$name: exit $rc ($([ $rc = 124 ] && echo 'hung 20 s' || tail -1 "$T/log")), expected '$phrase'"; fi
}
cfg() { printf '{"run": {"out_dir": "%s"}, %s}\n' "$T/out_$1" "$base" >"$T/cfg.json"; }

cfg a; fails_fast "train: token file a FIFO" "token file '$T/fifo.u16' is not a regular file (a FIFO)" \
    build/train "$T/cfg.json" --set "data.train=[\"$T/fifo.u16\"]"
cfg b; fails_fast "train: validation file a FIFO" "token file '$T/fifo.u16' is not a regular file (a FIFO)" \
    build/train "$T/cfg.json" --set "data.val=[\"$T/fifo.u16\"]" --set train.eval_every=1
fails_fast "train: the config file a FIFO" "cannot read the config file" build/train "$T/fifo.json"

mkdir -p "$T/ck1" "$T/ck2"
cp tests/fixtures/olmo2_mix/ckpt/model.safetensors "$T/ck1/"; mkfifo "$T/ck1/config.json"
cp tests/fixtures/olmo2_mix/ckpt/config.json "$T/ck2/"; mkfifo "$T/ck2/model.safetensors"
init='"model": {"init_from": "INIT"}, "data": {"synthetic": {}, "seq_len": 128},
      "optim": {"warmup_steps": 0}, "train": {"batch_size": 1, "steps": 1, "eval_every": 0}'
printf '{"run": {"out_dir": "%s"}, %s}\n' "$T/out_c" "${init/INIT/$T/ck1}" >"$T/init1.json"
printf '{"run": {"out_dir": "%s"}, %s}\n' "$T/out_d" "${init/INIT/$T/ck2}" >"$T/init2.json"
fails_fast "train: init_from's config.json a FIFO" "$T/ck1/config.json" build/train "$T/init1.json"
fails_fast "train: init_from's model.safetensors a FIFO" "$T/ck2/model.safetensors: not a regular file" \
    build/train "$T/init2.json"
fails_fast "eval: model.safetensors a FIFO" "$T/ck2/model.safetensors: not a regular file" \
    build/eval "$T/ck2" --ppl "$T/good.u16" --threads 1
fails_fast "eval: --ppl token file a FIFO" "is not a regular file (a FIFO)" \
    build/eval tests/fixtures/olmo2_mix/ckpt --ppl "$T/fifo.u16" --threads 1

cfg e
build/train "$T/cfg.json" >"$T/log" 2>&1 || { bad "a checkpoint to resume: $(tail -1 "$T/log")"; }
st="$T/out_e/step_0000002/trainer_state.json"
rm "$st"; mkfifo "$st"
fails_fast "train: resume with trainer_state.json a FIFO" "$st': not a regular file" \
    build/train "$T/cfg.json" --set train.steps=3

build/tools/gen_tokens "$T/shrinks.u16" 200000 64 1 || exit 1
printf '{"run": {"out_dir": "%s"}, %s}\n' "$T/out_f" "$base" >"$T/cfg.json"
build/train "$T/cfg.json" --set "data.train=[\"$T/shrinks.u16\"]" --set train.steps=1000000 --set train.save_every=2 \
    --set run.threads=1 >"$T/log" 2>&1 &
p=$!
wait_for "[ -f '$T/out_f/latest' ]"
truncate -s 0 "$T/shrinks.u16"
(sleep 20; kill -KILL $p 2>/dev/null) & watchdog=$!
wait $p; rc=$?
kill $watchdog 2>/dev/null; wait $watchdog 2>/dev/null
last="$T/out_f/$(head -1 "$T/out_f/latest")"
if [ $rc -eq 1 ] && grep -q "error: SIGBUS reading '$T/shrinks.u16' at byte offset [0-9]*: the file shrank" "$T/log" &&
    [ -f "$last/trainer_state.json" ] && [ -f "$last/optimizer.safetensors" ]
then ok "a token file truncated while training: exit 1 naming it, $(basename "$last") complete"
else bad "a token file truncated while training: exit $rc: $(tail -1 "$T/log")"; fi

echo "test_nonregular: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
