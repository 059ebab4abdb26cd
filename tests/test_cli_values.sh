#!/usr/bin/env bash
# The option values of every program (programs/cli.c): an option whose next
# word starts with "--" has no value, so `build/eval CK --json --threads 4`
# stops with a usage error (exit 2) naming --json instead of writing a file
# called "--threads"; the same for the valued options of train, eval, analyze,
# tokenize, generate, plot and sft_eval, and for the shared options (--threads,
# --yarn-factor, --yarn-orig) that cli_shared_option parses for all of them;
# merge takes no "--bf16" as a path. Every run stops while parsing: a second
# or so in all.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" cli_values
B=$PWD/build
CK=$PWD/tests/fixtures/olmo2_mix/ckpt

# PROGRAM ARGS... must exit 2 and print "PHRASE", leaving no file behind in
# the working directory (the scratch directory $T/cwd)
refused() {   # label phrase program args...
    local label=$1 phrase=$2
    shift 2
    rm -rf "$T/cwd" && mkdir "$T/cwd"
    (cd "$T/cwd" && "$@") >"$T/log" 2>&1
    local rc=$? left
    left=$(ls -A "$T/cwd")
    if [ $rc -eq 2 ] && grep -qF -- "$phrase" "$T/log" && [ -z "$left" ]; then ok "$label: $(head -n 1 "$T/log")"
    else bad "$label: exit $rc, files left: '$left', expected '$phrase':"; sed 's/^/          /' "$T/log" | head -4; fi
}

echo "a valued option followed by another option"
refused "eval --json --threads 4" "--json: expected a value, got the option '--threads'" \
    $B/eval $CK --json --threads 4
refused "eval --seq-len --json x.json" "--seq-len: expected a value, got the option '--json'" \
    $B/eval $CK --seq-len --json x.json
refused "analyze --out --threads 1" "--out: expected a value, got the option '--threads'" \
    $B/analyze $CK --out --threads 1
refused "generate --prompt --seed 3" "--prompt: expected a value, got the option '--seed'" \
    $B/generate $CK --prompt --seed 3
refused "tokenize --out --threads 1" "--out: expected a value, got the option '--threads'" \
    $B/tokenize --tokenizer $CK --out --threads 1 in.txt
refused "sft_eval --tokenizer --seq-len 8" "--tokenizer: expected a value, got the option '--seq-len'" \
    $B/sft_eval $CK data.jsonl --tokenizer --seq-len 8
refused "plot --out --x" "--out: expected a value, got the option '--x'" $B/plot run --out --x
refused "train --set --plan" "--set: expected a value, got the option '--plan'" $B/train c.json --set --plan

echo "the shared options, parsed in one place"
for p in eval analyze generate; do
    refused "$p --threads --yarn-orig 64" "--threads: expected a value, got the option '--yarn-orig'" \
        $B/$p $CK --threads --yarn-orig 64
    refused "$p --yarn-factor --threads 1" "--yarn-factor: expected a value, got the option '--threads'" \
        $B/$p $CK --yarn-factor --threads 1
    refused "$p --yarn-orig --threads 1" "--yarn-orig: expected a value, got the option '--threads'" \
        $B/$p $CK --yarn-orig --threads 1
    refused "$p --threads twice" "--threads is given twice" $B/$p $CK --threads 1 --threads 2
    refused "$p --yarn-factor 0.5" "--yarn-factor: expected a factor >= 1, got '0.5'" $B/$p $CK --yarn-factor 0.5
done
refused "tokenize --threads --jsonl" "--threads: expected a value, got the option '--jsonl'" \
    $B/tokenize --tokenizer $CK --threads --jsonl in.txt
refused "tokenize --threads 0" "--threads: expected an integer in [1, 4096], got '0'" \
    $B/tokenize --tokenizer $CK --threads 0 in.txt
refused "sft_eval --threads --x" "--threads: expected a value, got the option '--x'" \
    $B/sft_eval $CK data.jsonl --threads --x
refused "sft_eval takes no --yarn-factor" "unknown option '--yarn-factor'" \
    $B/sft_eval $CK data.jsonl --yarn-factor 2
refused "tokenize takes no --yarn-orig" "unknown option '--yarn-orig'" \
    $B/tokenize --tokenizer $CK --yarn-orig 64 in.txt

echo "merge and train: no option taken as a path"
refused "merge A B --bf16: --bf16 is not OUT" "expected BASE ADAPTER OUT, got 2 paths" $B/merge a b --bf16
refused "merge --f16 A B C" "unknown option '--f16'" $B/merge --f16 a b c
refused "train --plna" "unknown option '--plna'" $B/train c.json --plna
refused "train --threads twice" "--threads is given twice" $B/train c.json --threads 1 --threads 2
# the hint of threads_print ("set run.threads or --threads") works for build/train too
printf '{"run": {"out_dir": "%s"}, "model": {"vocab_size": 64, "d_model": 32, "n_layers": 1, "n_heads": 2, "d_ff": 32}, "data": {"synthetic": {}, "seq_len": 32}}' \
    "$T/never" >"$T/t.json"
$B/train "$T/t.json" --threads 1 --plan >"$T/log" 2>&1 && grep -q "memory plan (B=8 T=32, 1 thread," "$T/log" &&
    ok "train --threads 1: run.threads 1 ($(grep -m1 "memory plan" "$T/log"))" ||
    bad "train --threads 1: $(tail -2 "$T/log")"

echo "a value with one leading dash reaches its parser"
refused "eval --seed -1" "--seed: expected an integer in [0, " $B/eval $CK --seed -1
refused "generate --temperature -1" "--temperature: expected a number >= 0, got '-1'" \
    $B/generate $CK --prompt x --temperature -1

[ $failures -eq 0 ] && echo "all passed" || echo "$failures failed"
exit $((failures > 0))
