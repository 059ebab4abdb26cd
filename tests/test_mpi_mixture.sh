#!/usr/bin/env bash
# A two-source mixture under MPI (build/mpi/train): every rank takes its slice
# of the step's rows (data/mixture.h), so 2 ranks x grad_accum 1 read the
# same global batch as 1 rank x grad_accum 2. Checked: the per-source token
# counts are equal, the losses agree within 1e-6 relative (the sums over
# ranks round differently), and so do the per-source validation losses
# (validation batches are split over the ranks).
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" mpi_mixture
export OMP_NUM_THREADS=1

build/tools/gen_tokens "$T/web.u16" 20000 64 1 || exit 1
build/tools/gen_tokens "$T/code.u16" 2000 64 2 || exit 1
config() {  # file out_dir grad_accum order
    cat >"$1" <<JSON
{"run": {"out_dir": "$2", "seed": 3, "threads": 1},
 "model": {"vocab_size": 64, "d_model": 32, "n_layers": 2, "n_heads": 2, "d_ff": 64, "positions": {"mode": "repo"}},
 "data": {"train": [{"name": "web", "files": ["$T/web.u16"], "weight": 0.6}, {"name": "code", "files": ["$T/code.u16"], "weight": 0.4}],
          "val": [{"name": "web", "files": ["$T/web.u16"]}, {"name": "code", "files": ["$T/code.u16"]}],
          "seq_len": 32, "order": "$4"},
 "optim": {"lr": 1e-2, "schedule": "constant", "warmup_steps": 0, "eps": 1.0},
 "train": {"batch_size": 3, "grad_accum": $3, "steps": 6, "log_every": 1, "eval_every": 3, "eval_batches": 3}}
JSON
}
for order in sequential shuffle; do
    config "$T/one.json" "$T/one_$order" 2 $order
    config "$T/two.json" "$T/two_$order" 1 $order
    build/mpi/train "$T/one.json" >"$T/one.log" 2>&1 || { bad "$order: 1 rank failed"; tail -3 "$T/one.log"; continue; }
    mpirun --allow-run-as-root --oversubscribe -np 2 build/mpi/train "$T/two.json" >"$T/two.log" 2>&1 \
        || { bad "$order: 2 ranks failed"; tail -3 "$T/two.log"; continue; }
    python3 - "$T/one_$order/metrics.jsonl" "$T/two_$order/metrics.jsonl" <<'PY' \
        && ok "$order: 2 ranks x grad_accum 1 = 1 rank x grad_accum 2: per-source tokens equal, train and per-source val losses within 1e-6" \
        || bad "$order: the 2-rank run differs from the 1-rank run"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b) == 6 + 3, (len(a), len(b))
worst = 0
for x, y in zip(a, b):
    assert x["step"] == y["step"]
    if "loss" in x:
        assert x["source_tokens"] == y["source_tokens"], (x, y)
        worst = max(worst, abs(x["loss"] - y["loss"]) / x["loss"])
    else:
        assert set(x["val_loss_source"]) == {"web", "code"}
        for k in x["val_loss_source"]:
            worst = max(worst, abs(x["val_loss_source"][k] - y["val_loss_source"][k]) / x["val_loss_source"][k])
print("    worst relative difference %.2e" % worst)
assert worst <= 1e-6
PY
done
echo "test_mpi_mixture: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]
