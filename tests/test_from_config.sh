#!/usr/bin/env bash
# model.from_config: a fresh model of a published config.json's architecture
# (tests/corpus/hf_configs), for pretraining from scratch; its checkpoints'
# config.json reads back as the same architecture and continues with
# init_from. It excludes init_from and the size keys. --plan works from
# from_config and from a config-only init_from directory (the weights not
# checked), which a run refuses with a pointer to from_config.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" from_config
H=tests/corpus/hf_configs

config() {  # file model-json [extra top-level json]
    cat >"$1" <<JSON
{"run": {"out_dir": "$T/run", "threads": 1, "seed": 2},
 "model": $2,
 "data": {"synthetic": {}, "seq_len": 128},
 "optim": {"warmup_steps": 0},
 "train": {"batch_size": 1, "steps": 2, "log_every": 1, "eval_every": 0, "save_every": 0, "keep_last": 1}}
JSON
}
plan_ok() {  # label config pattern...
    local label=$1 cfg=$2 miss=""
    shift 2
    build/train "$cfg" --plan >"$T/plan.log" 2>&1
    local rc=$?
    for p in "$@"; do grep -qF -- "$p" "$T/plan.log" || miss="$miss '$p'"; done
    if [ $rc -eq 0 ] && [ -z "$miss" ]; then ok "$label"
    else bad "$label: exit $rc, missing:$miss: $(tail -n 2 "$T/plan.log")"; fi
}

echo "--plan from published configs, without weights"
for f in smollm2_135m olmo2_1b llama3.2_1b qwen2.5_0.5b qwen3_0.6b gemma3_270m mistral_7b; do
    config "$T/$f.json" "{\"from_config\": \"$H/$f.json\"}"
    plan_ok "from_config $f.json plans" "$T/$f.json" "memory plan" "peak RSS"
done
mkdir -p "$T/olmo2_1b" && cp "$H/olmo2_1b.json" "$T/olmo2_1b/config.json"
config "$T/dir.json" "{\"from_config\": \"$T/olmo2_1b\", \"positions\": {\"mode\": \"repo\"}}"
plan_ok "from_config names a directory (with RePo)" "$T/dir.json" "memory plan"
config "$T/init.json" "{\"init_from\": \"$T/olmo2_1b\"}"
plan_ok "--plan from a config-only init_from directory" "$T/init.json" "memory plan" "weights were not checked"
# initializer_range is the weights' standard deviation: one <= 0 is refused, never replaced by 0.02
printf '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "initializer_range": -1}' >"$T/badinit.json"
config "$T/badinit_run.json" "{\"from_config\": \"$T/badinit.json\"}"
expect_refused "initializer_range -1" "badinit.json: initializer_range must be a number > 0" "$T/badinit_run.json"
# a head dim the run refuses is refused by --plan too, before any plan is printed
printf '{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 512}' >"$T/hd512.json"
config "$T/hd512_run.json" "{\"from_config\": \"$T/hd512.json\"}"
expect_refused "head_dim 512 with --plan" "head dim 512 is above 256, the largest the attention kernel takes" "$T/hd512_run.json" --plan
expect_refused "a run from a config-only init_from directory" "give it as model.from_config instead" "$T/init.json"
[ ! -e "$T/run" ] && ok "  ... and wrote nothing" || bad "the refused run created $T/run"
mkdir -p "$T/qwen3" && cp "$H/qwen3_0.6b.json" "$T/qwen3/config.json"
config "$T/qinit.json" "{\"init_from\": \"$T/qwen3\"}"
plan_ok "--plan from a config-only Qwen3-0.6B directory" "$T/qinit.json" "596049920 parameters" "weights were not checked"
expect_refused "a run from a config-only Qwen3-0.6B directory" "give it as model.from_config instead" "$T/qinit.json"
[ ! -e "$T/run" ] && ok "  ... and wrote nothing" || bad "the refused Qwen3 run created $T/run"
mkdir -p "$T/gemma3" && cp "$H/gemma3_270m.json" "$T/gemma3/config.json"
config "$T/ginit.json" "{\"init_from\": \"$T/gemma3\"}"
plan_ok "--plan from a config-only Gemma-3-270M directory" "$T/ginit.json" "268098176 parameters" "weights were not checked"
expect_refused "a run from a config-only Gemma-3-270M directory" "give it as model.from_config instead" "$T/ginit.json"
[ ! -e "$T/run" ] && ok "  ... and wrote nothing" || bad "the refused Gemma-3 run created $T/run"
config "$T/mplan.json" "{\"from_config\": \"$H/mistral_7b.json\"}"
plan_ok "--plan from Mistral-7B-v0.1's config.json: the model card's 7.24B" "$T/mplan.json" "7241732096 parameters"

echo "from_config excludes init_from and the size keys"
config "$T/both.json" "{\"from_config\": \"$H/olmo2_1b.json\", \"init_from\": \"$T/olmo2_1b\"}"
expect_refused "with init_from" "model.from_config: given together with model.init_from" "$T/both.json"
config "$T/size.json" "{\"from_config\": \"$H/olmo2_1b.json\", \"d_model\": 512}"
expect_refused "with model.d_model" "model.d_model: given together with model.from_config" "$T/size.json"
expect_refused "with --set model.n_layers" "model.n_layers: given together with model.from_config" \
    "$T/dir.json" --set model.n_layers=2
config "$T/missing.json" "{\"from_config\": \"$T/nothing\"}"
expect_refused "a path that does not exist" "model.from_config: '$T/nothing' does not exist" \
    "$T/missing.json"

echo "a tiny architecture trains from scratch, saves a config.json that loads back"
mkdir -p "$T/tiny"
cat >"$T/tiny/config.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu", "hidden_size": 32,
 "intermediate_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
 "vocab_size": 64, "max_position_embeddings": 256, "rms_norm_eps": 1e-05, "rope_theta": 50000.0,
 "tie_word_embeddings": true, "initializer_range": 0.05, "bos_token_id": 1, "eos_token_id": 2,
 "attention_bias": false, "mlp_bias": false}
JSON
config "$T/tiny.json" "{\"from_config\": \"$T/tiny\"}"
if build/train "$T/tiny.json" >"$T/tiny.log" 2>&1 && grep -q "N(0, 0.05²)" "$T/tiny.log" &&
    grep -q "^time: ≈ .*, 2 steps ≈" "$T/tiny.log"; then
    ok "trains 2 steps (the start gives a time estimate), initialised with the config's initializer_range"
else bad "the tiny run: $(tail -n 3 "$T/tiny.log")"; fi
saved="$T/run/step_0000002/config.json"
miss=""
for kv in hidden_size:32 intermediate_size:64 num_key_value_heads:2 num_hidden_layers:2 vocab_size:64 \
    tie_word_embeddings:true max_position_embeddings:256 eos_token_id:2 'architectures:\["LlamaForCausalLM"\]'; do
    grep -qE -- "\"${kv%%:*}\":[[:space:]]*${kv#*:}" "$saved" 2>/dev/null || miss="$miss $kv"
done
[ -z "$miss" ] && ok "the checkpoint's config.json has the architecture" || bad "the saved config.json lacks:$miss"
if build/train "$T/tiny.json" --set train.steps=3 >"$T/resume.log" 2>&1 && grep -q "resumed from .* at step 2" "$T/resume.log" &&
    build/train "$T/run/run_config.json" --plan >"$T/saved.log" 2>&1; then
    ok "the run resumes, and its saved run_config.json loads (from_config kept, the sizes left to the file)"
else bad "resume / saved config: $(tail -n 2 "$T/resume.log" "$T/saved.log")"; fi
config "$T/again.json" "{\"init_from\": \"$T/run\"}"
sed -i "s|\"out_dir\": \"$T/run\"|\"out_dir\": \"$T/run2\"|" "$T/again.json"
if build/train "$T/again.json" >"$T/again.log" 2>&1 && grep -q "loaded .* tensors from $T/run/step_0000003" "$T/again.log"
then ok "init_from continues the from_config checkpoint"
else bad "continuing: $(tail -n 3 "$T/again.log")"; fi

run_config() {  # file model-json run-dir: config() with the run in $T/run-dir
    config "$1" "$2"
    sed -i "s|\"out_dir\": \"$T/run\"|\"out_dir\": \"$T/$3\"|" "$1"
}
continues() {  # family run-dir new-run-dir: init_from run-dir (its step 2) trains on
    run_config "$T/$3.json" "{\"init_from\": \"$T/$2\"}" "$3"
    if build/train "$T/$3.json" >"$T/$3.log" 2>&1 && grep -q "loaded .* tensors from $T/$2/step_0000002" "$T/$3.log"
    then ok "init_from continues the $1 checkpoint"
    else bad "continuing $1: $(tail -n 3 "$T/$3.log")"; fi
}

echo "a tiny Gemma-3 (sliding layers, RePo on its global layer) trains from scratch and continues"
mkdir -p "$T/gemma"
cat >"$T/gemma/config.json" <<'JSON'
{"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 32, "intermediate_size": 64,
 "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16, "num_hidden_layers": 3, "vocab_size": 64,
 "max_position_embeddings": 256, "rope_local_base_freq": 10000.0, "sliding_window": 16, "sliding_window_pattern": 3,
 "query_pre_attn_scalar": 16, "hidden_activation": "gelu_pytorch_tanh", "attn_logit_softcapping": null}
JSON
run_config "$T/gemma.json" "{\"from_config\": \"$T/gemma\", \"positions\": {\"mode\": \"repo\", \"repo_start_layer\": 1}}" grun
saved="$T/grun/step_0000002/config.json"
if build/train "$T/gemma.json" >"$T/gemma.log" 2>&1 &&
    grep -q '"layer_types":.*"sliding_attention", "sliding_attention", "full_attention"' "$saved" &&
    grep -q '"repoc_layer_positions":.*"rope", "rope", "repo"' "$saved" &&
    grep -q '"hidden_activation":.*"gelu_pytorch_tanh"' "$saved"; then
    ok "trains 2 steps; its config.json has the layer types and RePo on the global layer 2 only"
else bad "the tiny Gemma-3 run: $(tail -n 3 "$T/gemma.log")"; fi
continues Gemma-3 grun grun2
echo "a tiny Mistral (a window on every layer) trains from scratch, continues and generates"
mkdir -p "$T/mistral"  # MistralConfig's defaults for the rest: untied, theta 1e4, eps 1e-6
printf '{"model_type": "mistral", "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4, %s}\n' \
    '"num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 1024, "sliding_window": 16' >"$T/mistral/config.json"
run_config "$T/mistral.json" "{\"from_config\": \"$T/mistral\", \"positions\": {\"layers\": [\"rope\", \"nope\"]}}" mrun
saved="$T/mrun/step_0000002/config.json"
if build/train "$T/mistral.json" >"$T/mistral.log" 2>&1 && grep -q '"model_type":.*"repoc_mistral"' "$saved" &&
    grep -q '"sliding_window":.*16' "$saved" && grep -q '"repoc_layer_positions":.*"rope", "nope"' "$saved"; then
    ok "trains 2 steps; its config.json is a Mistral's with the window and the layers' positions"
else bad "the tiny Mistral run: $(tail -n 3 "$T/mistral.log")"; fi
continues Mistral mrun mrun2
out=$(build/generate "$T/mrun2" --tokenizer tests/fixtures/tokenizer/gpt2.json --threads 1 --prompt "int main" \
    --max-new-tokens 24 --temperature 0 2>"$T/mgen.err")
case "$out" in "int main"?*) ok "generates 24 tokens past the window of 16 from the continued checkpoint" ;;
    *) bad "Mistral generation: '$out' $(tail -n 2 "$T/mgen.err")" ;; esac
exit $((failures > 0))
