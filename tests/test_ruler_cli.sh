#!/usr/bin/env bash
# build/eval --ruler end to end on the multiple-choice fixture's tiny checkpoint (its own tokenizer.json; 40
# positions, so YaRN x32 to address the lengths): the JSON contract of each (task, length) with its interval
# and items, the note that the items are RULER-generated, the ETA printed before the run, --dump-prompts'
# files holding exactly the prompts, and the refusals (an unknown task, a length past what the model
# addresses, a length too short for a task, --dump-prompts without --ruler).
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" ruler_cli
CK=tests/fixtures/mc/ckpt
Y="--yarn-factor 32 --yarn-orig 40"   # 1280 positions
mkdir -p "$T/prompts"
if build/eval $CK --ruler niah_single_1,vt --lengths 1024,1280 --items 2 $Y --json "$T/r.json" \
    --dump-prompts "$T/prompts" >"$T/run.log" 2>&1; then
    ok "build/eval --ruler ran: $(grep -m1 'ETA' "$T/run.log")"
else bad "build/eval --ruler failed: $(tail -n 5 "$T/run.log")"; fi
if grep -q 'about .* s per item' "$T/run.log" && [ "$(grep -n 'ETA' "$T/run.log" | head -1 | cut -d: -f1)" -lt \
    "$(grep -n 'niah_single_1 *L=1024 ' "$T/run.log" | head -1 | cut -d: -f1)" ]; then
    ok "the seconds per item and the ETA come before the first result"
else bad "no ETA before the run: $(head -c 600 "$T/run.log")"; fi
/usr/bin/env python3 - "$T/r.json" "$T/prompts" <<'PY' && ok "JSON: ruler.TASK.LENGTH with n, score in its ci, items with id, prompt_tokens, prediction, references, score; ruler_note; each prompt file" || bad "JSON contract (above)"
import json, os, sys
d = json.load(open(sys.argv[1]))
assert "not comparable number for number" in d["ruler_note"], d.get("ruler_note")
for task in ("niah_single_1", "vt"):
    for L in ("1024", "1280"):
        c = d["ruler"][task][L]
        assert c["n"] == 2 and len(c["items"]) == 2, c
        lo, hi = c["ci"]
        assert 0 <= lo <= c["score"] <= hi <= 1, c
        for it in c["items"]:
            assert set(("id", "prompt_tokens", "prediction", "references", "score")) <= set(it), it
            assert 0 < it["prompt_tokens"] <= int(L) and it["references"] and 0 <= it["score"] <= 1, it
            f = os.path.join(sys.argv[2], "%s_%s_%d.txt" % (task, L, it["id"]))
            assert os.path.getsize(f) > 0, f
            text = open(f).read()
            assert all(r in text for r in it["references"]), (f, it["references"])
PY
expect_eval_refused() {  # label pattern args...
    local label=$1 want=$2
    shift 2
    if build/eval "$@" >"$T/refused.log" 2>&1; then bad "$label: accepted"
    elif grep -qF -- "$want" "$T/refused.log"; then ok "$label: $(grep -F -- "$want" "$T/refused.log" | head -c 170)"
    else bad "$label: $(head -c 300 "$T/refused.log")"; fi
}
expect_eval_refused "an unknown task" "--ruler" $CK --ruler niah_single_9 --lengths 1024
expect_eval_refused "a length past what the model addresses" "--lengths" $CK --ruler vt --lengths 4096 $Y
expect_eval_refused "a length too short for a task" "--lengths" $CK --ruler vt --lengths 64 $Y
expect_eval_refused "--dump-prompts without --ruler" "--dump-prompts needs --ruler" $CK --dump-prompts "$T/prompts"
echo "test_ruler_cli: $failures failed"
[ "$failures" -eq 0 ]
