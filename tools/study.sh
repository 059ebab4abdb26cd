#!/usr/bin/env bash
# tools/study.sh (`make study`, `make study-quick`): the small-scale test of the RePo paper's claim,
# version 4, run and judged by the decision rule of docs/study.md ("Version 4: the decision rule"),
# which was committed before this pipeline's first run.
#
#   text      the Debian copyright files (/usr/share/doc/*/copyright) tokenized with the fixture BPE
#             tokenizer (tests/fixtures/tokenizer/gpt2.json), a tenth held out: the filler of the
#             retrieval items, the training text, and (held out) the filler of every evaluation.
#   stage 1   configs/study/prose_stage1.json: RoPE from scratch, T = 128 (two threads, alone).
#   calibrate from the stage-1 checkpoint or rope alone, never from a comparison of modes:
#             band   each family (and the noisy setting: the distractor with NOISY near-duplicates) on
#                    CAL_ITEMS items (eval seed 11); those scoring within [0.30, 0.90] make the primary
#                    metric M;
#             lr     rope for PILOT_STEPS steps with stage 2's settings at each of LRS (run seed 1): the
#                    lower held-out loss wins;
#             width  repo's three maps drawn with each std of WM_STDS on the stage-1 checkpoint: mean |z|
#                    at step 0 and its movement per step; the std nearest (in log) the 1B's 2.86 within
#                    0.5-2x is repo_wm's, else repo is the primary RePo mode.
#   stage 2   configs/study/prose_stage2.json (2500 steps, linear to 0, z-loss 1e-4, the primary families
#             in the loop every 250 steps) for each mode of MODES and seed of SEEDS, two runs at a time,
#             one thread each.
#   eval      each run: every family at T on EVAL_ITEMS items (eval seed 7) and the noisy setting, on
#             held-out text; at 2x and 4x T with YaRN (factor 2, 4) and without on SECONDARY_ITEMS;
#             held-out perplexity at 1x, 2x, 4x T. Per-item scores in OUT/eval/*.json.
#   analyze   the RePo runs (build/analyze): z's range at 1x, 2x, 4x T with and without YaRN, the share of large
#             |dz| on segment boundaries, the needle's and the filler's distance to the query, per layer and head
#             (AN_ITEMS single-needle items on held-out text).
#   compare   build/eval --compare over the seeds (two-level bootstrap) with --pool M: nope against rope
#             (the adaptation check), the primary RePo mode against rope (the claim) and against r1n3
#             (attribution), r2n1 against rope and repo against repo_wm (context).
#   report    OUT/results.md (tools/study_report.sh): the calibration, the budget, the verdict as the
#             rule says, every comparison with its interval, per-mode tables; a full run also puts it
#             into docs/study.md between <!-- results:begin --> and <!-- results:end -->.
#
# usage: tools/study.sh [--quick] [--out DIR]
#   --quick   the same pipeline in a minute or two (few steps, few items), for `make test`: nothing is
#             learned, the band is not enforced, and docs/ is never touched.
#   --out DIR where the runs and results go (default runs/study, --quick: runs/study-quick)
#   --keep-stage1  keep OUT's stage 1 when a run of the same configs/study/prose_stage1.json finished it
#             (its log ends with "done:"; after a later step failed, say), instead of training it again
# Environment: STUDY_MODES (default "rope nope r1n3 r2n1" and the primary RePo mode: the rule's first cut, the
# other RePo mode, keeps the run near an hour on 2 cores; STUDY_MODES="rope nope r1n3 r2n1 repo_wm repo" runs all).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/study_lib.sh
. tools/study_lib.sh

quick=0
out=
keep1=0
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1 ;;
        --out) out=${2:?--out needs a directory}; shift ;;
        --keep-stage1) keep1=1 ;;
        -h|--help) sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "tools/study.sh: unknown option '$1' (--quick, --out DIR, --keep-stage1)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$out" ] || out=$([ $quick = 1 ] && echo runs/study-quick || echo runs/study)

MODES=${STUDY_MODES:-rope nope r1n3 r2n1 repo_wm repo}   # by default the RePo mode that is not primary is cut (below)
for m in rope nope r1n3; do
    case " $MODES " in *" $m "*) ;; *) echo "tools/study.sh: STUDY_MODES must hold rope, nope and r1n3" >&2; exit 2 ;; esac
done
SEEDS="2 3 4"
FAMILIES="single multikey multivalue multiquery distractor table"
NOISY=7                       # near-duplicate needles of the noisy setting
TOKENIZER=tests/fixtures/tokenizer/gpt2.json
SEED_EVAL=7 SEED_CAL=11
BAND_LO=0.30 BAND_HI=0.90
LRS="1e-3 1.19e-3"            # version 3's; the release's carried to d_model 128 by the width rule
WM_STDS="0.08 0.1 0.127 0.16 0.2 0.25 0.32"   # the width rule's 0.08, up to 4x
WM_LR_MULT_LR=1.19e-3         # repo_wm's RePo step: the width rule's 7.4487e-5 x 2048/128
Z_TARGET=2.86                 # mean |z| at step 0 of OLMo-2 1B with the released init (docs/study.md)
if [ $quick = 1 ]; then
    q1=(--set train.steps=40 --set optim.warmup_steps=5 --set train.eval_every=40 --set train.eval_batches=1
        --set train.batch_size=4 --set train.log_every=10)
    q2=(--set train.steps=6 --set optim.warmup_steps=2 --set train.eval_every=3 --set train.eval_batches=1
        --set train.batch_size=4 --set train.log_every=2 --set train.log_positions=2
        --set 'train.eval_tasks={"families":["single"],"items":2,"seed":5}')
    PILOT_STEPS=4 CAL_ITEMS=4 EVAL_ITEMS=4 SECONDARY_ITEMS=2 PPL_WINDOWS=2 WIDTH_STEPS=2 AN_ITEMS=2
else
    q1=(); q2=()
    PILOT_STEPS=500 CAL_ITEMS=200 EVAL_ITEMS=250 SECONDARY_ITEMS=100 PPL_WINDOWS=100 WIDTH_STEPS=4 AN_ITEMS=50
fi
# BF16 products (train.compute_dtype, docs/design.md) where the CPU has them; evaluation stays FP32
COMPUTE=f32
[ -x build/bench/bench_step ] && build/bench/bench_step --cpu 2>/dev/null | grep -q '^bf16 products: bf16 operands' &&
    COMPUTE=bf16
q1+=(--set train.compute_dtype="\"$COMPUTE\"")
q2+=(--set train.compute_dtype="\"$COMPUTE\"")

s1_log=
if [ $keep1 = 1 ] && [ -f "$out/logs/stage1.log" ] && grep -q '^done:' "$out/logs/stage1.log" &&
   cmp -s "configs/study/prose_stage1.json" "$out/configs/stage1.json.src" 2>/dev/null; then
    s1_log=$(mktemp)
    cp "$out/logs/stage1.log" "$s1_log"
fi
rm -rf "$out"/logs "$out"/eval "$out"/cal "$out"/compare
mkdir -p "$out"/logs "$out"/configs "$out"/text "$out"/eval "$out"/cal "$out"/compare "$out"/analysis
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die_log() { tail -n 20 "$1" >&2; echo "tools/study.sh: $2 (log: $1)" >&2; exit 1; }
slot() { while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done; }   # at most two jobs
t_start=$(date +%s)

# ---- the text, one document per file, a tenth held out by tokenize's hash of the document index
text_files=$(ls /usr/share/doc/*/copyright 2>/dev/null | wc -l)
if [ "$text_files" -ge 200 ]; then TEXT_SRC="/usr/share/doc/*/copyright"; else TEXT_SRC="/usr/share/common-licenses/*"; fi
rm -f "$out"/text/prose_*
# shellcheck disable=SC2086  # TEXT_SRC is a glob
build/tokenize --tokenizer "$TOKENIZER" --out "$out/text/prose" --val 0.1 --threads 1 $TEXT_SRC \
    > "$out/logs/tokenize.log" 2>&1 || die_log "$out/logs/tokenize.log" "tokenize failed"
# shellcheck disable=SC2086
echo "$TEXT_SRC $(ls $TEXT_SRC | wc -l) files $(cat $TEXT_SRC | md5sum | cut -c1-12)" > "$out/text/source"
PROSE_TRAIN=$out/text/prose_train_000000.bin
PROSE_VAL=$out/text/prose_val_000000.bin
for c in stage1 stage2; do sed "s|runs/study/|$out/|g" "configs/study/prose_$c.json" > "$out/configs/$c.json"; done
cp configs/study/prose_stage1.json "$out/configs/stage1.json.src"   # what --keep-stage1 compares
# the generator settings of stage 1, the filler swapped for the held-out text; the noisy setting beside them
VAL_SYN=$(tr -d '\n' < "$out/configs/stage1.json" | sed 's/.*"synthetic": *\({[^}]*{[^}]*}}\).*/\1/' |
          sed "s|$PROSE_TRAIN|$PROSE_VAL|")
NOISY_SYN=$(echo "$VAL_SYN" | sed 's/"answer_weight": *[0-9.]*,//; s/"weights": {[^}]*}/"weights": {"distractor": 1}/' |
            sed "s/}\$/, \"n_distractors\": $NOISY}/")
T=$(sed -n 's/.*"seq_len": *\([0-9]*\).*/\1/p' "$out/configs/stage1.json")
STEPS2=$([ $quick = 1 ] && echo 6 || sed -n 's/.*"steps": *\([0-9]*\).*/\1/p' "$out/configs/stage2.json")

# retrieval RUN OUT.json LENGTHS [build/eval options]: the six families on held-out text, per-item scores
retrieval() {
    local run=$1 json=$2 lengths=$3
    shift 3
    build/eval "$run" --tasks all --lengths "$lengths" --synthetic "$VAL_SYN" --threads 1 --json "$json" "$@"
}
# noisy RUN OUT.json LENGTHS [options]: the distractor among NOISY near-duplicates, as family "noisy"
noisy() {
    local run=$1 json=$2 lengths=$3
    shift 3
    build/eval "$run" --tasks distractor --lengths "$lengths" --synthetic "$NOISY_SYN" --threads 1 --json "$json" "$@" &&
        sed -i 's/"family":[[:space:]]*"distractor"/"family": "noisy"/' "$json"
}

# ---- stage 1
if [ -n "$s1_log" ]; then
    mv "$s1_log" "$out/logs/stage1.log"
    log "stage 1: kept from the finished run in $out/stage1_rope (--keep-stage1)"
else
    rm -rf "$out/stage1_rope"
    log "stage 1: RoPE from scratch, T = $T"
    build/train "$out/configs/stage1.json" --set run.out_dir="\"$out/stage1_rope\"" --set run.threads=2 "${q1[@]}" \
        > "$out/logs/stage1.log" 2>&1 || die_log "$out/logs/stage1.log" "stage 1 failed"
fi
t_stage1=$(date +%s)

# ---- calibration: band, lr, width (two jobs at a time)
s1=$out/stage1_rope
log "calibration: the band ($CAL_ITEMS items per family, eval seed $SEED_CAL), the lr pilot, repo_wm's width"
( retrieval "$s1" "$out/cal/band.json" "$T" --items $CAL_ITEMS --seed $SEED_CAL &&
  noisy "$s1" "$out/cal/band_noisy.json" "$T" --items $CAL_ITEMS --seed $SEED_CAL ) > "$out/logs/cal_band.log" 2>&1 ||
    die_log "$out/logs/cal_band.log" "the band's eval failed"
for lr in $LRS; do
    slot
    rm -rf "$out/cal/pilot_lr$lr"
    ( build/train "$out/configs/stage2.json" --set run.out_dir="\"$out/cal/pilot_lr$lr\"" --set run.seed=1 \
          --set model.init_from="\"$s1\"" --set optim.lr=$lr --set train.log_positions=0 "${q2[@]}" \
          --set train.steps=$PILOT_STEPS --set train.eval_every=$PILOT_STEPS --set train.eval_tasks=null \
          > "$out/logs/cal_pilot_lr$lr.log" 2>&1 || die_log "$out/logs/cal_pilot_lr$lr.log" "the lr pilot failed" ) &
done
# width STD: repo from the stage-1 checkpoint, its three maps drawn with STD, positions logged every step
width_run() {
    build/train "$out/configs/stage2.json" --set run.out_dir="\"$out/cal/width_$1\"" --set run.seed=1 \
        --set model.init_from="\"$s1\"" --set model.positions.mode='"repo"' \
        --set model.positions.repo_gate_init_std=$1 --set model.positions.repo_content_init_std=$1 \
        --set model.positions.repo_final_init_std=$1 "--set" "optim.lr_mult={\"repo\":$2}" "${q2[@]}" \
        --set train.steps=$WIDTH_STEPS --set optim.warmup_steps=0 --set train.log_positions=1 --set train.eval_every=0 \
        --set train.eval_tasks=null \
        --set train.log_every=1 > "$out/logs/cal_width_$1.log" 2>&1 || die_log "$out/logs/cal_width_$1.log" "width run $1 failed"
}
# the lr of stage 2 is decided before the width runs use it
wait
val_loss() { grep -o '"val_loss": [0-9.e+-]*' "$1/metrics.jsonl" | tail -n 1 | cut -d' ' -f2; }
LR='' best=''
for lr in $LRS; do
    v=$(val_loss "$out/cal/pilot_lr$lr")
    echo "$lr $v" >> "$out/cal/lr.txt"
    if [ -z "$best" ] || awk -v a="$v" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$v LR=$lr; fi
done
WM_LR_MULT=$(awk -v a=$WM_LR_MULT_LR -v l="$LR" 'BEGIN { printf "%.6g", a / l }')
for std in $WM_STDS; do
    slot
    width_run "$std" "$WM_LR_MULT" &
done
wait
# pos RUN STEP KEY: the mean over RePo layers of KEY in the positions line of STEP
pos() {
    grep "^{\"step\": $2, \"positions\"" "$1/metrics.jsonl" | grep -oE "\"$3\": [-0-9.e+]+" |
        awk '{ s += $2; n++ } END { if (n) printf "%.6g", s / n }'
}
WM_STD='' best=''
: > "$out/cal/width.txt"
for std in $WM_STDS; do
    r=$out/cal/width_$std
    z0=$(pos "$r" 0 mean_abs)
    mv=$(for s in $(seq 1 $WIDTH_STEPS); do pos "$r" "$s" moved_per_step; echo; done | awk '{ t += $1 } END { printf "%.6g", t / NR }')
    echo "$std $z0 $mv" >> "$out/cal/width.txt"
    d=$(awk -v z="$z0" -v t=$Z_TARGET 'BEGIN { x = log(z / t); printf "%.6g", x < 0 ? -x : x }')
    if awk -v z="$z0" -v t=$Z_TARGET 'BEGIN { exit !(z >= 0.5 * t && z <= 2 * t) }' &&
       { [ -z "$best" ] || awk -v a="$d" -v b="$best" 'BEGIN { exit !(a < b) }'; }; then best=$d WM_STD=$std; fi
done
PRIMARY=repo_wm
if [ -z "$WM_STD" ]; then PRIMARY=repo; WM_STD=$(echo "$WM_STDS" | awk '{ print $NF }'); fi
case " $MODES " in *" $PRIMARY "*) ;; *) echo "tools/study.sh: the primary RePo mode $PRIMARY is not in STUDY_MODES" >&2; exit 2 ;; esac
# the rule's first cut, to fit about an hour on 2 cores: the RePo mode that is not primary (STUDY_MODES keeps it)
if [ -z "${STUDY_MODES:-}" ] && [ $quick = 0 ]; then
    MODES=$(echo "$MODES" | tr ' ' '\n' | grep -vx "$([ $PRIMARY = repo_wm ] && echo repo || echo repo_wm)" | tr '\n' ' ' | sed 's/ $//')
fi
# the band: the families (and the noisy setting) where stage 1 scores within [BAND_LO, BAND_HI]
POOL='' BAND_FAMS=''
: > "$out/cal/band.txt"
for f in $FAMILIES noisy; do
    file=$out/cal/band.json
    [ $f = noisy ] && file=$out/cal/band_noisy.json
    a=$(accuracy "$file" $f "$T")
    echo "$f $a" >> "$out/cal/band.txt"
    if [ $quick = 1 ] || awk -v a="$a" -v l=$BAND_LO -v h=$BAND_HI 'BEGIN { exit !(a >= l && a <= h) }'; then
        POOL=${POOL:+$POOL,}$f@$T BAND_FAMS="$BAND_FAMS $f"
    fi
done
[ -n "$POOL" ] || { echo "tools/study.sh: no family of the stage-1 checkpoint scores within [$BAND_LO, $BAND_HI]" \
                        "($out/cal/band.txt): the rule stops the study here" >&2; exit 1; }
log "calibration: lr $LR (pilot val loss: $(tr '\n' ' ' < "$out/cal/lr.txt")); M = $POOL; $PRIMARY primary" \
    "(repo_wm std $WM_STD, lr_mult $WM_LR_MULT)"
t_cal=$(date +%s)

has() { case " $MODES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# ---- stage 2: every mode and seed, two runs at a time
mode_args() {
    case $1 in
        r1n3) echo '--set model.positions.layers=["rope","nope","nope","nope"]' ;;
        repo_wm) echo "--set model.positions.mode=\"repo\" --set model.positions.repo_gate_init_std=$WM_STD" \
                      "--set model.positions.repo_content_init_std=$WM_STD --set model.positions.repo_final_init_std=$WM_STD" \
                      "--set optim.lr_mult={\"repo\":$WM_LR_MULT}" ;;
        *) echo "--set model.positions.mode=\"$1\"" ;;
    esac
}
in_loop=$(for f in $BAND_FAMS; do if [ $f != noisy ]; then printf '"%s",' "$f"; fi; done | sed 's/,$//')
[ -n "$in_loop" ] || in_loop='"single"'
loop_items=$([ $quick = 1 ] && echo 2 || echo 100)
for s in $SEEDS; do
    for m in $MODES; do
        slot
        run=$out/stage2_${m}_s$s
        rm -rf "$run"
        # shellcheck disable=SC2046  # mode_args gives whole --set words without spaces inside
        ( build/train "$out/configs/stage2.json" --set run.out_dir="\"$run\"" --set run.seed=$s \
              --set model.init_from="\"$s1\"" --set optim.lr=$LR $(mode_args $m) "${q2[@]}" \
              --set "train.eval_tasks={\"families\":[$in_loop],\"items\":$loop_items,\"seed\":5}" \
              > "$out/logs/stage2_${m}_s$s.log" 2>&1 || die_log "$out/logs/stage2_${m}_s$s.log" "stage 2 failed" ) &
    done
done
wait
for s in $SEEDS; do for m in $MODES; do
    grep -q '^done:' "$out/logs/stage2_${m}_s$s.log" || die_log "$out/logs/stage2_${m}_s$s.log" "stage 2 did not finish"
done; done
t_stage2=$(date +%s)

# ---- eval, two runs at a time: T on EVAL_ITEMS items (the primary metric), 2T and 4T with and without YaRN on
# SECONDARY_ITEMS (the secondary metrics), perplexity
evals() { # RUN BASE
    local run=$1 b=$2 L2=$((2 * T)) L4=$((4 * T)) o=(--items "$EVAL_ITEMS" --seed "$SEED_EVAL")
    local o2=(--items "$SECONDARY_ITEMS" --seed "$SEED_EVAL")
    retrieval "$run" "$b.json" "$T" "${o[@]}" --ppl "$PROSE_VAL" --max-windows $PPL_WINDOWS --seq-len "$T" &&
    noisy "$run" "${b}_noisy.json" "$T" "${o[@]}" &&
    retrieval "$run" "${b}_long.json" "$L2,$L4" "${o2[@]}" &&
    retrieval "$run" "${b}_yarn2.json" "$L2" "${o2[@]}" --yarn-factor 2 &&
    retrieval "$run" "${b}_yarn4.json" "$L4" "${o2[@]}" --yarn-factor 4 &&
    for f in 2 4; do
        build/eval "$run" --ppl "$PROSE_VAL" --max-windows $PPL_WINDOWS --threads 1 --seq-len $((f * T)) \
            --json "${b}_ppl$f.json" || return 1
    done
}
for s in $SEEDS; do
    for m in $MODES; do
        slot
        lg=$out/logs/eval_${m}_s$s.log
        ( evals "$out/stage2_${m}_s$s" "$out/eval/${m}_s$s" > "$lg" 2>&1 || die_log "$lg" "eval ($m, seed $s) failed" ) &
    done
done
wait
for s in $SEEDS; do for m in $MODES; do
    [ -s "$out/eval/${m}_s${s}_ppl4.json" ] || { echo "missing $out/eval/${m}_s${s}_ppl4.json" >&2; exit 1; }
done; done

# ---- the paper's analyses of the RePo runs (build/analyze, docs/analyze.md): z's range at 1x, 2x, 4x T with
# and without YaRN, the boundary alignment of large |dz|, the needle's and the filler's distance to the query;
# single-needle items on held-out text
for s in $SEEDS; do
    for m in repo_wm repo; do
        has "$m" || continue
        slot
        lg=$out/logs/analyze_${m}_s$s.log
        ( build/analyze "$out/stage2_${m}_s$s" --positions --items "$AN_ITEMS" --seed "$SEED_EVAL" --synthetic "$VAL_SYN" \
              --ranges 1,2,4 --ranges-yarn --threads 1 --label "${m}_s$s" --out "$out/analysis/${m}_s$s" > "$lg" 2>&1 ||
              die_log "$lg" "analyze ($m, seed $s) failed" ) &
    done
done
wait

# ---- the comparisons of the rule, over the seeds, with M pooled
files() { # MODE [SUFFIX]: the seeds' eval files, comma-separated (the main file joined with the noisy one)
    local s l=
    for s in $SEEDS; do
        if [ -z "${2:-}" ]; then l=${l:+$l,}$out/eval/${1}_s$s.json+$out/eval/${1}_s${s}_noisy.json
        else l=${l:+$l,}$out/eval/${1}_s${s}_$2.json; fi
    done
    echo "$l"
}
compare() { # NAME A B
    build/eval --compare "$(files "$2")" "$(files "$3")" --pool "$POOL" --json "$out/compare/$1.json" \
        > "$out/compare/$1.txt" 2>&1 || die_log "$out/compare/$1.txt" "compare $1 failed"
    for y in yarn2 yarn4; do
        build/eval --compare "$(files "$2" $y)" "$(files "$3" $y)" --json "$out/compare/${1}_$y.json" \
            > "$out/compare/${1}_$y.txt" 2>&1 || die_log "$out/compare/${1}_$y.txt" "compare $1 ($y) failed"
    done
}
compare adaptation rope nope
compare claim rope "$PRIMARY"
compare attribution r1n3 "$PRIMARY"
if has r2n1; then compare r2n1 rope r2n1; fi
if has repo && has repo_wm; then compare repo_vs_wm repo_wm repo; fi
s0=${SEEDS%% *}
# shellcheck disable=SC2046  # one run directory per word
{
    build/plot "$out/stage1_rope" --out "$out/analysis/training_stage1.svg" &&
    build/plot $(for m in $MODES; do echo "$out/stage2_${m}_s$s0"; done) --out "$out/analysis/training_stage2.svg" &&
    build/plot --positions $(for m in repo repo_wm; do case " $MODES " in *" $m "*) echo "$out/stage2_${m}_s$s0" ;; esac; done) \
        --out "$out/analysis/positions_training.svg"
} > "$out/logs/plot.log" 2>&1 || die_log "$out/logs/plot.log" "build/plot failed"
t_end=$(date +%s)

# ---- report
MODES="$MODES" SEEDS="$SEEDS" T=$T POOL="$POOL" PRIMARY=$PRIMARY LR=$LR WM_STD=$WM_STD WM_LR_MULT=$WM_LR_MULT \
    Z_TARGET=$Z_TARGET BAND_LO=$BAND_LO BAND_HI=$BAND_HI NOISY=$NOISY STEPS2=$STEPS2 COMPUTE=$COMPUTE \
    EVAL_ITEMS=$EVAL_ITEMS SECONDARY_ITEMS=$SECONDARY_ITEMS CAL_ITEMS=$CAL_ITEMS AN_ITEMS=$AN_ITEMS \
    tools/study_report.sh "$out" "$quick" $((t_stage1 - t_start)) $((t_cal - t_stage1)) $((t_stage2 - t_cal)) \
    $((t_end - t_stage2)) > "$out/results.md" || { echo "tools/study_report.sh failed on $out" >&2; exit 1; }
log "results: $out/results.md ($((t_end - t_start)) s in all)"
if [ $quick = 0 ]; then
    mkdir -p docs/study
    rm -f docs/study/*.svg
    cp "$out"/analysis/*.svg docs/study/
    for f in ranges boundaries mechanism positions; do
        cp "$out/analysis/${PRIMARY}_s${SEEDS%% *}/$f.svg" "docs/study/${PRIMARY}_$f.svg"
    done
    tools/study_report.sh --splice docs/study.md "$out/results.md"
    log "docs/study.md updated"
fi
