#!/usr/bin/env bash
# build/plot: two runs (rope and repo) on a two-source mixture with per-source
# validation and train.eval_tasks, overlaid in one SVG. Checked structurally:
# the SVG parses as XML, and every (run, metric) has exactly one polyline in
# its panel (training loss raw and smoothed, val_loss and each source, lr,
# grad norm, tokens/s, each retrieval task) with one point per metrics.jsonl
# entry; --csv writes the same numbers for a spreadsheet; bad arguments are usage errors.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" plot

build/tools/gen_tokens "$T/web.u16" 20000 64 1 || exit 1
build/tools/gen_tokens "$T/code.u16" 5000 64 2 || exit 1
for mode in rope repo; do
    cat >"$T/$mode.json" <<JSON
{"run": {"out_dir": "$T/$mode", "seed": 3, "threads": 2},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 2, "d_ff": 64, "positions": {"mode": "$mode"}},
 "data": {"train": [{"name": "web", "files": ["$T/web.u16"], "weight": 2}, {"name": "code", "files": ["$T/code.u16"], "weight": 1}],
          "val": [{"name": "web", "files": ["$T/web.u16"]}, {"name": "code", "files": ["$T/code.u16"]}], "seq_len": 32},
 "optim": {"lr": 3e-3, "warmup_steps": 2, "schedule": "wsd", "decay_fraction": 0.3, "decay_shape": "sqrt"},
 "train": {"batch_size": 4, "steps": 12, "log_every": 1, "eval_every": 4, "eval_batches": 2,
           "eval_tasks": {"families": ["single", "distractor"], "items": 5}}}
JSON
    build/train "$T/$mode.json" >"$T/$mode.log" 2>&1 || { bad "training $mode failed"; tail -3 "$T/$mode.log"; }
done
if build/plot "$T/rope" "$T/repo/" --out "$T/curves.svg" >"$T/plot.log" 2>&1; then ok "build/plot of two runs: $(head -n 1 "$T/plot.log")"
else bad "build/plot failed: $(cat "$T/plot.log")"; fi

python3 - "$T" <<'PY' && ok "one polyline per run and metric in its panel, one point per logged value (2 runs x 13 series)" || bad "the SVG's series"
import json, sys, xml.etree.ElementTree as ET
T = sys.argv[1]
svg = ET.parse(T + "/curves.svg").getroot()
lines = {}
for p in svg.iter("{http://www.w3.org/2000/svg}polyline"):
    key = (p.get("data-panel"), p.get("data-series"))
    assert key not in lines, ("twice", key)
    lines[key] = len(p.get("points").split())
want = {}
for mode in ("rope", "repo"):
    run = mode   # the legend names a run by its directory's last name
    m = [json.loads(l) for l in open(T + "/" + mode + "/metrics.jsonl")]
    steps = [j for j in m if "loss" in j]
    evals = [j for j in m if "val_loss" in j]
    for name, panel in (("loss", "training loss"), ("loss (smoothed, half-life 1 step)", "training loss"), ("lr", "learning rate"),
                        ("grad norm", "gradient norm"), ("tokens/s", "tokens/s")):
        want[(panel, run + " " + name)] = len(steps)
    for name in ("val_loss", "web", "code"):
        want[("validation loss", run + " " + name)] = len(evals)
    for name in ("single@32", "distractor@32"):
        want[("retrieval accuracy (exact match)", run + " " + name)] = len(evals)
assert lines == want, (sorted(set(lines) ^ set(want)), [(k, lines.get(k), want.get(k)) for k in want if lines.get(k) != want[k]])
PY
# --csv: one row per run and step, one column per metric, every value as metrics.jsonl has it
build/plot "$T/rope" "$T/repo" --csv "$T/m.csv" >"$T/csv.log" 2>&1 || bad "build/plot --csv: $(cat "$T/csv.log")"
python3 - "$T" <<'PY' && ok "--csv: every value of both runs' metrics.jsonl in its row and column ($(head -c 80 "$T/m.csv" | head -n 1)...)" || bad "--csv"
import csv, json, sys
T = sys.argv[1]
rows = list(csv.DictReader(open(T + "/m.csv", newline="")))
cell = {(r["run"], int(r["step"])): r for r in rows}
checked = 0
for run in ("rope", "repo"):
    for j in map(json.loads, open(T + "/" + run + "/metrics.jsonl")):
        for key, v in j.items():
            items = v.items() if isinstance(v, dict) else [(None, v)]
            for sub, x in items:
                name = key if sub is None else key + "/" + sub
                if key in ("step", "ms", "tokens_seen", "source_tokens") or "batches" in key:
                    continue
                got = cell[(run, j["step"])][name]
                assert float(got) == x, (run, j["step"], name, got, x)
                checked += 1
assert len(rows) == len(cell) and checked > 100, (len(rows), len(cell), checked)
PY
# evaluations are marked (a dot per point of the validation and retrieval panels), the gradient norm's log
# axis is labelled with values, and --smooth 0 leaves the smoothed curve out
python3 - "$T" <<'PY' && ok "a dot at each evaluation point, the log axis labelled with values (not log10)" || bad "markers or log axis"
import json, sys, xml.etree.ElementTree as ET
T = sys.argv[1]
svg = ET.parse(T + "/curves.svg").getroot()
ns = "{http://www.w3.org/2000/svg}"
dots = len(list(svg.iter(ns + "circle")))
evals = sum(1 for mode in ("rope", "repo") for l in open(T + "/" + mode + "/metrics.jsonl") if "val_loss" in json.loads(l))
assert dots == evals * 5, (dots, evals)   # val_loss, web, code, single@32, distractor@32
texts = [t.text for t in svg.iter(ns + "text")]
assert "L2 norm (log scale)" in texts and not any("log10" in (t or "") for t in texts), texts
PY
build/plot "$T/rope" --smooth 0 --out "$T/raw.svg" >"$T/plot.log" 2>&1 && ! grep -q "smoothed" "$T/raw.svg" &&
    ok "--smooth 0: no smoothed curve" || bad "--smooth 0: $(cat "$T/plot.log")"
if command -v rsvg-convert >/dev/null; then
    [ -s "$T/curves.png" ] && ok "rsvg-convert present: curves.png written" || bad "rsvg-convert present but no PNG"
fi
for args in "--out $T/x.png $T/rope" "$T/rope" "$T/nothing --out $T/y.svg" "$T/rope --out $T/a.svg --out $T/b.svg"; do
    if build/plot $args >"$T/err.log" 2>&1; then bad "build/plot $args: accepted"
    else ok "build/plot ${args//$T\//}: $(head -n 1 "$T/err.log" | sed "s|$T/||g")"; fi
done
# more than 96 metrics: 6 families x 16 lengths of eval_tasks (and loss, lr), and 20 RePo layers x 5 statistics
mkdir -p "$T/wide" "$T/layers"
for step in 1 2 3; do
    printf '{"step": %d, "loss": 2.5, "lr": 0.001, "retrieval": {' $step
    for f in 0 1 2 3 4 5; do for l in $(seq 1 16); do printf '%s"f%d@%d": 0.5' "$([ $f$l = 01 ] || echo ,)" $f $((l * 16)); done; done
    printf '}}\n'
    printf '{"step": %d, "positions": {"layers": [' $step >>"$T/layers/metrics.jsonl"
    for l in $(seq 0 19); do
        printf '%s{"layer": %d, "range": 1.5, "mean_abs_step": 0.1, "constant": 0.2, "monotonic": 0.3, "hybrid": 0.5}' \
            "$([ $l = 0 ] || echo ,)" $l >>"$T/layers/metrics.jsonl"
    done
    printf ']}}\n' >>"$T/layers/metrics.jsonl"
done >"$T/wide/metrics.jsonl"
if build/plot "$T/wide" --out "$T/wide.svg" >"$T/plot.log" 2>&1 && n=$(grep -o '<polyline' "$T/wide.svg" | wc -l) &&
   [ "$n" = 99 ]; then ok "98 metrics (96 retrieval tasks): $n polylines (loss raw and smoothed, lr, 96 tasks)"
else bad "98 metrics: $(head -c 300 "$T/plot.log") ${n:-}"; fi
if build/plot "$T/layers" --positions --out "$T/layers.svg" >"$T/plot.log" 2>&1 && n=$(grep -o '<polyline' "$T/layers.svg" | wc -l) &&
   [ "$n" = 100 ]; then ok "--positions with 20 RePo layers: $n polylines (5 statistics x 20 layers)"
else bad "--positions with 20 layers: $(head -c 300 "$T/plot.log") ${n:-}"; fi
echo "test_plot: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
