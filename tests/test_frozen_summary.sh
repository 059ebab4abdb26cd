#!/usr/bin/env bash
# A run's optimizer summary names the frozen tensors on one line, however
# many: a LoRA run (every base tensor frozen) prints their count, parameters
# and the first few names, not one line per tensor; optim.freeze of one
# tensor names it.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" frozen_summary
build/tools/gen_tokens "$T/train.u16" 5000 64 1 || exit 1
sizes='"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64'
config() {  # file out_dir model-keys optim-extra
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "threads": 1},
 "model": {$3},
 "data": {"train": ["$T/train.u16"], "seq_len": 16}, "optim": {"warmup_steps": 0 $4},
 "train": {"batch_size": 2, "steps": 1, "eval_every": 0}}
JSON
}
config "$T/base.json" "$T/base" "$sizes" ""
build/train "$T/base.json" >"$T/base.log" 2>&1 || { bad "base run: $(tail -n 2 "$T/base.log")"; exit 1; }
config "$T/lora.json" "$T/lora" "\"init_from\": \"$T/base\", \"lora\": {\"rank\": 2}" ""
build/train "$T/lora.json" >"$T/lora.log" 2>&1 || bad "LoRA run: $(tail -n 2 "$T/lora.log")"
n=$(grep -c "^  frozen:" "$T/lora.log")
if [ "$n" = 1 ] && grep -qE "^  frozen: [0-9]+ tensors \([0-9]+ params\): .*, and [0-9]+ more$" "$T/lora.log"; then
    ok "LoRA: one line: $(grep '^  frozen:' "$T/lora.log" | cut -c1-110)"
else bad "LoRA: $n frozen lines"; fi
config "$T/one.json" "$T/one" "$sizes" ", \"freeze\": [\"model.embed_tokens.weight\"]"
build/train "$T/one.json" >"$T/one.log" 2>&1 || bad "freeze run: $(tail -n 2 "$T/one.log")"
grep -qx "  frozen: 1 tensor ([0-9]* params): model.embed_tokens.weight" "$T/one.log" &&
    ok "optim.freeze of one tensor: $(grep '^  frozen:' "$T/one.log")" || bad "freeze: $(grep frozen "$T/one.log")"
exit $((failures > 0))
