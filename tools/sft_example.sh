#!/usr/bin/env bash
# The LoRA fine-tuning example of docs/finetune.md, end to end on generated
# data: a small OLMo-2-style base is pretrained on lists of digits with random
# answers ("text" records), then LoRA adapters on its frozen BF16 base learn
# to reverse the list from prompt/completion records. build/sft_eval scores
# the held-out records before (the base) and after (the LoRA checkpoint), and
# build/merge folds the adapter into a plain checkpoint, which scores the same.
# The tokenizer is the small GPT-2 style one of tests/fixtures. Work goes to
# runs/sft (or $1).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/sft}
mkdir -p "$out"
tok=tests/fixtures/tokenizer/gpt2.json
# records: "reverse d1 d2 d3 d4 =" -> " d4 d3 d2 d1"; the base sees the same
# prompts with a random answer
gen() {  # seed count kind(text|sft)
    awk -v seed="$1" -v n="$2" -v kind="$3" 'BEGIN {
        srand(seed);
        for (i = 0; i < n; i++) {
            p = "reverse"; c = "";
            for (k = 0; k < 4; k++) { d[k] = int(rand() * 10); p = p " " d[k] }
            p = p " =";
            for (k = 3; k >= 0; k--) c = c " " (kind == "text" ? int(rand() * 10) : d[k]);
            if (kind == "text") printf "{\"text\": \"%s%s\"}\n", p, c;
            else printf "{\"prompt\": \"%s\", \"completion\": \"%s\"}\n", p, c;
        }
    }'
}
gen 1 4000 text >"$out/base_train.jsonl"
gen 2 4000 sft >"$out/sft_train.jsonl"
gen 3 200 sft >"$out/sft_val.jsonl"

cat >"$out/base.json" <<JSON
{"run": {"out_dir": "$out/base", "seed": 1, "resume": "never", "overwrite": true},
 "model": {"vocab_size": 1024, "d_model": 128, "n_layers": 4, "n_heads": 4, "d_ff": 384},
 "data": {"train": ["$out/base_train.jsonl"], "format": "jsonl", "tokenizer": "$tok", "seq_len": 64},
 "optim": {"lr": 3e-3, "min_lr": 3e-4, "warmup_steps": 20},
 "train": {"batch_size": 16, "steps": 300, "log_every": 50, "eval_every": 0, "save_every": 300}}
JSON
cat >"$out/lora.json" <<JSON
{"run": {"out_dir": "$out/lora", "seed": 1, "resume": "never", "overwrite": true},
 "model": {"init_from": "$out/base", "base_dtype": "bf16",
           "lora": {"rank": 16, "alpha": 32,
                    "targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}},
 "data": {"train": ["$out/sft_train.jsonl"], "val": ["$out/sft_val.jsonl"], "format": "jsonl", "tokenizer": "$tok",
          "seq_len": 64},
 "optim": {"lr": 3e-3, "min_lr": 3e-4, "warmup_steps": 20, "weight_decay": 0},
 "train": {"batch_size": 16, "steps": 300, "log_every": 50, "eval_every": 100, "eval_batches": 4,
           "save_every": 300}}
JSON
echo "== base: pretrain on digit lists with random answers"
build/train "$out/base.json"
echo "== LoRA SFT: reverse the list (frozen BF16 base, rank 16 on all seven projections)"
build/train "$out/lora.json"
ckpt="$out/lora/$(head -n 1 "$out/lora/latest")"
build/merge "$(readlink -f "$out/base/$(head -n 1 "$out/base/latest")")" "$ckpt" "$out/merged"
echo "== held-out records ($out/sft_val.jsonl)"
row() {   # label checkpoint: sft_eval's line, then the row of docs/finetune.md's table
    build/sft_eval "$2" "$out/sft_val.jsonl" --tokenizer "$tok" --seq-len 64 | tee "$out/eval.txt"
    sed -n 's/.*completion loss \([0-9.]*\)  token accuracy \([0-9.]*\) .*exact match \([0-9.]*\) .*/\1 \2 \3/p' \
        "$out/eval.txt" | awk -v l="$1" '{printf "| %s | %.4f | %.3f | %.3f |\n", l, $1, $2, $3}' >>"$out/table.md"
}
: >"$out/table.md"
echo "-- before (the base model):"
row "base (before)" "$out/base"
echo "-- after (base + LoRA adapter):"
row "base + LoRA adapter (after, 300 steps)" "$ckpt"
echo "-- after, merged into a plain checkpoint ($out/merged):"
row "merged (\`build/merge\`)" "$out/merged"
echo "== docs/finetune.md's table"
cat "$out/table.md"
