#!/usr/bin/env bash
# tools/study.sh (`make study`, `make study-quick`): the small-scale reproduction
# of the RePo paper's comparison (docs/study.md says what and why).
#
#   stage 1  a small OLMo-2 model with RoPE from scratch on the synthetic mixture
#            (configs/study/stage1.json); it must solve the single-needle family
#            at the training length (>= 90% exact match on 200 held-out items)
#            before stage 2 starts: otherwise the comparison means nothing.
#   stage 2  the same stage-1 checkpoint continued with an equal token budget in
#            each mode rope, repo, nope, r2n1, n2r1 (configs/study/stage2.json),
#            two runs at a time with one thread each; rope and repo run side by
#            side, so their step times give RePo's overhead measured in one run.
#   eval     every family at 1x, 2x, 4x the training length, without and with
#            YaRN (factor 2 and 4), plus validation loss; build/analyze:
#            attention mass needle/query/rest, RePo's positions and segments.
#   report   OUT/results.md; a full run also puts it into docs/study.md between
#            the markers <!-- results:begin --> and <!-- results:end -->, and its
#            figures into docs/study/.
#
# usage: tools/study.sh [--quick] [--out DIR]
#   --quick   the same pipeline in a few minutes (few steps, few items), for
#             `make test`: it reports the stage-1 gate but does not stop on it,
#             and never touches docs/.
#   --out DIR where the runs and results go (default runs/study, --quick: runs/study-quick)
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
out=
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1 ;;
        --out) out=${2:?--out needs a directory}; shift ;;
        -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "tools/study.sh: unknown option '$1' (--quick, --out DIR)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$out" ] || out=$([ $quick = 1 ] && echo runs/study-quick || echo runs/study)

MODES="rope repo nope r2n1 n2r1"
S1=configs/study/stage1.json
S2=configs/study/stage2.json
T=$(sed -n 's/.*"seq_len": *\([0-9]*\).*/\1/p' "$S1" | head -n 1)
GATE=0.90
if [ $quick = 1 ]; then
    s1_set=(--set train.steps=60 --set optim.warmup_steps=10 --set train.eval_every=60 --set train.eval_batches=2
            --set train.batch_size=8 --set train.log_every=20 --set run.threads=1)
    s2_set=(--set train.steps=20 --set optim.warmup_steps=5 --set train.eval_every=20 --set train.eval_batches=2
            --set train.batch_size=8 --set train.log_every=5)
    ITEMS=10; GATE_ITEMS=20; AN_ITEMS=4
else
    s1_set=(); s2_set=()
    ITEMS=200; GATE_ITEMS=200; AN_ITEMS=100
fi
SEED_EVAL=7   # eval and analysis items: the held-out item stream, seed 7

mkdir -p "$out"/eval "$out"/analysis "$out"/logs
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
t_start=$(date +%s)

# ---- stage 1
log "stage 1: RoPE from scratch ($S1${s1_set:+, quick})"
build/train "$S1" --set run.out_dir="\"$out/stage1_rope\"" "${s1_set[@]}" > "$out/logs/stage1_rope.log" 2>&1 ||
    { tail -n 20 "$out/logs/stage1_rope.log"; echo "stage 1 failed (log: $out/logs/stage1_rope.log)" >&2; exit 1; }
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
    ( build/train "$S2" --set run.out_dir="\"$out/stage2_$m\"" --set model.init_from="\"$out/stage1_rope\"" \
          --set model.positions.mode="\"$m\"" "${s2_set[@]}" > "$out/logs/stage2_$m.log" 2>&1 ||
      { echo "stage 2 ($m) failed: $out/logs/stage2_$m.log" >&2; exit 1; } ) &
done
wait
for m in $MODES; do
    grep -q '^done:' "$out/logs/stage2_$m.log" || { tail -n 20 "$out/logs/stage2_$m.log"; echo "stage 2 ($m) did not finish" >&2; exit 1; }
done
t_stage2=$(date +%s)

# ---- eval and analysis, two processes at a time
T2=$((2 * T)); T4=$((4 * T))
for m in $MODES; do
    run=$out/stage2_$m
    slot
    ( build/eval "$run" --tasks all --lengths "$T,$T2,$T4" --items $ITEMS --seed $SEED_EVAL --threads 1 \
          --json "$out/eval/$m.json" > "$out/logs/eval_$m.log" 2>&1 &&
      build/eval "$run" --tasks all --lengths "$T2" --items $ITEMS --seed $SEED_EVAL --threads 1 --yarn-factor 2 \
          --json "$out/eval/${m}_yarn2.json" >> "$out/logs/eval_$m.log" 2>&1 &&
      build/eval "$run" --tasks all --lengths "$T4" --items $ITEMS --seed $SEED_EVAL --threads 1 --yarn-factor 4 \
          --json "$out/eval/${m}_yarn4.json" >> "$out/logs/eval_$m.log" 2>&1 ||
      { echo "eval ($m) failed: $out/logs/eval_$m.log" >&2; exit 1; } ) &
    slot
    what=--attention
    [ $m = repo ] && what="--attention --positions"
    ( build/analyze "$run" $what --items $AN_ITEMS --seed $SEED_EVAL --threads 1 --label $m \
          --out "$out/analysis/$m" > "$out/logs/analyze_$m.log" 2>&1 &&
      build/analyze "$run" --attention --task distractor --items $AN_ITEMS --seed $SEED_EVAL --threads 1 --label $m \
          --out "$out/analysis/${m}_distractor" >> "$out/logs/analyze_$m.log" 2>&1 ||
      { echo "analyze ($m) failed: $out/logs/analyze_$m.log" >&2; exit 1; } ) &
done
wait
for m in $MODES; do
    for f in "$out/eval/$m.json" "$out/eval/${m}_yarn2.json" "$out/eval/${m}_yarn4.json" "$out/analysis/$m/analysis.json"; do
        [ -s "$f" ] || { echo "missing $f (logs in $out/logs)" >&2; exit 1; }
    done
done
build/analyze --compare $(for m in $MODES; do echo "$out/analysis/$m/analysis.json"; done) \
    --out "$out/analysis/compare" > "$out/analysis/compare.md" 2>"$out/logs/compare.log"
build/analyze --compare $(for m in $MODES; do echo "$out/analysis/${m}_distractor/analysis.json"; done) \
    --out "$out/analysis/compare_distractor" > "$out/analysis/compare_distractor.md" 2>>"$out/logs/compare.log"
build/plot "$out/stage1_rope" --out "$out/analysis/training_stage1.svg" > "$out/logs/plot.log" 2>&1 &&
build/plot $(for m in $MODES; do echo "$out/stage2_$m"; done) --out "$out/analysis/training_stage2.svg" \
    >> "$out/logs/plot.log" 2>&1 || { echo "build/plot failed: $out/logs/plot.log" >&2; exit 1; }
t_end=$(date +%s)

# ---- report
tools/study_report.sh "$out" "$quick" $((t_stage1 - t_start)) $((t_stage2 - t_stage1)) $((t_end - t_stage2)) \
    > "$out/results.md" || { echo "tools/study_report.sh failed on $out" >&2; exit 1; }
log "results: $out/results.md ($((t_end - t_start)) s in all)"
if [ $quick = 0 ]; then
    mkdir -p docs/study
    for f in compare/compare_attention compare/compare_segments compare_distractor/compare_attention repo/positions \
             training_stage1 training_stage2; do
        [ -f "$out/analysis/$f.svg" ] && cp "$out/analysis/$f.svg" "docs/study/$(echo "$f" | tr / _).svg"
    done
    tools/study_report.sh --splice docs/study.md "$out/results.md"
    log "docs/study.md updated"
fi
