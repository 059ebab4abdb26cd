/* SwiGLU and residual forward/backward (docs/backward.md, "SwiGLU", "Residual"):
   silu(g) = g σ(g), silu'(g) = σ(g)(1 + g(1 - σ(g))). */
#include "model/swiglu.h"

#include <math.h>

#include "common/mathf.h"

void swiglu_forward(real* out, const real* g, const real* u, size_t rows, size_t cols, size_t ld) {
#pragma omp parallel for
    for (size_t r = 0; r < rows; r++) {
        const real *gr = g + r * ld, *ur = u + r * ld;
        real* o = out + r * cols;
#pragma omp simd
        for (size_t i = 0; i < cols; i++) {
            real s = (real)1 / ((real)1 + exp_r(-gr[i]));
            o[i] = gr[i] * s * ur[i];
        }
    }
}

void swiglu_backward(real* dg, real* du, const real* dout, const real* g, const real* u, size_t rows, size_t cols,
                     size_t ld) {
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
    }
}

void residual_forward(real* out, const real* a, const real* b, size_t n) {
#pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
