#!/usr/bin/env bash
# metrics.jsonl logs the cross-entropy and the z-loss term apart, as OLMo does: with optim.z_loss = c > 0
# every step line has "loss" (the cross-entropy) and "z_loss" (the z-loss term; loss + z_loss is the
# objective that backward differentiates), every validation line "val_loss" and "val_z_loss". At a
# learning rate of 1e-30 the weights never change, so each step and each evaluation scores the same
# weights on the same rows in every run: the cross-entropy of c = 1e-2 and of c = 2e-2 must be the
# loss of a c = 0 run (which logs no z_loss), and the z-loss term of 2e-2 twice that of 1e-2.
# tests/test_model.c checks objective = cross-entropy + z-loss term on the model itself.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" z_loss

build/tools/gen_tokens "$T/train.u16" 20000 64 1 || exit 1
run() {  # z_loss out_dir
    cat >"$T/c.json" <<JSON
{"run": {"out_dir": "$2", "seed": 3, "threads": 2, "resume": "never"},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 2, "d_ff": 64, "init_std": 0.5,
           "positions": {"mode": "repo", "repo_start_layer": 1}},
 "data": {"train": ["$T/train.u16"], "val": ["$T/train.u16"], "seq_len": 32},
 "optim": {"lr": 1e-30, "schedule": "constant", "warmup_steps": 0, "z_loss": $1},
 "train": {"batch_size": 2, "grad_accum": 2, "steps": 4, "log_every": 1, "eval_every": 2, "eval_batches": 2,
           "save_every": 0, "keep_last": 1}}
JSON
    build/train "$T/c.json" >"$T/run.log" 2>&1 || { bad "z_loss $1: run failed"; cat "$T/run.log"; }
}
field() { grep -o "\"$2\": [-0-9.e+]*" "$1/metrics.jsonl" | awk '{print $2}'; }   # dir key: one value a line

run 0 "$T/z0"
run 1e-2 "$T/z1"
run 2e-2 "$T/z2"
for key in z_loss val_z_loss; do
    n0=$(field "$T/z0" "$key" | wc -l); n1=$(field "$T/z1" "$key" | wc -l)
    want=$([ $key = z_loss ] && echo 4 || echo 3)   # steps 1-4; evaluations at steps 0, 2, 4
    if [ "$n0" -eq 0 ] && [ "$n1" -eq "$want" ]; then ok "\"$key\" on all $n1 lines with z_loss 1e-2, absent with 0"
    else bad "\"$key\": $n1 lines with z_loss 1e-2 (want $want), $n0 with 0"; fi
done
# close: |a - b| <= 1e-9 |b| for every line of two columns
close() { paste <(echo "$1") <(echo "$2") | awk -v f="$3" '{d = $1 - $2; if (d < 0) d = -d; s = $2 < 0 ? -$2 : $2;
    if (NF != 2 || d > 1e-9 * s + 1e-15 * f) bad = 1; n++} END {exit bad || n == 0}'; }
for key in loss val_loss; do
    if close "$(field "$T/z1" $key)" "$(field "$T/z0" $key)" 0 && close "$(field "$T/z2" $key)" "$(field "$T/z0" $key)" 0
    then ok "\"$key\" with z_loss 1e-2 and 2e-2 = the cross-entropy of z_loss 0 ($(field "$T/z1" $key | head -n 1 | cut -c1-10) = $(field "$T/z0" $key | head -n 1 | cut -c1-10))"
    else bad "\"$key\" is not the cross-entropy"; paste <(field "$T/z0" $key) <(field "$T/z1" $key) <(field "$T/z2" $key); fi
done
for key in z_loss val_z_loss; do
    twice=$(field "$T/z1" $key | awk '{printf "%.17g\n", 2 * $1}')
    z=$(field "$T/z1" $key | head -n 1)
    if close "$(field "$T/z2" $key)" "$twice" 0 && awk -v z="$z" 'BEGIN {exit !(z > 1e-3)}'
    then ok "\"$key\" is c mean(lse²): 2e-2 gives twice 1e-2's ($z)"
    else bad "\"$key\" does not scale with the coefficient"; paste <(field "$T/z1" $key) <(field "$T/z2" $key); fi
done

echo "test_z_loss: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
