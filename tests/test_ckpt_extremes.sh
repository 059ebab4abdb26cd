#!/usr/bin/env bash
# Whatever the run config accepts, the checkpoint it writes can be read back:
# for values at the edges of the accepted ranges of the keys saved in a
# checkpoint's config.json, build/train trains a step and saves, resumes from
# that checkpoint for one more step, and build/eval reads it. Past the edge
# (a YaRN context over 2^53 positions, the largest integer config.json holds
# exactly) the config is refused, naming the key, before anything is written.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" ckpt_extremes

build/tools/gen_tokens "$T/train.u16" 5000 64 1 || exit 1
base='"model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64,
               "positions": {"mode": "repo", "repo_start_layer": 1}},
      "data": {"train": ["'$T'/train.u16"], "seq_len": 16},
      "optim": {"warmup_steps": 0}, "train": {"batch_size": 2, "steps": 1, "eval_every": 0}'
n=0
round_trip() {  # name --set...
    local name=$1; shift
    n=$((n + 1))
    local out="$T/out_$n"
    printf '{"run": {"out_dir": "%s", "threads": 1}, %s}\n' "$out" "$base" >"$T/cfg.json"
    if ! build/train "$T/cfg.json" "$@" >"$T/log" 2>&1; then bad "$name: training failed: $(grep -m1 error "$T/log")"; return; fi
    if ! build/train "$T/cfg.json" "$@" --set train.steps=2 >"$T/log" 2>&1 || ! grep -q "resumed from $out/step_0000001" "$T/log"
    then bad "$name: resume failed: $(grep -m1 error "$T/log")"; return; fi
    if ! build/eval "$out" --ppl "$T/train.u16" --seq-len 16 --threads 1 >"$T/log" 2>&1
    then bad "$name: build/eval cannot read step_0000002: $(grep -m1 error "$T/log")"; return; fi
    ok "$name: trained, saved, resumed, evaluated"
}
refused() {  # name phrase --set...
    local name=$1 phrase=$2; shift 2
    n=$((n + 1))
    printf '{"run": {"out_dir": "%s"}, %s}\n' "$T/out_$n" "$base" >"$T/cfg.json"
    build/train "$T/cfg.json" "$@" >"$T/log" 2>&1
    local rc=$?
    if [ $rc -eq 1 ] && grep -qF -- "$phrase" "$T/log" && [ ! -e "$T/out_$n" ]; then ok "$name: refused: $(grep -m1 -F -- "$phrase" "$T/log")"
    else bad "$name: exit $rc, expected '$phrase': $(tail -1 "$T/log")"; fi
}
RS=model.positions.rope_scaling
round_trip "YaRN factor x original_max = 2^53" --set "$RS.factor=2199023255552" --set "$RS.original_max_position_embeddings=4096"
round_trip "YaRN original_max 1, factor 2^53" --set "$RS.factor=9007199254740992" --set "$RS.original_max_position_embeddings=1"
round_trip "YaRN beta_fast 1e308, beta_slow 1e-300" --set "$RS.factor=2" --set "$RS.beta_fast=1e308" --set "$RS.beta_slow=1e-300"
round_trip "YaRN attention_factor 1e-300" --set "$RS.factor=2" --set "$RS.attention_factor=1e-300"
round_trip "rope_theta 1e308" --set model.rope_theta=1e308
round_trip "rope_theta just above 1" --set model.rope_theta=1.0000000001
round_trip "norm_eps 1e-300" --set model.norm_eps=1e-300
round_trip "norm_eps 0.999999" --set model.norm_eps=0.999999
refused "YaRN factor 1e13 x 4096" "model.positions.rope_scaling.factor: 1e+13 x original_max_position_embeddings 4096" \
    --set "$RS.factor=1e13"
refused "YaRN factor 1e308" "model.positions.rope_scaling.factor: 1e+308 x original_max_position_embeddings" \
    --set "$RS.factor=1e308"
refused "YaRN 2^53 + 4096 positions" "exceeds 2^53" --set "$RS.factor=2199023255553" \
    --set "$RS.original_max_position_embeddings=4096"

echo "test_ckpt_extremes: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
