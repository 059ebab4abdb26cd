#!/usr/bin/env bash
# The chat template engine swept against Python's jinja2 (transformers' settings): tools/chat_sweep.py writes
# 400 random templates of the subset template/chat_template.h lists (seeded, the same each run), each rendered by
# jinja2 on three conversations; build/tools/chat_sweep renders each with repoc. No rendering may differ:
# repoc's text is jinja2's, byte for byte, or repoc refuses it; and at least 300 templates and 300
# renderings must come out the same as jinja2's. (The fuzzer of the same engine under ASan and UBSan runs
# in make test-asan.)
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" chat_sweep
PY=/usr/bin/python3
$PY -c "import jinja2" 2>/dev/null || { bad "no python3-jinja2 (make deps installs it with make test)"; exit 1; }
(cd tools && $PY chat_sweep.py 1 400 "$T/cases.jsonl") || { bad "tools/chat_sweep.py failed"; exit 1; }
build/tools/chat_sweep "$T/cases.jsonl" >"$T/out" 2>&1
rc=$?
summary=$(tail -n 1 "$T/out")
grep "^DIFFERENT" -A3 "$T/out" | head -n 20
read -r templates _ same < <(echo "$summary" |
    sed -E 's/^([0-9]+) templates, ([0-9]+) renderings: ([0-9]+) the same.*/\1 \2 \3/')
if [ $rc -eq 0 ] && [ "${templates:-0}" -ge 300 ] && [ "${same:-0}" -ge 300 ]; then ok "$summary"
else bad "exit $rc: $summary"; fi
echo "chat_sweep: $failures failed"
[ "$failures" -eq 0 ]
