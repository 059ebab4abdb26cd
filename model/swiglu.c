/* SwiGLU and residual forward/backward (docs/design.md, "SwiGLU", "Residual"):
   silu(g) = g σ(g), silu'(g) = σ(g)(1 + g(1 - σ(g))). */
#include "model/swiglu.h"

#include <math.h>

#include "common/mathf.h"

void swiglu_forward(real* out, const real* g, const real* u, size_t n) {
#pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) {
        real s = (real)1 / ((real)1 + exp_r(-g[i]));
        out[i] = g[i] * s * u[i];
    }
}

void swiglu_backward(real* dg, real* du, const real* dout, const real* g, const real* u, size_t n) {
#pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) {
        real s = (real)1 / ((real)1 + exp_r(-g[i]));
        real silu = g[i] * s;
        dg[i] = dout[i] * u[i] * s * ((real)1 + g[i] * ((real)1 - s));   /* ∂m/∂g = u silu'(g) */
        du[i] = dout[i] * silu;                                          /* ∂m/∂u = silu(g) */
    }
}

void residual_forward(real* out, const real* a, const real* b, size_t n) {
#pragma omp parallel for simd
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
