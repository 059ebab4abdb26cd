#!/usr/bin/env bash
# Chat fine-tuning end to end, with the tokenizer travelling: a base checkpoint with its tokenizer files (the
# fixture gpt2.json with ChatML's <|im_start|> and <|im_end|> as added tokens, a ChatML chat_template, a
# generation_config.json that names <|endoftext|> only) is trained on a few "messages" records, a LoRA run
# fine-tunes it (its checkpoints carry the tokenizer files), build/merge folds the adapter in and copies the
# files, and build/generate --chat on the merged directory (no --tokenizer: it reads the merged directory's)
# answers each conversation with the trained reply and stops at <|im_end|>, which it finds from the
# template, not from a list: by options, from standard input and from a JSONL file of messages records. Every
# conversation asked is one the model was trained on (standard input's second turn is the fourth record): what
# such a small model answers to a conversation it never saw differs with the products' engine and CPU.
# build/tokenize --show-records prints the records as training sees them, the loss tokens in [[ ]]. Refused,
# naming the file (and line): a --messages line that is not a messages record or not JSON, a checkpoint whose
# tokenizer_config.json is missing or has no chat_template.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" chat_e2e
: "${failures:=0}"
F=tests/fixtures/tokenizer
tok=$T/tok && mkdir -p "$tok"
sed 's/"special":true}\],"normalizer"/"special":true},{"id":1001,"content":"<|im_start|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},{"id":1002,"content":"<|im_end|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],"normalizer"/' \
    $F/gpt2.json >"$tok/tokenizer.json"
grep -q '<|im_end|>' "$tok/tokenizer.json" || { bad "the fixture's added_tokens did not take <|im_end|>"; exit 1; }
cat >"$tok/tokenizer_config.json" <<'JSON'
{"eos_token": "<|endoftext|>", "bos_token": null,
 "chat_template": "{%- if messages[0].role != 'system' %}{{- '<|im_start|>system\nYou help.<|im_end|>\n' }}{%- endif %}{%- for m in messages %}{{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"}
JSON
echo '{"eos_token_id": 1000}' >"$tok/generation_config.json"
echo '{"eos_token": "<|endoftext|>"}' >"$tok/special_tokens_map.json"
cat >"$T/chat.jsonl" <<'JSONL'
{"messages": [{"role": "user", "content": "capital of France?"}, {"role": "assistant", "content": "Paris."}]}
{"messages": [{"role": "user", "content": "two plus two?"}, {"role": "assistant", "content": "four"}]}
{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "color of the sky?"}, {"role": "assistant", "content": "blue"}, {"role": "user", "content": "and grass?"}, {"role": "assistant", "content": "green"}]}
{"messages": [{"role": "user", "content": "two plus two?"}, {"role": "assistant", "content": "four"}, {"role": "user", "content": "capital of France?"}, {"role": "assistant", "content": "Paris."}]}
JSONL
config() {  # file out_dir model steps lr
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "threads": 2, "seed": 5}, "model": $3,
 "data": {"train": ["$T/chat.jsonl"], "format": "jsonl", "tokenizer": "$tok", "seq_len": 64},
 "optim": {"warmup_steps": 0, "lr": $5, "schedule": "constant", "weight_decay": 0},
 "train": {"batch_size": 2, "steps": $4, "eval_every": 0, "log_every": 50, "save_every": $4}}
JSON
}
config "$T/base.json" "$T/base" '{"vocab_size": 1024, "d_model": 64, "n_layers": 2, "n_heads": 4, "d_ff": 128}' 150 1e-2
build/train "$T/base.json" >"$T/base.log" 2>&1 || { bad "base run: $(tail -3 "$T/base.log")"; exit 1; }
B=$T/base/step_0000150
cp "$tok"/*.json "$B/" # a Hugging Face base directory: weights, config and tokenizer files
config "$T/lora.json" "$T/lora" "{\"init_from\": \"$B\", \"lora\": {\"rank\": 4, \"alpha\": 8}}" 20 1e-3
build/train "$T/lora.json" >"$T/lora.log" 2>&1 || { bad "LoRA run: $(tail -3 "$T/lora.log")"; exit 1; }
grep -q "4 records (0 prompt/completion, 0 text, 4 chat" "$T/lora.log" && ok "a LoRA run on 4 messages records" ||
    bad "LoRA run: $(grep -m1 records "$T/lora.log")"
L=$T/lora/step_0000020

echo "build/tokenize --show-records"
build/tokenize --tokenizer "$tok" --show-records "$T/chat.jsonl" >"$T/sr.out" 2>"$T/sr.err"
rc=$?
printf '%s\n' '== record 1: 38 tokens, 6 carry loss' '<|im_start|>system' 'You help.<|im_end|>' '<|im_start|>user' \
    'capital of France?<|im_end|>' '<|im_start|>assistant' '[[Paris.<|im_end|>' ']]' >"$T/sr.want"
[ $rc -eq 0 ] && cmp -s <(head -8 "$T/sr.out") "$T/sr.want" && [ "$(grep -c '^== record' "$T/sr.out")" -eq 4 ] &&
    grep -q "4 records (0 prompt/completion, 0 text, 4 chat, 0 pre-tokenized): 191 tokens, 30 carry loss" "$T/sr.err" &&
    ok "each record's text, the assistant turns with their <|im_end|> in [[ ]]" ||
    bad "--show-records: exit $rc: $(head -12 "$T/sr.out") $(cat "$T/sr.err")"
printf '%s\n' '{"prompt": "Q: 2+2?", "completion": " 4"}' >"$T/pc.jsonl"
build/tokenize --tokenizer "$tok" --show-records "$T/pc.jsonl" >"$T/sr.out" 2>&1
[ "$(sed -n 2p "$T/sr.out")" = "Q: 2+2?[[ 4<|endoftext|>]]" ] && ok "a prompt/completion record: the completion and EOS" ||
    bad "prompt/completion: $(cat "$T/sr.out")"
printf '%s\n' "$(head -1 "$T/chat.jsonl")" '{"messages": 3}' >"$T/bad_sr.jsonl"
build/tokenize --tokenizer "$tok" --show-records "$T/bad_sr.jsonl" >"$T/sr.out" 2>&1 && bad "a bad record: accepted" ||
    { grep -qF 'bad_sr.jsonl:2: "messages" must be a non-empty list' "$T/sr.out" && ok "a bad record: file and line named" ||
      bad "bad record: $(cat "$T/sr.out")"; }

echo "merge"
build/merge "$L" "$L" "$T/merged" >"$T/merge.log" 2>&1 || { bad "merge: $(cat "$T/merge.log")"; exit 1; }
same=1
for f in tokenizer.json tokenizer_config.json special_tokens_map.json generation_config.json; do
    cmp -s "$tok/$f" "$T/merged/$f" || { same=0; bad "merged/$f is not the base's"; }
done
[ $same -eq 1 ] && ok "merge copied the 4 tokenizer and generation files: $(grep -c '^copied' "$T/merge.log") lines 'copied'"
left=$(find "$T" -maxdepth 1 -name '*.tmp.*')
[ -z "$left" ] && [ ! -e "$T/merged/.merge.tmp.$$" ] && ok "no staging directory left" || bad "left: $left"

echo "generate --chat on the merged checkpoint (its own tokenizer files)"
G="build/generate $T/merged --chat --temperature 0 --max-new-tokens 20 --threads 1"
$G --user "capital of France?" >"$T/g.out" 2>"$T/g.err"
rc=$?
[ $rc -eq 0 ] && [ "$(cat "$T/g.out")" = "Paris." ] && ok "--user: the trained reply '$(cat "$T/g.out")'" ||
    bad "--user: exit $rc, '$(cat "$T/g.out")' $(tail -3 "$T/g.err")"
grep -q "stops at <|im_end|> (id 1002, the template's end of turn), <|endoftext|> (id 1000, generation_config.json)" \
    "$T/g.err" && ok "the end of turn found from the template: $(grep -m1 'stops at' "$T/g.err")" ||
    bad "stop tokens: $(grep -m1 'stops at' "$T/g.err")"
grep -q "1 reply: .* 1 stopped at an end-of-turn token, 0 at --max-new-tokens" "$T/g.err" &&
    ok "stopped at the end of turn, not at --max-new-tokens" || bad "$(grep -m1 'repl' "$T/g.err")"
$G --system "Be brief." --user "color of the sky?" --assistant blue --user "and grass?" >"$T/g.out" 2>"$T/g.err"
[ "$(cat "$T/g.out")" = "green" ] && ok "a multi-turn conversation from --system/--user/--assistant: 'green'" ||
    bad "multi-turn: '$(cat "$T/g.out")' $(tail -2 "$T/g.err")"
printf 'two plus two?\n\ncapital of France?\n' | $G >"$T/g.out" 2>"$T/g.err"
[ "$(tr '\n' '|' <"$T/g.out")" = "four|Paris.|" ] && grep -q "2 replies" "$T/g.err" &&
    ok "standard input, a user turn a line: two replies, the second after the first turn" ||
    bad "stdin: '$(cat "$T/g.out")' $(tail -2 "$T/g.err")"
read -r all run < <(sed -nE 's/.*replies: ([0-9]+) prompt tokens \(([0-9]+) run.*/\1 \2/p' "$T/g.err")
# 84 prompt tokens = 30 (record 2 without its reply) + 54 (record 4 without its last reply): the second turn
# holds the first and its reply
[ "${all:-0}" -eq 84 ] && [ "${run:-0}" -gt 0 ] && [ "${run:-0}" -lt "${all:-0}" ] &&
    ok "the second turn's rendering reuses the cached tokens it starts with: $run of $all prompt tokens run" ||
    bad "cache reuse: $(grep replies "$T/g.err")"
$G --messages "$T/chat.jsonl" >"$T/g.jsonl" 2>"$T/g.err"
rc=$?
two='{"role":"user","content":"two plus two?"},{"role":"assistant","content":"four"}'
want2="{\"messages\":[$two]}"
want4="{\"messages\":[$two,{\"role\":\"user\",\"content\":\"capital of France?\"},{\"role\":\"assistant\",\"content\":\"Paris.\"}]}"
[ $rc -eq 0 ] && [ "$(wc -l <"$T/g.jsonl")" -eq 4 ] && [ "$(sed -n 2p "$T/g.jsonl")" = "$want2" ] &&
    grep -q '"content":"green"}\]}$' "$T/g.jsonl" && [ "$(sed -n 4p "$T/g.jsonl")" = "$want4" ] &&
    ok "--messages: each record's trailing assistant turn replaced by the reply, one JSON line each" ||
    bad "--messages: exit $rc $(cat "$T/g.jsonl") $(tail -2 "$T/g.err")"

echo "refused"
printf '%s\n' "$(head -1 "$T/chat.jsonl")" '{"prompt": "a", "completion": "b"}' >"$T/bad.jsonl"
$G --messages "$T/bad.jsonl" >"$T/b.out" 2>&1 && bad "a prompt/completion line: accepted" ||
    { grep -qF "bad.jsonl:2: not a messages record" "$T/b.out" && ok "a line that is not a messages record: $(grep -F 'bad.jsonl:2' "$T/b.out" | head -c 150)" ||
      bad "not a messages record: $(cat "$T/b.out")"; }
printf '{"messages": [\n' >"$T/bad2.jsonl"
$G --messages "$T/bad2.jsonl" >"$T/b.out" 2>&1 && bad "broken JSON: accepted" ||
    { grep -qF "bad2.jsonl:1: not valid JSON" "$T/b.out" && ok "a line that is not JSON: file and line named" || bad "broken JSON: $(cat "$T/b.out")"; }
mkdir -p "$T/nochat" && cp "$T/merged"/*.json "$T/merged/model.safetensors" "$T/nochat/"
rm "$T/nochat/tokenizer_config.json"
build/generate "$T/nochat" --chat --user hi >"$T/b.out" 2>&1 && bad "no tokenizer_config.json: accepted" ||
    { grep -qF "nochat/tokenizer_config.json: cannot read it" "$T/b.out" && ok "no tokenizer_config.json: $(head -c 200 "$T/b.out")" ||
      bad "no tokenizer_config.json: $(cat "$T/b.out")"; }
echo '{"eos_token": "<|endoftext|>"}' >"$T/nochat/tokenizer_config.json"
build/generate "$T/nochat" --chat --user hi >"$T/b.out" 2>&1 && bad "no chat_template: accepted" ||
    { grep -qF "nochat/tokenizer_config.json: it has no chat_template" "$T/b.out" && ok "no chat_template: file named" ||
      bad "no chat_template: $(cat "$T/b.out")"; }
build/generate "$T/merged" --chat --prompt x >"$T/b.out" 2>&1
[ $? -eq 2 ] && ok "--chat with --prompt: a usage error" || bad "--chat --prompt: $(cat "$T/b.out")"

echo "test_chat_e2e: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
