#!/usr/bin/env bash
# data.document_mask through build/train: a short run from the llama3_docs fixture
# checkpoint (llama3 RoPE) with an end-of-document token trains, says so, and saves
# config.json with the same llama3 rope_scaling; without an eos id (fresh model, or a
# checkpoint whose config.json has none) the run stops naming data.eos_token_id.
# A run from packed JSONL records with document_mask resumes exactly and differs from
# the same run without the mask.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" doc_mask

build/tools/gen_tokens "$T/tok.u16" 3000 64 1 || exit 1
ck=tests/fixtures/llama3_docs/ckpt

# 1. init_from + document_mask + eos 5: trains, logs the masking, saves the llama3 rope_scaling back
printf '{"run": {"out_dir": "%s"}, "model": {"init_from": "%s"}, "data": {"train": ["%s"], "seq_len": 32,
  "document_mask": true, "eos_token_id": 5}, "optim": {"warmup_steps": 0},
  "train": {"batch_size": 2, "steps": 2, "save_every": 2, "eval_every": 0}}\n' "$T/run" "$ck" "$T/tok.u16" >"$T/c.json"
build/train "$T/c.json" >"$T/log" 2>&1
rc=$?
cfg="$T/run/$(head -n 1 "$T/run/latest" 2>/dev/null)/config.json"
if [ $rc -eq 0 ] && grep -q "document masking: attention within documents ended by token 5" "$T/log" \
    && tr -d ' \n\t' <"$cfg" | grep -q '"rope_scaling":{"factor":4.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":256,"rope_type":"llama3"}'; then
    ok "document_mask run from the llama3 fixture: trains, saves rope_scaling llama3 in the same form"
else
    bad "document_mask run: exit $rc"; tail -3 "$T/log"; grep -A6 rope_scaling "$cfg"
fi

# 2. fresh model, document_mask, no eos id: refused at config time
printf '{"run": {"out_dir": "%s"}, "data": {"train": ["%s"], "seq_len": 16, "document_mask": true},
  "model": {"vocab_size": 64, "d_model": 32, "n_layers": 1, "n_heads": 4, "d_ff": 32},
  "train": {"batch_size": 1, "steps": 1, "eval_every": 0}}\n' "$T/run2" "$T/tok.u16" >"$T/c2.json"
build/train "$T/c2.json" >"$T/log2" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "data.eos_token_id: is required with data.document_mask" "$T/log2" && [ ! -e "$T/run2" ]; then
    ok "no eos id: exit $rc, $(grep -m1 -o 'data.eos_token_id: is required[^:]*' "$T/log2")"
else
    bad "no eos id: exit $rc"; tail -3 "$T/log2"
fi

# 3. init_from a checkpoint whose config.json has no eos_token_id: refused, naming the key
sed 's|"init_from": "[^"]*"|"init_from": "tests/fixtures/llama_gqa/ckpt"|; s|, "eos_token_id": 5||; s|"out_dir": "[^"]*"|"out_dir": "'"$T"'/run3"|' \
    "$T/c.json" >"$T/c3.json"
build/train "$T/c3.json" >"$T/log3" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "data.eos_token_id: is required with data.document_mask" "$T/log3"; then
    ok "init_from without eos_token_id: exit $rc, names data.eos_token_id"
else
    bad "init_from without eos_token_id: exit $rc"; tail -3 "$T/log3"; cat "$T/c3.json"
fi
# 4. JSONL records (pre-tokenized, 3 to 20 tokens, several per row of 32) with document_mask: a run of 6
#    steps, and the same run stopped after 3 and resumed, give bit-identical train and validation losses
#    and final weights and AdamW moments; the same run without the mask gives other losses
for i in $(seq 0 59); do
    n=$((3 + (i * 7) % 18))
    ids=$(seq -s, $((i % 9 + 1)) $((i % 9 + n)) | sed 's/,$//')
    echo "{\"input_ids\": [$ids]}"
done >"$T/docs.jsonl"
jconfig() {  # file out_dir steps document_mask
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "seed": 5, "threads": 2, "resume": "auto"},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "d_ff": 64,
           "positions": {"mode": "repo", "repo_start_layer": 1}},
 "data": {"train": ["$T/docs.jsonl"], "val": ["$T/docs.jsonl"], "format": "jsonl", "seq_len": 32,
          "order": "shuffle", "document_mask": $4},
 "optim": {"lr": 3e-3, "warmup_steps": 2},
 "train": {"batch_size": 2, "grad_accum": 2, "steps": $3, "log_every": 1, "eval_every": 3, "eval_batches": 2,
           "save_every": 3}}
JSON
}
jlosses() { grep -o '"step": [0-9]*, "\(val_\)\?loss": [^,]*' "$1/metrics.jsonl"; }
jconfig "$T/ja.json" "$T/ja" 6 true
jconfig "$T/jb.json" "$T/jb" 3 true
jconfig "$T/jc.json" "$T/jc" 6 false
build/train "$T/ja.json" >"$T/ja.log" 2>&1 && build/train "$T/jb.json" >"$T/jb.log" 2>&1 &&
    jconfig "$T/jb.json" "$T/jb" 6 true && build/train "$T/jb.json" >>"$T/jb.log" 2>&1 &&
    build/train "$T/jc.json" >"$T/jc.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "document masking: attention within the packed JSONL records" "$T/ja.log" &&
    grep -q "resumed from .*step_0000003" "$T/jb.log"; then
    ok "JSONL + document_mask: 6 steps, and 3 + resumed 3, ran ($(jlosses "$T/ja" | wc -l) loss lines)"
else
    bad "JSONL + document_mask runs: exit $rc"; tail -3 "$T/ja.log" "$T/jb.log" "$T/jc.log"
fi
A="$T/ja/step_0000006"
B="$T/jb/step_0000006"
if [ -n "$(jlosses "$T/ja")" ] && [ "$(jlosses "$T/ja")" = "$(jlosses "$T/jb")" ] &&
    cmp -s "$A/model.safetensors" "$B/model.safetensors" && cmp -s "$A/optimizer.safetensors" "$B/optimizer.safetensors"; then
    ok "JSONL + document_mask resume: train and validation losses, weights and AdamW moments bit-identical"
else
    bad "JSONL + document_mask resume differs"; diff <(jlosses "$T/ja") <(jlosses "$T/jb") | head -5
fi
if [ -n "$(jlosses "$T/jc")" ] && [ "$(jlosses "$T/ja" | head -n 1)" != "$(jlosses "$T/jc" | head -n 1)" ]; then
    ok "the mask changes the first loss: $(jlosses "$T/ja" | head -n 1 | cut -d, -f2) vs $(jlosses "$T/jc" | head -n 1 | cut -d, -f2) without"
else
    bad "document_mask made no difference to the JSONL run"
fi
echo "test_doc_mask: $failures failed"
[ "$failures" -eq 0 ]
