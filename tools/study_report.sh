#!/usr/bin/env bash
# tools/study_report.sh OUT QUICK T_STAGE1 T_CAL T_STAGE2 T_EVAL: the report of a study v4 run
# (tools/study.sh) as markdown on stdout: the calibration, the budget, the verdict by the decision rule
# of docs/study.md, every comparison with its interval, per-mode tables.
#   tools/study_report.sh --splice DOC RESULTS   puts RESULTS between DOC's markers
#                                                <!-- results:begin --> and <!-- results:end -->
# Reads OUT/cal/*.txt, the build/eval --compare JSON in OUT/compare (cJSON's layout: one "key": value
# per line) and the eval JSON in OUT/eval; the settings come from tools/study.sh's environment.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/study_lib.sh
. tools/study_lib.sh

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

out=$1 quick=$2 t1=$3 tc=$4 t2=$5 te=$6
out_rel=study   # the figures' folder as docs/study.md links it
: "${MODES:?} ${SEEDS:?} ${T:?} ${POOL:?} ${PRIMARY:?} ${LR:?} ${WM_STD:?} ${WM_LR_MULT:?} ${Z_TARGET:?}"
: "${BAND_LO:?} ${BAND_HI:?} ${NOISY:?} ${STEPS2:?} ${COMPUTE:?} ${EVAL_ITEMS:?} ${SECONDARY_ITEMS:?} ${CAL_ITEMS:?}"
: "${AN_ITEMS:?}"
FAMILIES="single multikey multivalue multiquery distractor table"

# field FILE KEY FIELD: a field of KEY's object in a --compare JSON, as written
field() {
    awk -v k="\"$2\":" -v f="\"$3\":" '$1 == k { on = 1; next } on && $1 == f { sub(/^[^:]*:[ \t]*/, ""); sub(/,$/, "");
        print; exit } on && /^[ \t]*}/ { exit }' "$1"
}
ci() { field "$1" "$2" ci | tr -d '[] ' | awk -F, '{ printf "[%+.3f, %+.3f]", $1, $2 }'; }
num() { awk -v x="$1" 'BEGIN { printf "%+.3f", x }'; }
per_seed() { # FILE KEY: the per-seed differences
    field "$1" "$2" diff_per_seed | tr -d '[] ' | awk -F, '{ for (i = 1; i <= NF; i++) printf "%s%+.3f", (i > 1 ? ", " : ""), $i }'
}
mean_over_seeds() { # MODE FAMILY LENGTH SUFFIX
    local s v
    for s in $SEEDS; do
        v=$(accuracy "$out/eval/${1}_s$s${4}.json" "$2" "$3")
        echo "${v:-nan}"
    done | awk '{ t += $1; n++ } END { printf "%.3f", t / n }'
}
ppl_over_seeds() { # MODE SUFFIX
    local s
    for s in $SEEDS; do
        grep -oE '"ppl":[[:space:]]*[0-9][0-9.e+-]*' "$out/eval/${1}_s$s$2.json" | head -n 1 | grep -oE '[0-9.e+-]+$'
    done | awk '{ t += $1; n++ } END { printf "%.2f", t / n }'
}
verdict_of() { field "$1" pool verdict | tr -d '"'; }

n_seeds=$(echo $SEEDS | wc -w)
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)
echo "Produced by \`make study\`$([ "$quick" = 1 ] && echo " --quick (nothing learned: a check of the pipeline)") on" \
     "$(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores ($cpu)," \
     "training with \`train.compute_dtype\` \"$COMPUTE\". Wall time: stage 1 ${t1} s, calibration ${tc} s, stage 2" \
     "${t2} s, evaluation and comparisons ${te} s; in all $(( (t1 + tc + t2 + te) / 60 )) min $(( (t1 + tc + t2 + te) % 60 )) s." \
     "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo

echo "### Calibration (from the stage-1 checkpoint or rope alone, before stage 2)"
echo
echo "The band: each family's exact match at T = $T on $CAL_ITEMS items (eval seed 11, not the final items);"
echo "those within [$BAND_LO, $BAND_HI] make the primary metric M (\"noisy\": the distractor among $NOISY near-duplicates)."
echo
echo "| family | stage 1 | in M |"
echo "|---|---:|---|"
while read -r f a; do
    echo "| $f | $a | $(case ",$POOL," in *",$f@$T,"*) echo yes ;; *) echo no ;; esac) |"
done < "$out/cal/band.txt"
echo
echo "M pools: \`$POOL\`."
echo
echo "The learning rate: rope continued with stage 2's settings (run seed 1), held-out loss at the end of the pilot:"
echo
echo "| lr | held-out loss | chosen |"
echo "|---:|---:|---|"
while read -r l v; do echo "| $l | $v | $([ "$l" = "$LR" ] && echo yes || echo no) |"; done < "$out/cal/lr.txt"
echo
echo "repo_wm's width on the stage-1 checkpoint (RePo's three maps drawn with each std, lr_mult $WM_LR_MULT so that its"
echo "step is 1.19e-3): mean |z| at step 0 against the 1B's $Z_TARGET (target band 0.5–2×), and its movement per step"
echo "(the 1B's: 0.048)."
echo
echo "| std | mean \\|z\\| at step 0 | × the 1B's | mean \\|Δz\\| per step | chosen |"
echo "|---:|---:|---:|---:|---|"
while read -r s z m; do
    echo "| $s | $z | $(awk -v z="$z" -v t="$Z_TARGET" 'BEGIN { printf "%.2f", z / t }') | $m |" \
         "$([ "$s" = "$WM_STD" ] && [ "$PRIMARY" = repo_wm ] && echo yes || echo no) |"
done < "$out/cal/width.txt"
echo
if [ "$PRIMARY" = repo_wm ]; then
    echo "The primary RePo mode is \`repo_wm\`: std $WM_STD, \`optim.lr_mult.repo\` $WM_LR_MULT."
else
    echo "No std up to 4× the width rule's brings mean |z| within 0.5–2× of the 1B's: the primary RePo mode is \`repo\`."
fi
echo

echo "### Budget"
echo
echo "| stage | steps | batch × length | tokens | runs |"
echo "|---|---:|---|---:|---:|"
cfg() { sed -n "s/^[[:space:]]*\"$2\":[[:space:]]*\([0-9]*\),\{0,1\}$/\1/p" "$1/run_config.json" | head -n 1; }
budget_row() { # LABEL RUN RUNS
    local steps B L
    steps=$(cfg "$2" steps) B=$(cfg "$2" batch_size) L=$(cfg "$2" seq_len)
    echo "| $1 | $steps | $B × $L | $((steps * B * L)) | $3 |"
}
budget_row "1 (rope, from scratch)" "$out/stage1_rope" 1
budget_row "2 (each mode and seed)" "$out/stage2_rope_s${SEEDS%% *}" $(( $(echo $MODES | wc -w) * n_seeds ))
echo
echo "Modes: $(echo $MODES | sed 's/ /, /g'); seeds: $(echo $SEEDS | sed 's/ /, /g') (\`run.seed\`: the data order and the new RePo weights)."
echo

echo "### The verdict (docs/study.md's rule, applied as written)"
echo
a=$out/compare/adaptation.json c=$out/compare/claim.json at=$out/compare/attribution.json
d_nope=$(field "$a" pool diff)
echo "1. **Adaptation check**: M(nope) − M(rope) = **$(num "$d_nope")** $(ci "$a" pool) (per seed $(per_seed "$a" pool))."
adapted=$(awk -v d="$d_nope" 'BEGIN { print (d >= -0.15) }')
d_claim=$(field "$c" pool diff) v_claim=$(verdict_of "$c")
d_attr=$(field "$at" pool diff) v_attr=$(verdict_of "$at")
echo "2. **The claim**: M($PRIMARY) − M(rope) = **$(num "$d_claim")** $(ci "$c" pool) (per seed $(per_seed "$c" pool)): $v_claim."
echo "3. **Attribution**: M($PRIMARY) − M(r1n3) = **$(num "$d_attr")** $(ci "$at" pool) (per seed $(per_seed "$at" pool)): $v_attr."
echo
if [ "$adapted" != 1 ]; then
    sentence="No verdict: stage 2 is too short to adapt (nope − rope = $(num "$d_nope") < −0.15); 2 and 3 are descriptive only."
else
    case $v_claim in
        better) sentence="At this scale the result supports the paper's claim: $PRIMARY − rope = $(num "$d_claim") $(ci "$c" pool)" ;;
        worse) sentence="At this scale the result refutes the paper's claim: $PRIMARY − rope = $(num "$d_claim") $(ci "$c" pool)" ;;
        *) sentence="No difference at this n between $PRIMARY and rope: $(num "$d_claim") $(ci "$c" pool)" ;;
    esac
    if [ "$v_claim" = better ]; then
        sentence="$sentence; $([ "$v_attr" = better ] && echo "the gain is attributed to the learned positions (over r1n3: $(num "$d_attr") $(ci "$at" pool))" ||
                                 echo "it is not attributed to the learned positions (over r1n3: $(num "$d_attr") $(ci "$at" pool))")"
    fi
    sentence="$sentence."
fi
echo "**Verdict:** $sentence"
echo

echo "### Learning curves (the loop's evaluation: M's families, 100 items each, training text as filler; means over the seeds)"
echo
# curve MODE: "step value" per evaluation, value the mean over M's families (noisy is not in the loop) and the seeds
curve() {
    local s
    for s in $SEEDS; do
        grep '"retrieval"' "$out/stage2_${1}_s$s/metrics.jsonl" | sed 's/"retrieval_tokens".*//' |
            awk -v pool=",$POOL," '{ step = $2; sub(/,$/, "", step); t = 0; n = 0
                while (match($0, /"[a-z]+@[0-9]+": [0-9.e+-]+/)) {
                    kv = substr($0, RSTART, RLENGTH); $0 = substr($0, RSTART + RLENGTH)
                    split(kv, a, /": /); k = substr(a[1], 2)
                    if (index(pool, "," k ",")) { t += a[2]; n++ } }
                if (n) print step, t / n }'
    done | awk '{ v[$1] += $2; c[$1]++ } END { for (k in v) print k, v[k] / c[k] }' | sort -n
}
steps=$(curve rope | awk '{ print $1 }' | tr '\n' ' ')
printf '| step |'; for m in $MODES; do printf ' %s |' "$m"; done; printf ' nope − rope |\n'
printf '|---:|'; for m in $MODES; do printf '%s' '---:|'; done; printf '%s\n' '---:|'
for m in $MODES; do curve "$m" > "$out/compare/curve_$m.txt"; done
for st in $steps; do
    printf '| %s |' "$st"
    for m in $MODES; do printf ' %s |' "$(awk -v s="$st" '$1 == s { printf "%.3f", $2 }' "$out/compare/curve_$m.txt")"; done
    printf ' %s |\n' "$(join <(awk -v s="$st" '$1 == s' "$out/compare/curve_nope.txt") <(awk -v s="$st" '$1 == s' "$out/compare/curve_rope.txt") |
        awk '{ printf "%+.3f", $2 - $3 }')"
done
echo

echo "### Every comparison (B − A over $n_seeds seeds and the items; 95% two-level bootstrap, seeds then items)"
echo
echo "| comparison | metric | n | A | B | B − A | 95% interval | per seed | verdict |"
echo "|---|---|---:|---:|---:|---:|---|---|---|"
for cmp in adaptation:"nope − rope" claim:"$PRIMARY − rope" attribution:"$PRIMARY − r1n3" r2n1:"r2n1 − rope" repo_vs_wm:"repo − repo_wm"; do
    name=${cmp%%:*} label=${cmp#*:}
    f=$out/compare/$name.json
    [ -f "$f" ] || continue
    for key in pool $(echo "$POOL" | tr ',' ' '); do
        echo "| $label | $([ "$key" = pool ] && echo "**M**" || echo "$key") | $(field "$f" "$key" n) |" \
             "$(awk -v x="$(field "$f" "$key" a)" 'BEGIN { printf "%.3f", x }') |" \
             "$(awk -v x="$(field "$f" "$key" b)" 'BEGIN { printf "%.3f", x }') | $(num "$(field "$f" "$key" diff)") |" \
             "$(ci "$f" "$key") | $(per_seed "$f" "$key") | $(field "$f" "$key" verdict | tr -d '"') |"
    done
done
echo

echo "Secondary (not part of the verdict): the same comparisons at 2× and 4× T with YaRN (factor 2, 4), per family."
echo
echo "| comparison | task | n | B − A | 95% interval | verdict |"
echo "|---|---|---:|---:|---|---|"
for cmp in adaptation:"nope − rope" claim:"$PRIMARY − rope" attribution:"$PRIMARY − r1n3"; do
    name=${cmp%%:*} label=${cmp#*:}
    for y in 2 4; do
        f=$out/compare/${name}_yarn$y.json
        for fam in $FAMILIES; do
            key=$fam@$((y * T))
            echo "| $label | $key, YaRN $y | $(field "$f" "$key" n) | $(num "$(field "$f" "$key" diff)") | $(ci "$f" "$key") |" \
                 "$(field "$f" "$key" verdict | tr -d '"') |"
        done
    done
done
echo

echo "### Per mode (means over the seeds; held-out text; $EVAL_ITEMS items per family at T, $SECONDARY_ITEMS at 2× and 4×)"
echo
echo "Exact match at 1×, 2×, 4× T without YaRN and at 2×, 4× with YaRN (factor 2, 4), and held-out perplexity."
echo
echo "| mode | family | 1× | 2× | 4× | 2× YaRN | 4× YaRN |"
echo "|---|---|---:|---:|---:|---:|---:|"
for m in $MODES; do
    for f in $FAMILIES; do
        echo "| $m | $f | $(mean_over_seeds $m $f $T "") | $(mean_over_seeds $m $f $((2 * T)) _long) |" \
             "$(mean_over_seeds $m $f $((4 * T)) _long) | $(mean_over_seeds $m $f $((2 * T)) _yarn2) |" \
             "$(mean_over_seeds $m $f $((4 * T)) _yarn4) |"
    done
    echo "| $m | noisy | $(mean_over_seeds $m noisy $T _noisy) | | | | |"
done
echo
echo "| mode | perplexity 1× | 2× | 4× |"
echo "|---|---:|---:|---:|"
for m in $MODES; do echo "| $m | $(ppl_over_seeds $m "") | $(ppl_over_seeds $m _ppl2) | $(ppl_over_seeds $m _ppl4) |"; done
echo
echo "### The paper's analyses (build/analyze on the RePo runs, $AN_ITEMS single-needle items at T on held-out text)"
echo
echo "docs/analyze.md defines each number. (a) z's range at 1×, 2×, 4× T, without and with YaRN; (b) the share of"
echo "the largest tenth of |Δz| that falls on segment boundaries (needle, query, answer, document ends), against"
echo "chance; (c) the needle's and the filler's mean distance in z to the query (a ratio below 1: the needle sits"
echo "nearer). Per seed, over all RePo layers and heads:"
echo
echo "| run | on boundaries [95%] | chance | largest possible | needle / filler distance | filler − needle [95%] | range 1× | 4× | 4× YaRN |"
echo "|---|---|---:|---:|---:|---|---:|---:|---:|"
for m in repo_wm repo; do
    case " $MODES " in *" $m "*) ;; *) continue ;; esac
    for s in $SEEDS; do
        lg=$out/logs/analyze_${m}_s$s.log
        b=$(sed -n '/^boundary alignment/,/^$/p' "$lg" | grep '^  all ')
        q=$(sed -n '/^query distance/,/^$/p' "$lg" | grep '^  all ')
        rng() { grep -E "^  L=[0-9]+ \($1\) +layer" "$lg" | awk '{ for (i = 1; i < NF; i++) if ($i == "range") { t += $(i + 1); n++ } } END { if (n) printf "%.2f", t / n }'; }
        echo "| ${m} s$s | $(echo "$b" | awk '{ print $4, $5, $6 }') | $(echo "$b" | awk '{ print $8 }') |" \
             "$(echo "$b" | awk '{ print $NF }') | $(echo "$q" | awk '{ print $7 }') | $(echo "$q" | awk '{ print $11, $12 }') |" \
             "$(rng 1x) | $(rng 4x) | $(rng '4x, YaRN 4') |"
    done
done
echo
s0=${SEEDS%% *}
echo "Per layer, $PRIMARY seed $s0 (build/analyze's own lines; figures: [ranges]($out_rel/${PRIMARY}_ranges.svg)," \
     "[boundaries]($out_rel/${PRIMARY}_boundaries.svg), [mechanism]($out_rel/${PRIMARY}_mechanism.svg)):"
echo
echo '```'
sed -n '/^boundary alignment/,$p' "$out/logs/analyze_${PRIMARY}_s$s0.log" | grep -v '^wrote '
echo '```'
echo

echo "Learning curves (train.eval_tasks on the primary families, training text as filler, every 250 steps) and"
echo "training loss: [training_stage2.svg](study/training_stage2.svg); RePo's positions over training:"
echo "[positions_training.svg](study/positions_training.svg)."
