#!/usr/bin/env bash
# tools/state_dtype_quality.sh [OUT_SVG]: AdamW moments in bf16 (stochastic
# rounding) vs f32 on real text: the Debian licence texts under
# /usr/share/common-licenses, as bytes (vocab 256), 90% train / 10% validation.
# A small OLMo-2 model (D=64, L=4, T=64, B=8), 300 steps, for beta2 0.95 and
# 0.999, the four runs side by side (one thread each); prints the final validation losses and their relative difference and
# writes the validation curves as an SVG (default docs/state_dtype_quality.svg).
# Never part of `make test` (a few minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
SVG=${1:-docs/state_dtype_quality.svg}
STEPS=${QUALITY_STEPS:-300}
make --no-print-directory -s build/train
T=$(mktemp -d /tmp/repoc_quality.XXXXXX)
trap 'rm -rf "$T"' EXIT
cat /usr/share/common-licenses/* > "$T/text"
n=$(wc -c < "$T/text")
head -c $((n * 9 / 10)) "$T/text" > "$T/train.txt"
tail -c $((n - n * 9 / 10)) "$T/text" > "$T/val.txt"
for s in train val; do   # bytes -> little-endian u16 tokens
    od -An -v -tu1 "$T/$s.txt" | tr -s ' ' '\n' | grep -v '^$' |
        awk 'BEGIN { ORS = "" } { printf "%c%c", $1, 0 }' LC_ALL=C > "$T/$s.u16"
done
run() {  # beta2 state_dtype
    local b2=$1 dt=$2
    cat > "$T/c_${b2}_$dt.json" <<JSON
{"run": {"out_dir": "$T/run_${b2}_$dt", "seed": 1, "threads": 1, "resume": "never", "overwrite": true},
 "model": {"vocab_size": 256, "d_model": 64, "n_layers": 4, "n_heads": 4, "d_ff": 192,
           "positions": {"mode": "repo", "repo_start_layer": 2}},
 "data": {"train": ["$T/train.u16"], "val": ["$T/val.u16"], "format": "u16", "seq_len": 64},
 "optim": {"lr": 3e-3, "warmup_steps": 30, "beta2": $b2, "state_dtype": "$dt"},
 "train": {"batch_size": 8, "steps": $STEPS, "log_every": 50, "eval_every": 25, "eval_batches": 16, "save_every": 0}}
JSON
    build/train "$T/c_${b2}_$dt.json" > "$T/log_${b2}_$dt" 2>&1 || { tail -5 "$T/log_${b2}_$dt"; return 1; }
    grep -o '"step": [0-9]*, "val_loss": [0-9.e-]*' "$T/run_${b2}_$dt/metrics.jsonl" |
        awk '{ gsub(/,/, ""); print $2, $4 }' > "$T/val_${b2}_$dt"
}
pids=()
for b2 in 0.95 0.999; do for dt in f32 bf16; do run $b2 $dt & pids+=($!); done; done
for p in "${pids[@]}"; do wait "$p"; done
for b2 in 0.95 0.999; do
    f=$(tail -n 1 "$T/val_${b2}_f32" | cut -d' ' -f2); b=$(tail -n 1 "$T/val_${b2}_bf16" | cut -d' ' -f2)
    awk -v f="$f" -v b="$b" -v b2="$b2" 'BEGIN { printf "beta2 %s: final validation loss f32 %.4f  bf16 %.4f  relative difference %+.3f%%\n", b2, f, b, 100 * (b - f) / f }'
done
# the SVG: validation loss against step, four curves
awk -v steps="$STEPS" '
    FNR == 1 { k++; name[k] = FILENAME; sub(/.*val_/, "", name[k]) }
    { x[k, FNR] = $1; y[k, FNR] = $2; n[k] = FNR; if (!lo || $2 < lo) lo = $2; if ($2 > hi) hi = $2 }
    END {
        W = 640; H = 400; L = 60; R = 150; Tp = 20; B = 40
        print "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" W "\" height=\"" H "\" font-family=\"sans-serif\" font-size=\"12\">"
        print "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>"
        printf "<text x=\"%d\" y=\"14\">validation loss (nats/byte), Debian licence texts, bf16 vs f32 AdamW state</text>\n", L
        printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", L, H - B, W - R, H - B
        printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", L, Tp, L, H - B
        for (t = 0; t <= 4; t++) {
            v = lo + (hi - lo) * t / 4; yy = H - B - (H - B - Tp) * t / 4
            printf "<text x=\"5\" y=\"%.1f\">%.3f</text>\n", yy + 4, v
            s = steps * t / 4; xx = L + (W - R - L) * t / 4
            printf "<text x=\"%.1f\" y=\"%d\">%d</text>\n", xx - 8, H - B + 16, s
        }
        printf "<text x=\"%d\" y=\"%d\">step</text>\n", (W - R) / 2, H - 5
        split("#1f77b4 #aec7e8 #d62728 #ff9896", col, " ")
        for (c = 1; c <= k; c++) {
            pts = ""
            for (i = 1; i <= n[c]; i++)
                pts = pts sprintf("%.1f,%.1f ", L + (W - R - L) * x[c, i] / steps, H - B - (H - B - Tp) * (y[c, i] - lo) / (hi - lo))
            dash = name[c] ~ /bf16/ ? " stroke-dasharray=\"5,3\"" : ""
            printf "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"%s\"/>\n", col[c], dash, pts
            printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", W - R + 10, Tp + 20 * c, W - R + 35, Tp + 20 * c, col[c], dash
            lab = name[c]; sub(/_/, " ", lab)
            printf "<text x=\"%d\" y=\"%d\">beta2 %s</text>\n", W - R + 40, Tp + 20 * c + 4, lab
        }
        print "</svg>"
    }' "$T/val_0.95_f32" "$T/val_0.95_bf16" "$T/val_0.999_f32" "$T/val_0.999_bf16" > "$SVG"
echo "wrote $SVG"
