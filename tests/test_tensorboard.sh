#!/usr/bin/env bash
# TensorBoard event files beside metrics.jsonl (train/tensorboard.h), read back by tools/tb_events.py, a
# decoder written from the TFRecord and protocol buffer specifications (CRCs checked):
#  1. a run with a data mixture, validation per source, synthetic retrieval tasks and RePo positions: every
#     metrics.jsonl line is one event with its step and every number of the line under its key path, the
#     values as float32, the wall times real (within the run) and in order;
#  2. a run resumed from an earlier checkpoint than its last logged step (the later checkpoint removed, as a
#     kill before it would leave things) appends a new event file, and the files together hold every step
#     once, as metrics.jsonl does;
#  3. a record cut by a crash is dropped with a warning at the next start.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" tensorboard

build/tools/gen_tokens "$T/web.u16" 20000 64 1 || exit 1
build/tools/gen_tokens "$T/code.u16" 20000 64 2 || exit 1
cat >"$T/cfg.json" <<JSON
{"run": {"out_dir": "$T/run", "seed": 3, "threads": 1},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64,
           "positions": {"layers": ["rope", "repo"]}},
 "data": {"train": [{"name": "web", "files": ["$T/web.u16"], "weight": 0.75},
                    {"name": "code", "files": ["$T/code.u16"], "weight": 0.25}],
          "val": [{"name": "web", "files": ["$T/web.u16"]}, {"name": "code", "files": ["$T/code.u16"]}],
          "seq_len": 64},
 "optim": {"warmup_steps": 0},
 "train": {"batch_size": 2, "steps": 6, "log_every": 1, "eval_every": 3, "eval_batches": 1, "save_every": 3,
           "log_positions": 3, "eval_tasks": {"families": ["single"], "items": 4, "seed": 1}}}
JSON
t0=$(date +%s)
build/train "$T/cfg.json" >"$T/log" 2>&1 || { bad "the run failed: $(tail -3 "$T/log")"; exit 1; }
t1=$(($(date +%s) + 1))

# compare RUN_DIR T0 T1 LABEL: the events of every file (in name order) against metrics.jsonl
compare() {
    python3 tools/tb_events.py "$1"/events.out.tfevents.* >"$T/events.jsonl" 2>"$T/tb.err" ||
        { bad "$4: the decoder refused the files: $(cat "$T/tb.err")"; return; }
    python3 - "$1/metrics.jsonl" "$T/events.jsonl" "$2" "$3" <<'PY' >"$T/cmp.log" 2>&1
import json, struct, sys
def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]
def flat(j, path, out, skip):
    items = j.items() if isinstance(j, dict) else enumerate(j)
    for k, v in items:
        by_layer = isinstance(j, list) and isinstance(v, dict) and isinstance(v.get("layer"), (int, float))
        tag = "%s/layer%d" % (path, v["layer"]) if by_layer else "%s/%s" % (path, k) if path else str(k)
        if k == skip or isinstance(v, (bool, str)) or v is None:
            continue
        if isinstance(v, (dict, list)):
            flat(v, tag, out, "layer" if by_layer else None)
        else:
            out[tag] = f32(v)
lines = [json.loads(l) for l in open(sys.argv[1])]
events = [json.loads(l) for l in open(sys.argv[2])]
versions = [e for e in events if "file_version" in e]
scalars = [e for e in events if "file_version" not in e]
t0, t1 = float(sys.argv[3]), float(sys.argv[4])
problems = []
if len(scalars) != len(lines):
    problems.append("%d scalar events for %d metrics lines" % (len(scalars), len(lines)))
for line, ev in zip(lines, scalars):
    want = {}
    flat(line, "", want, "step")
    if ev.get("step") != line["step"] or ev.get("values") != want:
        problems.append("step %s: %s against %s" % (line["step"], ev, want))
times = [e["wall_time"] for e in events]
if not all(t0 <= t <= t1 for t in times) or times != sorted(times):
    problems.append("wall times %s not within [%s, %s] and in order" % (times[:3], t0, t1))
if any(e["file_version"] != "brain.Event:2" for e in versions):
    problems.append("file_version %s" % versions)
tags = sorted({t for e in scalars for t in e.get("values", {})})
print("%d events, %d files, tags: %s" % (len(scalars), len(versions), " ".join(tags)))
for p in problems[:5]:
    print("MISMATCH", p)
sys.exit(1 if problems else 0)
PY
    if [ $? -eq 0 ]; then ok "$4: $(head -c 400 "$T/cmp.log")"; else bad "$4: $(head -c 800 "$T/cmp.log")"; fi
}
compare "$T/run" "$t0" "$t1" "one run: every metrics.jsonl line is an event with its numbers"
for tag in loss lr grad_norm tokens_per_s val_loss val_loss_source/web val_loss_source/code source_tokens/web \
    "retrieval/single@64" retrieval_tokens/single@64 positions/layers/layer1/range positions/layers/layer1/mean_abs; do
    grep -q " $tag\b" "$T/cmp.log" || bad "no tag $tag in the events"
done

# a resume from step 3 after a run that logged up to step 6 (step_0000006 gone, latest back at step 3)
rm -r "$T/run/step_0000006"
echo step_0000003 >"$T/run/latest"
sleep 1 # another second in the new file's name
build/train "$T/cfg.json" --set train.steps=8 >"$T/log2" 2>&1 || { bad "the resumed run failed: $(tail -3 "$T/log2")"; }
t2=$(($(date +%s) + 1))
n=$(ls "$T/run"/events.out.tfevents.* | wc -l)
[ "$n" = 2 ] && ok "the resumed run appended a second event file" || bad "$n event files after the resume"
compare "$T/run" "$t0" "$t2" "resumed at step 3 of 6 to step 8: every step once, as in metrics.jsonl"
steps=$(python3 tools/tb_events.py "$T/run"/events.out.tfevents.* |
    python3 -c 'import json, sys; print(" ".join(str(e["step"]) for e in map(json.loads, sys.stdin) if "loss" in e.get("values", {})))')
[ "$steps" = "1 2 3 4 5 6 7 8" ] && ok "training steps in the files: $steps" || bad "training steps in the files: $steps"

# a record cut by a crash: dropped with a warning at the next start, the rest kept
last=$(ls "$T/run"/events.out.tfevents.* | tail -n 1)
size=$(stat -c %s "$last")
truncate -s $((size - 5)) "$last"
build/train "$T/cfg.json" --set train.steps=9 >"$T/log3" 2>&1 || bad "the run after a cut record failed: $(tail -3 "$T/log3")"
grep -q "warning: $last: the bytes from byte offset [0-9]* on are no whole record (a crash cut it): dropped" "$T/log3" &&
    ok "a record cut by a crash: dropped with a warning" || bad "no warning for the cut record: $(head -5 "$T/log3")"
python3 tools/tb_events.py "$T/run"/events.out.tfevents.* >/dev/null 2>"$T/tb.err" &&
    ok "... and every file decodes again" || bad "after the cut record: $(cat "$T/tb.err")"

echo "tensorboard: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
