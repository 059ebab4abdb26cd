#!/usr/bin/env bash
# tools/study.sh (`make study`, `make study-quick`): the small-scale reproduction
# of the RePo paper's comparison, version 3 (docs/study.md says what and why).
#
# Two tracks, each a stage 1 and its stage-2 comparison:
#   syn    the synthetic mixture with Markov filler at T = 64 (configs/study/stage1.json,
#          stage2.json); stage 1 must solve the single needle at T (>= 90% on 200
#          held-out items) before stage 2 starts, else the study stops.
#   prose  the same retrieval families with real text as filler: the Debian
#          copyright files (/usr/share/doc/*/copyright) tokenized with the fixture BPE
#          tokenizer (tests/fixtures/tokenizer/gpt2.json, 1001 ids; the synthetic marks
#          and symbols sit above, from id 1008), at T = 128 (configs/study/prose_*.json);
#          a tenth of the files is held out. Its gate is reported, not enforced.
#   order  the prose stage 1 (the longer) trains beside the syn stage 1, then beside syn's stage-2 runs;
#          training uses BF16 products (train.compute_dtype) where the CPU has them, evaluation FP32.
#   stage 2  each mode continued from its track's stage-1 checkpoint with SEEDS
#          (run.seed: the data order and the new RePo weights): rope, repo, nope, r2n1,
#          n2r1 (the paper's), repo_wm (width-matched RePo, docs/study.md "Width-aware
#          RePo": the three maps' init std and lr_mult below) and repo_pdrop (repo with
#          model.positions.repo_pdrop from 1 to 0 over half of stage 2). Two runs at a
#          time, one thread each; RePo runs log their positions (train.log_positions).
#   eval   syn: every family at 1x, 2x, 4x T, without and with YaRN (factor 2, 4), and the
#          noisy setting (distractor with NOISY_DISTRACTORS near-duplicates); prose: every
#          family with held-out text as filler, the same lengths, and perplexity of the
#          held-out text at 1x, 2x, 4x T without and with YaRN; build/analyze on syn:
#          attention mass and positions.
#   report OUT/results.md (tools/study_report.sh): mean and min-max over the seeds, and
#          which comparisons hold in every seed; a full run also puts it into
#          docs/study.md between <!-- results:begin --> and <!-- results:end -->, and its
#          figures into docs/study/.
#
# usage: tools/study.sh [--quick] [--out DIR] [--stage1 RUN_DIR]
#   --quick   the same pipeline in well under a minute (few steps, few items), for
#             `make test`: it reports the gates but does not stop on them, and never
#             touches docs/.
#   --out DIR where the runs and results go (default runs/study, --quick: runs/study-quick)
#   --stage1 RUN_DIR  take the syn stage 1 from a finished run of configs/study/stage1.json
#             (its run_config.json must match but for out_dir) instead of training it.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
out=
stage1=
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1 ;;
        --out) out=${2:?--out needs a directory}; shift ;;
        --stage1) stage1=${2:?--stage1 needs a run directory}; shift ;;
        -h|--help) sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "tools/study.sh: unknown option '$1' (--quick, --out DIR, --stage1 RUN_DIR)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$out" ] || out=$([ $quick = 1 ] && echo runs/study-quick || echo runs/study)

MODES="rope repo nope r2n1 n2r1 repo_wm repo_pdrop"
REPO_MODES="repo repo_wm repo_pdrop"
SEEDS="2 3 4"
# repo_wm, the width rule of docs/study.md at d_model 128: std 0.02 sqrt(2048/128) for the gate, content and
# final maps, and the RePo step lr x lr_mult = 7.4487e-5 x 2048/128 (the released lr at OLMo-2 1B's width)
WM_STD=0.08
WM_LR_MULT=1.2
NOISY_DISTRACTORS=7
TOKENIZER=tests/fixtures/tokenizer/gpt2.json
SEED_EVAL=7
GATE=0.90
QUICK_S1=40
if [ $quick = 1 ]; then
    q1=(--set train.steps=$QUICK_S1 --set optim.warmup_steps=5 --set train.eval_every=40 --set train.eval_batches=1
        --set train.batch_size=4 --set train.log_every=10)
    q2=(--set train.steps=6 --set optim.warmup_steps=2 --set train.eval_every=6 --set train.eval_batches=1
        --set train.batch_size=4 --set train.log_every=2 --set train.log_positions=2)
    ITEMS=1; PROSE_ITEMS=1; GATE_ITEMS=2; AN_ITEMS=1; PPL_WINDOWS=2
else
    q1=(); q2=()
    ITEMS=100; PROSE_ITEMS=50; GATE_ITEMS=200; AN_ITEMS=50; PPL_WINDOWS=100
fi
# BF16 products (train.compute_dtype, docs/design.md) where the CPU has them: about 1.6x faster steps here;
# evaluation stays FP32
COMPUTE=f32
[ -x build/bench/bench_step ] && build/bench/bench_step --cpu 2>/dev/null | grep -q '^bf16 products: bf16 operands' &&
    COMPUTE=bf16
q1+=(--set train.compute_dtype="\"$COMPUTE\"")
q2+=(--set train.compute_dtype="\"$COMPUTE\"")

mkdir -p "$out"/logs "$out"/configs "$out"/text
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
t_start=$(date +%s)

# ---- the prose text: the copyright files of the installed packages (the licence texts if there are few),
# one document each, a tenth held out by tokenize's hash of the document index
text_files=$(ls /usr/share/doc/*/copyright 2>/dev/null | wc -l)
if [ "$text_files" -ge 200 ]; then TEXT_SRC="/usr/share/doc/*/copyright"; else TEXT_SRC="/usr/share/common-licenses/*"; fi
rm -f "$out"/text/prose_*
# shellcheck disable=SC2086  # TEXT_SRC is a glob
build/tokenize --tokenizer "$TOKENIZER" --out "$out/text/prose" --val 0.1 --threads 1 $TEXT_SRC \
    > "$out/logs/tokenize.log" 2>&1 || { cat "$out/logs/tokenize.log"; echo "tokenize failed" >&2; exit 1; }
# shellcheck disable=SC2086
echo "$TEXT_SRC $(ls $TEXT_SRC | wc -l) files $(cat $TEXT_SRC | md5sum | cut -c1-12)" > "$out/text/source"
PROSE_TRAIN=$out/text/prose_train_000000.bin
PROSE_VAL=$out/text/prose_val_000000.bin
# the configs with this run's paths (the committed files name the default out, runs/study)
for c in stage1 stage2; do cp "configs/study/$c.json" "$out/configs/syn_$c.json"; done
for c in stage1 stage2; do
    sed "s|runs/study/|$out/|g" "configs/study/prose_$c.json" > "$out/configs/prose_$c.json"
done
# the generator settings of a track's configs, with the filler file swapped for the held-out text (prose)
syn_json() { tr -d '\n' < "$out/configs/$1_stage1.json" | sed 's/.*"synthetic": *\({[^}]*{[^}]*}}\).*/\1/'; }
PROSE_VAL_SYN=$(syn_json prose | sed "s|$PROSE_TRAIN|$PROSE_VAL|")
NOISY_SYN=$(syn_json syn | sed 's/"answer_weight": *[0-9.]*,//; s/"weights": {[^}]*}/"weights": {"distractor": 1}/' |
            sed "s/}\$/, \"n_distractors\": $NOISY_DISTRACTORS}/")
T_syn=$(sed -n 's/.*"seq_len": *\([0-9]*\).*/\1/p' "$out/configs/syn_stage1.json")
T_prose=$(sed -n 's/.*"seq_len": *\([0-9]*\).*/\1/p' "$out/configs/prose_stage1.json")
steps2() { sed -n 's/.*"steps": *\([0-9]*\).*/\1/p' "$out/configs/$1_stage2.json"; }

# mode_args TRACK MODE: the position plan and the settings of a stage-2 mode
mode_args() {
    local anneal=$(($(steps2 "$1") / 2))
    [ $quick = 1 ] && anneal=3
    case $2 in
        repo_wm) echo "--set model.positions.mode=\"repo\" --set model.positions.repo_gate_init_std=$WM_STD" \
                      "--set model.positions.repo_content_init_std=$WM_STD --set model.positions.repo_final_init_std=$WM_STD" \
                      "--set optim.lr_mult={\"repo\":$WM_LR_MULT}" ;;
        repo_pdrop) echo "--set model.positions.mode=\"repo\" --set model.positions.repo_pdrop={\"init\":1,\"anneal_steps\":$anneal}" ;;
        *) echo "--set model.positions.mode=\"$2\"" ;;
    esac
}

slot() {   # wait until fewer than 2 background jobs run
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done
}
die_log() { tail -n 20 "$1" >&2; echo "tools/study.sh: $2 (log: $1)" >&2; exit 1; }

# ---- stage 1 of both tracks, then stage 2
if [ -n "$stage1" ]; then
    # stage1's run_config.json against the one this config resolves to (a 0-step run writes it), apart from
    # out_dir and the keys a 0-step check run sets for itself or a later version added with their defaults
    rm -rf "$out/stage1_check"
    build/train "$out/configs/syn_stage1.json" "${q1[@]}" --set run.out_dir="\"$out/stage1_check\"" --set train.steps=0 \
        --set optim.warmup_steps=0 --set train.eval_every=0 > "$out/logs/stage1_check.log" 2>&1 ||
        die_log "$out/logs/stage1_check.log" "resolving the syn stage 1 config failed"
    strip() { grep -vE '"(out_dir|steps|warmup_steps|eval_every|log_positions|repo_[a-z]*_init_std|repo_pdrop|init|anneal_steps|compute_dtype)":' "$1"; }
    s1_steps=$([ $quick = 1 ] && echo $QUICK_S1 || sed -n 's/.*"steps": *\([0-9]*\).*/\1/p' "$out/configs/syn_stage1.json")
    last=$(sed -n 's/.*"step":[[:space:]]*\([0-9]*\).*/\1/p' "$stage1/$(cat "$stage1/latest" 2>/dev/null)/trainer_state.json" \
           2>/dev/null | head -n 1)
    if ! diff <(strip "$out/stage1_check/run_config.json") <(strip "$stage1/run_config.json") > "$out/logs/stage1_diff.txt" ||
       [ "$last" != "$s1_steps" ] || [ ! -s "$stage1/train.log" ]; then
        echo "tools/study.sh: --stage1 $stage1 is not a finished run of configs/study/stage1.json (last step '$last' of" \
             "$s1_steps; differences in $out/logs/stage1_diff.txt; its log must be $stage1/train.log)" >&2
        exit 2
    fi
    rm -rf "$out/syn/stage1_rope" "$out/stage1_check"
    mkdir -p "$out/syn"
    cp -r "$stage1" "$out/syn/stage1_rope"
    cp "$stage1/train.log" "$out/logs/syn_stage1.log"
    echo "$stage1" > "$out/logs/stage1_from"
    log "stage 1 (syn): taken from $stage1 (--stage1)"
else
    rm -f "$out/logs/stage1_from"
fi
# train_stage1 TRACK: train it (in the background: its job counts in slot)
train_stage1() {
    mkdir -p "$out/$1"
    rm -rf "$out/$1/stage1_rope"
    log "stage 1 ($1): RoPE from scratch"
    ( build/train "$out/configs/${1}_stage1.json" --set run.out_dir="\"$out/$1/stage1_rope\"" "${q1[@]}" \
          > "$out/logs/${1}_stage1.log" 2>&1 || die_log "$out/logs/${1}_stage1.log" "stage 1 ($1) failed" ) &
}
jnum() { sed -n "s/^[[:space:]]*\"$1\":[[:space:]]*\([^,]*\),\{0,1\}$/\1/p" "$2" | head -n 1; }
# gate TRACK: single needle at the training length; syn stops the study below GATE (not with --quick)
gate() {
    local T syn=() acc
    T=$([ $1 = syn ] && echo "$T_syn" || echo "$T_prose")
    if [ $1 = prose ] || [ -z "$stage1" ]; then
        grep -q '^done:' "$out/logs/${1}_stage1.log" || die_log "$out/logs/${1}_stage1.log" "stage 1 ($1) did not finish"
    fi
    [ $1 = prose ] && syn=(--synthetic "$PROSE_VAL_SYN")
    build/eval "$out/$1/stage1_rope" --tasks single --lengths "$T" --items $GATE_ITEMS --seed $SEED_EVAL --threads 1 \
        "${syn[@]}" --json "$out/eval/${1}_stage1_gate.json" > "$out/logs/${1}_stage1_gate.log" 2>&1 ||
        die_log "$out/logs/${1}_stage1_gate.log" "the $1 gate's eval failed"
    acc=$(jnum accuracy "$out/eval/${1}_stage1_gate.json")
    log "stage 1 ($1): single-needle exact match at T=$T: $acc on $GATE_ITEMS items (gate $GATE)"
    if [ $1 = syn ] && [ $quick = 0 ] && [ "$(awk -v a="$acc" -v g=$GATE 'BEGIN { print (a >= g) }')" != 1 ]; then
        echo "stage 1 did not learn the single-needle task ($acc < $GATE): the comparison would mean nothing." \
             "Make the task or the model fit the budget (docs/study.md)." >&2
        exit 1
    fi
}
# stage2 TRACK: every mode and seed, two jobs at a time
stage2() {
    local s m run
    for s in $SEEDS; do
        for m in $MODES; do
            slot
            run=$out/$1/stage2_${m}_s$s
            rm -rf "$run"
            # shellcheck disable=SC2046  # mode_args gives whole --set words without spaces inside
            ( build/train "$out/configs/${1}_stage2.json" --set run.out_dir="\"$run\"" --set run.seed=$s \
                  --set model.init_from="\"$out/$1/stage1_rope\"" $(mode_args $1 $m) "${q2[@]}" \
                  > "$out/logs/${1}_${m}_s$s.log" 2>&1 || die_log "$out/logs/${1}_${m}_s$s.log" "stage 2 failed" ) &
        done
    done
}
# The prose stage 1 (the longer one) trains beside the syn stage 1 and then beside syn's stage-2 runs
mkdir -p "$out/eval"
train_stage1 prose
prose_pid=$!
if [ -z "$stage1" ]; then
    train_stage1 syn
    wait $!
fi
gate syn
t_stage1=$(date +%s)
stage2 syn
wait $prose_pid || true
gate prose
stage2 prose
wait
for s in $SEEDS; do for tr in syn prose; do for m in $MODES; do
    grep -q '^done:' "$out/logs/${tr}_${m}_s$s.log" || die_log "$out/logs/${tr}_${m}_s$s.log" "stage 2 did not finish"
done; done; done
t_stage2=$(date +%s)

# ---- eval and analysis, two processes at a time
# evals RUN OUTBASE LOG T [build/eval options]: 1x/2x/4x without YaRN, 2x with factor 2, 4x with factor 4
evals() {
    local run=$1 base=$2 lg=$3 T=$4
    shift 4
    build/eval "$run" "$@" --lengths "$T,$((2 * T)),$((4 * T))" --items $ITEMS --seed $SEED_EVAL --threads 1 \
        --json "$base.json" >> "$lg" 2>&1 &&
    build/eval "$run" "$@" --lengths $((2 * T)) --items $ITEMS --seed $SEED_EVAL --threads 1 --yarn-factor 2 \
        --json "${base}_yarn2.json" >> "$lg" 2>&1 &&
    build/eval "$run" "$@" --lengths $((4 * T)) --items $ITEMS --seed $SEED_EVAL --threads 1 --yarn-factor 4 \
        --json "${base}_yarn4.json" >> "$lg" 2>&1
}
# prose_evals RUN OUTBASE LOG T: evals' three calls on held-out text as filler, each also scoring the perplexity
# of the held-out text at its own length (T; 2T with YaRN 2; 4T with YaRN 4), then the perplexity at 2T and 4T
# without YaRN
prose_evals() {
    local run=$1 base=$2 lg=$3 T=$4 f
    local p=(--ppl "$PROSE_VAL" --max-windows $PPL_WINDOWS --tasks all --synthetic "$PROSE_VAL_SYN" --items $PROSE_ITEMS
             --seed $SEED_EVAL --threads 1)
    build/eval "$run" "${p[@]}" --seq-len "$T" --lengths "$T,$((2 * T)),$((4 * T))" --json "$base.json" >> "$lg" 2>&1 &&
    build/eval "$run" "${p[@]}" --seq-len $((2 * T)) --lengths $((2 * T)) --yarn-factor 2 --json "${base}_yarn2.json" \
        >> "$lg" 2>&1 &&
    build/eval "$run" "${p[@]}" --seq-len $((4 * T)) --lengths $((4 * T)) --yarn-factor 4 --json "${base}_yarn4.json" \
        >> "$lg" 2>&1 || return 1
    for f in 2 4; do
        build/eval "$run" --ppl "$PROSE_VAL" --max-windows $PPL_WINDOWS --threads 1 --seq-len $((f * T)) \
            --json "${base}_ppl$f.json" >> "$lg" 2>&1 || return 1
    done
}
mkdir -p "$out/analysis"
for s in $SEEDS; do
    for m in $MODES; do
        run=$out/syn/stage2_${m}_s$s lg=$out/logs/eval_syn_${m}_s$s.log
        slot
        : > "$lg"
        ( evals "$run" "$out/eval/syn_${m}_s$s" "$lg" "$T_syn" --tasks all &&
          evals "$run" "$out/eval/syn_${m}_s${s}_noisy" "$lg" "$T_syn" --tasks distractor --synthetic "$NOISY_SYN" &&
          what=--attention && case " $REPO_MODES " in *" $m "*) what="--attention --positions" ;; esac &&
          # shellcheck disable=SC2086  # what is one or two options
          build/analyze "$run" $what --items $AN_ITEMS --seed $SEED_EVAL --threads 1 --label $m \
              --out "$out/analysis/syn_${m}_s$s" >> "$lg" 2>&1 || die_log "$lg" "syn eval ($m, seed $s) failed" ) &
        run=$out/prose/stage2_${m}_s$s lg=$out/logs/eval_prose_${m}_s$s.log
        slot
        : > "$lg"
        ( prose_evals "$run" "$out/eval/prose_${m}_s$s" "$lg" "$T_prose" || die_log "$lg" "prose eval ($m, seed $s) failed" ) &
    done
done
wait
for s in $SEEDS; do for m in $MODES; do
    for f in "$out/eval/syn_${m}_s${s}_noisy_yarn4.json" "$out/analysis/syn_${m}_s$s/analysis.json" \
             "$out/eval/prose_${m}_s${s}_yarn4.json" "$out/eval/prose_${m}_s${s}_ppl4.json"; do
        [ -s "$f" ] || { echo "missing $f (logs in $out/logs)" >&2; exit 1; }
    done
done; done
s0=${SEEDS%% *}
for s in $SEEDS; do
    build/analyze --compare $(for m in $MODES; do echo "$out/analysis/syn_${m}_s$s/analysis.json"; done) \
        --out "$out/analysis/compare_s$s" > "$out/analysis/compare_s$s.md" 2>>"$out/logs/compare.log"
done
{
    for tr in syn prose; do
        build/plot "$out/$tr/stage1_rope" --out "$out/analysis/${tr}_training_stage1.svg" &&
        build/plot $(for m in $MODES; do echo "$out/$tr/stage2_${m}_s$s0"; done) --out "$out/analysis/${tr}_training_stage2.svg" &&
        build/plot --positions $(for m in $REPO_MODES; do echo "$out/$tr/stage2_${m}_s$s0"; done) \
            --out "$out/analysis/${tr}_positions_training.svg" || exit 1
    done
} > "$out/logs/plot.log" 2>&1 || die_log "$out/logs/plot.log" "build/plot failed"
t_end=$(date +%s)

# ---- report
MODES="$MODES" REPO_MODES="$REPO_MODES" SEEDS="$SEEDS" NOISY_DISTRACTORS=$NOISY_DISTRACTORS NOISY_SYN="$NOISY_SYN" \
    PROSE_VAL_SYN="$PROSE_VAL_SYN" WM_STD=$WM_STD WM_LR_MULT=$WM_LR_MULT \
    tools/study_report.sh "$out" "$quick" $((t_stage1 - t_start)) $((t_stage2 - t_stage1)) $((t_end - t_stage2)) \
    > "$out/results.md" || { echo "tools/study_report.sh failed on $out" >&2; exit 1; }
log "results: $out/results.md ($((t_end - t_start)) s in all)"
if [ $quick = 0 ]; then
    mkdir -p docs/study
    rm -f docs/study/*.svg
    for f in compare_s$s0/compare_attention compare_s$s0/compare_segments $(for m in $REPO_MODES; do echo syn_${m}_s$s0/positions; done) \
             syn_training_stage1 syn_training_stage2 syn_positions_training \
             prose_training_stage1 prose_training_stage2 prose_positions_training; do
        [ -f "$out/analysis/$f.svg" ] && cp "$out/analysis/$f.svg" "docs/study/$(echo "$f" | sed "s|_s$s0||; s|/|_|").svg"
    done
    tools/study_report.sh --splice docs/study.md "$out/results.md"
    log "docs/study.md updated"
fi
