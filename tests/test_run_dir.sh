#!/usr/bin/env bash
# What build/train may do to its out_dir: removal never follows a symbolic link
# and touches only repoc's own files; start-up cleanup removes only repoc's exact
# leftovers of dead processes; one run per out_dir (a flock, gone with kill -9);
# metrics.jsonl holds each step once (a run that does not continue out_dir's
# checkpoints refuses it unless run.overwrite); damaged metrics lines are
# dropped, not taken as the end of the file; "auto" without a complete
# checkpoint starts at step 0.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" run_dir

build/tools/gen_tokens "$T/train.u16" 20000 64 1 || exit 1

config() {  # out_dir steps save_every keep_last [resume]
    cat >"$T/cfg.json" <<JSON
{"run": {"out_dir": "$1", "seed": 3, "threads": 1, "resume": "${5:-auto}"},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 4, "d_ff": 64},
 "data": {"train": ["$T/train.u16"], "seq_len": 16},
 "optim": {"warmup_steps": 0},
 "train": {"batch_size": 2, "steps": $2, "log_every": 1, "eval_every": 0, "save_every": $3, "keep_last": $4}}
JSON
}
steps_logged() { grep -o '"step": [0-9]*, "loss"' "$1/metrics.jsonl" | grep -o '[0-9]*' | tr '\n' ' '; }

echo "pruning and re-saving never follow links, and keep what repoc did not write"
d="$T/links"
mkdir -p "$T/precious/sub" && echo keep >"$T/precious/sub/data.txt" && echo keep >"$T/precious/top.txt"
config "$d" 2 1 1
build/train "$T/cfg.json" >"$T/log" 2>&1 || { bad "first run failed"; tail -3 "$T/log"; }
ln -s "$T/precious" "$d/step_0000002/results"          # a user's link inside a checkpoint
ln -s "$T/precious/top.txt" "$d/step_0000002/config.json.tmp.1"   # even under a name repoc writes
config "$d" 4 1 1
build/train "$T/cfg.json" >"$T/log" 2>&1 || { bad "second run failed"; tail -3 "$T/log"; }
if [ -f "$T/precious/sub/data.txt" ] && [ -f "$T/precious/top.txt" ]; then ok "the link's target outside out_dir is intact"
else bad "pruning deleted files through a symbolic link: $(find "$T/precious" | tr '\n' ' ')"; fi
if [ -L "$d/step_0000002/results" ] && [ ! -e "$d/step_0000002/model.safetensors" ] &&
    grep -q "kept '$d/step_0000002': it holds 1 entry repoc did not write: 'results'" "$T/log"
then ok "pruned step_0000002: repoc's files removed, the user's link kept and reported"
else bad "step_0000002 after pruning: $(ls "$d/step_0000002" 2>&1 | tr '\n' ' ')"; fi
ln -s "$T/precious" "$d/step_0000003"   # a link in the place of a whole checkpoint
config "$d" 6 1 1
build/train "$T/cfg.json" >"$T/log" 2>&1 || { bad "third run failed"; tail -3 "$T/log"; }
[ -L "$d/step_0000003" ] && [ -f "$T/precious/top.txt" ] && grep -q "step_0000003' in place: it is a symbolic link" "$T/log" &&
    ok "a step_ link is left in place, its target intact" || bad "a step_ link: $(ls -la "$d" | tr '\n' ' ')"

d="$T/resave"   # re-saving a step whose directory holds a user's file: it is set aside whole
config "$d" 3 1 5
build/train "$T/cfg.json" >"$T/log" 2>&1 || bad "resave: first run failed"
echo mine >"$d/step_0000002/notes.txt"
config "$d" 2 1 5 "$d/step_0000001"
build/train "$T/cfg.json" >"$T/log" 2>&1 || bad "resave: the resumed run failed: $(tail -1 "$T/log")"
kept=$(ls -d "$d"/step_0000002.kept.* 2>/dev/null | head -1)
[ -n "$kept" ] && [ "$(cat "$kept/notes.txt" 2>/dev/null)" = mine ] && [ -f "$d/step_0000002/trainer_state.json" ] &&
    ok "re-saving step 2 over a directory holding a user's file: it is kept as $(basename "$kept")" ||
    bad "re-saving step 2: $(ls "$d" | tr '\n' ' ')"

d="$T/names"   # only step_<digits> is a step: a user's step_+9 or step_-1 does not take a keep_last place
mkdir -p "$d/step_+9" "$d/step_-1" "$d/step_ 7"
config "$d" 3 1 2
build/train "$T/cfg.json" >"$T/log" 2>&1 || bad "names: the run failed: $(tail -1 "$T/log")"
[ -f "$d/step_0000002/model.safetensors" ] && [ -f "$d/step_0000003/model.safetensors" ] && [ ! -e "$d/step_0000001" ] &&
    [ -d "$d/step_+9" ] && [ -d "$d/step_-1" ] && ok "keep_last 2 keeps steps 2 and 3 next to step_+9, step_-1, 'step_ 7'" ||
    bad "keep_last 2 with step_+9 and step_-1 present: $(ls "$d" | tr '\n' ' ')"

echo "start-up cleanup removes only repoc's exact leftovers of dead processes"
d="$T/clean"
config "$d" 1 1 2
build/train "$T/cfg.json" >"$T/log" 2>&1 || bad "clean: first run failed"
sleep 30 & alive=$!
sh -c 'exit 0' & dead=$!; wait $dead   # a pid whose process has exited
echo mine >"$d/notes.tmp.txt"; mkdir "$d/results.tmp.old"; echo x >"$d/results.tmp.old/a"
echo x >"$d/latest.tmp.$dead"; echo x >"$d/metrics.jsonl.tmp.$dead"; echo x >"$d/latest.tmp.$alive"
mkdir "$d/step_0000009.tmp.$dead"; echo x >"$d/step_0000009.tmp.$dead/model.safetensors.tmp.$dead"
mkdir "$d/step_0000008.tmp.$dead"; echo x >"$d/step_0000008.tmp.$dead/model.safetensors"; echo u >"$d/step_0000008.tmp.$dead/user.txt"
config "$d" 2 1 2
build/train "$T/cfg.json" >"$T/log" 2>&1 || bad "clean: second run failed"
kill $alive 2>/dev/null; wait $alive 2>/dev/null
[ -f "$d/notes.tmp.txt" ] && [ -f "$d/results.tmp.old/a" ] && ok "a user's notes.tmp.txt and results.tmp.old/ survive" ||
    bad "the cleanup removed a user's *.tmp.* file or directory"
[ ! -e "$d/latest.tmp.$dead" ] && [ ! -e "$d/metrics.jsonl.tmp.$dead" ] && [ ! -e "$d/step_0000009.tmp.$dead" ] &&
    ok "leftovers of a dead pid removed" || bad "leftovers of a dead pid remain: $(ls "$d" | tr '\n' ' ')"
[ -e "$d/latest.tmp.$alive" ] && ok "a leftover named after a live pid is left alone" || bad "removed a live pid's file"
[ -f "$d/step_0000008.tmp.$dead/user.txt" ] && [ ! -e "$d/step_0000008.tmp.$dead/model.safetensors" ] &&
    ok "a leftover directory holding a user's file: repoc's file removed, the user's kept" ||
    bad "step_0000008.tmp: $(ls "$d/step_0000008.tmp.$dead" 2>&1 | tr '\n' ' ')"

echo "one run per out_dir"
d="$T/lock"
config "$d" 100000 0 2
mkdir -p "$d"
build/train "$T/cfg.json" >"$T/a.log" 2>&1 & a=$!
build/train "$T/cfg.json" >"$T/b.log" 2>&1 & b=$!
wait_for "[ -s '$d/metrics.jsonl' ]"
t0=$(date +%s%N)
first=""; second=""
for _ in $(seq 100); do   # one of the two exits within a second (it never trains)
    if ! kill -0 $a 2>/dev/null; then first=$b; second=$a; break; fi
    if ! kill -0 $b 2>/dev/null; then first=$a; second=$b; break; fi
    sleep 0.05
done
if [ -n "$second" ]; then
    wait $second; rc=$?
    log=$([ $second = $a ] && echo "$T/a.log" || echo "$T/b.log")
    if [ $rc -eq 1 ] && grep -q "is in use by another run (pid $first holds" "$log" && ! grep -q "^step " "$log"
    then ok "two at once: one trains, the other exits 1 without training: $(grep -o 'is in use.*holds' "$log")"
    else bad "the second run: exit $rc: $(tail -2 "$log")"; fi
else bad "both runs still running after 5 s"; kill -KILL $a $b 2>/dev/null; first=$a; fi
config "$d" 100000 2 2
kill -KILL $first 2>/dev/null; wait $first 2>/dev/null
build/train "$T/cfg.json" >"$T/c.log" 2>&1 & c=$!
wait_for "[ -f '$d/latest' ]"
kill -KILL $c 2>/dev/null; wait $c 2>/dev/null
build/train "$T/cfg.json" --set train.steps=$(( $(head -1 "$d/latest" | sed 's/step_0*//') + 1 )) >"$T/d.log" 2>&1 &&
    grep -q "resumed from $d/step_" "$T/d.log" && ok "after kill -9 of the holder a new run starts, and resumes after another kill -9" ||
    bad "no run after kill -9: $(tail -2 "$T/d.log")"

d="$T/lockwrite"   # the holder has the lock but has not written its pid yet (a moment after its flock)
config "$d" 3 0 2
mkdir -p "$d" && : >"$d/run.lock"
flock "$d/run.lock" sh -c "sleep 0.4; echo 424242 >'$d/run.lock'; sleep 3" & holder=$!
sleep 0.1
build/train "$T/cfg.json" >"$T/log" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "in use by another run (pid 424242 holds" "$T/log" &&
    ok "a lock whose pid is still being written: the message waits for the pid" ||
    bad "lock before its pid: exit $rc: $(tail -1 "$T/log")"
kill $holder 2>/dev/null; wait $holder 2>/dev/null

echo "metrics.jsonl holds each step once"
d="$T/never"
config "$d" 3 0 2 never
build/train "$T/cfg.json" >"$T/log" 2>&1 || bad "never: first run failed"
build/train "$T/cfg.json" >"$T/log" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "holds an earlier run (1 step directory and metrics.jsonl) that this run does not continue" "$T/log" &&
    [ "$(steps_logged "$d")" = "1 2 3 " ] && ok "resume \"never\" in a used out_dir refuses (exit 1), metrics.jsonl untouched" ||
    bad "resume never twice: exit $rc, steps logged: $(steps_logged "$d")"
build/train "$T/cfg.json" --set run.overwrite=true >"$T/log" 2>&1 && [ "$(steps_logged "$d")" = "1 2 3 " ] &&
    grep -q "run.overwrite: starting over" "$T/log" && ok "run.overwrite: metrics.jsonl starts over (steps 1 2 3 once)" ||
    bad "overwrite: steps logged: $(steps_logged "$d")"
d="$T/early"   # killed before its first checkpoint, then started again
config "$d" 100000 0 2
build/train "$T/cfg.json" >"$T/log" 2>&1 & p=$!
wait_for "[ \$(wc -l 2>/dev/null <'$d/metrics.jsonl' || echo 0) -ge 2 ]"
kill -KILL $p; wait $p 2>/dev/null
config "$d" 2 0 2
build/train "$T/cfg.json" >"$T/log" 2>&1 && [ "$(steps_logged "$d")" = "1 2 " ] &&
    grep -q "no complete checkpoint: starting at step 0" "$T/log" &&
    ok "killed before the first checkpoint and started again: steps 1 2 once" || bad "restart: steps logged $(steps_logged "$d")"

echo "damaged metrics.jsonl lines"
d="$T/damaged"
config "$d" 6 3 2
build/train "$T/cfg.json" >"$T/log" 2>&1 || bad "damaged: first run failed"
python3 - "$d/metrics.jsonl" <<'PY'
import sys
p = sys.argv[1]; lines = open(p, 'rb').read().split(b'\n')
lines[1] = lines[1][:10] + b'\0' + lines[1][11:]   # one NUL byte in step 2's line
open(p, 'wb').write(b'\n'.join(lines))
PY
rm "$d/latest"; rm -r "$d/step_0000006"
build/train "$T/cfg.json" >"$T/log" 2>&1 || bad "damaged: resume failed"
[ "$(steps_logged "$d")" = "1 3 4 5 6 " ] && grep -q "metrics.jsonl line 2 (byte offset [0-9]*): damaged line dropped" "$T/log" &&
    ok "a NUL byte in line 2: that line dropped with a warning, steps 1 3 kept, 4-6 relogged" ||
    bad "after a NUL in line 2: steps logged $(steps_logged "$d")"

echo "run.resume auto with only incomplete step directories"
d="$T/incomplete"
mkdir -p "$d/step_0000004" "$d/step_0000007"; echo '{}' >"$d/step_0000007/trainer_state.json"
config "$d" 2 0 2
build/train "$T/cfg.json" >"$T/log" 2>&1 && grep -q "no complete checkpoint: starting at step 0" "$T/log" &&
    [ "$(steps_logged "$d")" = "1 2 " ] && ok "starts at step 0 with a note" || bad "incomplete only: $(tail -2 "$T/log")"
echo step_0000007 >"$d/latest"; rm -r "$d/step_0000002"
build/train "$T/cfg.json" >"$T/log" 2>&1 && grep -q "no complete checkpoint: starting at step 0" "$T/log" &&
    ok "... also when latest names an incomplete one" || bad "latest -> incomplete: $(tail -2 "$T/log")"
grep -q "note: '$d/latest' names step_0000007, which is not a complete checkpoint" "$T/log" &&
    ok "... and says that latest's checkpoint was passed over" || bad "latest -> incomplete, silently: $(head -3 "$T/log")"

echo "latest naming something other than a step directory of the run"
d="$T/latest_out"
config "$d" 2 2 2
build/train "$T/cfg.json" >"$T/log" 2>&1 || bad "latest_out: first run: $(tail -2 "$T/log")"
[ ! -e "$d/run.lock" ] && ok "a finished run leaves no run.lock" || bad "run.lock left after a finished run"
mkdir -p "$T/other" && cp -r "$d/step_0000002" "$T/other/"
echo ../other/step_0000002 >"$d/latest"
config "$d" 4 2 2
build/train "$T/cfg.json" >"$T/log" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "'$d/latest' holds '../other/step_0000002', which is not the name of a step directory" "$T/log" &&
    ok "latest holding ../other/step_0000002 refused, naming it: exit $rc" || bad "latest -> ../: exit $rc: $(tail -2 "$T/log")"

echo "a write that fails (disk full; here a file-size limit makes write(2) fail with EFBIG)"
d="$T/full"
config "$d" 2 0 2
build/train "$T/cfg.json" >"$T/log" 2>&1 || bad "full: first run failed"
config "$d" 4 0 2
(trap '' XFSZ; ulimit -f 150; exec build/train "$T/cfg.json") >"$T/log" 2>&1; rc=$?   # optimizer.safetensors > 150 KiB
[ $rc -eq 1 ] && grep -q "optimizer.safetensors.*File too large" "$T/log" && [ "$(head -1 "$d/latest")" = step_0000002 ] &&
    [ ! -e "$d/step_0000004" ] && [ -f "$d/step_0000002/optimizer.safetensors" ] &&
    ok "a checkpoint write fails: exit 1 naming the file, latest and step_0000002 unchanged" ||
    bad "failed checkpoint write: exit $rc, latest $(head -1 "$d/latest"): $(grep -m1 error "$T/log")"
build/train "$T/cfg.json" >"$T/log" 2>&1 && grep -q "resumed from $d/step_0000002" "$T/log" && [ -f "$d/step_0000004/model.safetensors" ] &&
    [ -z "$(ls -d "$d"/*.tmp.* 2>/dev/null)" ] && [ "$(steps_logged "$d")" = "1 2 3 4 " ] &&
    ok "the next start resumes from step_0000002, removes the half-written directory, logs steps 1-4 once" ||
    bad "after the failed write: $(tail -1 "$T/log"), $(ls "$d" | tr '\n' ' '), steps $(steps_logged "$d")"
d="$T/full2"
config "$d" 3 0 2
mkdir -p "$d" && ln -s /dev/full "$d/metrics.jsonl"   # every metrics write fails with ENOSPC
build/train "$T/cfg.json" >"$T/log" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "writing metrics.jsonl: No space left on device" "$T/log" &&
    ok "metrics.jsonl on a full disk: exit 1 naming it, no line silently lost" || bad "metrics on /dev/full: exit $rc: $(tail -1 "$T/log")"

echo "test_run_dir: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
