#!/usr/bin/env bash
# build/tokenize's validation split: a small corpus gets at least 8 whole
# documents (at most a tenth of them) where the hash of --val draws fewer,
# said at tokenize time, the same at any thread count; a corpus the hash
# serves is split as before; a split smaller than a long row is warned about.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" tokenize_val
F=tests/fixtures/tokenizer
docs() { for i in $(seq 1 "$1"); do printf '{"text": "document %d of a small corpus"}\n' "$i"; done >"$2"; }
val_docs() { grep -o 'val [0-9]* documents' "$1" | grep -o '[0-9]*'; }

docs 200 "$T/small.jsonl"
for th in 1 2; do
    build/tokenize --tokenizer $F/gpt2.json --jsonl --threads $th --out "$T/s$th" "$T/small.jsonl" >"$T/log$th" 2>&1 ||
        bad "tokenize failed: $(tail -n 1 "$T/log$th")"
done
n=$(val_docs "$T/log1")
if [ "${n:-0}" -ge 8 ] && grep -q "the validation split takes at least 8 whole documents" "$T/log1"; then
    ok "200 documents, --val 0.005: $n whole documents in val, said so"
else bad "200 documents: val ${n:-?}: $(tail -n 3 "$T/log1")"; fi
grep -q "warning: the validation split holds [0-9]* tokens in $n documents" "$T/log1" &&
    ok "the small split is warned about: $(grep -o 'warning: .*documents' "$T/log1")" || bad "no warning about the small split"
cmp -s <(cat "$T"/s1_*.bin) <(cat "$T"/s2_*.bin) && ok "the same shards at 1 and 2 threads" || bad "the shards differ by threads"

docs 5 "$T/tiny.jsonl"
build/tokenize --tokenizer $F/gpt2.json --jsonl --out "$T/t" "$T/tiny.jsonl" >"$T/tiny.log" 2>&1
n=$(val_docs "$T/tiny.log")
[ "$n" = 0 ] && grep -q "warning: the validation split holds 0 tokens" "$T/tiny.log" &&
    ok "5 documents: none taken from training (at most a tenth), with the warning" || bad "5 documents: val $n"

docs 40 "$T/many.jsonl"
build/tokenize --tokenizer $F/gpt2.json --jsonl --val 0.25 --out "$T/m" "$T/many.jsonl" >"$T/many.log" 2>&1
n=$(val_docs "$T/many.log")
[ "${n:-0}" -ge 4 ] && ! grep -q "takes at least" "$T/many.log" && ok "--val 0.25 of 40: the hash's $n documents, no minimum" ||
    bad "--val 0.25 of 40: $(tail -n 2 "$T/many.log")"
exit $((failures > 0))
