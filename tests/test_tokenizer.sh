#!/usr/bin/env bash
# build/tokenize and tokenizer/: ids of the checked-in fixtures against the ids
# independent implementations gave (tools/node/make_tokenizer_fixture.mjs:
# js-tiktoken for gpt2 and cl100k, @huggingface/tokenizers for ByteLevel with
# add_prefix_space and for the SmolLM2-style
# Digits + ByteLevel pipeline with a BOS prefix), byte-exact round trips through
# shards, invalid UTF-8, malformed or unsupported tokenizer.json files, empty
# inputs, JSONL, the train/val split, uint32 shards, and the vocab check at
# train start.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" tokenizer
F=tests/fixtures/tokenizer
tok=build/tokenize

expect_fail() {  # name phrase command...   exits non-zero and prints phrase
    local name=$1 phrase=$2; shift 2
    if "$@" >"$T/log" 2>&1; then bad "$name: exit 0"; cat "$T/log"
    elif grep -qF -- "$phrase" "$T/log"; then ok "$name: $(grep -m1 -F -- "$phrase" "$T/log" | cut -c1-150)"
    else bad "$name: expected '$phrase', got:"; tail -3 "$T/log"; fi
}

# 1. the fixtures' ids
for n in gpt2 cl100k smol prefix; do
    if $tok --tokenizer $F/$n.json --print-ids --no-eos $F/sample.txt >"$T/$n.ids" 2>"$T/log" &&
       cmp -s "$T/$n.ids" $F/$n.ids; then ok "$n: $(wc -w <$F/$n.ids) ids identical to the reference"
    else bad "$n: ids differ from $F/$n.ids"; diff <(tr ' ' '\n' <"$T/$n.ids") <(tr ' ' '\n' <$F/$n.ids) | head -5; fi
done
# merges as "a b" strings (the form of most tokenizer.json files) give the same ids as [a, b] pairs
sed 's/\["\([^"]*\)","\([^"]*\)"\]/"\1 \2"/g' $F/cl100k.json >"$T/strings.json"
if grep -q '"merges":\["' "$T/strings.json" && $tok --tokenizer "$T/strings.json" --print-ids --no-eos $F/sample.txt |
   cmp -s - $F/cl100k.ids; then ok "merges as \"a b\" strings: the same ids"; else bad "merges as strings"; fi
# the cl100k regex spelled another way (case classes for (?i:...)) has no hand-written matcher:
# through Oniguruma it gives the same ids
sed "s/(?i:'s|'t|'re|'ve|'m|'ll|'d)/(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])/" $F/cl100k.json >"$T/spelled.json"
if grep -q "'\[sS\]" "$T/spelled.json" && $tok --tokenizer "$T/spelled.json" --print-ids --no-eos $F/sample.txt |
   cmp -s - $F/cl100k.ids; then ok "the cl100k regex spelled with case classes: the same ids through Oniguruma"
else bad "the cl100k regex spelled with case classes"; fi
# GPT-4o's tokenizer.json form, Split "Removed" with invert: the matches are the pieces, the same ids
sed 's/"behavior":"Isolated","invert":false/"behavior":"Removed","invert":true/' $F/cl100k.json >"$T/inverted.json"
if grep -q '"Removed","invert":true' "$T/inverted.json" &&
   $tok --tokenizer "$T/inverted.json" --print-ids --no-eos $F/sample.txt | cmp -s - $F/cl100k.ids; then
    ok "the cl100k Split as Removed with invert: the same ids"
else bad "the cl100k Split as Removed with invert"; fi
for th in 1 2; do   # the same shards at any thread count
    $tok --tokenizer $F/cl100k.json --val 0.3 --threads $th --shard-tokens 300 --out "$T/th$th" \
        $F/sample.txt $F/sample.txt $F/sample.txt $F/sample.txt >"$T/log" 2>&1 || bad "threads $th: $(tail -1 $T/log)"
done
if cmp -s <(cat "$T"/th1_*.bin) <(cat "$T"/th2_*.bin) && [ "$(ls "$T"/th1_*.bin | wc -l)" -ge 3 ]; then
    ok "1 and 2 threads write the same $(ls "$T"/th1_*.bin | wc -l) shards"
else bad "shards differ between 1 and 2 threads"; fi
# in a log (stderr not a terminal) the progress line comes once, as the summary at the end
if [ "$(grep -c ' ETA ' "$T/log")" = 1 ] && tail -4 "$T/log" | grep -q ' ETA 0m00s'; then
    ok "in a log: no progress lines while it runs, one summary at the end"
else bad "progress lines in a log: $(grep -c ' ETA ' "$T/log")"; cat "$T/log"; fi

# 2. round trips: shard -> --decode gives the text back byte for byte
$tok --tokenizer $F/gpt2.json --no-eos --val 0 --out "$T/rt" $F/sample.txt >"$T/log" 2>&1
$tok --tokenizer $F/gpt2.json --decode "$T/rt_train_000000.bin" >"$T/rt.txt" 2>>"$T/log"
if cmp -s "$T/rt.txt" $F/sample.txt; then ok "decode(encode(sample)) == sample ($(wc -c <$F/sample.txt) bytes)"
else bad "round trip differs"; cat "$T/log"; fi
printf 'ok \xff\xfe half \xe6\x97 surrogate \xed\xa0\x80 overlong \xc0\xaf end\n' >"$T/bad.txt"
$tok --tokenizer $F/cl100k.json --no-eos --val 0 --out "$T/bad" "$T/bad.txt" >"$T/log" 2>&1
$tok --tokenizer $F/cl100k.json --decode "$T/bad_train_000000.bin" >"$T/bad.out" 2>>"$T/log"
if cmp -s "$T/bad.out" "$T/bad.txt" && grep -q "warning: 9 bytes were not valid UTF-8" "$T/log"; then
    ok "invalid UTF-8: tokenized as bytes, round trip exact, $(grep -o '9 bytes were not valid UTF-8' $T/log)"
else bad "invalid UTF-8"; cat "$T/log"; fi

# a 300 KB pre-token (one run of letters) merges through the heap in well under a second, not in O(n^2)
head -c 300000 /dev/zero | tr '\0' 'a' >"$T/long.txt"
t0=$(date +%s%N)
timeout 60 $tok --tokenizer $F/cl100k.json --no-eos --val 0 --out "$T/long" "$T/long.txt" >"$T/log" 2>&1
ms=$((($(date +%s%N) - t0) / 1000000))
$tok --tokenizer $F/cl100k.json --decode "$T/long_train_000000.bin" 2>/dev/null | cmp -s - "$T/long.txt" && [ $ms -lt 20000 ] &&
    ok "a 300 KB pre-token: $ms ms, round trip exact" || bad "a 300 KB pre-token: $ms ms or round trip differs"

# 3. documents, EOS, BOS, added tokens
printf 'A' >"$T/a.txt"; : >"$T/empty.txt"
ids=$($tok --tokenizer $F/smol.json --print-ids "$T/a.txt" "$T/empty.txt" "$T/a.txt")
[ "$ids" = "$(printf '1000 32 1000\n1000 32 1000')" ] && ok "BOS + ids + EOS per document; the empty file is no document" \
    || bad "documents: got '$ids'"
sed 's/"single":\[{"SpecialToken":{"id":"<|endoftext|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}\]/"single":[{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"<|endoftext|>","type_id":0}}]/' \
    $F/smol.json >"$T/suffix.json"
ids=$($tok --tokenizer "$T/suffix.json" --print-ids "$T/a.txt")
[ "$ids" = "32 1000" ] && ok "a template that appends the end of text token: it is not added twice ($ids)" ||
    bad "template suffix: got '$ids'"
ids=$(printf 'x<|endoftext|>y' | $tok --tokenizer $F/gpt2.json --print-ids --no-eos /dev/stdin 2>&1)
[ "$ids" = "87 1000 88" ] && ok "an added token in the text is matched verbatim: $ids" || bad "added token: got '$ids'"
$tok --tokenizer $F/gpt2.json --out "$T/e" "$T/empty.txt" >"$T/log" 2>&1 && grep -q "0 documents" "$T/log" &&
    [ -z "$(ls "$T"/e_* 2>/dev/null)" ] && ok "an empty file: 0 documents, no shard, exit 0" || bad "empty file: $(cat $T/log)"
printf '{"text": "one"}\n\n   \n{"text": "two", "x": 1}\n{"body": "three"}\n' >"$T/d.jsonl"
expect_fail "JSONL without the field" "d.jsonl' line 5: no string field \"text\"" \
    $tok --tokenizer $F/gpt2.json --jsonl --print-ids "$T/d.jsonl"
printf '{"text": "one"}\n{"text": "tw\n' >"$T/e.jsonl"
expect_fail "JSONL syntax error" "e.jsonl' line 2: not valid JSON" $tok --tokenizer $F/gpt2.json --jsonl --print-ids "$T/e.jsonl"
ids=$(printf '{"t": "one"}\n\n{"t": "two"}' | $tok --tokenizer $F/gpt2.json --jsonl --field t --print-ids --no-eos /dev/stdin)
[ "$(printf '{"t": "one"}\n\n{"t": "two"}' | $tok --tokenizer $F/gpt2.json --jsonl --field t --print-ids --no-eos -)" = "$ids" ] &&
    ok "- reads standard input" || bad "- is not standard input"
[ "$ids" = "$(printf '505\n83 86 78')" ] && ok "JSONL: a document per line, blank lines skipped, --field" || bad "JSONL: got '$ids'"
for i in $(seq 1 40); do printf '{"text": "document %d"}\n' $i; done >"$T/many.jsonl"
$tok --tokenizer $F/gpt2.json --jsonl --val 0.25 --out "$T/s" "$T/many.jsonl" >"$T/log" 2>&1
nval=$(grep -o 'val [0-9]* documents' "$T/log" | grep -o '[0-9]*')
[ -n "$nval" ] && [ "$nval" -gt 3 ] && [ "$nval" -lt 20 ] && [ -f "$T/s_val_000000.bin" ] && [ -f "$T/s_train_000000.bin" ] &&
    ok "--val 0.25: $nval of 40 documents in val" || bad "val split: $(tail -1 $T/log)"

# 4. uint32 shards for a vocab over 65536 (the end of text token moved to id 70000)
sed 's/"<|endoftext|>":1000/"<|endoftext|>":70000/; s/"id":1000,/"id":70000,/' $F/gpt2.json >"$T/wide.json"
$tok --tokenizer "$T/wide.json" --val 0 --out "$T/w" "$T/a.txt" >"$T/log" 2>&1
hdr=$(od -An -tu4 -N16 "$T/w_train_000000.bin" | tr -s ' ')
[ "$hdr" = " 20240801 7 2 70001" ] && [ "$(stat -c %s "$T/w_train_000000.bin")" = 1032 ] &&
    ok "vocab 70001: uint32 shard, header$hdr" || bad "uint32 shard: header '$hdr'"
$tok --tokenizer "$T/wide.json" --decode "$T/w_train_000000.bin" | grep -q "A<|endoftext|>" &&
    ok "--decode reads the uint32 shard" || bad "--decode of the uint32 shard"

# compressed corpora (gzip, Zstandard), recognised by their first bytes: the same ids as plain, at any thread
# count; a truncated stream is refused naming the file and the byte offset, and leaves no shard
python3 -c 'import json, sys
for i, line in enumerate(open(sys.argv[1], encoding="utf-8").read().split("\n")): print(json.dumps({"text": line * (1 + i % 3)}))' \
    $F/sample.txt >"$T/c.jsonl"
gzip -c "$T/c.jsonl" >"$T/c.jsonl.gz" && zstd -q -c "$T/c.jsonl" >"$T/c.jsonl.zst" && cp "$T/c.jsonl.gz" "$T/c_gz.dat" &&
    gzip -c $F/sample.txt >"$T/s.txt.gz" || bad "making the compressed files (gzip, zstd)"
$tok --tokenizer $F/cl100k.json --jsonl --print-ids "$T/c.jsonl" >"$T/c.ids"
for f in c.jsonl.gz c.jsonl.zst c_gz.dat; do
    if $tok --tokenizer $F/cl100k.json --jsonl --print-ids "$T/$f" | cmp -s - "$T/c.ids"; then
        ok "$f: the ids of the plain JSONL ($(wc -l <"$T/c.ids") documents)"
    else bad "$f: other ids than the plain JSONL"; fi
done
$tok --tokenizer $F/cl100k.json --print-ids --no-eos "$T/s.txt.gz" | cmp -s - $F/cl100k.ids &&
    ok "s.txt.gz: the reference ids of sample.txt" || bad "s.txt.gz: other ids"
$tok --tokenizer $F/cl100k.json --jsonl --val 0.2 --threads 1 --out "$T/plain1" "$T/c.jsonl" >"$T/log" 2>&1 || bad "plain shards"
for th in 1 2; do
    $tok --tokenizer $F/cl100k.json --jsonl --val 0.2 --threads $th --out "$T/zst$th" "$T/c.jsonl.zst" >"$T/log" 2>&1 &&
        cmp -s "$T/plain1_train_000000.bin" "$T/zst${th}_train_000000.bin" &&
        cmp -s "$T/plain1_val_000000.bin" "$T/zst${th}_val_000000.bin" &&
        ok "c.jsonl.zst with $th thread(s): the shards of the plain file, byte for byte" ||
        bad "c.jsonl.zst with $th thread(s): other shards: $(tail -1 "$T/log")"
done
# a small corpus where --val 0.005 draws no document: a compressed input is tokenized again to put the
# forced val documents in (a plain one is counted first); the same shards either way
$tok --tokenizer $F/cl100k.json --jsonl --val 0.005 --out "$T/small_plain" "$T/c.jsonl" >"$T/log" 2>&1 || bad "small plain"
$tok --tokenizer $F/cl100k.json --jsonl --val 0.005 --out "$T/small_gz" "$T/c.jsonl.gz" >"$T/log" 2>&1 &&
    grep -q "a second pass puts 1 more into val" "$T/log" &&
    cmp -s "$T/small_plain_train_000000.bin" "$T/small_gz_train_000000.bin" &&
    cmp -s "$T/small_plain_val_000000.bin" "$T/small_gz_val_000000.bin" &&
    ok "a small gzip corpus: a second pass forces its val document; the shards of the plain file" ||
    bad "a small gzip corpus: $(tail -2 "$T/log")"
expect_fail "a small corpus from a pipe that would need a second pass" "an input is a pipe, which cannot be read again" \
    sh -c "cat '$T/c.jsonl' | $tok --tokenizer $F/cl100k.json --jsonl --val 0.005 --out '$T/small_pipe' /dev/stdin"
head -c 400 "$T/c.jsonl.gz" >"$T/cut.jsonl.gz"
expect_fail "a truncated .jsonl.gz" "cut.jsonl.gz' ends inside its gzip stream (at byte offset 400): the file is truncated" \
    $tok --tokenizer $F/cl100k.json --jsonl --out "$T/cut" "$T/cut.jsonl.gz"
head -c 400 "$T/c.jsonl.zst" >"$T/cut.jsonl.zst"
expect_fail "a truncated .jsonl.zst" "cut.jsonl.zst' ends inside a Zstandard frame (at byte offset 400)" \
    $tok --tokenizer $F/cl100k.json --jsonl --val 0 --out "$T/cut" "$T/c.jsonl" "$T/cut.jsonl.zst"
ls "$T"/cut_* >/dev/null 2>&1 && bad "a truncated input left shards: $(ls "$T"/cut_*)" || ok "... and no shard is left"

# 5. malformed and unsupported tokenizer.json: refused, naming the JSON path
head -c 5000 $F/gpt2.json >"$T/trunc.json"
expect_fail "truncated JSON" "not valid JSON at byte offset" $tok --tokenizer "$T/trunc.json" --print-ids "$T/a.txt"
sed 's/"normalizer":null/"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"BertNormalizer"}]}/' \
    $F/gpt2.json >"$T/bert.json"
expect_fail "an unknown normalizer" 'normalizer.normalizers[1].type: normalizer "BertNormalizer" is not supported' \
    $tok --tokenizer "$T/bert.json" --print-ids "$T/a.txt"
sed 's/"type":"BPE"/"type":"Unigram"/' $F/gpt2.json >"$T/uni.json"
expect_fail "a Unigram model" 'model.type: "Unigram" is not supported' $tok --tokenizer "$T/uni.json" --print-ids "$T/a.txt"
sed 's/p{N}{1,3}/p{N}{1,3/; s/(?i:/((?i:/' $F/cl100k.json >"$T/re.json"
expect_fail "a bad regex" "pre_tokenizer.pretokenizers[0].pattern.Regex: bad regex \"((?i:'s|" \
    $tok --tokenizer "$T/re.json" --print-ids "$T/a.txt"
expect_fail "a bad regex: Oniguruma's message" "end pattern with unmatched parenthesis (Oniguruma)" \
    $tok --tokenizer "$T/re.json" --print-ids "$T/a.txt"
# a search past Oniguruma's backtracking limit names the document and the byte offset in it
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a|a)*$"; json.dump(d, open(sys.argv[2], "w"))' \
    $F/cl100k.json "$T/limit.json"
printf '{"text": "fine"}\n{"text": "xx %s!"}\n' "$(printf 'a%.0s' $(seq 36))" >"$T/limit.jsonl"
expect_fail "the regex's backtracking limit in a JSONL record" \
    "failed searching from byte offset 0 of the string of \"text\" on line 2 of '$T/limit.jsonl'" \
    $tok --tokenizer "$T/limit.json" --jsonl --print-ids "$T/limit.jsonl"
printf 'xx %s!' "$(printf 'a%.0s' $(seq 36))" >"$T/limit.txt"
expect_fail "the regex's backtracking limit in a text file" "byte offset 0 of '$T/limit.txt'" \
    $tok --tokenizer "$T/limit.json" --print-ids "$T/limit.txt"
sed 's/"merges":\[\["Ġ","t"\]/"merges":[["Ġ","t"],["Ġ","ZZZ"]/' $F/gpt2.json >"$T/merge.json"
expect_fail "a merge of an unknown token" 'model.merges[1]: "ZZZ" is not a token of model.vocab' \
    $tok --tokenizer "$T/merge.json" --print-ids "$T/a.txt"
sed 's/"!":0,//' $F/gpt2.json >"$T/nobyte.json"
expect_fail "a byte without a token" "model.vocab: no token for byte 0x21" $tok --tokenizer "$T/nobyte.json" --print-ids "$T/a.txt"
sed 's/"dropout":null/"dropout":0.1/' $F/gpt2.json >"$T/drop.json"
expect_fail "BPE dropout" "model.dropout = 0.1 is not supported" $tok --tokenizer "$T/drop.json" --print-ids "$T/a.txt"
# a boolean given as a string is refused, never read as false
sed 's/"add_prefix_space":false/"add_prefix_space":"true"/' $F/gpt2.json >"$T/strbool.json"
expect_fail "a boolean given as a string" 'pre_tokenizer.add_prefix_space: expected true or false, not a string' \
    $tok --tokenizer "$T/strbool.json" --print-ids "$T/a.txt"
sed 's/"fuse_unk":false/"fuse_unk":"false"/' $F/gpt2.json >"$T/strbool2.json"
expect_fail "model.fuse_unk as a string" 'model.fuse_unk: expected true or false, not a string' \
    $tok --tokenizer "$T/strbool2.json" --print-ids "$T/a.txt"
expect_fail "a missing tokenizer" "cannot read tokenizer '$T/none'" \
    $tok --tokenizer "$T/none" --print-ids "$T/a.txt"

# 6. train refuses a shard written with a vocab larger than the model's (ids all fit: 'A' = 32 < 64)
$tok --tokenizer $F/gpt2.json --no-eos --val 0 --out "$T/v" "$T/a.txt" "$T/a.txt" "$T/a.txt" >"$T/log" 2>&1
printf '{"run": {"out_dir": "%s/run"}, "model": {"vocab_size": 64, "d_model": 32, "n_layers": 1, "n_heads": 4, "d_ff": 64},
 "data": {"train": ["%s/v_train_000000.bin"], "seq_len": 2}, "optim": {"warmup_steps": 0},
 "train": {"batch_size": 1, "steps": 1, "eval_every": 0}}\n' "$T" "$T" >"$T/cfg.json"
expect_fail "train: tokenizer vocab > model vocab" "tokenizer of 1001 tokens (header int 3), more than the model's vocab_size 64" \
    build/train "$T/cfg.json"

echo "tokenizer: $failures failed"
[ "$failures" -eq 0 ]
