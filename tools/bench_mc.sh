#!/usr/bin/env bash
# tools/bench_mc.sh (make bench-mc): multiple-choice scoring throughput, items/s, of build/eval --mc as it runs
# by default (prefix sharing and batching: each context run once, every choice reading it, several items in one
# forward), without prefix sharing (--mc-no-prefix-sharing: the context again with every choice, still
# batched) and without batching (--mc-no-batching: each item alone, its choices one after another after its
# context), against tools/mc_reference.py --score (PyTorch in float32, one forward of
# (context + choice)[-(W+1):][:-1] per choice, as lm-evaluation-harness runs a request), on the same items
# with the same threads, on a checkpoint of a Hugging Face config's shape with random weights (one step of
# build/train from model.from_config, kept in build/bench/mc/). The four are alternated, the order reversed
# every round; printed: each run's items/s, and the median over the rounds of each round's ratios. The
# accuracies of the four must agree (the same rules and weights). Never part of make test.
# The items: HellaSwag-shaped records generated here (a context of 30-60 words, 4 choices of 6-16 words,
# seed 1), encoded with tests/fixtures/tokenizer/smol.json (1001 ids: within any vocabulary here).
# Environment (defaults): BENCH_MC_CONFIG=tests/corpus/hf_configs/smollm2_135m.json BENCH_MC_ITEMS=40
#   BENCH_MC_ROUNDS=3 BENCH_THREADS=2 BENCH_MC_WINDOW=2048
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${BENCH_MC_CONFIG:-tests/corpus/hf_configs/smollm2_135m.json}
ITEMS=${BENCH_MC_ITEMS:-40}
ROUNDS=${BENCH_MC_ROUNDS:-3}
THREADS=${BENCH_THREADS:-2}
WINDOW=${BENCH_MC_WINDOW:-2048}
TOK=tests/fixtures/tokenizer/smol.json
PY=/usr/bin/python3
$PY -c "import torch" 2>/dev/null || { echo "bench-mc: $PY cannot import torch (apt-get install python3-torch)" >&2; exit 1; }
make --no-print-directory build/train build/eval build/tokenize >/dev/null
dir=build/bench/mc
name=$(basename "$CONFIG" .json)
[ "$name" = config ] && name=$(basename "$(dirname "$CONFIG")")   # a checkpoint's config.json: its directory
ckpt=$dir/$name/step_0000001
mkdir -p "$dir"
if [ ! -f "$ckpt/model.safetensors" ]; then   # random weights of the shape: one step from model.from_config
    cat >"$dir/$name.json" <<JSON
{"run": {"out_dir": "$dir/$name", "seed": 1, "threads": $THREADS, "overwrite": true},
 "model": {"from_config": "$CONFIG"},
 "data": {"synthetic": {"weights": {"single": 1}}, "seq_len": 64},
 "train": {"batch_size": 1, "steps": 1, "log_every": 1, "eval_every": 0, "save_every": 0}}
JSON
    build/train "$dir/$name.json" >"$dir/$name.log" 2>&1 || { echo "bench-mc: build/train failed: $dir/$name.log" >&2; exit 1; }
fi
items=$dir/items_$ITEMS.jsonl
$PY - "$items" "$ITEMS" <<'PY'
import json, random, sys
words = ("the cat sat on a warm mat while rain fell over quiet hills and old men told stories of ships that "
         "sailed north past ice toward lands where nobody had gone before this cold winter").split()
rng = random.Random(1)
say = lambda n: " ".join(rng.choice(words) for _ in range(n))
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(json.dumps({"id": i, "context": say(rng.randint(30, 60)).capitalize() + ".",
                            "choices": [say(rng.randint(6, 16)) for _ in range(4)], "label": rng.randrange(4)}) + "\n")
PY
log=$dir/runs.log
: >"$log"
run() {  # variant: "items/s acc acc_norm" (build/eval's from its JSON: n / seconds of the scoring)
    case $1 in
    share | noshare | nobatch)
        # shellcheck disable=SC2046 # each word of the $(...) is an argument of its own
        build/eval "$ckpt" --mc "$items" --tokenizer "$TOK" --mc-window "$WINDOW" --threads "$THREADS" \
            --json "$dir/eval.json" $([ "$1" = noshare ] && echo --mc-no-prefix-sharing) \
            $([ "$1" = nobatch ] && echo --mc-no-batching) >>"$log" 2>&1
        $PY -c 'import json, sys; (t,) = json.load(open(sys.argv[1]))["mc"].values()
print(t["n"] / t["seconds"], t["acc"], t["acc_norm"])' "$dir/eval.json" ;;
    torch)
        $PY tools/mc_reference.py --score "$ckpt" "$items" --tokenizer "$TOK" --window "$WINDOW" \
            --threads "$THREADS" 2>&1 | tee -a "$log" | grep "^reference" |
            awk '{for (i = 1; i < NF; i++) { if ($i == "acc") a = $(i+1); if ($i == "acc_norm") n = $(i+1)
                                            if ($(i+1) == "items/s") r = $i } print r, a, n}' ;;
    esac
}
echo "bench-mc: $ITEMS items, $name shape ($ckpt), window $WINDOW, $THREADS threads, $ROUNDS rounds"
results=$dir/results.tsv
: >"$results"
for r in $(seq "$ROUNDS"); do
    order="share noshare nobatch torch"
    [ $((r % 2)) -eq 0 ] && order="torch nobatch noshare share"
    for v in $order; do
        read -r rate acc accn < <(run "$v")
        printf "%s\t%s\t%s\t%s\t%s\n" "$r" "$v" "$rate" "$acc" "$accn" >>"$results"
        printf "  round %d  %-8s %10.4g items/s  acc %.4f  acc_norm %.4f\n" "$r" "$v" "$rate" "$acc" "$accn"
    done
done
$PY - "$results" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
rate = {(int(r), v): float(x) for r, v, x, _, _ in rows}
accs = {(round(float(a), 4), round(float(n), 4)) for _, _, _, a, n in rows}
rounds = sorted({r for r, _ in rate})
def med(a, b):
    return statistics.median(rate[(r, a)] / rate[(r, b)] for r in rounds)
print("median of the per-round ratios over %d rounds:" % len(rounds))
print("  repoc (sharing, batching) / PyTorch      %.2fx" % med("share", "torch"))
print("  repoc without prefix sharing / PyTorch   %.2fx" % med("noshare", "torch"))
print("  repoc without batching / PyTorch         %.2fx" % med("nobatch", "torch"))
print("  prefix sharing / without (both batched)  %.2fx" % med("share", "noshare"))
print("  batching / without (both sharing)        %.2fx" % med("share", "nobatch"))
print("accuracies agree" if len(accs) == 1 else "WARNING: the accuracies differ: %s" % sorted(accs))
PY
