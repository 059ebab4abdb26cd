#!/usr/bin/env bash
# Memory settings end to end (build/train):
#  1. --plan prints the plan of a 1B-shape config (and a 7B one) and exits 0 at once,
#     allocating nothing large; a config whose plan exceeds the memory available
#     is refused with exit 1 before allocating, naming the estimate, what is
#     available and settings that fit; run.check_memory false starts it anyway
#     (checked on a small model whose plan is made to exceed a fake cgroup-free limit: the plan itself);
#  2. optim.state_dtype bf16 with train.recompute and a chunked head: a run of 6 steps
#     and a run of 3 resumed to 6 give bit-identical weights, moments and losses; the
#     moments are saved as BF16; recompute on and off give bit-identical losses;
#  3. resuming a bf16-state checkpoint with state_dtype f32 (and back) converts with a note;
#  4. the time estimate of --plan (the FLOP count of docs/performance.md, recompute's extra forward) and
#     the process counts it suggests: none when sharding the state cannot make it fit, never a count
#     that does not fit;
#  5. the plan's token data row counts the files of mixture sources (data.train
#     and data.val in the mixture form) and JSONL files; its eval tasks row the
#     KV cache of train.eval_tasks' longest length (10^9 tokens: refused at once);
#  6. every config of configs/paper/ (the released recipe) plans, from a config.json alone, no weights or data.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" memory

echo "--plan and the refusal"
big() {  # file d_model n_layers d_ff vocab seq_len state [n_heads]
    cat >"$1" <<JSON
{"run": {"out_dir": "$T/never", "threads": 1},
 "model": {"vocab_size": $5, "d_model": $2, "n_layers": $3, "n_heads": ${8:-16}, "d_ff": $4,
           "positions": {"mode": "repo", "repo_start_layer": 5}},
 "data": {"synthetic": {}, "seq_len": $6},
 "optim": {"state_dtype": "$7"},
 "train": {"batch_size": 1, "recompute": true, "steps": 2}}
JSON
}
big "$T/1b.json" 2048 16 8192 100352 4096 bf16
big "$T/7b.json" 4096 32 11008 100352 4096 f32
for cfg in 1b 7b; do
    start=$(date +%s%N)
    out=$(/usr/bin/time -f "%M" build/train "$T/$cfg.json" --plan 2>"$T/time")
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    kib=$(tail -n 1 "$T/time")
    if [ $rc -eq 0 ] && echo "$out" | grep -q "^  peak RSS .* bytes per parameter" && [ "$kib" -lt 65536 ] && [ $ms -lt 1000 ] &&
       [ ! -e "$T/never" ]; then ok "$cfg --plan: exit 0 in $ms ms, max RSS $kib KiB, nothing written: $(echo "$out" | grep -o '^  peak RSS.*GiB')"
    else bad "$cfg --plan: exit $rc, $ms ms, $kib KiB"; echo "$out" | tail -3; fi
done
# the 1B shape: 1.48e9 parameters; bf16 state + recompute plans under 14.5 bytes per parameter
b=$(build/train "$T/1b.json" --plan | grep -o '[0-9.]* bytes per parameter' | grep -o '^[0-9.]*')
if awk -v b="$b" 'BEGIN { exit !(b > 12 && b <= 14.5) }'; then ok "1B shape, bf16 state, recompute: $b bytes per parameter planned"
else bad "1B shape: $b bytes per parameter"; fi
# refused: the 7B config needs far more than this machine has; nothing allocated, exit 1
/usr/bin/time -f "%M" build/train "$T/7b.json" >"$T/out" 2>"$T/err"
rc=$?
kib=$(tail -n 1 "$T/err")
if [ $rc -eq 1 ] && grep -q "error: the memory plan needs .* GiB, but .* GiB is available" "$T/err" &&
   grep -q "optim.state_dtype: \"bf16\"" "$T/err" && grep -q "mpirun -np" "$T/err" && grep -q "run.check_memory" "$T/err" &&
   [ "$kib" -lt 65536 ] && [ ! -e "$T/never" ]; then ok "7B shape refused, exit 1, max RSS $kib KiB: $(grep -o 'needs .* available' "$T/err")"
else bad "7B shape: exit $rc, $kib KiB"; cat "$T/err" | tail -5; fi
# run.check_memory false: the warning instead of the refusal (steps 0 and a tiny model so it fits in fact)
build/train "$T/7b.json" --plan --set run.check_memory=false 2>&1 | grep -q "warning: the memory plan needs" &&
    ok "--plan of a config that does not fit: a warning, exit 0" || bad "--plan did not warn"

echo "the time estimate, and which process counts the plan suggests"
small() {  # file recompute
    cat >"$1" <<JSON
{"run": {"out_dir": "$T/never", "threads": 1},
 "model": {"vocab_size": 4096, "d_model": 256, "n_layers": 4, "n_heads": 8, "d_ff": 1024},
 "data": {"synthetic": {}, "seq_len": 256}, "train": {"batch_size": 8, "steps": 2000, "recompute": $2}}
JSON
}
# docs/performance.md's FLOP count of S: 67.6 GFLOP per step; recompute adds the blocks' forward (18.2)
small "$T/s.json" false
small "$T/s_re.json" true
for c in "s 68" "s_re 86"; do
    line=$(build/train "$T/${c% *}.json" --plan | grep '^time: ')
    if echo "$line" | grep -qE "^time: ≈ [0-9.]+ (ms|s|min|h)/step, 2000 steps ≈ [0-9.]+ (s|min|h|d) \(estimate: model ${c#* } GFLOP/step at [0-9]+ GFLOP/s measured (sgemm|oneDNN f32 matmul) 1024x256x1024, x0.78 efficiency"
    then ok "${c% *} --plan: $line"; else bad "${c% *} --plan time line: '$line'"; fi
done
# a model whose parameters, gradients and activations alone exceed any machine's memory: no process count
big "$T/huge.json" 8192 48 28672 100352 4096 f32 64   # head dim 128: one the attention kernel takes
build/train "$T/huge.json" --plan >"$T/huge.log" 2>&1
if grep -q "mpirun -np N does not help: sharding (train.shard_optimizer) divides only the AdamW state" "$T/huge.log" &&
    ! grep -q "mpirun -np [0-9]" "$T/huge.log"; then ok "no process count suggested: $(grep -o 'the rest takes .*' "$T/huge.log")"
else bad "huge --plan suggests: $(grep mpirun "$T/huge.log")"; fi
# the 1B shape with f32 state: whatever this machine has, a suggested count is one that fits, at most 64
build/train "$T/1b.json" --plan --set optim.state_dtype=f32 >"$T/1b_f32.log" 2>&1
counts=$(grep -o "mpirun -np [0-9]*.*" "$T/1b_f32.log")
if grep -q "^time: ≈" "$T/1b_f32.log" && ! echo "$counts" | grep -v "fits$" | grep -q . &&
    ! echo "$counts" | grep -qE "np [0-9]{3,}"; then ok "the 1B shape's suggestions: ${counts:-(it fits here)}"
else bad "the 1B shape's suggestions: $counts"; fi

echo "the plan's token data row counts every file the config names"
build/tools/gen_tokens "$T/web.u16" 300000 64 1 >/dev/null &&
    build/tools/gen_tokens "$T/code_a.u16" 100000 64 2 >/dev/null &&
    build/tools/gen_tokens "$T/code_b.u16" 60000 64 3 >/dev/null &&
    build/tools/gen_tokens "$T/val.u16" 50000 64 4 >/dev/null || exit 1
for _ in $(seq 2000); do echo '{"text": "a line of text to count"}'; done >"$T/sft.jsonl"
mib() { awk -v b="$(cat "$@" | wc -c)" 'BEGIN { printf "%.1f", b / 1048576 }'; }
data_row() { build/train "$1" --plan | grep -o '^  token data *[0-9.]*' | grep -o '[0-9.]*$'; }
cat >"$T/mix.json" <<JSON
{"run": {"out_dir": "$T/never", "threads": 1},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 2, "d_ff": 64},
 "data": {"train": [{"name": "web", "files": ["$T/web.u16"], "weight": 3},
                    {"name": "code", "files": ["$T/code_*.u16", "$T/code_a.u16"], "weight": 1}],
          "val": [{"name": "held", "files": "$T/val.u16"}], "seq_len": 32},
 "train": {"batch_size": 2, "steps": 2, "eval_every": 1}}
JSON
got=$(data_row "$T/mix.json"); want=$(mib "$T/web.u16" "$T/code_a.u16" "$T/code_b.u16" "$T/val.u16")
[ -n "$got" ] && [ "$got" = "$want" ] && ok "mixture sources (a glob, a file twice, val as one string): token data $got MiB" ||
    bad "mixture sources: the plan's token data row is '$got' MiB, the files hold $want MiB"
sed -e 's|"train": \[{.*|"train": ["'"$T"'/sft.jsonl"], "format": "jsonl",|' -e '/"name": "code"/d' \
    -e 's|"val": \[{[^]]*\]|"val": ["'"$T"'/sft.jsonl", "'"$T"'/val.u16"]|' "$T/mix.json" >"$T/jsonl.json"
got=$(data_row "$T/jsonl.json"); want=$(mib "$T/sft.jsonl" "$T/sft.jsonl" "$T/val.u16")
[ -n "$got" ] && [ "$got" = "$want" ] && ok "JSONL files in the list form: token data $got MiB" ||
    bad "JSONL files: the plan's token data row is '$got' MiB, the files hold $want MiB"

echo "train.eval_tasks: the KV cache of the longest length is in the plan"
# d_model 32, 2 layers: keys and values of 2 x 2 x 32 reals = 512 bytes per token, 10^9 tokens: 488281 MiB and more
tasks='train.eval_tasks={"families": ["single"], "lengths": [64, 1000000000], "items": 1}'
got=$(build/train "$T/mix.json" --plan --set "$tasks" | grep -o '^  eval tasks (KV) *[0-9.]*' | grep -o '[0-9.]*$')
awk -v m="${got:-0}" 'BEGIN { exit !(m >= 488281 && m < 600000) }' && ok "lengths [64, 10^9]: eval tasks (KV) $got MiB in the plan" ||
    bad "eval tasks row: '$got' MiB"
build/train "$T/mix.json" --plan | grep -q "eval tasks" && bad "a plan without eval_tasks has an eval tasks row" ||
    ok "no eval tasks row without train.eval_tasks"
t0=$(date +%s%N)
build/train "$T/mix.json" --set "$tasks" >"$T/out" 2>"$T/err"
rc=$?; ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc -eq 1 ] && grep -q "error: the memory plan needs .* GiB, but .* GiB is available" "$T/err" && [ ! -e "$T/never" ] &&
    ok "refused before allocating, exit 1 in $ms ms: $(grep -o 'needs .* available' "$T/err")" ||
    bad "eval tasks of 10^9 tokens: exit $rc after $ms ms: $(tail -2 "$T/err")"

echo "bf16 state, recompute, chunked head: exact resume"
build/tools/gen_tokens "$T/train.u16" 20000 64 1 || exit 1
cfg() {  # file out_dir steps state recompute
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "seed": 3, "threads": 2, "resume": "auto"},
 "model": {"vocab_size": 64, "d_model": 64, "n_layers": 3, "n_heads": 4, "n_kv_heads": 2, "d_ff": 128,
           "positions": {"mode": "repo", "repo_start_layer": 1}},
 "data": {"train": ["$T/train.u16"], "seq_len": 32},
 "optim": {"lr": 3e-3, "schedule": "constant", "warmup_steps": 0, "state_dtype": "$4", "beta2": 0.999},
 "train": {"batch_size": 2, "grad_accum": 2, "steps": $3, "log_every": 1, "eval_every": 0, "save_every": 0,
           "recompute": $5, "head_chunk": 24}}
JSON
}
losses() { grep -o '"step": [0-9]*, "loss": [^,]*' "$1/metrics.jsonl"; }
cfg "$T/a.json" "$T/a" 6 bf16 true
build/train "$T/a.json" >"$T/a.log" 2>&1 || { bad "bf16 run failed"; tail -3 "$T/a.log"; }
cfg "$T/b.json" "$T/b" 3 bf16 true
build/train "$T/b.json" >"$T/b.log" 2>&1 && build/train "$T/b.json" --set train.steps=6 >>"$T/b.log" 2>&1 ||
    { bad "bf16 run + resume failed"; tail -3 "$T/b.log"; }
if cmp -s "$T/a/step_0000006/model.safetensors" "$T/b/step_0000006/model.safetensors" &&
   cmp -s "$T/a/step_0000006/optimizer.safetensors" "$T/b/step_0000006/optimizer.safetensors" &&
   [ "$(losses "$T/a")" = "$(losses "$T/b")" ]; then ok "6 steps == 3 + resume 3: weights, bf16 moments and losses bit-identical"
else bad "bf16 resume differs"; fi
head -c 4000 "$T/a/step_0000006/optimizer.safetensors" | grep -q '"exp_avg.lm_head.weight":{"dtype":"BF16"' &&
    ok "optimizer.safetensors keeps the moments as BF16" || bad "moments not saved as BF16"
cfg "$T/c.json" "$T/c" 6 bf16 false
build/train "$T/c.json" >"$T/c.log" 2>&1
[ -n "$(losses "$T/a")" ] && [ "$(losses "$T/a")" = "$(losses "$T/c")" ] &&
    cmp -s "$T/a/step_0000006/model.safetensors" "$T/c/step_0000006/model.safetensors" &&
    ok "recompute on and off: losses and weights bit-identical" || bad "recompute changes the run"

echo "a checkpoint of another state dtype is converted, with a note"
build/train "$T/b.json" --set train.steps=7 --set optim.state_dtype=f32 >"$T/d.log" 2>&1
grep -q "note: .*optimizer.safetensors holds the AdamW moments as BF16, this run keeps them as F32 (optim.state_dtype): converted exactly" "$T/d.log" &&
    grep -q "^done" "$T/d.log" && head -c 4000 "$T/b/step_0000007/optimizer.safetensors" | grep -q '"exp_avg.lm_head.weight":{"dtype":"F32"' &&
    ok "bf16 -> f32: converted exactly, with a note; saved as F32" || { bad "bf16 -> f32"; tail -3 "$T/d.log"; }
build/train "$T/b.json" --set train.steps=8 --set optim.state_dtype=bf16 >"$T/e.log" 2>&1
grep -q "holds the AdamW moments as F32, this run keeps them as BF16 (optim.state_dtype): converted by rounding to nearest" "$T/e.log" &&
    grep -q "^done" "$T/e.log" && ok "f32 -> bf16: converted by rounding, with a note" || { bad "f32 -> bf16"; tail -3 "$T/e.log"; }
echo "configs/paper/ (the released stage-2 recipe, OLMo-2 1B from model.from_config): --plan without weights or data"
for f in configs/paper/stage2_*.json; do
    out=$(build/train "$f" --plan --set run.out_dir="$T/never" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && echo "$out" | grep -q "^  peak RSS .* bytes per parameter" && echo "$out" | grep -q "^time: ≈ .*23852 steps" &&
       [ ! -e "$T/never" ]; then ok "$f --plan: $(echo "$out" | grep -o '^  peak RSS *[0-9.]* MiB' | tr -s ' '), $(echo "$out" | grep -o '^time: ≈ [^,]*')"
    else bad "$f --plan: exit $rc"; echo "$out" | tail -3; fi
done
params() { build/train "configs/paper/stage2_$1.json" --plan 2>&1 | awk '/^  parameters/ {print $2}'; }
# RePo's maps in layers 5-15 (1.49e9 parameters without them): more parameters than every other layout
p_repo=$(params repo); p_rope=$(params rope)
if awk -v a="$p_repo" -v b="$p_rope" 'BEGIN {exit !(a > b && b > 5600 && b < 5700)}'; then
    ok "parameters: repo $p_repo MiB > rope $p_rope MiB (the OLMo-2 1B shape)"
else bad "parameters: repo $p_repo MiB, rope $p_rope MiB"; fi
[ $failures -eq 0 ] && echo "test_memory: all OK" || echo "test_memory: $failures failed"
exit $((failures != 0))
