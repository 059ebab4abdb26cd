#!/usr/bin/env bash
# tools/study.sh (`make study`, `make study-quick`): the small-scale reproduction
# of the RePo paper's comparison (docs/study.md says what and why).
#
#   stage 1  a small OLMo-2 model with RoPE from scratch on the synthetic mixture
#            (configs/study/stage1.json); it must solve the single-needle family
#            at the training length (>= 90% exact match on 200 held-out items)
#            before stage 2 starts: otherwise the comparison means nothing.
#   stage 2  the same stage-1 checkpoint continued with an equal token budget in
#            each mode (configs/study/stage2.json): rope, repo, nope, r2n1, n2r1,
#            and three RePo variants that ask what makes the learned positions
#            move: repo_lr10 and repo_lr100 (optim.lr_mult.repo 10 and 100) and
#            repo_init (model.positions.repo_final_init_std REPO_INIT_STD, a larger
#            final projection). Two runs at a time with one thread each; rope and
#            repo run side by side, so their step times give RePo's overhead. Every
#            RePo run logs its positions every 50 steps (train.log_positions).
#   eval     every family at 1x, 2x, 4x the training length, without and with
#            YaRN (factor 2 and 4), plus validation loss; the noisy-context
#            setting (distractor with NOISY_DISTRACTORS near-duplicate needles)
#            the same way; build/analyze: attention mass needle/query/rest on
#            single, distractor and noisy items, RePo's positions and segments.
#   report   OUT/results.md; a full run also puts it into docs/study.md between
#            the markers <!-- results:begin --> and <!-- results:end -->, and its
#            figures into docs/study/.
#
# usage: tools/study.sh [--quick] [--out DIR] [--stage1 RUN_DIR]
#   --quick   the same pipeline in a few minutes (few steps, few items), for
#             `make test`: it reports the stage-1 gate but does not stop on it,
#             and never touches docs/.
#   --out DIR where the runs and results go (default runs/study, --quick: runs/study-quick)
#   --stage1 RUN_DIR  take stage 1 from a finished run of configs/study/stage1.json
#             (training is deterministic, so it is the model stage 1 would train;
#             its run_config.json must match the config but for out_dir) instead
#             of training it again; the report says so.
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
        -h|--help) sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "tools/study.sh: unknown option '$1' (--quick, --out DIR, --stage1 RUN_DIR)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$out" ] || out=$([ $quick = 1 ] && echo runs/study-quick || echo runs/study)

MODES="rope repo nope r2n1 n2r1 repo_lr10 repo_lr100 repo_init"
REPO_MODES="repo repo_lr10 repo_lr100 repo_init"
REPO_INIT_STD=20         # repo_init: model.positions.repo_final_init_std (docs/study.md says how it was chosen)
NOISY_DISTRACTORS=7     # the noisy setting: the needle among 7 near-duplicates (training items have 3)
S1=configs/study/stage1.json
S2=configs/study/stage2.json
T=$(sed -n 's/.*"seq_len": *\([0-9]*\).*/\1/p' "$S1" | head -n 1)
GATE=0.90
if [ $quick = 1 ]; then
    s1_steps=60
    s1_set=(--set train.steps=$s1_steps --set optim.warmup_steps=10 --set train.eval_every=60 --set train.eval_batches=2
            --set train.batch_size=8 --set train.log_every=20 --set run.threads=1)
    s2_set=(--set train.steps=20 --set optim.warmup_steps=5 --set train.eval_every=20 --set train.eval_batches=2
            --set train.batch_size=8 --set train.log_every=5 --set train.log_positions=5)
    ITEMS=10; GATE_ITEMS=20; AN_ITEMS=4
else
    s1_steps=$(sed -n 's/.*"steps": *\([0-9]*\).*/\1/p' "$S1" | head -n 1)
    s1_set=(); s2_set=()
    ITEMS=100; GATE_ITEMS=200; AN_ITEMS=50
fi
SEED_EVAL=7   # eval and analysis items: the held-out item stream, seed 7
# the noisy-context items: the generator settings of the study's configs (the filler chain and table size)
# with NOISY_DISTRACTORS near-duplicate needles around the true one
NOISY_SYN="{\"markov_order\": 2, \"table_rows\": 3, \"n_distractors\": $NOISY_DISTRACTORS}"
grep -q '"markov_order": 2, "table_rows": 3' "$S1" ||
    { echo "tools/study.sh: NOISY_SYN no longer matches the generator settings of $S1" >&2; exit 1; }
# mode_args MODE: the position plan and the settings of a stage-2 mode
mode_args() {
    case $1 in
        repo_lr10) echo "--set model.positions.mode=\"repo\" --set optim.lr_mult={\"repo\":10}" ;;
        repo_lr100) echo "--set model.positions.mode=\"repo\" --set optim.lr_mult={\"repo\":100}" ;;
        repo_init) echo "--set model.positions.mode=\"repo\" --set model.positions.repo_final_init_std=$REPO_INIT_STD" ;;
        *) echo "--set model.positions.mode=\"$1\"" ;;
    esac
}

mkdir -p "$out"/eval "$out"/analysis "$out"/logs
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
t_start=$(date +%s)

# ---- stage 1
if [ -n "$stage1" ]; then
    # stage1's run_config.json against the one this config resolves to (a 0-step run writes it), apart from
    # out_dir, the step count (its checkpoint must be at the configured last step instead), the check run's
    # own warmup_steps and eval_every, and keys that a later version added with their defaults
    # (log_positions, repo_final_init_std), which an older run's file lacks
    rm -rf "$out/stage1_check"
    build/train "$S1" "${s1_set[@]}" --set run.out_dir="\"$out/stage1_check\"" --set train.steps=0 \
        --set optim.warmup_steps=0 --set train.eval_every=0 > "$out/logs/stage1_check.log" 2>&1 ||
        { echo "tools/study.sh: resolving $S1 failed: $out/logs/stage1_check.log" >&2; exit 1; }
    strip() { grep -vE '"(out_dir|steps|warmup_steps|eval_every|log_positions|repo_final_init_std)":' "$1"; }
    last=$(sed -n 's/.*"step":[[:space:]]*\([0-9]*\).*/\1/p' "$stage1/$(cat "$stage1/latest" 2>/dev/null)/trainer_state.json" \
           2>/dev/null | head -n 1)
    if ! diff <(strip "$out/stage1_check/run_config.json") <(strip "$stage1/run_config.json") > "$out/logs/stage1_diff.txt" ||
       [ "$last" != "$s1_steps" ] || [ ! -s "$stage1/train.log" ]; then
        echo "tools/study.sh: --stage1 $stage1 is not a finished run of $S1 (last step '$last' of $s1_steps; config" \
             "differences in $out/logs/stage1_diff.txt; its log must be $stage1/train.log)" >&2
        exit 2
    fi
    rm -rf "$out/stage1_rope" "$out/stage1_check"
    cp -r "$stage1" "$out/stage1_rope"
    cp "$stage1/train.log" "$out/logs/stage1_rope.log"
    echo "$stage1" > "$out/logs/stage1_from"
    log "stage 1: taken from $stage1 (--stage1): the same config, trained earlier"
else
    rm -f "$out/logs/stage1_from"
    log "stage 1: RoPE from scratch ($S1${s1_set:+, quick})"
    build/train "$S1" --set run.out_dir="\"$out/stage1_rope\"" "${s1_set[@]}" > "$out/logs/stage1_rope.log" 2>&1 ||
        { tail -n 20 "$out/logs/stage1_rope.log"; echo "stage 1 failed (log: $out/logs/stage1_rope.log)" >&2; exit 1; }
fi
t_stage1=$(date +%s)

# ---- the gate: single needle at the training length
build/eval "$out/stage1_rope" --tasks single --lengths "$T" --items $GATE_ITEMS --seed $SEED_EVAL --threads 1 \
    --json "$out/eval/stage1_gate.json" > "$out/logs/stage1_gate.log" 2>&1
jnum() { sed -n "s/^[[:space:]]*\"$1\":[[:space:]]*\([^,]*\),\{0,1\}$/\1/p" "$2" | head -n 1; }
gate_acc=$(jnum accuracy "$out/eval/stage1_gate.json")
gate_ok=$(awk -v a="$gate_acc" -v g=$GATE 'BEGIN { print (a >= g) ? 1 : 0 }')
log "stage 1: single-needle exact match at T=$T: $gate_acc on $GATE_ITEMS items (gate $GATE)"
if [ "$gate_ok" != 1 ]; then
    if [ $quick = 1 ]; then
        log "quick run: the gate is not met after so few steps; continuing to exercise the pipeline"
    else
        echo "stage 1 did not learn the single-needle task ($gate_acc < $GATE): the comparison would mean" \
             "nothing. Make the task or the model fit the budget (docs/study.md)." >&2
        exit 1
    fi
fi

# ---- stage 2: two runs at a time, one thread each
slot() {   # wait until fewer than 2 background jobs run
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done
}
for m in $MODES; do
    slot
    log "stage 2: $m"
    # shellcheck disable=SC2046  # mode_args gives whole --set words without spaces inside
    ( build/train "$S2" --set run.out_dir="\"$out/stage2_$m\"" --set model.init_from="\"$out/stage1_rope\"" \
          $(mode_args $m) "${s2_set[@]}" > "$out/logs/stage2_$m.log" 2>&1 ||
      { echo "stage 2 ($m) failed: $out/logs/stage2_$m.log" >&2; exit 1; } ) &
done
wait
for m in $MODES; do
    grep -q '^done:' "$out/logs/stage2_$m.log" || { tail -n 20 "$out/logs/stage2_$m.log"; echo "stage 2 ($m) did not finish" >&2; exit 1; }
done
t_stage2=$(date +%s)

# ---- eval and analysis, two processes at a time
T2=$((2 * T)); T4=$((4 * T))
# evals RUN OUTBASE LOG [build/eval options]: 1x/2x/4x without YaRN, 2x with factor 2, 4x with factor 4
evals() {
    local run=$1 base=$2 lg=$3
    shift 3
    build/eval "$run" "$@" --lengths "$T,$T2,$T4" --items $ITEMS --seed $SEED_EVAL --threads 1 \
        --json "$base.json" >> "$lg" 2>&1 &&
    build/eval "$run" "$@" --lengths "$T2" --items $ITEMS --seed $SEED_EVAL --threads 1 --yarn-factor 2 \
        --json "${base}_yarn2.json" >> "$lg" 2>&1 &&
    build/eval "$run" "$@" --lengths "$T4" --items $ITEMS --seed $SEED_EVAL --threads 1 --yarn-factor 4 \
        --json "${base}_yarn4.json" >> "$lg" 2>&1
}
for m in $MODES; do
    run=$out/stage2_$m
    slot
    : > "$out/logs/eval_$m.log"
    ( evals "$run" "$out/eval/$m" "$out/logs/eval_$m.log" --tasks all &&
      evals "$run" "$out/eval/${m}_noisy" "$out/logs/eval_$m.log" --tasks distractor --synthetic "$NOISY_SYN" ||
      { echo "eval ($m) failed: $out/logs/eval_$m.log" >&2; exit 1; } ) &
    slot
    what=--attention
    case " $REPO_MODES " in *" $m "*) what="--attention --positions" ;; esac
    an() { build/analyze "$run" --items $AN_ITEMS --seed $SEED_EVAL --threads 1 --label $m "$@" >> "$out/logs/analyze_$m.log" 2>&1; }
    : > "$out/logs/analyze_$m.log"
    ( an $what --out "$out/analysis/$m" &&
      an --attention --task distractor --out "$out/analysis/${m}_distractor" &&
      an --attention --task distractor --synthetic "$NOISY_SYN" --out "$out/analysis/${m}_noisy" ||
      { echo "analyze ($m) failed: $out/logs/analyze_$m.log" >&2; exit 1; } ) &
done
wait
for m in $MODES; do
    for f in "$out/eval/$m.json" "$out/eval/${m}_yarn2.json" "$out/eval/${m}_yarn4.json" "$out/eval/${m}_noisy_yarn4.json" \
             "$out/analysis/$m/analysis.json" "$out/analysis/${m}_noisy/analysis.json"; do
        [ -s "$f" ] || { echo "missing $f (logs in $out/logs)" >&2; exit 1; }
    done
done
for set in "" _distractor _noisy; do
    build/analyze --compare $(for m in $MODES; do echo "$out/analysis/$m$set/analysis.json"; done) \
        --out "$out/analysis/compare$set" > "$out/analysis/compare$set.md" 2>>"$out/logs/compare.log"
done
build/plot "$out/stage1_rope" --out "$out/analysis/training_stage1.svg" > "$out/logs/plot.log" 2>&1 &&
build/plot $(for m in $MODES; do echo "$out/stage2_$m"; done) --out "$out/analysis/training_stage2.svg" \
    >> "$out/logs/plot.log" 2>&1 &&
build/plot --positions $(for m in $REPO_MODES; do echo "$out/stage2_$m"; done) \
    --out "$out/analysis/positions_training.svg" >> "$out/logs/plot.log" 2>&1 ||
    { echo "build/plot failed: $out/logs/plot.log" >&2; exit 1; }
t_end=$(date +%s)

# ---- report
MODES="$MODES" REPO_MODES="$REPO_MODES" NOISY_DISTRACTORS=$NOISY_DISTRACTORS NOISY_SYN="$NOISY_SYN" \
    REPO_INIT_STD=$REPO_INIT_STD tools/study_report.sh "$out" "$quick" $((t_stage1 - t_start)) \
    $((t_stage2 - t_stage1)) $((t_end - t_stage2)) > "$out/results.md" || { echo "tools/study_report.sh failed on $out" >&2; exit 1; }
log "results: $out/results.md ($((t_end - t_start)) s in all)"
if [ $quick = 0 ]; then
    mkdir -p docs/study
    rm -f docs/study/*.svg
    for f in compare/compare_attention compare/compare_segments compare_distractor/compare_attention \
             compare_noisy/compare_attention $(for m in $REPO_MODES; do echo $m/positions; done) \
             training_stage1 training_stage2 positions_training; do
        [ -f "$out/analysis/$f.svg" ] && cp "$out/analysis/$f.svg" "docs/study/$(echo "$f" | tr / _).svg"
    done
    tools/study_report.sh --splice docs/study.md "$out/results.md"
    log "docs/study.md updated"
fi
