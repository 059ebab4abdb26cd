#!/usr/bin/env bash
# Checkpoints carry their tokenizer: tokenizer.json, tokenizer_config.json,
# special_tokens_map.json and generation_config.json (those model.init_from
# has) are copied into every checkpoint, byte for byte, also after a resume;
# pruning removes them with the checkpoint and they are never reported as
# files repoc did not write. build/generate and build/sft_eval find the
# checkpoint's tokenizer.json without --tokenizer; without one, generate says
# how to pass one. Logs written to a file hold plain lines: no carriage
# returns or terminal codes (build/train, build/tokenize), and generate's
# statistics (stderr) start a line of their own after the text.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" ckpt_tokenizer
F=tests/fixtures/tokenizer
CR=$(printf '\r')
ESC=$(printf '\033')
plain() { ! grep -q "[$CR$ESC]" "$1"; }

build/tokenize --tokenizer $F/gpt2.json --val 0 --out "$T/d" $F/sample.txt $F/sample.txt >"$T/tok.log" 2>&1 ||
    { cat "$T/tok.log"; exit 1; }
plain "$T/tok.log" && ok "build/tokenize's log in a file: plain lines" || bad "build/tokenize's log holds \\r or ESC"
config() {  # file out_dir init_from steps
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "threads": 1}, "model": $3,
 "data": {"train": ["$T/d_train_000000.bin"], "seq_len": 32}, "optim": {"warmup_steps": 0, "lr": 3e-3},
 "train": {"batch_size": 2, "steps": $4, "eval_every": 0, "log_every": 1, "save_every": 1, "keep_last": 2}}
JSON
}
# a Hugging Face directory with its tokenizer files, made from a short run
config "$T/base.json" "$T/base" '{"vocab_size": 1024, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64}' 2
build/train "$T/base.json" >"$T/base.log" 2>&1 || { bad "base run failed"; tail -3 "$T/base.log"; exit 1; }
plain "$T/base.log" && ok "build/train's log in a file: plain lines" || bad "build/train's log holds \\r or ESC"
[ ! -e "$T/base/step_0000002/tokenizer.json" ] && ok "a fresh model's checkpoints carry no tokenizer" ||
    bad "a fresh model's checkpoint has a tokenizer.json"
mkdir -p "$T/hf"
cp "$T/base/step_0000002/config.json" "$T/base/step_0000002/model.safetensors" "$T/hf/"
cp $F/gpt2.json "$T/hf/tokenizer.json"
echo '{"eos_token": "<|endoftext|>"}' >"$T/hf/tokenizer_config.json"
echo '{"bos_token_id": 0, "eos_token_id": 0}' >"$T/hf/generation_config.json"
echo 'not a model file' >"$T/hf/README.md"

config "$T/run.json" "$T/run" "{\"init_from\": \"$T/hf\"}" 3
build/train "$T/run.json" >"$T/run.log" 2>&1 || { bad "init_from run failed"; tail -3 "$T/run.log"; }
carried() {  # checkpoint: the three files, byte-identical; no README.md, no special_tokens_map.json
    for f in tokenizer.json tokenizer_config.json generation_config.json; do cmp -s "$T/hf/$f" "$1/$f" || return 1; done
    [ ! -e "$1/README.md" ] && [ ! -e "$1/special_tokens_map.json" ]
}
carried "$T/run/step_0000003" && ok "a checkpoint carries init_from's tokenizer files (those it has), byte-identical" ||
    bad "step_0000003 holds: $(ls "$T/run/step_0000003" | tr '\n' ' ')"
if [ ! -e "$T/run/step_0000001" ] && ! grep -q "did not write" "$T/run.log"; then
    ok "pruning removed step_0000001 whole, its tokenizer files included, and reported nothing foreign"
else bad "pruning: $(ls "$T/run" | tr '\n' ' '); $(grep 'did not write' "$T/run.log")"; fi
# resumed, after the checkpoint the files first came from is pruned: still carried
config "$T/run.json" "$T/run" "{\"init_from\": \"$T/hf\"}" 6
build/train "$T/run.json" >"$T/resume.log" 2>&1 || { bad "resume failed"; tail -3 "$T/resume.log"; }
carried "$T/run/step_0000006" && [ ! -e "$T/run/step_0000003" ] && ok "after a resume and pruning, still carried" ||
    bad "after the resume step_0000006 holds: $(ls "$T/run/step_0000006" | tr '\n' ' ')"

echo "programs find the checkpoint's tokenizer"
build/generate "$T/run" --threads 1 --prompt "int main" --max-new-tokens 4 >"$T/gen.log" 2>&1 &&
    head -n 1 "$T/gen.log" | grep -q "^int main" && grep -q "^generate: prompt .* tok/s" "$T/gen.log" &&
    plain "$T/gen.log" && ok "generate without --tokenizer: the text, then the statistics on a line of their own" ||
    bad "generate: $(cat "$T/gen.log")"
for _ in 1 2 3; do echo '{"text": "int main(void) { return 0; }"}'; done >"$T/sft.jsonl"
build/sft_eval "$T/run" "$T/sft.jsonl" --threads 1 >"$T/sft.log" 2>&1 && ok "sft_eval reads text records without --tokenizer" ||
    bad "sft_eval: $(tail -n 2 "$T/sft.log")"
if build/generate "$T/base" --threads 1 --prompt "x" >"$T/none.log" 2>&1; then bad "generate without a tokenizer ran"
elif grep -q "has no tokenizer.json .*pass --tokenizer PATH" "$T/none.log"; then ok "no tokenizer: $(cut -c1-150 "$T/none.log")"
else bad "generate without a tokenizer: $(cat "$T/none.log")"; fi
exit $((failures > 0))
