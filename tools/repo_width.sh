#!/usr/bin/env bash
# tools/repo_width.sh [OUT_MD]: how RePo's learned positions z start and move against d_model
# (docs/repo_width.md). For each width a fresh OLMo-2 model with the 1B's layout
# (16 layers, RePo from layer 5, head dim 128, or d_model below 128; d_ff 4 d_model) trains a few
# steps with everything frozen but RePo's three maps (optim.freeze), at the released lr 7.4487e-5,
# constant, no warmup, B = 2 rows of T = 64 synthetic tokens; train.log_positions 1 measures z on the
# same batch after every step. d_model 2048 is OLMo-2 1B itself (tests/corpus/hf_configs/olmo2_1b.json
# through model.from_config). Each width below 2048 runs twice: with the released init (std 0.02 for
# the gate, content and final maps, lr_mult 1) and with the width rule (std 0.02 sqrt(2048/D) for all
# three, lr_mult 2048/D). The study's own model (D = 128, L = 4, RePo from layer 1) runs both ways too.
# Prints one markdown table (also to OUT_MD), means over the RePo layers of the positions lines: z's
# mean |z| and mean |step| between neighbouring tokens at step 0, and mean |z_s - z_(s-1)| per
# optimizer step over steps 1 .. STEPS (moved_per_step), also relative to mean |z|. One thread; the 1B run needs about 7 GiB (freeze: no gradients or AdamW state for
# the frozen tensors) and a few minutes. Never part of `make test`.
#   REPO_WIDTHS="64 128"  REPO_WIDTH_STEPS=4  REPO_WIDTH_1B=0 (skip the 1B)  are the knobs.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT_MD=${1:-}
WIDTHS=${REPO_WIDTHS:-64 128 256 512 1024}
STEPS=${REPO_WIDTH_STEPS:-4}
make --no-print-directory -s build/train
W=$(mktemp -d /tmp/repoc_repo_width.XXXXXX)
trap 'rm -rf "$W"' EXIT
FREEZE='["model.embed_tokens.weight", "lm_head.weight", "*_proj.weight", "*norm.weight"]'

# conf NAME MODEL_JSON STD LR_MULT
conf() {
    cat >"$W/$1.json" <<JSON
{"run": {"out_dir": "$W/$1", "seed": 1, "threads": 1, "resume": "never", "overwrite": true},
 "model": $2,
 "data": {"seq_len": 64, "synthetic": {"table_rows": 3}},
 "optim": {"lr": 7.4487e-5, "schedule": "constant", "warmup_steps": 0, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8,
           "weight_decay": 0.1, "grad_clip": 1.0, "freeze": $FREEZE, "lr_mult": {"repo": $4}},
 "train": {"batch_size": 2, "steps": $STEPS, "log_every": 1, "eval_every": 0, "save_every": 0, "log_positions": 1}}
JSON
    # the three maps' stds go into model.positions (the model JSON ends with its positions object's "}}")
    sed -i "s|\"positions\": {\([^}]*\)}|\"positions\": {\1, \"repo_gate_init_std\": $3, \"repo_content_init_std\": $3, \"repo_final_init_std\": $3}|" \
        "$W/$1.json"
}
# pos NAME STEP KEY: the mean over RePo layers of KEY in the positions line of STEP
pos() {
    grep "^{\"step\": $2, \"positions\"" "$W/$1/metrics.jsonl" | grep -oE "\"$3\": [-0-9.e+]+" |
        awk '{ s += $2; n++ } END { printf "%.6g", s / n }'
}
row() { # NAME LABEL STD LR_MULT
    local a0 s0 mv ms
    a0=$(pos "$1" 0 mean_abs) s0=$(pos "$1" 0 mean_abs_step)
    # moved_per_step: the mean over the steps 1 .. STEPS (each line: since the line before)
    mv=$(for s in $(seq 1 "$STEPS"); do pos "$1" "$s" moved_per_step; echo; done | awk '{ t += $1 } END { printf "%.6g", t / NR }')
    ms=$(grep -v positions "$W/$1/metrics.jsonl" | grep -o '"ms": [0-9.]*' | awk 'NR > 1 { s += $2; n++ } END { printf "%.0f", n ? s / n : 0 }')
    awk -v l="$2" -v std="$3" -v m="$4" -v a0="$a0" -v s0="$s0" -v mv="$mv" -v ms="$ms" 'BEGIN {
        printf "| %s | %g | %g | %.3g | %.3g | %.3g | %.3g | %s |\n", l, std, m, a0, s0, mv, mv / a0, ms }'
}
run() { build/train "$W/$1.json" >"$W/$1.log" 2>&1 || { tail -n 5 "$W/$1.log" >&2; echo "tools/repo_width.sh: $1 failed" >&2; exit 1; }; }

{
    echo "| model | std (gate, content, final) | lr_mult | mean \\|z\\| at step 0 | mean \\|step\\| at step 0 | mean \\|Δz\\| per step | per step / \\|z\\| | ms/step |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
} >"$W/table.md"
for D in $WIDTHS; do
    H=$((D >= 128 ? D / 128 : 1))
    model="{\"arch\": \"olmo2\", \"vocab_size\": 64, \"d_model\": $D, \"n_layers\": 16, \"n_heads\": $H, \"d_ff\": $((4 * D)), \"rope_theta\": 500000, \"positions\": {\"mode\": \"repo\", \"repo_start_layer\": 5}}"
    std=$(awk -v d="$D" 'BEGIN { printf "%.6g", 0.02 * sqrt(2048 / d) }')
    mult=$(awk -v d="$D" 'BEGIN { printf "%.6g", 2048 / d }')
    conf "w${D}" "$model" 0.02 1
    conf "w${D}_rule" "$model" "$std" "$mult"
    run "w${D}"
    run "w${D}_rule"
    row "w${D}" "D $D, L 16, H $H (released init)" 0.02 1 >>"$W/table.md"
    row "w${D}_rule" "D $D, L 16, H $H (width rule)" "$std" "$mult" >>"$W/table.md"
done
study='{"arch": "olmo2", "vocab_size": 64, "d_model": 128, "n_layers": 4, "n_heads": 4, "d_ff": 384, "positions": {"mode": "repo"}}'
conf study "$study" 0.02 1
conf study_rule "$study" 0.08 16
run study
run study_rule
row study "the study's model: D 128, L 4, H 4, RePo from 1 (released init)" 0.02 1 >>"$W/table.md"
row study_rule "the study's model (width rule)" 0.08 16 >>"$W/table.md"
if [ "${REPO_WIDTH_1B:-1}" = 1 ]; then
    conf olmo2_1b '{"from_config": "tests/corpus/hf_configs/olmo2_1b.json", "positions": {"mode": "repo", "repo_start_layer": 5}}' 0.02 1
    run olmo2_1b
    row olmo2_1b "OLMo-2 1B: D 2048, L 16, H 16 (released init)" 0.02 1 >>"$W/table.md"
fi
cat "$W/table.md"
[ -z "$OUT_MD" ] || cp "$W/table.md" "$OUT_MD"
