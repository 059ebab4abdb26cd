/* SwiGLU, GeGLU and residual forward/backward (docs/backward.md, "SwiGLU", "GeGLU", "Residual"):
   silu(g) = g σ(g), silu'(g) = σ(g)(1 + g(1 - σ(g)));
   gelu(g) = g (1 + tanh(y)) / 2 with y = k (g + a g³), k = sqrt(2/π), a = 0.044715 (PyTorch's "tanh" GELU),
   gelu'(g) = (1 + tanh y) / 2 + g (1 - tanh² y) k (1 + 3 a g²) / 2. */
#include "model/swiglu.h"

#include <math.h>

#include "common/mathf.h"

void swiglu_forward(real* out, const real* g, const real* u, size_t rows, size_t cols, size_t ld, bf16* out_b16) {
#pragma omp parallel for
    for (size_t r = 0; r < rows; r++) {
        const real *gr = g + r * ld, *ur = u + r * ld;
        real* o = out + r * cols;
#pragma omp simd
        for (size_t i = 0; i < cols; i++) {
            real s = (real)1 / ((real)1 + exp_r(-gr[i]));
            o[i] = gr[i] * s * ur[i];
        }
        if (out_b16) bf16_round_reals(out_b16 + r * cols, o, cols);
    }
}

void swiglu_backward(real* dg, real* du, const real* dout, const real* g, const real* u, size_t rows, size_t cols,
                     size_t ld, bf16* d_b16) {
#pragma omp parallel for
    for (size_t r = 0; r < rows; r++) {
        const real *gr = g + r * ld, *ur = u + r * ld, *d = dout + r * cols;
        real *dgr = dg + r * ld, *dur = du + r * ld;
#pragma omp simd
        for (size_t i = 0; i < cols; i++) { /* g, u read before dg, du are written: they may be g, u */
            real gi = gr[i], ui = ur[i];
            real s = (real)1 / ((real)1 + exp_r(-gi));
            real silu = gi * s;
            dgr[i] = d[i] * ui * s * ((real)1 + gi * ((real)1 - s)); /* ∂m/∂g = u silu'(g) */
            dur[i] = d[i] * silu;                                    /* ∂m/∂u = silu(g) */
        }
        if (d_b16) {
            bf16_round_reals(d_b16 + r * 2 * cols, dgr, cols);
            bf16_round_reals(d_b16 + r * 2 * cols + cols, dur, cols);
        }
    }
}

#define GELU_K 0.7978845608028654 /* sqrt(2/π) */
#define GELU_A 0.044715

/* tanh(y) = 1 - 2 / (exp(2y) + 1): exp_r vectorises where tanh does not; ±1 where exp over- or underflows */
static inline real tanh_r(real y) { return (real)1 - (real)2 / (exp_r(2 * y) + (real)1); }

void geglu_forward(real* out, const real* g, const real* u, size_t rows, size_t cols, size_t ld, bf16* out_b16) {
#pragma omp parallel for
    for (size_t r = 0; r < rows; r++) {
        const real *gr = g + r * ld, *ur = u + r * ld;
        real* o = out + r * cols;
#pragma omp simd
        for (size_t i = 0; i < cols; i++) {
            real x = gr[i], t = tanh_r((real)GELU_K * (x + (real)GELU_A * x * x * x));
            o[i] = (real)0.5 * x * ((real)1 + t) * ur[i];
        }
        if (out_b16) bf16_round_reals(out_b16 + r * cols, o, cols);
    }
}

void geglu_backward(real* dg, real* du, const real* dout, const real* g, const real* u, size_t rows, size_t cols,
                    size_t ld, bf16* d_b16) {
#pragma omp parallel for
    for (size_t r = 0; r < rows; r++) {
        const real *gr = g + r * ld, *ur = u + r * ld, *d = dout + r * cols;
        real *dgr = dg + r * ld, *dur = du + r * ld;
#pragma omp simd
        for (size_t i = 0; i < cols; i++) { /* g, u read before dg, du are written: they may be g, u */
            real x = gr[i], ui = ur[i];
            real t = tanh_r((real)GELU_K * (x + (real)GELU_A * x * x * x));
            real gelu = (real)0.5 * x * ((real)1 + t);
            real dgelu = (real)0.5 * ((real)1 + t) +
                         (real)0.5 * x * ((real)1 - t * t) * (real)GELU_K * ((real)1 + (real)(3 * GELU_A) * x * x);
            dgr[i] = d[i] * ui * dgelu; /* ∂m/∂g = u gelu'(g) */
            dur[i] = d[i] * gelu;       /* ∂m/∂u = gelu(g) */
        }
        if (d_b16) {
            bf16_round_reals(d_b16 + r * 2 * cols, dgr, cols);
            bf16_round_reals(d_b16 + r * 2 * cols + cols, dur, cols);
        }
    }
}

void residual_forward(real* out, const real* a, const real* b, size_t n) {
#pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
