#!/usr/bin/env bash
# LoRA checkpoints on disk: a LoRA checkpoint holds the adapter in PEFT's files, repoc's AdamW state and
# trainer_state.json, and names its frozen base (absolute path and weights fingerprint in the adapter's
# __metadata__, adapter_config.json and trainer_state.json) instead of copying it, unless
# model.lora.save_base; loading it (build/eval, resume) reads the base from that path and refuses a base
# that changed; keep_last prunes LoRA step directories and start-up removes a killed LoRA run's
# step_N.tmp.<pid>/; resumes stay bit-identical with a BF16 base and with new RePo layers (a frozen one
# included, held by the adapter). init_from a LoRA checkpoint without model.lora folds the adapter in. run.overwrite
# with keep_last prunes the earlier run's checkpoints first. A resumed LoRA run refuses another
# lora.alpha and notes another dropout. Messages name the real cause: optim.freeze of every adapter,
# a LoRA checkpoint without adapter_model.safetensors, base_dtype bf16 or lora.save_base without LoRA.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" lora_ckpt

build/tools/gen_tokens "$T/train.u16" 50000 64 1 || exit 1
config() {  # file out_dir steps init_from lora [extra model keys] [extra optim keys] [run.resume etc.] [save_every] [keep_last]
    local run=${8:-'"resume": "auto"'}
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "seed": 3, "threads": 2, $run},
 "model": {"init_from": $4, "vocab_size": 64, "d_model": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
           "d_ff": 128, "lora": $5 ${6:-}},
 "data": {"train": ["$T/train.u16"], "val": ["$T/train.u16"], "seq_len": 32},
 "optim": {"lr": 1e-2, "warmup_steps": 2, "schedule": "constant" ${7:-}},
 "train": {"batch_size": 2, "steps": $3, "log_every": 1, "eval_every": 5, "eval_batches": 4,
           "save_every": ${9:-5}, "keep_last": ${10:-2}}}
JSON
}
LORA='{"rank": 4, "alpha": 8, "targets": ["q_proj", "v_proj", "down_proj"]}'
config "$T/base.json" "$T/base" 10 null null
build/train "$T/base.json" >"$T/base.log" 2>&1 || { bad "base run failed"; tail -3 "$T/base.log"; }
BASE="$T/base/step_0000010"
ABS=$(realpath "$BASE")

echo "item: what a LoRA checkpoint holds, pruning, cleanup"
config "$T/l.json" "$T/l" 20 "\"$T/base/./step_0000010\"" "$LORA"   # recorded as the absolute, canonical path
build/train "$T/l.json" >"$T/l.log" 2>&1 || { bad "LoRA run failed"; tail -3 "$T/l.log"; }
L="$T/l/step_0000020"
[ "$(cd "$T/l" && printf '%s ' step_*)" = "step_0000015 step_0000020 " ] &&
    ok "keep_last 2 prunes LoRA step directories: step_0000015 step_0000020 left" ||
    bad "LoRA step directories after keep_last 2: $(cd "$T/l" && printf '%s ' step_*)"
! grep -q "did not write" "$T/l.log" && ok "no 'entries repoc did not write' note for the adapter files" ||
    bad "$(grep "did not write" "$T/l.log" | head -1)"
[ "$(ls "$L" | tr '\n' ' ')" = "adapter_config.json adapter_model.safetensors config.json optimizer.safetensors trainer_state.json " ] &&
    ok "a LoRA checkpoint holds the adapter, config.json, AdamW state and trainer state, no copy of the base" ||
    bad "LoRA checkpoint files: $(ls "$L" | tr '\n' ' ')"
fp=$(head -c 4000 "$L/adapter_model.safetensors" | grep -ao '"repoc.base_fingerprint":"[0-9a-f]*"' | cut -d'"' -f4)
head -c 4000 "$L/adapter_model.safetensors" | grep -aqF "\"repoc.base_path\":\"$ABS\"" && [ ${#fp} -eq 16 ] &&
    ok "adapter_model.safetensors' __metadata__ names the base: $ABS, fingerprint $fp" ||
    bad "adapter metadata: $(head -c 300 "$L/adapter_model.safetensors" | tr -c '[:print:]' ' ')"
grep -qF "\"base_model_name_or_path\":	\"$ABS\"" "$L/adapter_config.json" ||
    grep -qF "\"base_model_name_or_path\": \"$ABS\"" "$L/adapter_config.json" &&
    ok "adapter_config.json: base_model_name_or_path is the absolute base path" ||
    bad "adapter_config.json: $(grep base_model "$L/adapter_config.json")"
tr -d ' \t\n' <"$L/trainer_state.json" | grep -qF "\"lora_base\":{\"path\":\"$ABS\",\"fingerprint\":\"$fp\"}" &&
    ok "trainer_state.json records the base path and fingerprint" || bad "trainer_state.json lacks lora_base"
build/eval "$L" --ppl "$T/train.u16" --seq-len 32 --max-windows 4 >"$T/eval_l.log" 2>&1 &&
    ok "build/eval reads the LoRA checkpoint with its base from the recorded path" ||
    { bad "eval of the LoRA checkpoint failed"; tail -3 "$T/eval_l.log"; }
# a LoRA run's step_N.tmp.<pid>/ left by a killed process (no such pid) is removed at the next start
mkdir "$T/l/step_0000025.tmp.999999999" && cp "$L"/* "$T/l/step_0000025.tmp.999999999/"
config "$T/l.json" "$T/l" 25 "\"$BASE\"" "$LORA"
build/train "$T/l.json" >"$T/l2.log" 2>&1 || { bad "resumed LoRA run failed"; tail -3 "$T/l2.log"; }
[ ! -e "$T/l/step_0000025.tmp.999999999" ] && ! grep -q "did not write" "$T/l2.log" &&
    ok "a killed LoRA run's step_N.tmp.<pid>/ is removed at start" ||
    bad "LoRA tmp leftover kept: $(ls "$T/l/step_0000025.tmp.999999999" 2>&1 | tr '\n' ' ')"

# the base changes after training: loading the adapter is refused, naming both paths
cp -r "$BASE" "$T/base2"
config "$T/c.json" "$T/c" 5 "\"$T/base2\"" "$LORA"
build/train "$T/c.json" >"$T/c.log" 2>&1 || { bad "LoRA run on base2 failed"; tail -3 "$T/c.log"; }
cp "$T/base/step_0000005/model.safetensors" "$T/base2/model.safetensors"
out=$(build/eval "$T/c/step_0000005" --ppl "$T/train.u16" --seq-len 32 --max-windows 4 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "has changed" && echo "$out" | grep -qF "$T/c/step_0000005" &&
    echo "$out" | grep -qF "$(realpath "$T/base2")" && ok "eval with a changed base: exit 1, $(echo "$out" | grep -o 'its LoRA base.*changed' | head -c 150)" ||
    { bad "changed base accepted by eval (rc $rc)"; echo "$out" | tail -2; }
config "$T/c.json" "$T/c" 10 "\"$T/base2\"" "$LORA"
expect_refused "resume with a changed base" "has changed since the adapter was trained" "$T/c.json"

# model.lora.save_base: the checkpoint keeps a copy of the base too, and still names it
config "$T/s.json" "$T/s" 5 "\"$BASE\"" '{"rank": 4, "alpha": 8, "targets": ["q_proj", "v_proj", "down_proj"], "save_base": true}'
build/train "$T/s.json" >"$T/s.log" 2>&1 || { bad "save_base run failed"; tail -3 "$T/s.log"; }
S="$T/s/step_0000005"
[ -f "$S/model.safetensors" ] && head -c 4000 "$S/adapter_model.safetensors" | grep -aqF "\"repoc.base_path\":\"$ABS\"" &&
    ok "model.lora.save_base: model.safetensors kept, the base still named" || bad "save_base: $(ls "$S" | tr '\n' ' ')"

# resumed from the save_base checkpoint without save_base: the checkpoints name the same base
config "$T/s.json" "$T/s" 10 "\"$BASE\"" "$LORA"
build/train "$T/s.json" >>"$T/s.log" 2>&1 || { bad "resume of the save_base run failed"; tail -3 "$T/s.log"; }
[ ! -e "$T/s/step_0000010/model.safetensors" ] &&
    head -c 4000 "$T/s/step_0000010/adapter_model.safetensors" | grep -aqF "\"repoc.base_path\":\"$ABS\"" &&
    ok "resumed from a checkpoint with a base copy: the next one names the same base, no copy" ||
    bad "after resuming the save_base run: $(ls "$T/s/step_0000010" | tr '\n' ' ')"
# with a BF16 base (rounded at load from the named base): 10 straight steps == 5 + resume 5, bit for bit
config "$T/x.json" "$T/x" 10 "\"$BASE\"" "$LORA" ', "base_dtype": "bf16"'
config "$T/y.json" "$T/y" 5 "\"$BASE\"" "$LORA" ', "base_dtype": "bf16"'
build/train "$T/x.json" >"$T/x.log" 2>&1 && build/train "$T/y.json" >"$T/y.log" 2>&1 &&
    config "$T/y.json" "$T/y" 10 "\"$BASE\"" "$LORA" ', "base_dtype": "bf16"' && build/train "$T/y.json" >>"$T/y.log" 2>&1 ||
    { bad "BF16 base runs failed"; tail -3 "$T/y.log"; }
cmp -s "$T/x/step_0000010/adapter_model.safetensors" "$T/y/step_0000010/adapter_model.safetensors" &&
    cmp -s "$T/x/step_0000010/optimizer.safetensors" "$T/y/step_0000010/optimizer.safetensors" &&
    ok "BF16 base, base named: resumed at step 5, adapters and AdamW moments bit-identical" || bad "BF16 base resume differs"

# RePo layers added to a plain base, one kind frozen: the adapter holds them all (the base has none)
REPO=', "positions": {"mode": "repo", "repo_start_layer": 1}'
config "$T/p.json" "$T/p" 10 "\"$BASE\"" "$LORA" "$REPO" ', "freeze": ["*.gate_map.*"]'
config "$T/q.json" "$T/q" 5 "\"$BASE\"" "$LORA" "$REPO" ', "freeze": ["*.gate_map.*"]'
build/train "$T/p.json" >"$T/p.log" 2>&1 && build/train "$T/q.json" >"$T/q.log" 2>&1 &&
    config "$T/q.json" "$T/q" 10 "\"$BASE\"" "$LORA" "$REPO" ', "freeze": ["*.gate_map.*"]' &&
    build/train "$T/q.json" >>"$T/q.log" 2>&1 || { bad "RePo LoRA runs failed"; tail -3 "$T/q.log"; }
cmp -s "$T/p/step_0000010/adapter_model.safetensors" "$T/q/step_0000010/adapter_model.safetensors" &&
    cmp -s "$T/p/step_0000010/optimizer.safetensors" "$T/q/step_0000010/optimizer.safetensors" &&
    build/eval "$T/p/step_0000010" --ppl "$T/train.u16" --seq-len 32 --max-windows 2 >"$T/eval_p.log" 2>&1 &&
    ok "new RePo layers, gate_map frozen: resume bit-identical, build/eval reads it (frozen RePo weights in the adapter)" ||
    { bad "RePo LoRA: resume differs or eval failed"; tail -2 "$T/eval_p.log"; }

echo "item: init_from a LoRA checkpoint without model.lora folds the adapter in"
build/merge "$BASE" "$L" "$T/merged" >"$T/merge.log" 2>&1 || { bad "merge failed"; tail -3 "$T/merge.log"; }
config "$T/m1.json" "$T/m1" 2 "\"$L\"" null
config "$T/m2.json" "$T/m2" 2 "\"$T/merged\"" null
build/train "$T/m1.json" >"$T/m1.log" 2>&1 || { bad "init_from the LoRA checkpoint failed"; tail -3 "$T/m1.log"; }
build/train "$T/m2.json" >"$T/m2.log" 2>&1 || { bad "init_from the merged checkpoint failed"; tail -3 "$T/m2.log"; }
v1=$(grep -o 'step *0 | val loss [0-9.]*' "$T/m1.log"); v2=$(grep -o 'step *0 | val loss [0-9.]*' "$T/m2.log")
[ -n "$v1" ] && [ "$v1" = "$v2" ] && grep -q "note: .* holds a LoRA adapter .*folded" "$T/m1.log" &&
    ok "init_from the LoRA checkpoint: a note, and the adapted model's $v1 (as the merged checkpoint)" ||
    bad "init_from the LoRA checkpoint: '$v1' vs merged '$v2'; $(grep -c folded "$T/m1.log") notes"

echo "item: run.overwrite with keep_last; LoRA resume with another alpha or dropout"
config "$T/o.json" "$T/o" 30 null null "" "" "" 10 5
build/train "$T/o.json" >"$T/o.log" 2>&1 || { bad "earlier run failed"; tail -3 "$T/o.log"; }
config "$T/o.json" "$T/o" 20 null null "" "" '"resume": "never", "overwrite": true' 10 2
build/train "$T/o.json" >"$T/o2.log" 2>&1 || { bad "overwrite run failed"; tail -3 "$T/o2.log"; }
[ "$(cd "$T/o" && printf '%s ' step_*)" = "step_0000010 step_0000020 " ] &&
    ok "run.overwrite + keep_last 2: this run's step_0000010 step_0000020 kept, the earlier run's step_0000030 pruned" ||
    bad "after the overwrite run: $(cd "$T/o" && printf '%s ' step_*)"
config "$T/a.json" "$T/l" 30 "\"$BASE\"" '{"rank": 4, "alpha": 16, "targets": ["q_proj", "v_proj", "down_proj"]}'
expect_refused "resume with another lora.alpha" "model.lora.alpha 16 differs from the checkpoint's lora_alpha 8" "$T/a.json"
config "$T/d.json" "$T/l" 30 "\"$BASE\"" '{"rank": 4, "alpha": 8, "targets": ["q_proj", "v_proj", "down_proj"], "dropout": 0.2}'
build/train "$T/d.json" >"$T/d.log" 2>&1 && grep -q "note: model.lora.dropout 0.2 differs from the checkpoint's lora_dropout 0" "$T/d.log" &&
    ok "resume with another lora.dropout: runs, with a note" || { bad "dropout change on resume"; tail -3 "$T/d.log"; }

echo "item: messages that name the real cause"
config "$T/f.json" "$T/f" 2 "\"$BASE\"" "$LORA" ', "base_dtype": "bf16"' ', "freeze": ["*lora*"]'
expect_refused "optim.freeze of every adapter" "nothing to train" "$T/f.json"
grep -q "BF16 base" "$T/refused.log" && bad "the message still blames the BF16 base"
config "$T/f2.json" "$T/f2" 2 "\"$BASE\"" "$LORA" ', "base_dtype": "bf16"' ', "freeze": ["*lora_A*"]'
build/train "$T/f2.json" >"$T/f2.log" 2>&1 && ok "optim.freeze of lora_A with a BF16 base trains lora_B" ||
    { bad "freezing lora_A with a BF16 base failed"; tail -2 "$T/f2.log"; }
cp -r "$S" "$T/noadapter" && rm "$T/noadapter/adapter_model.safetensors"
out=$(build/eval "$T/noadapter" --ppl "$T/train.u16" --seq-len 32 --max-windows 4 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "without adapter_model.safetensors" && ! echo "$out" | grep -q "RePo" &&
    ok "a LoRA checkpoint without adapter_model.safetensors: $(echo "$out" | grep -o 'a LoRA checkpoint.*' | head -c 120)" ||
    { bad "missing adapter file (rc $rc)"; echo "$out" | tail -2; }
config "$T/b.json" "$T/b" 2 "\"$BASE\"" null ', "base_dtype": "bf16"'
expect_refused "base_dtype bf16 without LoRA" "model.base_dtype" "$T/b.json"
config "$T/b.json" "$T/b" 2 "\"$BASE\"" '{"rank": 0, "save_base": true}'
expect_refused "lora.save_base without LoRA" "model.lora.save_base" "$T/b.json"

echo "test_lora_ckpt: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
