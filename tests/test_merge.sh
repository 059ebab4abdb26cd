#!/usr/bin/env bash
# build/merge's refusals, on tiny checkpoints: never in place (OUT the BASE or ADAPTER directory, also
# through a link or another spelling), never into a directory holding adapter files; adapter_config.json
# options that change the math refused naming key and file (their defaults accepted and merged
# byte-identically), use_rslora applied, lora_alpha that is not finite refused, non-finite merged weights
# refused; a wrong base refused by the adapter's repoc.base_fingerprint (--force merges with a warning), by
# its model type or layer positions, and by the layer count with a message naming it; the tokenizer and
# generation files copied, each from the first of ADAPTER and BASE that has it; a file-size limit ends merge
# with a message and nothing of it in OUT (a new or an existing one), and a killed merge's leftovers (its
# staging directories too) are removed.
MERGE=${MERGE:-build/merge}
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" merge

build/tools/gen_tokens "$T/train.u16" 20000 64 1 || exit 1
config() {  # out_dir init_from lora layers arch positions [seed]
    cat >"$T/cfg.json" <<JSON
{"run": {"out_dir": "$1", "seed": ${7:-3}, "threads": 2},
 "model": {"init_from": $2, "arch": "$5", "vocab_size": 64, "d_model": 32, "n_layers": $4, "n_heads": 4,
           "n_kv_heads": 2, "d_ff": 64, "lora": $3, "positions": {"layers": $6}},
 "data": {"train": ["$T/train.u16"], "val": ["$T/train.u16"], "seq_len": 16},
 "optim": {"lr": 1e-2, "warmup_steps": 0, "schedule": "constant"},
 "train": {"batch_size": 2, "steps": 2, "log_every": 1, "eval_every": 0, "save_every": 2}}
JSON
    build/train "$T/cfg.json" >"$T/train.log" 2>&1 || { bad "training $1 failed"; tail -5 "$T/train.log"; }
}
config "$T/b" null null 2 olmo2 null
config "$T/b2" null null 2 olmo2 null 4                       # the same shapes, other weights
config "$T/llama" null null 2 llama null
config "$T/repo" null null 2 olmo2 '["rope", "repo"]'
config "$T/b3" null null 3 olmo2 null
B="$T/b/step_0000002"
config "$T/l" "\"$B\"" '{"rank": 4, "alpha": 8, "targets": ["q_proj", "v_proj", "down_proj"]}' 2 olmo2 null
L="$T/l/step_0000002"

# merge_fails LABEL WANT BASE ADAPTER OUT [ARGS]: exit 1 with a line containing WANT
merge_fails() {
    local label=$1 want=$2
    shift 2
    $MERGE "$@" >"$T/m.log" 2>&1
    local rc=$?
    if [ $rc -eq 1 ] && grep -qF -- "$want" "$T/m.log"; then ok "$label: $(grep -F -- "$want" "$T/m.log" | head -c 230)"
    else bad "$label: exit $rc: $(head -c 400 "$T/m.log")"; fi
}
merge_ok() {  # LABEL BASE ADAPTER OUT [ARGS]
    local label=$1
    shift
    if $MERGE "$@" >"$T/m.log" 2>&1; then ok "$label"; else bad "$label: exit $?: $(head -c 400 "$T/m.log")"; fi
}

echo "in place and stale adapter files"
sums() { (cd "$1" && sha256sum *); }   # every file of a directory
sums "$L" >"$T/ckpt_before"; sums "$B" >"$T/base_before"
merge_fails "OUT is the checkpoint itself (CKPT CKPT CKPT)" "is the BASE and ADAPTER directory" "$L" "$L" "$L"
ln -s "$L" "$T/link"
merge_fails "OUT is a link to the checkpoint" "(through a symbolic link)" "$L" "$L" "$T/link"
merge_fails "OUT is BASE spelled another way" "is the BASE directory" "$B" "$L" "$T/b/./step_0000002/"
merge_fails "OUT is the ADAPTER directory" "is the ADAPTER directory" "$B" "$L" "$L"
cmp -s "$T/ckpt_before" <(sums "$L") && cmp -s "$T/base_before" <(sums "$B") &&
    ok "the checkpoint and its base are unchanged" || bad "merge changed the checkpoint or its base"
for f in adapter_config.json adapter_model.safetensors model.safetensors.index.json; do
    mkdir -p "$T/holds_$f" && echo '{}' >"$T/holds_$f/$f"
    merge_fails "OUT holding $f" "holds $f" "$B" "$L" "$T/holds_$f"
    [ ! -e "$T/holds_$f/model.safetensors" ] || bad "merge wrote next to $f"
done
merge_ok "a plain merge" "$B" "$L" "$T/plain"
grep -q "base verified" "$T/m.log" && ok "a run's checkpoint names its base: the base is verified" ||
    bad "the run's base not verified: $(cat "$T/m.log")"
merge_ok "a run's checkpoint without a base copy as BASE (CKPT CKPT OUT)" "$L" "$L" "$T/o_ckpt"
grep -q "holds no base weights" "$T/m.log" && cmp -s "$T/plain/model.safetensors" "$T/o_ckpt/model.safetensors" &&
    ok "the weights come from the base it names: the same merge as BASE CKPT OUT" || bad "CKPT CKPT OUT: $(cat "$T/m.log")"

echo "adapter_config.json options"
# adapter KEY_VALUE: a copy of L's adapter with one more (or one replaced) key in adapter_config.json
adapter() {
    rm -rf "$T/ad" && mkdir -p "$T/ad" && cp "$L/adapter_model.safetensors" "$T/ad/"
    key=${1#\"}
    key=${key%%\"*}
    grep -v "\"$key\"" "$L/adapter_config.json" | sed "s|^{|{$1,|" >"$T/ad/adapter_config.json"
}
for kv in '"use_dora": true' '"fan_in_fan_out": true' '"rank_pattern": {"q_proj": 8}' '"alpha_pattern": {"v_proj": 2}' \
          '"layers_to_transform": [0]' '"lora_bias": true' '"use_qalora": true' '"target_parameters": ["mlp.w"]' \
          '"layer_replication": [[0, 2]]' '"trainable_token_indices": [3]' '"exclude_modules": ["v_proj"]' \
          '"bias": "all"' '"init_lora_weights": "pissa"' '"lora_alpha": 1e999' '"r": 0' '"novel_option": 1'; do
    adapter "$kv"
    merge_fails "$kv" "$key" "$B" "$T/ad" "$T/o_opt"
    grep -qF "adapter_config.json" "$T/m.log" || bad "$kv: the message does not name adapter_config.json"
    [ ! -e "$T/o_opt/model.safetensors" ] || bad "$kv: merge wrote $T/o_opt"
done
for kv in '"use_dora": false' '"fan_in_fan_out": false' '"rank_pattern": {}' '"alpha_pattern": {}' \
          '"layers_to_transform": null' '"init_lora_weights": "gaussian"' '"use_rslora": false' '"revision": null'; do
    adapter "$kv"
    rm -rf "$T/o_def"
    $MERGE "$B" "$T/ad" "$T/o_def" >"$T/m.log" 2>&1 && cmp -s "$T/plain/model.safetensors" "$T/o_def/model.safetensors" &&
        ok "$kv: accepted, the merge is byte-identical to the plain one" || bad "$kv: $(head -c 300 "$T/m.log")"
done
a78=$(printf 'a%.0s' $(seq 78))
adapter "\"layers_pattern\": \"${a78}é\""
merge_fails "a long value in a message: cut before a whole character, never inside one" "is \"$a78...," "$B" "$T/ad" "$T/o_opt"
adapter '"revision": null'
sed -i 's/"modules_to_save":[[:space:]]*null/"modules_to_save": ["gate_mapx"]/' "$T/ad/adapter_config.json"
grep -q gate_mapx "$T/ad/adapter_config.json" || bad "the test's adapter_config.json has no modules_to_save to change"
merge_fails "modules_to_save naming a module the adapter holds no weight of" "modules_to_save names 'gate_mapx'" \
    "$B" "$T/ad" "$T/o_opt"
[ ! -e "$T/o_opt/model.safetensors" ] || bad "modules_to_save gate_mapx: merge wrote $T/o_opt"
adapter '"target_modules": ["self_attn.q_proj", "self_attn.v_proj", "mlp.down_proj"]'
rm -rf "$T/o_suffix"
$MERGE "$B" "$T/ad" "$T/o_suffix" >"$T/m.log" 2>&1 && cmp -s "$T/plain/model.safetensors" "$T/o_suffix/model.safetensors" &&
    ok "PEFT's suffix form of target_modules (self_attn.q_proj, mlp.down_proj): the same merge" ||
    bad "target_modules in suffix form: $(head -c 300 "$T/m.log")"
adapter '"use_rslora": true'
merge_ok "use_rslora true" "$B" "$T/ad" "$T/o_rs"
cmp -s "$T/plain/model.safetensors" "$T/o_rs/model.safetensors" && bad "use_rslora true merged as plain LoRA" ||
    ok "use_rslora true changes the merge (the exact scale: tests/test_lora.c)"
adapter '"lora_alpha": 1e300'
merge_fails "lora_alpha 1e300: merged weights not finite" "not finite, nothing written" "$B" "$T/ad" "$T/o_inf"
[ ! -e "$T/o_inf/model.safetensors" ] || bad "lora_alpha 1e300: merge wrote $T/o_inf"
config "$T/rs" "\"$B\"" '{"rank": 4, "alpha": 8, "targets": ["q_proj"], "rslora": true}' 2 olmo2 null
grep -q '"use_rslora":.*true' "$T/rs/step_0000002/adapter_config.json" && ok "model.lora.rslora: use_rslora true saved" ||
    bad "use_rslora not saved: $(cat "$T/rs/step_0000002/adapter_config.json")"

echo "wrong base"
merge_fails "a 3-layer base: the layer count named" "LoRA tensors for 2 layers (model.layers.0 to 1) but the base model has 3" \
    "$T/b3/step_0000002" "$L" "$T/o3"
merge_fails "a Llama base" "repoc.base_model_type is olmo2, but" "$T/llama/step_0000002" "$L" "$T/o_llama"
merge_fails "a RePo base" "repoc.base_layer_positions are rope,rope, but" "$T/repo/step_0000002" "$L" "$T/o_repo"
config "$T/lr" "\"$B\"" '{"rank": 4, "alpha": 8, "targets": ["q_proj"]}' 2 olmo2 '["rope", "repo"]'
merge_fails "an adapter whose run added RePo layers, onto its plain base: that cause named, and the way" \
    "the run that trained this adapter added RePo layers to its base. Merge with the run's checkpoint as BASE" \
    "$B" "$T/lr/step_0000002" "$T/o_lr"
merge_ok "... which merges" "$T/lr/step_0000002" "$T/lr/step_0000002" "$T/o_lr"
cp -r "$L" "$T/stamped" && build/tools/adapter_meta "$T/stamped" --stamp "$B" || bad "adapter_meta --stamp"
merge_ok "a stamped adapter onto its base" "$B" "$T/stamped" "$T/o_st"
grep -q "base verified" "$T/m.log" && cmp -s "$T/plain/model.safetensors" "$T/o_st/model.safetensors" &&
    ok "its base verified, the same merge" || bad "stamped merge: $(cat "$T/m.log")"
merge_fails "a stamped adapter onto a base of the same shapes" "trained on another base: its repoc.base_fingerprint" \
    "$T/b2/step_0000002" "$T/stamped" "$T/o_b2"
grep -qF "$(cd "$B" && pwd -P)" "$T/m.log" && ok "the message names repoc.base_path" || bad "no repoc.base_path"
merge_ok "--force merges onto it anyway" "$T/b2/step_0000002" "$T/stamped" "$T/o_b2" --force
grep -q "warning: .*merging anyway (--force)" "$T/m.log" && ok "with a warning" || bad "no --force warning"
merge_ok "--force onto the Llama base" "$T/llama/step_0000002" "$L" "$T/o_llama" --force
grep -q "warning: .*repoc.base_model_type is olmo2.*merging anyway (--force)" "$T/m.log" && ok "with a warning" ||
    bad "no --force warning for the model type"
cp -r "$L" "$T/foreign" && build/tools/adapter_meta "$T/foreign" --strip || bad "adapter_meta --strip"
merge_ok "an adapter from elsewhere (no repoc metadata) onto a Llama base" "$T/llama/step_0000002" "$T/foreign" "$T/o_f"
grep -q "could not be verified" "$T/m.log" && ok "with the warning that the base could not be verified" ||
    bad "no warning for the foreign adapter"

echo "tokenizer and generation files"
cp -r "$L" "$T/l_tok" && echo '{"model": "adapter"}' >"$T/l_tok/tokenizer.json" &&
    echo '{"chat_template": "x"}' >"$T/l_tok/tokenizer_config.json" || bad "copying the adapter"
cp -r "$B" "$T/b_tok" && echo '{"model": "base"}' >"$T/b_tok/tokenizer.json" &&
    echo '{"eos_token_id": 0}' >"$T/b_tok/generation_config.json" || bad "copying the base"
merge_ok "a merge whose ADAPTER and BASE hold tokenizer files" "$T/b_tok" "$T/l_tok" "$T/o_tok"
cmp -s "$T/l_tok/tokenizer.json" "$T/o_tok/tokenizer.json" && cmp -s "$T/l_tok/tokenizer_config.json" \
    "$T/o_tok/tokenizer_config.json" && cmp -s "$T/b_tok/generation_config.json" "$T/o_tok/generation_config.json" &&
    [ ! -e "$T/o_tok/special_tokens_map.json" ] &&
    ok "each file from the first of ADAPTER, BASE that has it: $(grep '^copied' "$T/m.log" | tr '\n' ';' | head -c 200)" ||
    bad "copied files: $(ls "$T/o_tok") $(cat "$T/m.log")"
merge_ok "neither has them" "$B" "$L" "$T/o_none"
grep -q "OUT gets none" "$T/m.log" && [ ! -e "$T/o_none/tokenizer.json" ] && ok "... said, none written" ||
    bad "no tokenizer files: $(cat "$T/m.log")"

echo "temporary files"
(ulimit -f 20; $MERGE "$B" "$L" "$T/o_fsz") >"$T/m.log" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "File too large" "$T/m.log" && ok "ulimit -f: exit 1 with '$(grep -o "writing.*" "$T/m.log" | head -c 120)'" ||
    bad "ulimit -f: exit $rc: $(cat "$T/m.log")"
left=$(find "$T" -maxdepth 1 -name 'o_fsz*')
[ -z "$left" ] && ok "ulimit -f into a new OUT: no OUT, no staging directory left" || bad "ulimit -f left $left"
mkdir -p "$T/o_exist" && echo keep >"$T/o_exist/README"
(ulimit -f 20; $MERGE "$B" "$L" "$T/o_exist") >"$T/m.log" 2>&1
left=$(cd "$T/o_exist" && ls -A | tr '\n' ' ')
[ "$left" = "README " ] && ok "ulimit -f into an existing OUT: nothing of the merge in it, its own file kept" ||
    bad "ulimit -f into o_exist left: $left"
merge_ok "a merge into an existing OUT" "$T/b_tok" "$T/l_tok" "$T/o_exist"
left=$(cd "$T/o_exist" && ls -A | tr '\n' ' ')
[ "$left" = "README config.json generation_config.json model.safetensors tokenizer.json tokenizer_config.json " ] &&
    ok "its files renamed into OUT, the staging directory gone" || bad "o_exist holds: $left"
sleep 0 & dead=$!
wait $dead
mkdir -p "$T/o_st2"
for f in model.safetensors.tmp.$dead config.json.tmp.$dead model.safetensors.tmp.$$ notes.tmp.$dead; do echo x >"$T/o_st2/$f"; done
mkdir -p "$T/o_st2/.merge.tmp.$dead" "$T/o_st2.tmp.$dead" "$T/o_st2/.merge.tmp.$$"
for d in "$T/o_st2/.merge.tmp.$dead" "$T/o_st2.tmp.$dead"; do
    echo x >"$d/model.safetensors" && echo x >"$d/tokenizer.json.tmp.$dead"
done
merge_ok "a merge into OUT with a killed merge's leftovers" "$B" "$L" "$T/o_st2"
left=$(cd "$T/o_st2" && shopt -s nullglob dotglob && printf '%s\n' *.tmp.* | sort | tr '\n' ' ')
[ "$left" = ".merge.tmp.$$ model.safetensors.tmp.$$ notes.tmp.$dead " ] && [ ! -e "$T/o_st2.tmp.$dead" ] &&
    ok "the dead pid's model.safetensors.tmp, config.json.tmp and staging directories removed; a live pid's and notes.tmp kept" ||
    bad "left: $left"

echo "test_merge: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
