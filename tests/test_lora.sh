#!/usr/bin/env bash
# LoRA training end to end on a tiny model: the checkpoints name the frozen base
# instead of copying it, the adapters go to PEFT's files, a run stopped at step 10 and resumed gives
# the same losses and adapters as one straight run (also with LoRA dropout,
# which changes the losses and is recorded in adapter_config.json), build/eval
# reads the LoRA checkpoint, build/merge folds it into a plain checkpoint with the same
# validation loss, and a LoRA target that matches no projection is refused.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" lora

build/tools/gen_tokens "$T/train.u16" 50000 64 1 || exit 1
config() {  # file out_dir steps init_from lora
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "seed": 3, "threads": 2, "resume": "auto"},
 "model": {"init_from": $4, "vocab_size": 64, "d_model": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
           "d_ff": 128, "lora": $5},
 "data": {"train": ["$T/train.u16"], "val": ["$T/train.u16"], "seq_len": 32},
 "optim": {"lr": 1e-2, "warmup_steps": 2, "schedule": "constant"},
 "train": {"batch_size": 2, "steps": $3, "log_every": 1, "eval_every": 0, "save_every": 10, "keep_last": 2}}
JSON
}
config "$T/base.json" "$T/base" 10 null null
build/train "$T/base.json" >"$T/base.log" 2>&1 || { bad "base run failed"; cat "$T/base.log"; }
losses() { grep -o '"step": [0-9]*, "loss": [^,]*' "$1/metrics.jsonl"; }
# straight_and_resumed LABEL A B LORA: LoRA run A of 20 steps from the base, and B stopped at 10 then resumed,
# must give bit-identical losses, adapters and AdamW moments
straight_and_resumed() {
    local base="\"$T/base/step_0000010\""
    config "$T/$2.json" "$T/$2" 20 "$base" "$4"
    config "$T/$3.json" "$T/$3" 10 "$base" "$4"
    build/train "$T/$2.json" >"$T/$2.log" 2>&1 || { bad "$1: run failed"; tail -5 "$T/$2.log"; }
    build/train "$T/$3.json" >"$T/$3.log" 2>&1 && config "$T/$3.json" "$T/$3" 20 "$base" "$4" &&
        build/train "$T/$3.json" >>"$T/$3.log" 2>&1 || { bad "$1: stopped + resumed run failed"; tail -5 "$T/$3.log"; }
    local a="$T/$2/step_0000020" b="$T/$3/step_0000020"
    [ -n "$(losses "$T/$2")" ] && [ "$(losses "$T/$2")" = "$(losses "$T/$3")" ] &&
        cmp -s "$a/adapter_model.safetensors" "$b/adapter_model.safetensors" &&
        cmp -s "$a/optimizer.safetensors" "$b/optimizer.safetensors" &&
        ok "$1, resume at step 10: losses, adapters and AdamW moments bit-identical" || bad "$1: resumed run differs"
}
straight_and_resumed "LoRA" a b '{"rank": 4, "alpha": 8, "targets": ["q_proj", "v_proj", "down_proj"]}'

A="$T/a/step_0000020"
[ ! -e "$A/model.safetensors" ] && head -c 2000 "$A/adapter_model.safetensors" | grep -aqF "\"repoc.base_path\":\"$(realpath "$T/base/step_0000010")\"" &&
    ok "the LoRA checkpoint names its base, holds no copy of it (tests/test_lora_ckpt.sh tests the rest)" ||
    bad "the LoRA checkpoint: $(ls "$A" | tr '\n' ' ')"
grep -q '"peft_type":.*"LORA"' "$A/adapter_config.json" && grep -q '"r":.*4' "$A/adapter_config.json" &&
    grep -q '"target_modules":.*\["q_proj", "v_proj", "down_proj"\]' "$A/adapter_config.json" &&
    ok "adapter_config.json: LORA, r 4, the three target modules" || { bad "adapter_config.json"; cat "$A/adapter_config.json"; }
head -c 2000 "$A/adapter_model.safetensors" | grep -q 'base_model.model.model.layers.1.mlp.down_proj.lora_B.weight":{"dtype":"F32","shape":\[64,4\]' &&
    ok "adapter_model.safetensors: PEFT names, lora_B [out, r]" || bad "adapter tensor names or shapes"

build/eval "$A" --ppl "$T/train.u16" --seq-len 32 --max-windows 4 >"$T/eval_a.log" 2>&1 || { bad "eval of the LoRA checkpoint failed"; tail -3 "$T/eval_a.log"; }
build/merge "$T/base/step_0000010" "$A" "$T/merged" >"$T/merge.log" 2>&1 || { bad "merge failed"; cat "$T/merge.log"; }
[ ! -e "$T/merged/adapter_config.json" ] && ok "merge writes a plain checkpoint" || bad "merge wrote adapter files"
build/eval "$T/merged" --ppl "$T/train.u16" --seq-len 32 --max-windows 4 >"$T/eval_m.log" 2>&1 || { bad "eval of the merged checkpoint failed"; tail -3 "$T/eval_m.log"; }
la=$(grep -o 'nll [0-9.]*  ppl [0-9.]*' "$T/eval_a.log" | head -n 1); lm=$(grep -o 'nll [0-9.]*  ppl [0-9.]*' "$T/eval_m.log" | head -n 1)
[ -n "$la" ] && [ "$la" = "$lm" ] && ok "merged checkpoint: same validation $la as the adapter model" || bad "eval losses differ: '$la' vs '$lm'"

# LoRA dropout 0.3: a run of 20 steps and one stopped at 10 and resumed match bit for bit, differ from the
# run without dropout, and adapter_config.json records lora_dropout
straight_and_resumed "LoRA dropout 0.3" c d '{"rank": 4, "alpha": 8, "targets": ["q_proj", "v_proj", "down_proj"], "dropout": 0.3}'
C="$T/c/step_0000020"
[ "$(losses "$T/c" | sed -n 2p)" != "$(losses "$T/a" | sed -n 2p)" ] &&
    ok "dropout changes the training loss: $(losses "$T/c" | sed -n 2p | cut -d, -f2) vs$(losses "$T/a" | sed -n 2p | cut -d, -f2)" ||
    bad "dropout 0.3 gave the losses of dropout 0"
grep -q '"lora_dropout":.*0.3' "$C/adapter_config.json" && ok "adapter_config.json: lora_dropout 0.3" ||
    { bad "adapter_config.json lora_dropout"; grep dropout "$C/adapter_config.json"; }

config "$T/bad.json" "$T/bad" 5 null '{"rank": 4, "targets": ["q_proj", "qkv_proj"]}'
out=$(build/train "$T/bad.json" 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "model.lora.targets" && echo "$out" | grep -q "qkv_proj" && echo "$out" | grep -q "gate_proj" &&
    ok "a target matching no projection: error naming it and the valid names" || { bad "bad target accepted (rc $rc)"; echo "$out" | tail -3; }

echo "test_lora: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
