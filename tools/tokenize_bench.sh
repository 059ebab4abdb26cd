#!/usr/bin/env bash
# build/tokenize's throughput side by side in one run (make bench-tokenize; docs/tokenizer.md):
#   - at 1 and 2 threads, and npm tiktoken (WebAssembly, 1 thread) on the same documents, for
#     cl100k_base and o200k_base converted from js-tiktoken's ranks, each with tiktoken's spelling of
#     the pre-tokenizer regex and with js-tiktoken's (tools/node/tiktoken_to_json.mjs --js-pattern);
#   - at 1 thread on the same JSONL plain, gzip'ed and zstd'ed (data/text_input.c).
# REPEATS alternated rounds, the best of each; MB of text per second as build/tokenize and
# tools/node/bench_tiktoken.mjs print them. The corpus: MB megabytes of this machine's text
# (tools/node/make_corpus.mjs). Needs node, gzip, zstd and `make deps-node`.
# Usage: tools/tokenize_bench.sh [--mb MB] [--repeats N] [--out DIR]
set -u
cd "$(dirname "$0")/.." || exit 1
mb=16; repeats=3; out=build/tokbench
while [ $# -gt 0 ]; do
    case $1 in
        --mb) mb=$2; shift 2 ;; --repeats) repeats=$2; shift 2 ;; --out) out=$2; shift 2 ;;
        *) echo "unknown option $1"; exit 2 ;;
    esac
done
export NODE_PATH=$PWD/build/node/node_modules
[ -d "$NODE_PATH/tiktoken" ] || { echo "tokenize_bench: no npm packages (make deps-node)"; exit 1; }
mkdir -p "$out"
toks="cl100k_base cl100k_js o200k_base o200k_js"
for t in $toks; do
    enc=${t%_js}; enc=${enc%_base}_base; flag=; [ "$t" = "${t%_js}" ] || flag=--js-pattern
    [ -s build/tok/$t/tokenizer.json ] || { mkdir -p build/tok/$t &&
        node tools/node/tiktoken_to_json.mjs "$enc" build/tok/$t/tokenizer.json $flag; } || exit 1
done
node tools/node/make_corpus.mjs "$out/corpus.jsonl" "$mb" 2>"$out/corpus.log" || { cat "$out/corpus.log"; exit 1; }
tail -1 "$out/corpus.log"
gzip -6 -c "$out/corpus.jsonl" >"$out/corpus.jsonl.gz"
zstd -q -3 -c "$out/corpus.jsonl" >"$out/corpus.jsonl.zst"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"

rate() { # TOKENIZER THREADS FILE: build/tokenize's MB/s on FILE given four times (runs of a second or more)
    build/tokenize --tokenizer "build/tok/$1" --jsonl --no-eos --val 0 --threads "$2" --out "$out/shard" "$3" "$3" "$3" "$3" 2>&1 |
        sed -n 's/.* s: \([0-9.]*\) MB\/s.*/\1/p'
}
declare -A best sum
keep() { # KEY RATE: the best so far, and the sum for the mean
    best[$1]=$(awk -v a="${best[$1]:-0}" -v b="$2" 'BEGIN { print (b > a ? b : a) }')
    sum[$1]=$(awk -v a="${sum[$1]:-0}" -v b="$2" 'BEGIN { print a + b }')
}
for ((r = 1; r <= repeats; r++)); do
    for t in $toks; do
        for th in 1 2; do keep $t.$th "$(rate $t $th "$out/corpus.jsonl")"; done
    done
    for enc in cl100k_base o200k_base; do
        v=$(node tools/node/bench_tiktoken.mjs $enc "$out/corpus.jsonl" 1 | sed -n 's/.*tokens, \([0-9.]*\) MB\/s/\1/p')
        keep wasm.$enc "$v"
    done
    for z in "" .gz .zst; do keep "z$z" "$(rate cl100k_base 1 "$out/corpus.jsonl$z")"; done
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
echo "MB of text per second, best of $repeats alternated rounds:"
echo "| tokenizer.json | 1 thread | 2 threads | 2 / 1 (best; mean of the rounds) | tiktoken (WebAssembly) | 1 thread / tiktoken |"
echo "|---|---|---|---|---|---|"
for t in $toks; do
    enc=${t%_js}; enc=${enc%_base}_base
    echo "| $t | ${best[$t.1]} | ${best[$t.2]} | $(ratio "${best[$t.2]}" "${best[$t.1]}")x;" \
         "$(ratio "${sum[$t.2]}" "${sum[$t.1]}")x |" \
         "${best[wasm.$enc]} | $(ratio "${best[$t.1]}" "${best[wasm.$enc]}")x |"
done
echo "compressed input, cl100k_base, 1 thread: plain ${best[z]}, .gz ${best[z.gz]}" \
     "($(ratio "${best[z.gz]}" "${best[z]}")x), .zst ${best[z.zst]} ($(ratio "${best[z.zst]}" "${best[z]}")x)"
echo "load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
rm -f "$out"/shard_*.bin
