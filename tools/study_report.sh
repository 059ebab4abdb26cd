#!/usr/bin/env bash
# tools/study_report.sh: the results section of the study (tools/study.sh).
#   tools/study_report.sh OUT QUICK SECONDS_STAGE1 SECONDS_STAGE2 SECONDS_EVAL   > OUT/results.md
#   tools/study_report.sh --splice DOC RESULTS   puts RESULTS between DOC's markers
#                                                <!-- results:begin --> and <!-- results:end -->
# Reads the JSON that build/eval and build/analyze wrote (cJSON's layout: one
# "key": value per line) and each run's metrics.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --splice ]; then
    doc=$2 res=$3
    if [ ! -f "$doc" ] || ! grep -q '<!-- results:begin -->' "$doc"; then
        printf '# The study\n\n<!-- results:begin -->\n<!-- results:end -->\n' >> "$doc"
    fi
    awk -v res="$res" '
        /<!-- results:begin -->/ { print; while ((getline l < res) > 0) print l; skip = 1; next }
        /<!-- results:end -->/   { skip = 0 }
        !skip' "$doc" > "$doc.tmp"
    mv "$doc.tmp" "$doc"
    exit 0
fi

out=$1 quick=$2 s1=$3 s2=$4 s3=$5
# the modes and settings of tools/study.sh, which passes them
MODES=${MODES:-rope repo nope r2n1 n2r1 repo_lr10 repo_lr100 repo_init}
REPO_MODES=${REPO_MODES:-repo repo_lr10 repo_lr100 repo_init}
NOISY_DISTRACTORS=${NOISY_DISTRACTORS:-7}
REPO_INIT_STD=${REPO_INIT_STD:-2}
NOISY_SYN=${NOISY_SYN:-"{\"markov_order\": 2, \"table_rows\": 3, \"n_distractors\": $NOISY_DISTRACTORS}"}
n_modes=$(echo $MODES | wc -w)

# tasks FILE: "family length accuracy chance key_blind" per task entry of an eval JSON
tasks() {
    awk '/"family":/   { gsub(/[",\t ]/, "", $2); f = $2 }
         /"length":/   { gsub(/[,\t ]/, "", $2); l = $2 }
         /"accuracy":/ { gsub(/[,\t ]/, "", $2); a = $2 }
         /"chance":/   { gsub(/[,\t ]/, "", $2); c = $2 }
         /"key_blind":/ { gsub(/[,\t ]/, "", $2); print f, l, a, c, $2 }' FS=':' "$1"
}
acc() { tasks "$1" | awk -v f="$2" -v l="$3" '$1 == f && $2 == l { printf "%.3f", $3 }'; }
jnum() { sed -n "s/^[[:space:]]*\"$1\":[[:space:]]*\([^,]*\),\{0,1\}$/\1/p" "$2" | head -n 1; }
cfgnum() { sed -n "s/.*\"$1\":[[:space:]]*\([0-9.e+-]*\).*/\1/p" "$2" | head -n 1; }
# last validation loss, and the median ms of the logged steps, of a run
val_loss() { grep -o '"val_loss": [^,]*' "$1/metrics.jsonl" | tail -n 1 | awk '{ print $2 }'; }
median_ms() { grep -o '"ms": [0-9.]*' "$1/metrics.jsonl" | awk '{ print $2 }' | sort -g |
              awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# the wall time of a run from its metrics.jsonl: the sum of its logged step times x log_every, roughly
stage1_wall() { grep -o '"ms": [0-9.]*' "$out/stage1_rope/metrics.jsonl" | awk -v e="$(cfgnum log_every "$out/stage1_rope/run_config.json")" '{ s += $2 } END { printf "%.0f", s * e / 1000 }'; }
# what a stage-2 mode changes besides the layer positions
mode_setting() {
    case $1 in
        repo_lr10) echo "optim.lr_mult.repo 10" ;;
        repo_lr100) echo "optim.lr_mult.repo 100" ;;
        repo_init) echo "repo_final_init_std $REPO_INIT_STD" ;;
        *) echo "—" ;;
    esac
}
S1=configs/study/stage1.json
S2=configs/study/stage2.json
T=$(cfgnum seq_len "$S1")
T2=$((2 * T)); T4=$((4 * T))
steps1=$(cfgnum steps "$out/stage1_rope/run_config.json")
b1=$(cfgnum batch_size "$out/stage1_rope/run_config.json")
steps2=$(cfgnum steps "$out/stage2_rope/run_config.json")
b2=$(cfgnum batch_size "$out/stage2_rope/run_config.json")
gate=$(jnum accuracy "$out/eval/stage1_gate.json")
gate_items=$(jnum items "$out/eval/stage1_gate.json")
gate_chance=$(jnum chance "$out/eval/stage1_gate.json")
items=$(jnum items "$out/eval/rope.json")
rope_ms=$(median_ms "$out/stage2_rope")

how="make study"
[ "$quick" = 1 ] && how="tools/study.sh --quick"
[ -s "$out/logs/stage1_from" ] && how="tools/study.sh$([ "$quick" = 1 ] && echo " --quick") --stage1 $(cat "$out/logs/stage1_from")"
echo "Produced by \`$how\` on $(date -u +%Y-%m-%d)," \
     "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores" \
     "($(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1), lscpu; $(free -g | awk '/^Mem:/ { print $2 }') GiB). Wall time:" \
     "$([ -s "$out/logs/stage1_from" ] && echo "stage 1 taken from $(cat "$out/logs/stage1_from") (\`--stage1\`, trained earlier with the same config; its steps took about $(stage1_wall) s)," || echo "stage 1 ${s1} s,")" \
     "stage 2 ${s2} s ($n_modes runs, two at a time), evaluation and analysis ${s3} s."
echo
echo "### Budget"
echo
echo "| | steps | batch × length | tokens | threads |"
echo "|---|---:|---|---:|---|"
echo "| stage 1 (rope, from scratch) | $steps1 | $b1 × $T | $((steps1 * b1 * T)) | 1 |"
echo "| stage 2, each of the $n_modes modes | $steps2 | $b2 × $T | $((steps2 * b2 * T)) | 1 (two runs side by side) |"
echo
echo "Model: $(grep -m 1 '^model: .* V=' "$out/logs/stage1_rope.log" | sed 's/^model: *//'), " \
     "$(sed -n 's/^  parameters \([0-9][0-9]*\) .*/\1/p' "$out/logs/stage1_rope.log" | head -n 1) parameters with RoPE" \
     "($(sed -n 's/^  parameters \([0-9][0-9]*\) .*/\1/p' "$out/logs/stage2_repo.log" | head -n 1) with RePo's modules)."
echo
echo "Modes: \`rope\`, \`repo\` (RoPE in layer 0, RePo above), \`nope\`, \`r2n1\`, \`n2r1\` as in the paper, and three RePo"
echo "variants with the same plan and budget that ask what makes the positions move: \`repo_lr10\` and \`repo_lr100\`"
echo "(the RePo module's learning rate × 10 and × 100, \`optim.lr_mult\`) and \`repo_init\` (its final projection"
echo "drawn with std $REPO_INIT_STD instead of 0.02, \`model.positions.repo_final_init_std\`)."
echo
echo "### Stage 1 gate"
echo
echo "Single needle at the training length T = $T: exact match **$gate** on $gate_items held-out items" \
     "(chance $gate_chance; required ≥ 0.90 before stage 2 starts)."
echo
echo "### Per mode: validation loss and training cost"
echo
echo "| mode | layer positions | setting | final val loss | val ppl | ms/step (median) | step time / rope |"
echo "|---|---|---|---:|---:|---:|---:|"
for m in $MODES; do
    r=$out/stage2_$m
    v=$(val_loss "$r")
    ms=$(median_ms "$r")
    pos=$(sed -n 's/^ *positions: *//p' "$out/logs/stage2_$m.log" | head -n 1)
    printf '| %s | %s | %s | %.4f | %.3f | %.1f | %.3f |\n' "$m" "${pos:-?}" "$(mode_setting $m)" "$v" "$(awk -v v="$v" 'BEGIN { print exp(v) }')" \
        "$ms" "$(awk -v a="$ms" -v b="$rope_ms" 'BEGIN { print a / b }')"
done
echo
echo "rope and repo trained at the same time, one thread each, so their ratio is measured side by side;"
echo "the other modes ran in later pairs, on a machine shared with other work, so their times are rougher. Validation loss is the plain mean over all targets of the"
echo "held-out synthetic stream (filler included), not the answer-weighted training loss."
echo
echo "### Retrieval accuracy (exact match of the greedy answer, $items items per cell)"
echo
echo "1×, 2×, 4× = $T, $T2, $T4 tokens. \"YaRN\" columns evaluate the same checkpoint with YaRN factor 2"
echo "(at $T2) and 4 (at $T4), original length $T."
echo
echo "| family | mode | 1× | 2× | 4× | 2× YaRN | 4× YaRN | chance | key-blind |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for f in single multikey multivalue multiquery distractor table; do
    for m in $MODES; do
        e=$out/eval/$m.json
        line=$(tasks "$e" | awk -v f=$f -v l=$T '$1 == f && $2 == l')
        [ -n "$line" ] || continue
        ch=$(echo "$line" | awk '{ printf "%.2g", $4 }')
        kb=$(echo "$line" | awk '{ printf "%.3f", $5 }')
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$f" "$m" "$(acc "$e" $f $T)" "$(acc "$e" $f $T2)" \
            "$(acc "$e" $f $T4)" "$(acc "$out/eval/${m}_yarn2.json" $f $T2)" "$(acc "$out/eval/${m}_yarn4.json" $f $T4)" "$ch" "$kb"
    done
done
echo
echo "Mean over the six families:"
echo
echo "| mode | 1× | 2× | 4× | 2× YaRN | 4× YaRN |"
echo "|---|---:|---:|---:|---:|---:|"
mean_acc() { tasks "$1" | awk -v l="$2" '$2 == l { s += $3; n++ } END { if (n) printf "%.3f", s / n }'; }
for m in $MODES; do
    e=$out/eval/$m.json
    printf '| %s | %s | %s | %s | %s | %s |\n' "$m" "$(mean_acc "$e" $T)" "$(mean_acc "$e" $T2)" "$(mean_acc "$e" $T4)" \
        "$(mean_acc "$out/eval/${m}_yarn2.json" $T2)" "$(mean_acc "$out/eval/${m}_yarn4.json" $T4)"
done
echo
echo "### Noisy context: the needle among $NOISY_DISTRACTORS near-duplicates"
echo
echo "The \`distractor\` family with \`n_distractors\` $NOISY_DISTRACTORS (training items have 3): the true needle"
echo "\`NEEDLE key SEP value\` and $NOISY_DISTRACTORS needles whose keys differ from it in one token, each with"
echo "its own value. At 1× the $((NOISY_DISTRACTORS + 1)) needles take $(( (NOISY_DISTRACTORS + 1) * 6 )) of the $T tokens, so the true one sits among"
echo "near-duplicates on both sides; at 2× and 4× filler spreads them out. $items items per cell."
echo
echo "| mode | 1× | 2× | 4× | 2× YaRN | 4× YaRN | chance | key-blind |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for m in $MODES; do
    e=$out/eval/${m}_noisy.json
    line=$(tasks "$e" | awk -v l=$T '$1 == "distractor" && $2 == l')
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$m" "$(acc "$e" distractor $T)" "$(acc "$e" distractor $T2)" \
        "$(acc "$e" distractor $T4)" "$(acc "$out/eval/${m}_noisy_yarn2.json" distractor $T2)" \
        "$(acc "$out/eval/${m}_noisy_yarn4.json" distractor $T4)" "$(echo "$line" | awk '{ printf "%.2g", $4 }')" \
        "$(echo "$line" | awk '{ printf "%.3f", $5 }')"
done
echo
echo "### Attention mass of the query rows (build/analyze, $(jnum items "$out/analysis/rope/analysis.json") items at length $T)"
echo
echo "Single needle; layers floor(L/3) .. L−1 for every mode (RePo's layers), mean over heads and query rows."
echo "Segment shares (constant / monotonic / hybrid) exist for RePo layers only."
echo
grep '^|' "$out/analysis/compare.md"
echo
echo "Distractor family (the true needle among 3 near-miss keys, as in training):"
echo
grep '^|' "$out/analysis/compare_distractor.md"
echo
echo "Noisy context (the true needle among $NOISY_DISTRACTORS near-duplicates):"
echo
grep '^|' "$out/analysis/compare_noisy.md"
echo
echo "### RePo's learned positions at the end (build/analyze on the single-needle items above)"
echo
for m in $REPO_MODES; do
    echo "$m ($(mode_setting $m | sed 's/^—$/the released initialisation, lr_mult 1/')):"
    echo
    echo '```'
    sed -n '/^learned positions/,/^  all /p' "$out/logs/analyze_$m.log"
    echo '```'
    echo
done
every=$(cfgnum log_positions "$out/stage2_repo/run_config.json")
echo "### RePo's learned positions over training (train.log_positions)"
echo
echo "Every $every steps the trainer measures the positions of the RePo layers on the first validation batch"
echo "($b2 rows × $T tokens, every KV head; build/analyze's definitions) and logs them to metrics.jsonl. The"
echo "table gives the mean over the RePo layers at the start, at thirds of stage 2 and at the end; the"
echo "figure has every logged step and layer. Overhead: the measurement's time against the $every steps it covers."
echo
echo "| mode | step | range | mean \\|step\\| | mean step | constant | monotonic | hybrid |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
# pos_rows RUN: "step range mean_abs_step mean_step constant monotonic hybrid ms" per positions line, means over layers
pos_rows() {
    grep '"positions"' "$1/metrics.jsonl" | awk '
        function mean(line, key,   s, n, v) {
            s = 0; n = 0
            while (match(line, "\"" key "\": [-0-9.e+]+")) {
                v = substr(line, RSTART + length(key) + 4, RLENGTH - length(key) - 4)
                s += v; n++; line = substr(line, RSTART + RLENGTH)
            }
            return n ? s / n : 0
        }
        { match($0, /"step": [0-9]+/); st = substr($0, RSTART + 8, RLENGTH - 8)
          print st, mean($0, "range"), mean($0, "mean_abs_step"), mean($0, "mean_step"), mean($0, "constant"),
                mean($0, "monotonic"), mean($0, "hybrid"), mean($0, "ms") }'
}
for m in $REPO_MODES; do
    pos_rows "$out/stage2_$m" | awk -v m=$m -v S=$steps2 '
        BEGIN { n = split(0 " " int(S / 3) " " int(2 * S / 3) " " S, want, " ") }
        { for (i = 1; i <= n; i++) if (!done[i] && $1 >= want[i]) { done[i] = 1
              printf "| %s | %d | %.3f | %.4f | %+.4f | %.3f | %.3f | %.3f |\n", m, $1, $2, $3, $4, $5, $6, $7 } }'
done
echo
echo "| mode | positions logged | measurement ms (mean) | step ms (median) | overhead |"
echo "|---|---:|---:|---:|---:|"
for m in $REPO_MODES; do
    ms=$(median_ms "$out/stage2_$m")
    pos_rows "$out/stage2_$m" | awk -v m=$m -v e=$every -v ms=$ms '$1 > 0 { s += $8; n++ }
        END { printf "| %s | %d | %.1f | %.1f | %.2f%% |\n", m, n + 1, s / n, ms, 100 * (s / n) / (e * ms) }'
done
echo
echo "Figures: [positions over training](study/positions_training.svg) (build/plot --positions; one colour per"
echo "variant, one dash per layer), the positions z of the first single-needle item against the token index, one"
echo "line per head and one panel per RePo layer, needle and query shaded, for"
echo "$(for m in $REPO_MODES; do printf '[%s](study/%s_positions.svg) ' $m $m; done | sed 's/ $//; s/) \[/), [/g'),"
echo "[attention mass per mode](study/compare_compare_attention.svg)," \
     "[distractor](study/compare_distractor_compare_attention.svg), [noisy](study/compare_noisy_compare_attention.svg)," \
     "[segment shares](study/compare_compare_segments.svg)," \
     "training curves of [stage 1](study/training_stage1.svg) and of [stage 2, every mode overlaid](study/training_stage2.svg) (build/plot)."
echo
echo "### Commands"
echo
echo '```'
echo "build/train $S1 --set run.out_dir=$out/stage1_rope      # or tools/study.sh --stage1 RUN_DIR: a finished run of it"
echo "build/eval $out/stage1_rope --tasks single --lengths $T --items ${gate_items} --seed 7 --json $out/eval/stage1_gate.json"
echo "for m in $MODES; do"
echo "  build/train $S2 --set run.out_dir=$out/stage2_\$m --set model.init_from=$out/stage1_rope --set model.positions.mode=\$m"
echo "      # repo_lr10, repo_lr100: mode repo --set 'optim.lr_mult={\"repo\":10}' (100)"
echo "      # repo_init: mode repo --set model.positions.repo_final_init_std=$REPO_INIT_STD"
echo "  build/eval $out/stage2_\$m --tasks all --lengths $T,$T2,$T4 --items $items --seed 7 --json $out/eval/\$m.json"
echo "  build/eval $out/stage2_\$m --tasks all --lengths $T2 --items $items --seed 7 --yarn-factor 2 --json $out/eval/\${m}_yarn2.json"
echo "  build/eval $out/stage2_\$m --tasks all --lengths $T4 --items $items --seed 7 --yarn-factor 4 --json $out/eval/\${m}_yarn4.json"
echo "  # noisy: the same three with --tasks distractor --synthetic '$NOISY_SYN' --json $out/eval/\${m}_noisy*.json"
echo "  build/analyze $out/stage2_\$m --attention [--positions for RePo modes] --items N --seed 7 --label \$m --out $out/analysis/\$m"
echo "  build/analyze ... --task distractor [--synthetic '$NOISY_SYN']   # distractor and noisy attention"
echo "done
build/plot --positions $(for m in $REPO_MODES; do printf '%s ' "$out/stage2_$m"; done)--out $out/analysis/positions_training.svg"
echo '```'
echo
echo "### Configs"
echo
echo "configs/study/stage1.json:"
echo
echo '```json'
cat "$S1"
echo '```'
echo
echo "configs/study/stage2.json (mode, out_dir and init_from set per run as above):"
echo
echo '```json'
cat "$S2"
echo '```'
