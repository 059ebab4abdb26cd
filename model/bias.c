/* Bias forward and backward (docs/backward.md, "Bias"). */
#include "model/bias.h"

/* columns per task of the backward: each task owns its columns, so the += never races; 16 (one 64-byte line
   of floats) gives 2048 columns 128 tasks */
#define BIAS_COLS 16

void bias_forward(real* out, const real* bias, size_t N, size_t C) {
#pragma omp parallel for
    for (size_t n = 0; n < N; n++) {
        real* y = out + n * C;
#pragma omp simd
        for (size_t c = 0; c < C; c++) y[c] += bias[c];
    }
}

void bias_backward(real* dbias, const real* dout, size_t N, size_t C) {
    /* y[n,c] = ... + b[c]  =>  db[c] += Σ_n dy[n,c], summed in double over the rows in order */
    size_t blocks = (C + BIAS_COLS - 1) / BIAS_COLS;
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < blocks; k++) {
        size_t c0 = k * BIAS_COLS, c1 = c0 + BIAS_COLS < C ? c0 + BIAS_COLS : C;
        double sum[BIAS_COLS] = {0};
        for (size_t n = 0; n < N; n++) {
            const real* dy = dout + n * C;
            for (size_t c = c0; c < c1; c++) sum[c - c0] += dy[c];
        }
        for (size_t c = c0; c < c1; c++) dbias[c] += (real)sum[c - c0];
    }
}
