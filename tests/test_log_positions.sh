#!/usr/bin/env bash
# train.log_positions: a short RePo run logs, at steps 0, N, 2N, ... and after
# the last, one "positions" line per measurement into metrics.jsonl, with one
# entry per RePo layer whose numbers are well-formed (shares in [0, 1] adding
# up to 1, segments = rows x heads x floor(T/16)); a resumed run logs no step
# twice; build/plot --positions draws every layer's five curves with one point
# per line; a RoPE model logs nothing and says so. model.positions.repo_final_init_std
# and repo_content_init_std scale the newly initialised final and content maps, so z at
# step 0 scales with each; repo_gate_init_std changes z (silu is not linear).
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" log_positions

conf() {   # conf NAME MODE STEPS [EXTRA_MODEL_JSON]
    cat >"$T/$1.json" <<JSON
{"run": {"out_dir": "$T/$1", "seed": 3, "threads": 1},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 3, "n_heads": 2, "d_ff": 64,
           "positions": {"mode": "$2"${4:-}}},
 "data": {"seq_len": 48, "synthetic": {"weights": {"single": 1, "multikey": 1, "multivalue": 0, "multiquery": 0,
                                       "distractor": 0, "table": 0}}},
 "optim": {"lr": 3e-3, "warmup_steps": 1},
 "train": {"batch_size": 4, "steps": $3, "log_every": 5, "eval_every": 100, "eval_batches": 1, "log_positions": 5,
           "save_every": 0}}
JSON
}
# the steps of the "positions" lines of a run, space-separated
pos_steps() { grep '"positions"' "$T/$1/metrics.jsonl" | sed 's/^{"step": \([0-9]*\),.*/\1/' | tr '\n' ' '; }

conf repo repo 12
build/train "$T/repo.json" >"$T/repo.log" 2>&1 || { bad "training failed: $(tail -n 3 "$T/repo.log")"; }
[ "$(pos_steps repo)" = "0 5 10 12 " ] && ok "positions at steps 0 5 10 12" || bad "positions steps: '$(pos_steps repo)'"
grep -q '^step      5 | positions layer 1 range' "$T/repo.log" && ok "terminal line at step 5" ||
    bad "no terminal positions line: $(grep positions "$T/repo.log" | head -n 2)"

# every line: the batch description, then layers 1 and 2 (mode repo, L = 3: rope below floor(L/3) = 1)
# (mean |z|, and from the second line on how far z moved per step since the line before)
num='-?[0-9.]+(e[-+][0-9]+)?'
entry() { echo "\\{\"layer\": $1, \"range\": $num, \"mean_abs_step\": $num, \"mean_step\": $num, \"segments\": 24, \"constant\": $num, \"monotonic\": $num, \"hybrid\": $num, \"mean_abs\": $num(, \"moved_per_step\": $num)?\\}"; }
line="^\\{\"step\": [0-9]+, \"positions\": \\{\"rows\": 4, \"T\": 48, \"batch\": \"val\", \"segment\": 16, \"eps_const\": $num, \"mono_frac\": $num, \"ms\": $num, \"layers\": \\[$(entry 1), $(entry 2)\\]\\}\\}$"
n_ok=$(grep '"positions"' "$T/repo/metrics.jsonl" | grep -cE "$line")
[ "$n_ok" = 4 ] && ok "4 well-formed lines (4 rows x 2 heads x 3 segments = 24 per layer)" ||
    bad "well-formed lines: $n_ok of 4: $(grep '"positions"' "$T/repo/metrics.jsonl" | head -n 1)"
# moved_per_step: absent from the first line, on every later one, and > 0 (the maps train at lr 3e-3)
n_mv=$(grep '"positions"' "$T/repo/metrics.jsonl" | grep -c moved_per_step)
first=$(grep '"positions"' "$T/repo/metrics.jsonl" | head -n 1 | grep -c moved_per_step)
pos_mv=$(grep -oE '"moved_per_step": [-0-9.e+]+' "$T/repo/metrics.jsonl" | awk '$2 > 0 { n++ } END { print n + 0 }')
[ "$n_mv" = 3 ] && [ "$first" = 0 ] && [ "$pos_mv" = 6 ] && ok "moved_per_step on lines 2-4, > 0 in both layers" ||
    bad "moved_per_step: $n_mv lines, first line $first, $pos_mv positive of 6"
shares=$(grep '"positions"' "$T/repo/metrics.jsonl" | grep -oE '"constant": [^,]*, "monotonic": [^,]*, "hybrid": [^}]*' |
         awk -F'[:,]' '{ s = $2 + $4 + $6; if ($2 < 0 || $4 < 0 || $6 < 0 || s < 1 - 1e-12 || s > 1 + 1e-12) bad++ }
                       END { print NR, bad + 0 }')
[ "$shares" = "8 0" ] && ok "segment shares in [0, 1] and summing to 1 (8 entries)" || bad "shares: '$shares' (entries, bad)"

# resumed to 17 steps: the line of the resumed step 12 (not a multiple of 5) is dropped and measured again,
# none is there twice, and the last step's follows
sed -i 's/"steps": 12/"steps": 17/' "$T/repo.json"
build/train "$T/repo.json" >"$T/resume.log" 2>&1 || bad "resume failed: $(tail -n 3 "$T/resume.log")"
[ "$(pos_steps repo)" = "0 5 10 12 15 17 " ] && ok "after resuming: 0 5 10 12 15 17" || bad "after resuming: '$(pos_steps repo)'"

if build/plot --positions "$T/repo" --out "$T/pos.svg" >"$T/plot.log" 2>&1; then
    n=0
    for p in "RePo positions: range of z over the row" "mean |z[t+1] - z[t]|" "near-constant segments" \
             "monotonic segments" "hybrid segments"; do
        for l in 1 2; do
            pts=$(grep -F "data-panel=\"$p\" data-series=\"repo layer $l\"" "$T/pos.svg" |
                  sed 's/.*points="\([^"]*\)".*/\1/' | wc -w)
            [ "$pts" = 6 ] && n=$((n + 1)) || bad "plot: $p, layer $l: $pts points, expected 6"
        done
    done
    [ $n = 10 ] && ok "build/plot --positions: 5 panels x 2 layers, 6 points each"
else bad "build/plot --positions failed: $(cat "$T/plot.log")"; fi

conf rope rope 6
build/train "$T/rope.json" >"$T/rope.log" 2>&1 || bad "rope training failed"
grep -q 'no RePo layers; no positions are logged' "$T/rope.log" && ! grep -q '"positions"' "$T/rope/metrics.jsonl" &&
    ok "a RoPE model: a note, no lines" || bad "RoPE model: $(grep -c positions "$T/rope/metrics.jsonl") lines"
if build/plot --positions "$T/rope" --out "$T/none.svg" >"$T/none.log" 2>&1; then bad "plot --positions of a RoPE run accepted"
else grep -q 'no "positions" lines' "$T/none.log" && ok "plot --positions of a RoPE run: refused" || bad "$(cat "$T/none.log")"; fi

# repo_final_init_std 2 = 100 x the default: z = r Wz^T is linear in Wz and the other weights are the same
# draws, so the step-0 range of z is 100 times larger (float rounding aside)
# (and r = silu(gate) ⊙ content is linear in the content map)
conf big repo 1 ', "repo_final_init_std": 2'
conf content repo 1 ', "repo_content_init_std": 2'
conf gate repo 1 ', "repo_gate_init_std": 2'
conf small repo 1
for r in big content gate small; do build/train "$T/$r.json" >"$T/$r.log" 2>&1 || bad "$r failed"; done
range0() { grep '"step": 0, "positions"' "$T/$1/metrics.jsonl" | grep -oE '"layer": 2, "range": [^,]*' | awk '{ print $4 }'; }
for r in big content; do
    key=$([ $r = big ] && echo final || echo content)
    ratio=$(awk -v a="$(range0 $r)" -v b="$(range0 small)" 'BEGIN { printf "%.6f", a / b }')
    awk -v r="$ratio" 'BEGIN { exit !(r > 99.99 && r < 100.01) }' && ok "repo_${key}_init_std 2: step-0 range x $ratio" ||
        bad "repo_${key}_init_std 2: range ratio $ratio, expected 100"
done
# silu(g) ≈ g/2 for small g, so 100 x the gate std gives about 100 x z, but not exactly
ratio=$(awk -v a="$(range0 gate)" -v b="$(range0 small)" 'BEGIN { printf "%.6f", a / b }')
awk -v r="$ratio" 'BEGIN { exit !(r > 20 && r < 500 && (r < 99.99 || r > 100.01)) }' &&
    ok "repo_gate_init_std 2: step-0 range x $ratio (silu is not linear)" || bad "repo_gate_init_std 2: range ratio $ratio"
grep -q '"repo_gate_init_std":[[:space:]]*2' "$T/gate/run_config.json" && ok "run_config.json has repo_gate_init_std" ||
    bad "repo_gate_init_std missing from run_config.json"
echo "test_log_positions: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
