#!/usr/bin/env bash
# Which loaders read a saved layout (docs/interop.md, "Which loaders read a layout"): a tiny model of
# each family trained 2 steps with RePo layers is saved as model_type repoc_<type> and class
# Repoc<Class>, names stock transformers' AutoConfig does not know, so it refuses the checkpoint
# instead of running RoPE; build/eval reads each. An all-RoPE run keeps the stock names.
# train.save_model_type "released" keeps olmo2 for the released RePo loader's layout (with a note
# saying what stock transformers does with it), is refused for a model that loader cannot read, and
# "auto" keeps the names of the checkpoint a run continues.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" hf_loaders
build/tools/gen_tokens "$T/train.u16" 20000 64 1 >/dev/null

family() {  # name model_type class extra-keys: a tiny config.json in $T/name
    mkdir -p "$T/$1"
    printf '{"model_type": "%s", "architectures": ["%s"], "vocab_size": 64, "hidden_size": 32, %s%s}\n' "$2" "$3" \
        '"intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 256' \
        "$4" >"$T/$1/config.json"
}
run() {  # out-dir model-json [train-extra]: 2 steps on the token file, saved at the end
    cat >"$T/$1.json" <<JSON
{"run": {"out_dir": "$T/$1", "threads": 1, "seed": 2},
 "model": $2,
 "data": {"train": ["$T/train.u16"], "val": ["$T/train.u16"], "seq_len": 32},
 "optim": {"warmup_steps": 0},
 "train": {"batch_size": 1, "steps": 2, "log_every": 1, "eval_every": 0, "save_every": 0, "keep_last": 1${3:-}}}
JSON
    build/train "$T/$1.json" >"$T/$1.log" 2>&1
}
names() {  # checkpoint: "model_type class"
    tr -d '\n' <"$1/config.json" | sed -n 's/.*"architectures":[^"]*"\([A-Za-z0-9_]*\)".*"model_type":[^"]*"\([a-z0-9_]*\)".*/\2 \1/p'
}

family olmo2 olmo2 Olmo2ForCausalLM ''
family llama llama LlamaForCausalLM ''
family qwen2 qwen2 Qwen2ForCausalLM ''
family qwen3 qwen3 Qwen3ForCausalLM ', "head_dim": 8'
family gemma3 gemma3_text Gemma3ForCausalLM ', "num_key_value_heads": 1, "head_dim": 8, "sliding_window": 16, "sliding_window_pattern": 2'
family mistral mistral MistralForCausalLM ', "sliding_window": null'
echo "RePo layers: saved under repoc's names, which stock transformers refuses; build/eval reads them"
for f in olmo2 llama qwen2 qwen3 gemma3 mistral; do
    want_type=$(sed -n 's/.*"model_type": "\([a-z0-9_]*\)".*/\1/p' "$T/$f/config.json")
    want_class=$(sed -n 's/.*"architectures": \["\([A-Za-z0-9]*\)"\].*/\1/p' "$T/$f/config.json")
    ck="$T/r_$f/step_0000002"
    if run "r_$f" "{\"from_config\": \"$T/$f\", \"positions\": {\"mode\": \"repo\", \"repo_start_layer\": 1}}" &&
        [ "$(names "$ck")" = "repoc_$want_type Repoc$want_class" ] &&
        grep -q "note: .*model_type repoc_$want_type: stock transformers refuses it" "$T/r_$f.log" &&
        build/eval "$ck" --ppl "$T/train.u16" --seq-len 32 --max-windows 2 --threads 1 >"$T/e_$f.log" 2>&1 &&
        grep -q "ppl" "$T/e_$f.log"; then
        ok "$f with RePo: saved as $(names "$ck"); build/eval: $(grep -m1 ppl "$T/e_$f.log" | cut -c1-60)"
    else bad "$f with RePo: names '$(names "$ck")'; $(tail -n 2 "$T/r_$f.log" "$T/e_$f.log" 2>/dev/null | tr '\n' ' ')"; fi
done
if run rope_llama "{\"from_config\": \"$T/llama\"}" && [ "$(names "$T/rope_llama/step_0000002")" = "llama LlamaForCausalLM" ] &&
    ! grep -q "^note: " "$T/rope_llama.log"; then
    ok "all RoPE: the stock names, no note"
else bad "all RoPE: $(names "$T/rope_llama/step_0000002"); $(grep note "$T/rope_llama.log")"; fi

echo "train.save_model_type"
if run rel_olmo2 "{\"from_config\": \"$T/olmo2\", \"positions\": {\"mode\": \"repo\"}}" ', "save_model_type": "released"' &&
    [ "$(names "$T/rel_olmo2/step_0000002")" = "olmo2 Olmo2ForCausalLM" ] &&
    grep -q '"dynamic_pe_mode":.*"swigluex_multihead"' "$T/rel_olmo2/step_0000002/config.json" &&
    grep -q "note: .*stock transformers' Olmo2ForCausalLM runs RoPE in every layer" "$T/rel_olmo2.log"; then
    ok "\"released\" on OLMo-2 with RePo: olmo2 with pe_config, and the note: $(grep -m1 '^note' "$T/rel_olmo2.log" | cut -c1-90)..."
else bad "\"released\" on OLMo-2: $(names "$T/rel_olmo2/step_0000002"); $(tail -n 2 "$T/rel_olmo2.log")"; fi
if ! run rel_llama "{\"from_config\": \"$T/llama\", \"positions\": {\"mode\": \"repo\"}}" ', "save_model_type": "released"' &&
    grep -q "train.save_model_type: \"released\": no released loader reads this model: the released RePo loader is OLMo-2 only" \
        "$T/rel_llama.log" && [ ! -e "$T/rel_llama/step_0000002" ]; then
    ok "\"released\" on Llama with RePo is refused at start: $(grep -m1 "error.*save_model_type" "$T/rel_llama.log" | cut -c1-150)..."
else bad "\"released\" on Llama: $(tail -n 2 "$T/rel_llama.log")"; fi
# "auto" keeps the names of the checkpoint it continues; "repoc" replaces the released ones
if run cont_auto "{\"init_from\": \"$T/rel_olmo2/step_0000002\"}" &&
    [ "$(names "$T/cont_auto/step_0000002")" = "olmo2 Olmo2ForCausalLM" ] &&
    run cont_repoc "{\"init_from\": \"$T/rel_olmo2/step_0000002\"}" ', "save_model_type": "repoc"' &&
    [ "$(names "$T/cont_repoc/step_0000002")" = "repoc_olmo2 RepocOlmo2ForCausalLM" ]; then
    ok "continuing the released-names checkpoint: \"auto\" keeps olmo2, \"repoc\" writes repoc_olmo2"
else bad "continuing: auto $(names "$T/cont_auto/step_0000002"), repoc $(names "$T/cont_repoc/step_0000002")"; fi
exit $((failures > 0))
