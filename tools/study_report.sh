#!/usr/bin/env bash
# tools/study_report.sh: the results section of the study (tools/study.sh), version 3.
#   tools/study_report.sh OUT QUICK SECONDS_STAGE1 SECONDS_STAGE2 SECONDS_EVAL   > OUT/results.md
#   tools/study_report.sh --splice DOC RESULTS   puts RESULTS between DOC's markers
#                                                <!-- results:begin --> and <!-- results:end -->
# Reads the JSON that build/eval and build/analyze wrote (cJSON's layout: one "key": value per line)
# and each run's metrics.jsonl. Every number over seeds is "mean ± h", h half the range (max - min)
# over the seeds; a comparison "holds" only where its sign is the same in every seed.
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
MODES=${MODES:-rope repo nope r2n1 n2r1 repo_wm repo_pdrop}
REPO_MODES=${REPO_MODES:-repo repo_wm repo_pdrop}
SEEDS=${SEEDS:-2 3 4}
NOISY_DISTRACTORS=${NOISY_DISTRACTORS:-7}
WM_STD=${WM_STD:-0.08}
WM_LR_MULT=${WM_LR_MULT:-1.2}
n_seeds=$(echo $SEEDS | wc -w)
FAMILIES="single multikey multivalue multiquery distractor table"

# tasks FILE: "family length accuracy chance key_blind" per task entry of an eval JSON
tasks() {
    awk '/"family":/   { gsub(/[",\t ]/, "", $2); f = $2 }
         /"length":/   { gsub(/[,\t ]/, "", $2); l = $2 }
         /"accuracy":/ { gsub(/[,\t ]/, "", $2); a = $2 }
         /"chance":/   { gsub(/[,\t ]/, "", $2); c = $2 }
         /"key_blind":/ { gsub(/[,\t ]/, "", $2); print f, l, a, c, $2 }' FS=':' "$1"
}
pplnum() { grep -oE '"ppl":[[:space:]]+[0-9.e+-]+' "$1" | tail -n 1 | awk '{ print $2 }'; }
jnum() { sed -n "s/^[[:space:]]*\"$1\":[[:space:]]*\([^,]*\),\{0,1\}$/\1/p" "$2" | head -n 1; }
cfgnum() { sed -n "s/.*\"$1\":[[:space:]]*\([0-9.e+-]*\).*/\1/p" "$2" | head -n 1; }
val_loss() { grep -o '"val_loss": [^,]*' "$1/metrics.jsonl" | tail -n 1 | awk '{ print $2 }'; }
median_ms() { grep -v '"positions"' "$1/metrics.jsonl" | grep -o '"ms": [0-9.]*' | awk '{ print $2 }' | sort -g |
              awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# every metric of every run, read once into V["TRACK|MODE|SEED|METRIC"]: METRIC is acc|F|L (family F at
# length L), yacc|F|L (with YaRN), mean|L and ymean|L (over the six families), noisy|L and ynoisy|L (syn),
# ppl|F and yppl|F (prose, F = 1, 2, 4), loss, ms
declare -A V
# eval_keys PREFIX FILE KIND: "PREFIX|KIND|family|length accuracy" and the family means per length
eval_keys() {
    [ -s "$2" ] || return 0
    tasks "$2" | awk -v p="$1" -v k="$3" '{ print p "|" k "|" $1 "|" $2, $3; s[$2] += $3; n[$2]++ }
        END { m = k == "acc" ? "mean" : k == "yacc" ? "ymean" : ""; if (m != "") for (l in s) print p "|" m "|" l, s[l] / n[l] }'
}
# pos_keys PREFIX RUN: "PREFIX|pos|W|KEY value" for W = 0, S/3, 2S/3, S (S the run's steps): the mean over the
# RePo layers of KEY in the first positions line at or after step W
pos_keys() {
    grep '"positions"' "$2/metrics.jsonl" | awk -v p="$1" -v S="$(cfgnum steps "$2/run_config.json")" '
        BEGIN { nw = split(0 " " int(S / 3) " " int(2 * S / 3) " " S, W, " ")
                nk = split("mean_abs range mean_abs_step moved_per_step hybrid monotonic", K, " ") }
        { match($0, /"step": [0-9]+/); st = substr($0, RSTART + 8, RLENGTH - 8) + 0
          for (w = 1; w <= nw; w++) {
              if (done[w] || st < W[w]) continue
              done[w] = 1
              for (k = 1; k <= nk; k++) {
                  line = $0; t = 0; n = 0
                  while (match(line, "\"" K[k] "\": [-0-9.e+]+")) {
                      t += substr(line, RSTART + length(K[k]) + 4, RLENGTH - length(K[k]) - 4); n++
                      line = substr(line, RSTART + RLENGTH)
                  }
                  if (n) print p "|pos|" W[w] "|" K[k], t / n
              }
          } }'
}
load_metrics() {
    local tr m s e p f
    for tr in syn prose; do for m in $MODES; do for s in $SEEDS; do
        e=$out/eval/${tr}_${m}_s$s p="$tr|$m|$s"
        {
            eval_keys "$p" "$e.json" acc
            eval_keys "$p" "${e}_yarn2.json" yacc
            eval_keys "$p" "${e}_yarn4.json" yacc
            eval_keys "$p" "${e}_noisy.json" noisy
            eval_keys "$p" "${e}_noisy_yarn2.json" ynoisy
            eval_keys "$p" "${e}_noisy_yarn4.json" ynoisy
            if [ $tr = prose ]; then
                echo "$p|ppl|1 $(pplnum "$e.json")"
                for f in 2 4; do
                    echo "$p|ppl|$f $(pplnum "${e}_ppl$f.json")"
                    echo "$p|yppl|$f $(pplnum "${e}_yarn$f.json")"
                done
            fi
            case " $REPO_MODES " in *" $m "*) pos_keys "$p" "$out/$tr/stage2_${m}_s$s" ;; esac
            echo "$p|loss $(val_loss "$out/$tr/stage2_${m}_s$s")"
            echo "$p|ms $(median_ms "$out/$tr/stage2_${m}_s$s")"
        } | sed 's/|noisy|distractor|/|noisy|/; s/|ynoisy|distractor|/|ynoisy|/'
    done; done; done > "$out/metrics.txt"
    local k v
    while read -r k v; do V[$k]=$v; done < "$out/metrics.txt"
}
metric() { echo "${V[$1|$2|$3|$4]:-}"; }
T_of() { cfgnum seq_len "$out/configs/$1_stage1.json"; }
# agg_rows: spec lines on stdin, "LABEL<TAB>TRACK<TAB>MODE<TAB>FORMAT<TAB>METRIC METRIC ...", each into one
# markdown row: the label cells, then each metric as "mean ± h" over the seeds
agg_rows() {
    awk -F'\t' -v seeds="$SEEDS" 'NR == FNR { i = index($0, " "); V[substr($0, 1, i - 1)] = substr($0, i + 1); next }
        { ns = split(seeds, S, " "); n = split($5, M, " "); line = "| " $1 " |"
          for (j = 1; j <= n; j++) {
              t = 0; c = 0
              for (q = 1; q <= ns; q++) {
                  k = $2 "|" $3 "|" S[q] "|" M[j]
                  if (k in V && V[k] != "") { v = V[k] + 0; t += v; if (!c || v < lo) lo = v; if (!c || v > hi) hi = v; c++ }
              }
              line = line " " (c ? sprintf($4 " ± " $4, t / c, (hi - lo) / 2) : "—") " |"
          }
          print line }' "$out/metrics.txt" -
}
# claim_rows: spec lines "TRACK<TAB>LABEL<TAB>METRIC<TAB>SIGN"; per comparison A:B of CMPS the mean over seeds of
# SIGN x (A - B), and ▲ if it is > 0 in every seed, ▼ if < 0 in every seed, · otherwise (SIGN -1 where lower is
# better, so ▲ always means "A better")
claim_rows() {
    awk -F'\t' -v seeds="$SEEDS" -v cmps="$CMPS" '
        NR == FNR { i = index($0, " "); V[substr($0, 1, i - 1)] = substr($0, i + 1); next }
        { ns = split(seeds, S, " "); nc = split(cmps, C, " "); line = "| " $1 " | " $2 " |"
          for (j = 1; j <= nc; j++) {
              split(C[j], ab, ":"); t = 0; c = 0; up = 0; dn = 0
              for (q = 1; q <= ns; q++) {
                  ka = $1 "|" ab[1] "|" S[q] "|" $3; kb = $1 "|" ab[2] "|" S[q] "|" $3
                  if (!(ka in V) || !(kb in V) || V[ka] == "" || V[kb] == "") continue
                  d = $4 * (V[ka] - V[kb]); t += d; c++; if (d > 0) up++; if (d < 0) dn++
              }
              line = line " " (c ? sprintf("%+.3f %s", t / c, up == c ? "▲" : dn == c ? "▼" : "·") : "—") " |"
          }
          print line }' "$out/metrics.txt" -
}

S2s=$out/configs/syn_stage2.json
S2p=$out/configs/prose_stage2.json
Ts=$(T_of syn) Tp=$(T_of prose)
load_metrics
first=${SEEDS%% *}
how="make study"
[ "$quick" = 1 ] && how="tools/study.sh --quick"
[ -s "$out/logs/stage1_from" ] && how="$how --stage1 $(cat "$out/logs/stage1_from")"
echo "Produced by \`$how\` on $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)," \
     "$(nproc) cores ($(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1), lscpu;" \
     "$(free -g | awk '/^Mem:/ { print $2 }') GiB), training with \`train.compute_dtype\` \"$(sed -n 's/.*"compute_dtype":[[:space:]]*"\([a-z0-9]*\)".*/\1/p' "$out/syn/stage2_rope_s$first/run_config.json")\"." \
     "Wall time: the syn stage 1 and its gate ${s1} s (the prose stage 1 beside it), then the rest of the training" \
     "${s2} s (the prose stage 1's end and $(( $(echo $MODES | wc -w) * n_seeds * 2 )) stage-2 runs, two processes at a time), evaluation and analysis ${s3} s;" \
     "in all $(( (s1 + s2 + s3) / 60 )) min $(( (s1 + s2 + s3) % 60 )) s. Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
[ "$quick" = 1 ] && echo && echo "**A quick run: a few steps and items, nothing is learned; the numbers only show the pipeline works.**"
echo
echo "Every number over seeds is **mean ± h**, h half the range over the $n_seeds seeds ($SEEDS: \`run.seed\` of stage 2,"
echo "which draws the data order and the new RePo weights; stage 1 is one run per track; eval items are fixed, seed 7)."
echo
echo "### Budget"
echo
echo "| track | stage | steps | batch × length | tokens | runs |"
echo "|---|---|---:|---|---:|---:|"
for tr in syn prose; do
    c1=$out/$tr/stage1_rope/run_config.json c2=$out/$tr/stage2_rope_s$first/run_config.json
    st1=$(cfgnum steps "$c1") b1=$(cfgnum batch_size "$c1") st2=$(cfgnum steps "$c2") b2=$(cfgnum batch_size "$c2") T=$(T_of $tr)
    echo "| $tr | 1 (rope, from scratch) | $st1 | $b1 × $T | $((st1 * b1 * T)) | 1 |"
    echo "| $tr | 2 (each mode and seed) | $st2 | $b2 × $T | $((st2 * b2 * T)) | $(( $(echo $MODES | wc -w) * n_seeds )) |"
done
echo
echo "Model: $(grep -m 1 '^model: .* V=' "$out/logs/syn_stage1.log" | sed 's/^model: *//') (syn; prose: V=$(cfgnum vocab_size "$out/configs/prose_stage1.json")," \
     "$(sed -n 's/^  parameters \([0-9][0-9]*\) .*/\1/p' "$out/logs/prose_stage1.log" | head -n 1) parameters with RoPE)."
echo "Prose text: $(cat "$out/text/source") (glob, file count, md5 of the concatenation);" \
     "$(grep -o 'train [0-9]* tokens' "$out/logs/tokenize.log" | head -n 1), held out:" \
     "$(grep -o 'val [0-9]* documents, [0-9]* tokens' "$out/logs/tokenize.log" | head -n 1) (tests/fixtures/tokenizer/gpt2.json)."
echo
echo "Modes: \`rope\`, \`repo\` (RoPE in layer 0, RePo above, the released init), \`nope\`, \`r2n1\`, \`n2r1\` as in the"
echo "paper; \`repo_wm\` (width-matched: the gate, content and final maps drawn with std $WM_STD, \`optim.lr_mult.repo\` $WM_LR_MULT)"
echo "and \`repo_pdrop\` (\`model.positions.repo_pdrop\` from 1 to 0 over half of stage 2: RePo starts from RoPE's positions)."
echo
echo "### Gates (single needle at the training length, stage 1)"
echo
for tr in syn prose; do
    g=$out/eval/${tr}_stage1_gate.json
    echo "- $tr, T = $(T_of $tr): exact match **$(jnum accuracy "$g")** on $(jnum items "$g") held-out items" \
         "(chance $(jnum chance "$g"))$([ $tr = syn ] && echo "; required ≥ 0.90 before stage 2 starts" || echo "; reported, not required")."
done
echo
echo "### Which comparisons hold in every seed"
echo
echo "Each cell: the mean over seeds of (mode − reference), signed so that + is better for the mode (for losses and"
echo "perplexities, the reference minus the mode); **▲** the mode is better in every seed, **▼** worse in every seed,"
echo "**·** the seeds disagree (or tie): only ▲ and ▼ are findings."
echo
CMPS="repo:rope repo_wm:rope repo_pdrop:rope nope:rope r2n1:rope n2r1:rope repo_wm:repo repo_pdrop:repo"
printf '| track | metric |'; for c in $CMPS; do printf ' %s − %s |' "${c%%:*}" "${c#*:}"; done; echo
printf '|---|---|'; for c in $CMPS; do printf -- '---:|'; done; echo
for tr in syn prose; do
    T=$(T_of $tr)
    printf '%s\t%s\t%s\t%s\n' $tr "val loss" loss -1 $tr "retrieval 1×" "mean|$T" 1 $tr "retrieval 2×" "mean|$((2 * T))" 1 \
        $tr "retrieval 4×" "mean|$((4 * T))" 1 $tr "retrieval 2× YaRN" "ymean|$((2 * T))" 1 \
        $tr "retrieval 4× YaRN" "ymean|$((4 * T))" 1
    if [ $tr = syn ]; then
        printf '%s\t%s\t%s\t%s\n' $tr "noisy 1×" "noisy|$T" 1 $tr "noisy 2× YaRN" "ynoisy|$((2 * T))" 1
    else
        printf '%s\t%s\t%s\t%s\n' $tr "ppl 1×" "ppl|1" -1 $tr "ppl 2×" "ppl|2" -1 $tr "ppl 4×" "ppl|4" -1 \
            $tr "ppl 2× YaRN" "yppl|2" -1 $tr "ppl 4× YaRN" "yppl|4" -1
    fi
done | claim_rows > "$out/claims.md"
cat "$out/claims.md"
echo
echo "\"retrieval\" is the mean exact match over the six families; \"noisy\" the needle among $NOISY_DISTRACTORS near-duplicates."
echo "Where RePo (any of the three) is better than RoPE in every seed:"
echo
found=0
while IFS= read -r line; do
    tr=$(echo "$line" | cut -d'|' -f2 | tr -d ' ') me=$(echo "$line" | cut -d'|' -f3 | sed 's/^ //; s/ $//')
    i=0
    for c in $CMPS; do
        i=$((i + 1))
        case $c in repo*:rope) ;; *) continue ;; esac
        cell=$(echo "$line" | cut -d'|' -f$((i + 3)))
        case $cell in *▲*) echo "- $tr, $me: ${c%%:*} (${cell# })"; found=1 ;; esac
    done
done < "$out/claims.md"
[ $found = 1 ] || echo "- nowhere."
echo
# the paper's ordering for the width-matched variant: RePo >= RoPE on retrieval in noisy or longer contexts
col=0 i=0
for c in $CMPS; do i=$((i + 1)); [ "$c" = repo_wm:rope ] && col=$((i + 3)); done
wm() { grep -E "^\| [a-z]+ \| (noisy|retrieval [24]×)" "$out/claims.md" | awk -F'|' -v c=$col -v want="$1" '
    { t = $2 " " $3; gsub(/^ +| +$/, "", t); gsub(/  +/, " ", t); if (index($c, want)) { printf "%s%s", n++ ? "; " : "", t } }
    END { if (!n) printf "none" }'; }
echo "**The width-matched small model and the paper's ordering** (repo_wm against rope on the noisy setting and at"
echo "2× and 4× the training length, with and without YaRN): better in every seed on: $(wm ▲); worse in every seed on:"
echo "$(wm ▼); the seeds disagree on: $(wm ·)."
echo
echo "### Per mode (mean ± h over the seeds)"
echo
for tr in syn prose; do
    T=$(T_of $tr)
    echo "$tr, retrieval: mean exact match over the six families at $T, $((2 * T)), $((4 * T)) tokens, and with YaRN (factor 2, 4; original $T)$([ $tr = prose ] && echo "; the filler is held-out text")."
    echo
    echo "| mode | val loss | 1× | 2× | 4× | 2× YaRN | 4× YaRN | ms/step |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    for m in $MODES; do
        printf '%s\t%s\t%s\t%s\t%s\n' $m $tr $m %.4f loss
        printf '%s\t%s\t%s\t%s\t%s\n' $m $tr $m %.3f "mean|$T mean|$((2 * T)) mean|$((4 * T)) ymean|$((2 * T)) ymean|$((4 * T))"
        printf '%s\t%s\t%s\t%s\t%s\n' $m $tr $m %.1f ms
    done | agg_rows | awk 'NR % 3 == 1 { a = $0 } NR % 3 == 2 { sub(/^\| [^|]* \|/, ""); b = $0 }
                           NR % 3 == 0 { sub(/^\| [^|]* \|/, ""); print a b $0 }'
    echo
done
echo "Per family (chance and key-blind as in docs/eval.md):"
echo
echo "| track | family | mode | 1× | 2× | 4× | 2× YaRN | 4× YaRN | key-blind |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
for tr in syn prose; do
    T=$(T_of $tr)
    for f in $FAMILIES; do
        kb=$(tasks "$out/eval/${tr}_rope_s$first.json" | awk -v f=$f '$1 == f { printf "%.3f", $5; exit }')
        for m in $MODES; do
            printf '%s\t%s\t%s\t%s\t%s\n' "$tr | $f | $m" $tr $m %.2f \
                "acc|$f|$T acc|$f|$((2 * T)) acc|$f|$((4 * T)) yacc|$f|$((2 * T)) yacc|$f|$((4 * T))"
        done | agg_rows | sed "s/\$/ $kb |/"
    done
done
echo
echo "Noisy context (syn): the \`distractor\` family with $NOISY_DISTRACTORS near-duplicate needles (training items have 3)."
echo
echo "| mode | 1× | 2× | 4× | 2× YaRN | 4× YaRN |"
echo "|---|---:|---:|---:|---:|---:|"
for m in $MODES; do
    printf '%s\t%s\t%s\t%s\t%s\n' $m syn $m %.3f "noisy|$Ts noisy|$((2 * Ts)) noisy|$((4 * Ts)) ynoisy|$((2 * Ts)) ynoisy|$((4 * Ts))"
done | agg_rows
echo
echo "Perplexity of the held-out text (prose; every window of $Tp, $((2 * Tp)), $((4 * Tp)) tokens up to" \
     "$(jnum windows "$out/eval/prose_rope_s$first.json") windows; YaRN factor 2, 4):"
echo
echo "| mode | 1× | 2× | 4× | 2× YaRN | 4× YaRN |"
echo "|---|---:|---:|---:|---:|---:|"
for m in $MODES; do
    printf '%s\t%s\t%s\t%s\t%s\n' $m prose $m %.2f "ppl|1 ppl|2 ppl|4 yppl|2 yppl|4"
done | agg_rows
echo
echo "### RePo's positions over training (train.log_positions, mean over the RePo layers and the seeds)"
echo
echo "On the first validation batch of each run. mean |z|: the positions' size; mean |step|: between neighbouring"
echo "tokens (RoPE's is 1); moved / step: mean |z − z'| per optimizer step since the previous line; hybrid: the share"
echo "of 16-token segments neither near-constant nor monotonic (build/analyze's classes)."
echo
echo "| track | mode | step | mean \\|z\\| | range | mean \\|step\\| | moved / step | hybrid | monotonic |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for tr in syn prose; do
    S=$(cfgnum steps "$out/$tr/stage2_rope_s$first/run_config.json")
    for m in $REPO_MODES; do
        for st in 0 $((S / 3)) $((2 * S / 3)) $S; do
            for k in mean_abs:%.4f range:%.3f mean_abs_step:%.4f moved_per_step:%.2e hybrid:%.3f monotonic:%.3f; do
                printf '%s\t%s\t%s\t%s\t%s\n' "$tr | $m | $st" $tr $m "${k#*:}" "pos|$st|${k%%:*}"
            done | agg_rows | tr '\n' ' ' | sed 's/ | | [^|]* | [^|]* | [^|]* |/ |/g; s/ *$//'
            echo
        done
    done
done
echo
echo "### Attention mass of the query rows (syn, build/analyze, single needle, $(jnum items "$out/analysis/syn_rope_s$first/analysis.json") items at length $Ts)"
echo
echo "Layers floor(L/3) .. L−1 for every mode, mean over heads and query rows; segment shares for RePo layers only."
echo
# the compare tables of the seeds, cell by cell: numbers as mean ± h, text from the first seed
for s in $SEEDS; do grep '^|' "$out/analysis/compare_s$s.md" | sed 's/ x[0-9]* L=/ L=/'; echo "#"; done | awk -F'|' '
    BEGIN { k = 0 }
    /^#/ { k++; r = 0; next }
    { r++; nf[r] = NF; for (i = 2; i < NF; i++) { c = $i; gsub(/^ +| +$/, "", c); cell[k, r, i] = c }; rows = r }
    END {
        for (r = 1; r <= rows; r++) {
            line = "|"
            for (i = 2; i < nf[r]; i++) {
                t = cell[0, r, i]; num = t ~ /^-?[0-9.]+$/
                if (num && r > 2) {
                    s = 0; lo = hi = t + 0
                    for (j = 0; j <= k - 1; j++) { v = cell[j, r, i] + 0; s += v; if (v < lo) lo = v; if (v > hi) hi = v }
                    t = sprintf("%.3f ± %.3f", s / k, (hi - lo) / 2)
                }
                line = line " " t " |"
            }
            print line
        }
    }'
echo
echo "Figures (seed $first): [positions over training, syn](study/syn_positions_training.svg) and"
echo "[prose](study/prose_positions_training.svg) (build/plot --positions), the positions of one single-needle item for"
echo "$(for m in $REPO_MODES; do printf '[%s](study/syn_%s_positions.svg) ' $m $m; done | sed 's/ $//; s/) \[/), [/g'),"
echo "[attention mass per mode](study/compare_compare_attention.svg), [segment shares](study/compare_compare_segments.svg),"
echo "training curves of stage 1 ([syn](study/syn_training_stage1.svg), [prose](study/prose_training_stage1.svg)) and of"
echo "stage 2, every mode overlaid ([syn](study/syn_training_stage2.svg), [prose](study/prose_training_stage2.svg))."
echo
echo "### Commands"
echo
echo '```'
echo "build/tokenize --tokenizer tests/fixtures/tokenizer/gpt2.json --out $out/text/prose --val 0.1 /usr/share/doc/*/copyright"
echo "build/train configs/study/stage1.json;  build/train configs/study/prose_stage1.json   # side by side"
echo "for s in $SEEDS; for track in syn prose; for m in $MODES:"
echo "  build/train \$STAGE2 --set run.seed=\$s --set model.init_from=$out/\$track/stage1_rope --set model.positions.mode=\$m"
echo "      # repo_wm: mode repo, repo_{gate,content,final}_init_std $WM_STD, 'optim.lr_mult={\"repo\":$WM_LR_MULT}'"
echo "      # repo_pdrop: mode repo, 'model.positions.repo_pdrop={\"init\":1,\"anneal_steps\":<half of stage 2>}'"
echo "  build/eval RUN --tasks all --lengths T,2T,4T --items $(jnum items "$out/eval/syn_rope_s$first.json") --seed 7   # + --yarn-factor 2 at 2T, 4 at 4T"
echo "  syn:   the same with --tasks distractor --synthetic '<stage 1 settings, n_distractors $NOISY_DISTRACTORS>';"
echo "         build/analyze RUN --attention [--positions] --items N --seed 7"
echo "  prose: --synthetic '<stage 1 settings, filler_file the held-out text>';"
echo "         build/eval RUN --ppl $out/text/prose_val_000000.bin --seq-len T|2T|4T [--yarn-factor 2|4] --max-windows N"
echo '```'
echo
for c in stage1 stage2 prose_stage1 prose_stage2; do
    echo "configs/study/$c.json:"
    echo
    echo '```json'
    cat "configs/study/$c.json"
    echo '```'
    echo
done
