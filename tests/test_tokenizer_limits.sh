#!/usr/bin/env bash
# tokenizer/ against abusive or malformed tokenizer.json files and inputs: ids
# bounded by the number of entries, added tokens that share an id (with each
# other or with a vocab entry of another text), a NUL in a string, a
# non-integer template id, a path that is not a regular file, --decode with
# another tokenizer; 100 000 added
# tokens with one first byte (the trie keeps encoding fast, leftmost-longest),
# and a pre-token over TOK_MAX_PRETOKEN refused instead of allocating ~84
# bytes per byte.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" tokenizer_limits
F=tests/fixtures/tokenizer
tok=build/tokenize
printf 'A' >"$T/a.txt"

expect_fail() {  # name phrase command...   exits non-zero and prints phrase
    local name=$1 phrase=$2; shift 2
    if "$@" >"$T/log" 2>&1; then bad "$name: exit 0"; head -3 "$T/log"
    elif grep -qF -- "$phrase" "$T/log"; then ok "$name: $(grep -m1 -F -- "$phrase" "$T/log" | cut -c1-170)"
    else bad "$name: expected '$phrase', got:"; tail -3 "$T/log"; fi
}
# gpt2.json with more added tokens first: with_added OUT ENTRIES (JSON objects, comma-separated; "-": stdin)
with_added() {
    if [ "$2" = - ]; then cat >"$T/extra"; else printf '%s' "$2" >"$T/extra"; fi
    awk -v extra="$T/extra" 'BEGIN { RS = "^$"; getline add <extra }
        { i = index($0, "\"added_tokens\":["); printf "%s%s,%s", substr($0, 1, i + 15), add, substr($0, i + 16) }' \
        $F/gpt2.json >"$1"
}

# 1. an id far above the number of entries: refused before any allocation (it asked for ~48 GB)
sed 's/"!":0,/"!":0,"zz":2147483645,/' $F/gpt2.json >"$T/huge_id.json"
expect_fail "id 2147483645 among 1003 entries" 'token "zz" has id 2147483645, far above the 1003 entries' \
    bash -c "ulimit -v 4000000; timeout 20 $tok --tokenizer $T/huge_id.json --print-ids $T/a.txt"

# 2. ids shared: an added token on a vocab id of other text, two added tokens on one id
sed 's/"id":1000,"content":"<|endoftext|>"/"id":3,"content":"<|endoftext|>"/' $F/gpt2.json >"$T/on_vocab.json"
expect_fail "an added token on the id of vocab \"\$\"" 'model.vocab["$"]: id 3 is also the added token "<|endoftext|>"' \
    $tok --tokenizer "$T/on_vocab.json" --print-ids "$T/a.txt"
with_added "$T/same_id.json" '{"id":1000,"content":"<|x|>"}'
expect_fail "two added tokens with id 1000" 'added_tokens[1] "<|endoftext|>": id 1000 is also the added token "<|x|>"' \
    $tok --tokenizer "$T/same_id.json" --print-ids "$T/a.txt"

# 3. a NUL in a string would cut it ("a\u0000b" became "a"); an escaped backslash before u0000 is no NUL
with_added "$T/nul.json" '{"id":1001,"content":"a\u0000b"}'
expect_fail "added token \"a\\u0000b\"" "byte offset 89: a NUL character (\\u0000) is not supported" \
    $tok --tokenizer "$T/nul.json" --print-ids "$T/a.txt"
with_added "$T/esc.json" '{"id":1001,"content":"a\\u0000b"}'
ids=$(printf 'a\\u0000b' | $tok --tokenizer "$T/esc.json" --print-ids --no-eos /dev/stdin 2>&1)
[ "$ids" = 1001 ] && ok "added token \"a\\\\u0000b\" (a backslash, then u0000): accepted, matched ($ids)" ||
    bad "escaped backslash: got '$ids'"

# 4. a template id must be an integer id (0.5 was taken as 0)
sed 's/"ids":\[1000\]/"ids":[0.5]/' $F/smol.json >"$T/half.json"
expect_fail "template id 0.5" 'special_tokens["<|endoftext|>"].ids: 0.5 is not a token id' \
    $tok --tokenizer "$T/half.json" --print-ids "$T/a.txt"

# 5. a tokenizer path that is no regular file
mkfifo "$T/fifo.json"
expect_fail "a FIFO" "cannot read tokenizer '$T/fifo.json': not a regular file" \
    timeout 10 $tok --tokenizer "$T/fifo.json" --print-ids "$T/a.txt"
expect_fail "/dev/zero" "cannot read tokenizer '/dev/zero': not a regular file" \
    timeout 10 $tok --tokenizer /dev/zero --print-ids "$T/a.txt"

# a shard decoded with another tokenizer: named as such (it advised a larger model vocab_size)
sed 's/"<|endoftext|>":1000/"<|endoftext|>":70000/; s/"id":1000,/"id":70000,/' $F/gpt2.json >"$T/wide.json"
$tok --tokenizer "$T/wide.json" --val 0 --out "$T/w" "$T/a.txt" >"$T/log" 2>&1
expect_fail "--decode with another tokenizer" "was written with a tokenizer of 70001 tokens (header int 3), but '$F/gpt2.json' has 1001: decode with the tokenizer that wrote it" \
    $tok --tokenizer $F/gpt2.json --decode "$T/w_train_000000.bin"
printf '\x41\x00\x50\xc3' >"$T/ids.u16"   # ids 65 and 50000
expect_fail "--decode of an id the tokenizer lacks" "token index 1 (id 50000) has no token in tokenizer '$F/gpt2.json' (of 1001 ids)" \
    $tok --tokenizer $F/gpt2.json --decode "$T/ids.u16"

# 6. 100 000 added tokens <t0> .. <t99999> (ids 1001 ..) and <t1>> (id 101001): 200 KB of '<' encode in
#    well under a second (every byte scanned every added token: 0.005 MB/s); leftmost-longest as before
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "{\"id\":%d,\"content\":\"<t%d>\"},", 1001 + i, i
             printf "{\"id\":101001,\"content\":\"<t1>>\"}" }' | with_added "$T/many.json" -
ids=$(printf 'x<t12><t1><t123y<t1>><t99999>' | timeout 20 $tok --tokenizer "$T/many.json" --print-ids --no-eos /dev/stdin 2>&1)
want="87 1013 1002 27 83 16 17 18 88 101001 101000"
[ "$ids" = "$want" ] && ok "100 000 added tokens: leftmost-longest ids $ids" || bad "many added tokens: got '$ids', want '$want'"
head -c 200000 /dev/zero | tr '\0' '<' >"$T/lt.txt"
t0=$(date +%s%N)
timeout 60 $tok --tokenizer "$T/many.json" --no-eos --val 0 --out "$T/lt" "$T/lt.txt" >"$T/log" 2>&1
ms=$((($(date +%s%N) - t0) / 1000000))
$tok --tokenizer "$T/many.json" --decode "$T/lt_train_000000.bin" 2>/dev/null | cmp -s - "$T/lt.txt" && [ $ms -lt 10000 ] &&
    ok "200 KB of '<' with 100 000 added tokens starting with '<': $ms ms, round trip exact" ||
    bad "200 KB of '<': $ms ms or round trip differs ($(tail -1 "$T/log"))"

# 7. a pre-token over TOK_MAX_PRETOKEN (1 MiB): refused with the limit (a 100 MB one asked for 6 GB)
head -c 1048577 /dev/zero | tr '\0' 'a' >"$T/long.txt"
expect_fail "a pre-token of 1 MiB + 1" "a pre-token of 1048577 bytes (one run of letters, digits, spaces or other characters) is longer than the limit of 1048576 bytes (TOK_MAX_PRETOKEN" \
    $tok --tokenizer $F/gpt2.json --print-ids "$T/long.txt"

echo "tokenizer_limits: $failures failed"
[ "$failures" -eq 0 ]
