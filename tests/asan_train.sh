#!/usr/bin/env bash
# The training path on chat records under ASan+UBSan (make test-asan; tests/run.sh runs it): build/asan/lib/train
# (DEBUG=1: -O0, ASan and UBSan) loads a tokenizer whose tokenizer_config.json holds a chat template, renders,
# tokenizes and masks "messages" records and trains two steps on them. The chat tests render through
# build/tools/chat_render, which holds the template's source itself; this run goes through chat_format_load,
# the trainer's own loader, so memory it frees too early is an ASan report here.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" asan_train
B=build/asan/lib
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp # clang's libomp: tests/lsan.supp
F=tests/fixtures/chat
tok=$T/tok && mkdir -p "$tok" && cp tests/fixtures/tokenizer/gpt2.json "$tok/tokenizer.json"
for pair in turns.jinja:conversations.jsonl vicuna.jinja:yes_no.jsonl; do
    t=$F/${pair%%:*}
    # the template as tokenizer_config.json holds it: one JSON string
    { printf '{"eos_token": "<|endoftext|>", "chat_template": "'
      sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' "$t" | awk '{printf "%s\\n", $0}'
      printf '"}\n'; } >"$tok/tokenizer_config.json"
    grep -v '"tool"' "$F/${pair#*:}" >"$T/chat.jsonl"
    cat >"$T/sft.json" <<JSON
{"run": {"out_dir": "$T/run", "threads": 1},
 "model": {"vocab_size": 1024, "d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32},
 "data": {"train": ["$T/chat.jsonl"], "format": "jsonl", "tokenizer": "$tok", "seq_len": 128},
 "optim": {"warmup_steps": 0}, "train": {"batch_size": 1, "steps": 2, "eval_every": 0, "save_every": 0}}
JSON
    rm -rf "$T/run"
    if $B/train "$T/sft.json" >"$T/log" 2>&1; then ok "$(basename "$t"): 2 steps on chat records under ASan+UBSan"
    else bad "$(basename "$t"): train under ASan+UBSan"; grep -m5 -E "ERROR|runtime error|SUMMARY" "$T/log"
         tail -n 30 "$T/log" | sed 's/^/          /'; fi
done
echo "asan_train: $failures failed"
[ "$failures" -eq 0 ]
