#!/usr/bin/env bash
# Nothing lost, nothing silently wrong, where programs write:
#   1. a user-named output (eval --json, plot --out, analyze's files) that is a
#      symbolic link writes its target (the link stays), a FIFO or device is
#      streamed to (it stays what it was; /dev/full is an error exit naming
#      it), /dev/stdout is the program's own output; a regular file is
#      replaced atomically;
#   2. a failed write to standard output (> /dev/full) is exit 1 "<prog>:
#      writing standard output failed: ..." for tokenize, eval, sft_eval,
#      generate and a --help;
#   3. tokenize to an existing prefix that fails keeps the earlier shards
#      byte for byte and leaves no temporary file;
#   4. a tokenize that succeeds leaves exactly its own shards (the earlier
#      run's others removed, other names untouched); a second tokenize to a
#      prefix in use stops naming the holder's pid; a shard name that is a
#      symbolic link is refused (a rename would replace the link);
#   5. a file-size limit (ulimit -f): exit 1 naming the file, no partial
#      output, for tokenize and plot; a tokenize killed while writing leaves
#      only temporary shards, which the next run removes (those of live
#      processes are kept);
#   6. \u0000 in a JSONL string is refused naming file, line and key
#      (tokenize --jsonl and the JSONL reader of sft_eval and train).
# Tiny inputs, one thread: a few seconds.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" outputs
F=tests/fixtures/tokenizer
CK=tests/fixtures/olmo2_mix/ckpt
tok=build/tokenize

# exits with status rc (not by a signal) and prints phrase: expect NAME RC PHRASE COMMAND...
expect() {
    local name=$1 want=$2 phrase=$3; shift 3
    "$@" >"$T/log" 2>&1
    local rc=$?
    if [ $rc -eq "$want" ] && grep -qF -- "$phrase" "$T/log"; then ok "$name: exit $rc$(
        [ -n "$phrase" ] && echo ": $(grep -m1 -F -- "$phrase" "$T/log" | cut -c1-150)")"
    else bad "$name: exit $rc (expected $want and '$phrase'): $(tail -2 "$T/log" | cut -c1-200)"; fi
}
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }   # name condition
ev() { build/eval $CK --items 1 --lengths 128 --tasks single --threads 1 "$@"; }

echo "1. user-named outputs that are not regular files"
echo old >"$T/real.json"
ln -s real.json "$T/link.json"
expect "eval --json a symbolic link" 0 "" ev --json "$T/link.json"
check "  the link is kept, its target holds the JSON" \
    '[ -L "$T/link.json" ] && [ "$(readlink "$T/link.json")" = real.json ] && grep -q repoc-eval "$T/real.json"'
mkfifo "$T/fifo.json"
timeout 30 cat "$T/fifo.json" >"$T/from_fifo.json" &
reader=$!
expect "eval --json a FIFO" 0 "" timeout 60 build/eval $CK --items 1 --lengths 128 --tasks single --threads 1 \
    --json "$T/fifo.json"
wait $reader
check "  the FIFO stays a FIFO, its reader got the JSON" '[ -p "$T/fifo.json" ] && grep -q repoc-eval "$T/from_fifo.json"'
# /dev/full and /dev/stdout through links of our own: a broken build (we may be root) replaces the links, not /dev
ln -s /dev/full "$T/full.json"
ln -s /proc/self/fd/1 "$T/stdout.json"
expect "eval --json /dev/full: exit 1 naming it" 1 "writing '$T/full.json': No space left on device" \
    ev --json "$T/full.json"
check "  the link still points at /dev/full" '[ -L "$T/full.json" ] && [ -c /dev/full ]'
ev --json "$T/stdout.json" 2>/dev/null | cat >"$T/piped.txt"
check "eval --json /dev/stdout into a pipe: the JSON follows the table on it" \
    'grep -q "^single" "$T/piped.txt" && grep -q repoc-eval "$T/piped.txt" && [ -L "$T/stdout.json" ]'
ev --json "$T/stdout.json" >"$T/redirected.txt" 2>/dev/null
check "eval --json /dev/stdout into a file: the file keeps the table, the JSON after it, then \"wrote\"" \
    'grep -q "^single" "$T/redirected.txt" && grep -q repoc-eval "$T/redirected.txt" && [ -L "$T/stdout.json" ] &&
     [ "$(tail -1 "$T/redirected.txt")" = "wrote $T/stdout.json" ]'
ln -s nothing.json "$T/dangling.json"
expect "eval --json a link to nothing: refused before any work" 1 "is a symbolic link to a file that does not exist" \
    ev --json "$T/dangling.json"

mkdir -p "$T/run"
printf '{"step": 1, "loss": 3.0, "lr": 0.001}\n{"step": 2, "loss": 2.5, "lr": 0.001}\n' >"$T/run/metrics.jsonl"
echo old >"$T/real.svg"
ln -s real.svg "$T/link.svg"
expect "plot --out a symbolic link" 0 "wrote" build/plot "$T/run" --out "$T/link.svg"
check "  the link is kept, its target holds the SVG" '[ -L "$T/link.svg" ] && grep -q "</svg>" "$T/real.svg"'
mkfifo "$T/fifo.svg"
timeout 30 cat "$T/fifo.svg" >"$T/from_fifo.svg" &
reader=$!
expect "plot --out a FIFO" 0 "wrote" timeout 60 build/plot "$T/run" --out "$T/fifo.svg"
wait $reader
check "  the FIFO stays a FIFO, its reader got the SVG" '[ -p "$T/fifo.svg" ] && grep -q "</svg>" "$T/from_fifo.svg"'
ln -s /dev/full "$T/full.svg"
expect "plot --out a link to /dev/full: exit 1 naming it" 1 "writing '$T/full.svg': No space left on device" \
    build/plot "$T/run" --out "$T/full.svg"
check "  the link still points at /dev/full, a character device" \
    '[ -L "$T/full.svg" ] && [ "$(readlink "$T/full.svg")" = /dev/full ] && [ -c /dev/full ]'

mkdir -p "$T/an"
echo old >"$T/an_real.json"
ln -s ../an_real.json "$T/an/analysis.json"
mkfifo "$T/an/positions.csv"
timeout 30 cat "$T/an/positions.csv" >"$T/from_fifo.csv" &
reader=$!
expect "analyze --out DIR whose analysis.json is a link and positions.csv a FIFO" 0 "wrote" \
    timeout 60 build/analyze $CK --items 1 --length 32 --threads 1 --out "$T/an"
wait $reader
check "  the link is kept (its target holds the JSON), the FIFO's reader got the CSV" \
    '[ -L "$T/an/analysis.json" ] && grep -q repoc-analyze "$T/an_real.json" && [ -p "$T/an/positions.csv" ] &&
     [ "$(head -1 "$T/from_fifo.csv")" = layer,head,t,z ]'

echo "2. a failed write to standard output is an error exit"
printf 'int main(void) { return 0; }\n' >"$T/small.txt"
$tok --tokenizer $F/gpt2.json --val 0 --out "$T/g/d" $F/sample.txt $F/sample.txt >"$T/log" 2>&1 || bad "tokenize: $(tail -1 "$T/log")"
full=": writing standard output failed: No space left on device"
expect "tokenize --print-ids > /dev/full" 1 "tokenize$full" sh -c "$tok --tokenizer $F/gpt2.json --print-ids $F/sample.txt >/dev/full"
expect "tokenize --decode > /dev/full" 1 "tokenize$full" sh -c "$tok --tokenizer $F/gpt2.json --decode $T/g/d_train_000000.bin >/dev/full"
expect "tokenize --help > /dev/full" 1 "tokenize$full" sh -c "$tok --help >/dev/full"
expect "eval > /dev/full" 1 "eval$full" sh -c "build/eval $CK --items 1 --lengths 128 --tasks single --threads 1 >/dev/full"
printf '{"input_ids": [1, 2, 3, 4, 5, 6]}\n{"input_ids": [3, 4, 5, 6]}\n' >"$T/sft.jsonl"
expect "sft_eval > /dev/full" 1 "sft_eval$full" sh -c "build/sft_eval $CK $T/sft.jsonl --seq-len 8 --threads 1 >/dev/full"
printf '{"run": {"out_dir": "%s/g/run", "threads": 1}, "model": {"vocab_size": 1024, "d_model": 16, "n_layers": 1,
  "n_heads": 2, "d_ff": 32}, "data": {"train": ["%s/g/d_train_000000.bin"], "seq_len": 16},
  "optim": {"warmup_steps": 0}, "train": {"batch_size": 1, "steps": 1, "eval_every": 0}}\n' "$T" "$T" >"$T/g/run.json"
build/train "$T/g/run.json" >"$T/log" 2>&1 || bad "a 1-step checkpoint for generate: $(tail -1 "$T/log")"
expect "generate > /dev/full" 1 "generate$full" sh -c "build/generate $T/g/run --tokenizer $F/gpt2.json --threads 1 \
    --prompt 'int main' --max-new-tokens 4 >/dev/full"
expect "generate into a pipe still exits 0" 0 "" sh -c "build/generate $T/g/run --tokenizer $F/gpt2.json --threads 1 \
    --prompt 'int main' --max-new-tokens 4 | cat"

echo "3, 4. tokenize replaces a prefix's shards only when it succeeds, and leaves only its own"
P="$T/d/web"
$tok --tokenizer $F/gpt2.json --val 0.5 --shard-tokens 200 --out "$P" $F/sample.txt $F/sample.txt $F/sample.txt \
    $F/sample.txt >"$T/log" 2>&1 || bad "first tokenize: $(tail -1 "$T/log")"
n_first=$(ls "$P"_train_*.bin "$P"_val_*.bin | wc -l)
cat "$P"_train_*.bin "$P"_val_*.bin >"$T/first.bin"
printf '{"text": "a document"}\n{"text": broken\n' >"$T/bad.jsonl"
expect "a re-run to the prefix that fails on line 2" 1 "'$T/bad.jsonl' line 2: not valid JSON" \
    $tok --tokenizer $F/gpt2.json --jsonl --val 0 --out "$P" "$T/bad.jsonl"
check "  the earlier $n_first shards are intact, byte for byte, and no temporary file is left" \
    'cmp -s "$T/first.bin" <(cat "$P"_train_*.bin "$P"_val_*.bin) && ! ls "$P"_*.tmp.* >/dev/null 2>&1'
for f in web_train_notes.txt web_train_000001.bin.bak web_train_1.bin web_train_0000001.bin web_train_x_000001.bin \
         webx_train_000001.bin; do echo keep >"$T/d/$f"; done
expect "a re-run to the prefix with one shard and no val" 0 "removed $((n_first - 1)) shard(s) of an earlier run" \
    $tok --tokenizer $F/gpt2.json --val 0 --out "$P" "$T/small.txt"
check "  a finished run leaves no lock file" '[ ! -e "$P.lock" ]'
check "  only its own shard is left of the shard names, every other name kept" \
    '[ "$(cd "$T/d" && ls | LC_ALL=C sort | tr "\n" " ")" = "web_train_000000.bin web_train_0000001.bin \
web_train_000001.bin.bak web_train_1.bin web_train_notes.txt web_train_x_000001.bin webx_train_000001.bin " ]'
cp "$P"_train_000000.bin "$T/second.bin"
( exec 9<>"$P.lock"; flock -n 9 || exit 1; echo $BASHPID >"$P.lock"; exec sleep 30 ) &   # the lock dies with it
holder=$!
wait_for "grep -q $holder '$P.lock' 2>/dev/null"
expect "a tokenize to a prefix that another holds" 1 "is being written by another tokenize (pid $holder holds '$P.lock')" \
    $tok --tokenizer $F/gpt2.json --val 0 --out "$P" $F/sample.txt
kill $holder; wait $holder 2>/dev/null
check "  the holder's shards are untouched" 'cmp -s "$T/second.bin" "$P"_train_000000.bin'

mkdir -p "$T/l"
echo mine >"$T/l/real.bin"
ln -s real.bin "$T/l/web_train_000000.bin"
expect "a shard name that is a symbolic link: refused before any work" 1 "shard '$T/l/web_train_000000.bin' is not a regular file" \
    $tok --tokenizer $F/gpt2.json --val 0 --out "$T/l/web" $F/sample.txt
check "  the link and its target are untouched" \
    '[ -L "$T/l/web_train_000000.bin" ] && [ "$(cat "$T/l/real.bin")" = mine ] && [ $(ls "$T/l" | wc -l) = 3 ]'

echo "5. a file-size limit, killed runs"
expect "tokenize under ulimit -f 1: exit 1 naming the file" 1 "_train_000000.bin.tmp." \
    bash -c "set -o pipefail; ulimit -f 1; $tok --tokenizer $F/gpt2.json --val 0 --out $T/u/web $F/sample.txt 2>&1 | cat"
check "  the message says why, and no shard or temporary file is left" \
    'grep -q "File too large" "$T/log" && [ "$(ls "$T/u")" = web.lock ]'
expect "plot under ulimit -f 1: exit 1 naming the file" 1 "File too large" \
    bash -c "set -o pipefail; ulimit -f 1; build/plot $T/run --out $T/u/big.svg 2>&1 | cat"
check "  no SVG and no temporary file is left" '[ "$(ls "$T/u")" = web.lock ]'
cp "$P"_train_000000.bin "$T/before_kill.bin"
for _ in $(seq 300); do cat $F/sample.txt; done >"$T/big.txt"   # 270 KB; 80 of them take seconds
big=()
for _ in $(seq 80); do big+=("$T/big.txt"); done
$tok --tokenizer $F/gpt2.json --threads 1 --val 0 --shard-tokens 5000 --out "$P" "${big[@]}" >"$T/killed.log" 2>&1 &
k=$!
wait_for "ls '$P'_train_000001.bin.tmp.$k >/dev/null 2>&1"
kill -KILL $k
wait $k 2>/dev/null
check "a tokenize killed while writing (pid $k) leaves temporary shards only, the earlier shard intact" \
    'cmp -s "$T/before_kill.bin" "$P"_train_000000.bin && [ ! -e "$P"_train_000001.bin ] &&
     ls "$P"_train_*.bin.tmp.$k >/dev/null 2>&1'
expect "the next tokenize to the prefix removes them" 0 "temporary shard(s) that killed runs" \
    $tok --tokenizer $F/gpt2.json --val 0 --out "$P" "$T/small.txt"
check "  none is left" '! ls "$P"_*.tmp.$k >/dev/null 2>&1'
sh -c 'exit 0' & gone=$!
wait $gone
touch "$P"_train_000003.bin.tmp.$gone "$P"_val_000000.bin.tmp.$$
expect "a tokenize after a killed one (pid $gone)" 0 "removed 1 temporary shard(s) that killed runs" \
    $tok --tokenizer $F/gpt2.json --val 0 --out "$P" "$T/small.txt"
check "  the gone pid's temporary shard is removed, a live process's kept" \
    '[ ! -e "$P"_train_000003.bin.tmp.$gone ] && [ -e "$P"_val_000000.bin.tmp.$$ ]'

echo "6. \\u0000 in a JSONL string"
printf '{"text": "ok"}\n{"id": 3, "text": "cut\\u0000here"}\n' >"$T/nul.jsonl"
expect "tokenize --jsonl: refused naming file, line and key" 1 "'$T/nul.jsonl' line 2: the string of \"text\" holds \\u0000" \
    $tok --tokenizer $F/gpt2.json --jsonl --print-ids "$T/nul.jsonl"
printf '{"text": "a \\\\u0000 written out"}\n' >"$T/escaped.jsonl"
expect "tokenize --jsonl: an escaped backslash before u0000 is plain text" 0 "" \
    $tok --tokenizer $F/gpt2.json --jsonl --print-ids "$T/escaped.jsonl"
printf '{"prompt": "a", "completion": "b\\u0000"}\n' >"$T/nul_sft.jsonl"
expect "sft_eval: refused naming file, line and key" 1 "$T/nul_sft.jsonl:1: the string of \"completion\" holds \\u0000" \
    build/sft_eval $CK "$T/nul_sft.jsonl" --seq-len 8 --threads 1
printf '{"text": ""}\n{"text": "a"}\n' >"$T/empty.jsonl"
expect "tokenize --jsonl --no-eos with an empty first document" 0 "" \
    $tok --tokenizer $F/gpt2.json --jsonl --no-eos --val 0 --out "$T/e/x" "$T/empty.jsonl"

echo "test_outputs: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
