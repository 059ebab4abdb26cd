#!/usr/bin/env bash
# The README's mixture figure: a small model trained on two byte-level sources
# that ship with Debian (licence texts and C headers, one token per byte),
# mixed 3:1, per-source validation, WSD schedule, rope and repo side by side,
# then build/plot of both runs into WORKDIR/mixture_example.svg; --docs writes it over the README's
# docs/mixture_example.svg instead.
# Usage: tools/mixture_example.sh [--docs] [WORKDIR]   (about two minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
out=
if [ "${1:-}" = --docs ]; then out=docs/mixture_example.svg; shift; fi
W=${1:-build/mixture_example}
out=${out:-$W/mixture_example.svg}
mkdir -p "$W"
make --no-print-directory -s build/train build/plot
# shellcheck source=tools/mixture_data.sh
. tools/mixture_data.sh
mixture_data "$W"
for mode in rope repo; do
    cat >"$W/$mode.json" <<JSON
{"run": {"out_dir": "$W/$mode", "seed": 1, "overwrite": true},
 "model": {"vocab_size": 256, "d_model": 64, "n_layers": 3, "n_heads": 4, "d_ff": 192, "positions": {"mode": "$mode"}},
 "data": {"train": [{"name": "prose", "files": ["$W/prose.u16"], "weight": 3},
                    {"name": "code", "files": ["$W/code.u16"], "weight": 1}],
          "val": [{"name": "prose", "files": ["$W/prose_val.u16"]}, {"name": "code", "files": ["$W/code_val.u16"]}],
          "seq_len": 128},
 "optim": {"lr": 3e-3, "warmup_steps": 20, "schedule": "wsd", "decay_fraction": 0.3},
 "train": {"batch_size": 8, "steps": 300, "log_every": 5, "eval_every": 50, "eval_batches": 4, "save_every": 0}}
JSON
    build/train "$W/$mode.json" >"$W/$mode.log" 2>&1
    tail -n 2 "$W/$mode.log"
done
build/plot "$W/rope" "$W/repo" --out "$out"
