#!/usr/bin/env bash
# build/generate end to end: tiny checkpoints trained for a few steps on the
# tokenized fixture text (rope, repo and nope positions, vocab 1024 >= the
# fixture tokenizer's 1001) continue a prompt; the output starts with the
# prompt, greedy decoding is the same through --temperature 0, --top-k 1 and
# a tiny --top-p, sampling is reproducible from --seed, --max-new-tokens 10^9
# grows the cache as needed (same greedy text), and a tokenizer larger
# than the model's vocabulary is refused with both numbers.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" generate_cli
F=tests/fixtures/tokenizer
build/tokenize --tokenizer $F/gpt2.json --val 0 --out "$T/d" $F/sample.txt $F/sample.txt $F/sample.txt >"$T/log" 2>&1 ||
    { cat "$T/log"; exit 1; }
cp $F/gpt2.json "$T/tokenizer.json"
for mode in rope repo nope; do
    printf '{"run": {"out_dir": "%s/%s", "threads": 1}, "model": {"vocab_size": 1024, "d_model": 32, "n_layers": 2,
      "n_heads": 4, "d_ff": 64, "positions": {"mode": "%s"}}, "data": {"train": ["%s/d_train_000000.bin"], "seq_len": 32},
      "optim": {"warmup_steps": 0, "lr": 3e-3}, "train": {"batch_size": 2, "steps": 30, "eval_every": 0, "log_every": 30}}\n' \
        "$T" $mode $mode "$T" >"$T/$mode.json"
    build/train "$T/$mode.json" >"$T/train_$mode.log" 2>&1 || { bad "$mode: training failed"; tail -3 "$T/train_$mode.log"; continue; }
    g() { build/generate "$T/$mode" --tokenizer "$T" --threads 1 --prompt "int main(void) {" --max-new-tokens 12 "$@" 2>"$T/err"; }
    greedy=$(g --temperature 0)
    k1=$(g --temperature 1 --top-k 1)
    p0=$(g --temperature 1 --top-p 0.000001)
    s1=$(g --temperature 1 --seed 7); s2=$(g --temperature 1 --seed 7); s3=$(g --temperature 1.5 --top-p 0.9 --top-k 50 --seed 8)
    case "$greedy" in "int main(void) {"?*) ok "$mode: greedy continues the prompt: $(printf '%s' "$greedy" | head -c 60 | tr '\n' ' ')" ;;
        *) bad "$mode: output does not start with the prompt: '$greedy'"; cat "$T/err" ;; esac
    [ "$greedy" = "$k1" ] && [ "$greedy" = "$p0" ] && ok "$mode: --temperature 0 = --top-k 1 = --top-p 1e-6" ||
        bad "$mode: greedy differs: '$greedy' / '$k1' / '$p0'"
    [ "$s1" = "$s2" ] && [ -n "$s3" ] && ok "$mode: sampling reproducible from --seed" || bad "$mode: seed 7 gave '$s1' then '$s2'"
    grep -q "new tokens in .* tok/s" "$T/err" && ok "$mode: $(cut -c1-120 "$T/err")" || bad "$mode: no tok/s line"
    # --max-new-tokens 10^9: the cache grows as tokens come (it was allocated for prompt + N first: 512 GB here);
    # greedy output is the same, under an 8 GB address-space limit (read up to the 12-token run's length)
    huge=$( (ulimit -v 8000000; build/generate "$T/$mode" --tokenizer "$T" --threads 1 --prompt "int main(void) {" \
        --max-new-tokens 1000000000 --temperature 0 2>"$T/err_huge") | LC_ALL=C head -c "$(printf '%s' "$greedy" | wc -c)")
    [ -n "$greedy" ] && [ "$huge" = "$greedy" ] && ok "$mode: --max-new-tokens 10^9 under ulimit -v 8 GB: the same greedy text" ||
        bad "$mode: --max-new-tokens 10^9: '$huge' vs '$greedy' ($(head -c 200 "$T/err_huge"))"
done
build/generate tests/fixtures/olmo2_mix/ckpt --tokenizer $F/gpt2.json --prompt x >"$T/log" 2>&1
[ $? -ne 0 ] && grep -q "tokenizer has 1001 tokens, more than the model's vocab_size 64" "$T/log" &&
    ok "a tokenizer larger than the model: $(grep -m1 error "$T/log" | cut -c1-120)" || { bad "vocab check"; cat "$T/log"; }
build/generate "$T/rope" --prompt x >"$T/log" 2>&1   # no tokenizer.json in the checkpoint
[ $? -ne 0 ] && grep -q "has no tokenizer.json .*pass --tokenizer PATH" "$T/log" && ok "no tokenizer: $(grep -m1 error "$T/log" | cut -c1-120)" ||
    { bad "missing tokenizer"; cat "$T/log"; }
echo "generate_cli: $failures failed"
[ "$failures" -eq 0 ]
