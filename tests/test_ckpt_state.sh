#!/usr/bin/env bash
# A checkpoint's trainer_state.json and AdamW moments are checked on resume:
# each damaged field stops build/train with exit 1 naming the file and the key
# (or tensor), before any step; the undamaged checkpoint then resumes. A
# resume with another global batch (batch_size x grad_accum x ranks rows per
# step, on which the rows of every step depend) is refused the same way,
# naming both numbers and the checkpoint; the same number split otherwise resumes.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" ckpt_state

build/tools/gen_tokens "$T/train.u16" 5000 64 1 || exit 1
d="$T/run"
cat >"$T/cfg.json" <<JSON
{"run": {"out_dir": "$d", "seed": 3, "threads": 1},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64},
 "data": {"train": ["$T/train.u16"], "seq_len": 16},
 "optim": {"warmup_steps": 0},
 "train": {"batch_size": 2, "steps": 2, "eval_every": 0}}
JSON
build/train "$T/cfg.json" >"$T/log" 2>&1 || { bad "the first run failed"; tail -3 "$T/log"; exit 1; }
ck="$d/step_0000002"
cp "$ck/trainer_state.json" "$T/state.json"
cp "$ck/optimizer.safetensors" "$T/opt.safetensors"

resume_fails() {  # name phrase [more arguments of build/train]
    local name=$1 phrase=$2
    shift 2
    build/train "$T/cfg.json" --set train.steps=4 "$@" >"$T/log" 2>&1
    local rc=$?
    if [ $rc -eq 1 ] && grep -qF -- "$phrase" "$T/log" && ! grep -q "^step " "$T/log" && [ ! -e "$d/step_0000004" ]
    then ok "$name: exit 1: $(grep -m1 -o 'trainer_state.json: .*\|optimizer.safetensors: .*\|cannot resume.*' "$T/log")"
    else bad "$name: exit $rc, expected '$phrase'"; tail -2 "$T/log"; fi
    cp "$T/state.json" "$ck/trainer_state.json"
    cp "$T/opt.safetensors" "$ck/optimizer.safetensors"
}
state() {  # python statement on dict s
    python3 - "$ck/trainer_state.json" "$1" <<'PY'
import json, sys
p = sys.argv[1]; s = json.load(open(p)); exec(sys.argv[2]); open(p, 'w').write(json.dumps(s))
PY
}
moment() {  # tensor-prefix value: set the first element of the first tensor starting with prefix
    python3 - "$ck/optimizer.safetensors" "$1" "$2" <<'PY'
import json, struct, sys
p, prefix, value = sys.argv[1], sys.argv[2], float(sys.argv[3])
b = bytearray(open(p, 'rb').read()); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
name = sorted(k for k in h if k.startswith(prefix))[0]
off = 8 + n + h[name]['data_offsets'][0]
b[off:off + 4] = struct.pack('<f', value); open(p, 'wb').write(bytes(b))
PY
}

state 's["step"] = -5';            resume_fails "step -5" "trainer_state.json: key 'step': expected an integer in [0, 2^53], got -5"
state 's["step"] = 2.5';           resume_fails "step 2.5" "key 'step': expected an integer in [0, 2^53], got 2.5"
state 's["step"] = 1e300';         resume_fails "step 1e300" "key 'step': expected an integer"
state 's["step"] = "2"';           resume_fails "step \"2\"" "key 'step': expected an integer in [0, 2^53], got another JSON type"
state 's["step"] = 3';             resume_fails "step 3 in step_0000002" "key 'step' is 3, but the directory is named step_0000002"
state 'del s["tokens_seen"]';      resume_fails "no tokens_seen" "trainer_state.json: missing key 'tokens_seen'"
state 's["tokens_seen"] = -1';     resume_fails "tokens_seen -1" "key 'tokens_seen': expected an integer"
state 's["rows_per_step"] = 0';    resume_fails "rows_per_step 0" "key 'rows_per_step': expected an integer in [1, 2^53]"
state 's["world_size"] = 1.5';     resume_fails "world_size 1.5" "key 'world_size': expected an integer"
state 's["last_loss"] = "nan"';    resume_fails "last_loss a string" "key 'last_loss': expected a finite number"
state 's["config"] = 5';           resume_fails "config 5" "key 'config': expected a JSON object"
moment exp_avg_sq. inf;            resume_fails "an infinite second moment" "AdamW second moments must be finite and non-negative"
moment exp_avg_sq. -1;             resume_fails "a negative second moment" "element 0 is -1: AdamW second moments"
moment exp_avg. nan;               resume_fails "a NaN first moment" "AdamW first moments must be finite"

resume_fails "grad_accum 2: 4 rows per step against the checkpoint's 2" \
    "cannot resume from $ck: it was trained with 2 rows per step (batch_size x grad_accum x ranks, 1 rank), this run takes 4 (train.batch_size 2 x train.grad_accum 2 x 1 rank)" \
    --set train.grad_accum=2
resume_fails "batch_size 1: 1 row per step against the checkpoint's 2" \
    "this run takes 1 (train.batch_size 1 x train.grad_accum 1 x 1 rank); the rows of each step depend on that number" \
    --set train.batch_size=1

build/train "$T/cfg.json" --set train.steps=4 >"$T/log" 2>&1 && grep -q "resumed from $ck at step 2" "$T/log" &&
    ok "the restored checkpoint resumes at step 2" || { bad "the restored checkpoint does not resume"; tail -3 "$T/log"; }
build/train "$T/cfg.json" --set train.steps=5 --set train.batch_size=1 --set train.grad_accum=2 >"$T/log" 2>&1 &&
    grep -q "resumed from $d/step_0000004 at step 4" "$T/log" &&
    ok "batch_size 1 x grad_accum 2 (the same 2 rows per step) resumes at step 4" ||
    { bad "batch_size 1 x grad_accum 2 does not resume"; tail -3 "$T/log"; }

echo "test_ckpt_state: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
