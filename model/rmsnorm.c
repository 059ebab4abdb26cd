/* RMSNorm forward and backward (docs/backward.md, "RMSNorm and QK-norm"). Sums run in double: C can be
   thousands wide and the norm feeds every layer. */
#include "model/rmsnorm.h"

#include <math.h>

/* out = (w + off) ⊙ x r, plus res when res is not NULL (out may be res) */
static void norm_rows(real* out, real* rstd, const real* res, const real* inp, const real* weight, real off, size_t N,
                      size_t C, double eps) {
#pragma omp parallel for
    for (size_t n = 0; n < N; n++) {
        const real* x = inp + n * C;
        double ss = 0.0;
#pragma omp simd reduction(+ : ss)
        for (size_t c = 0; c < C; c++) ss += (double)x[c] * x[c];
        real r = (real)(1.0 / sqrt(ss / (double)C + eps));
        real* y = out + n * C;
        if (res)
            for (size_t c = 0; c < C; c++) y[c] = res[n * C + c] + (weight[c] + off) * (x[c] * r);
        else
            for (size_t c = 0; c < C; c++) y[c] = (weight[c] + off) * (x[c] * r);
        rstd[n] = r;
    }
}

void rmsnorm_forward(real* out, real* rstd, const real* inp, NormGain g, size_t N, size_t C, double eps) {
    norm_rows(out, rstd, NULL, inp, g.w, g.off, N, C, eps);
}

void rmsnorm_residual_forward(real* out, real* rstd, const real* res, const real* inp, NormGain g, size_t N, size_t C,
                              double eps) {
    norm_rows(out, rstd, res, inp, g.w, g.off, N, C, eps);
}

void rmsnorm_backward(real* dinp, real* dweight, const real* dout, const real* inp, NormGain g, const real* rstd,
                      real* work, size_t N, size_t C, bool add) {
    const real* weight = g.w;
    real off = g.off;
    /* g = dy ⊙ (w + off) ;  dx (+)= r g - x r³ (g·x) / C ;  dw += Σ_n dy ⊙ x r, summed per chunk of rows into
       work (one pass over dy and x), then over the chunks in order: the same bits for any thread count */
    size_t rows = (N + RMSNORM_CHUNKS - 1) / RMSNORM_CHUNKS;
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < RMSNORM_CHUNKS; k++) {
        real* part = dweight ? work + k * C : NULL;
        if (part)
            for (size_t c = 0; c < C; c++) part[c] = 0;
        size_t n1 = (k + 1) * rows < N ? (k + 1) * rows : N;
        for (size_t n = k * rows; n < n1; n++) {
            const real* x = inp + n * C;
            const real* dy = dout + n * C;
            real r = rstd[n];
            double gx = 0.0;
#pragma omp simd reduction(+ : gx)
            for (size_t c = 0; c < C; c++) gx += (double)dy[c] * (weight[c] + off) * x[c];
            real proj = (real)(gx * r * r * r / (double)C);
            real* dx = dinp + n * C;
            if (add)
                for (size_t c = 0; c < C; c++) dx[c] += r * (dy[c] * (weight[c] + off)) - x[c] * proj;
            else
                for (size_t c = 0; c < C; c++) dx[c] = r * (dy[c] * (weight[c] + off)) - x[c] * proj;
            if (part)
                for (size_t c = 0; c < C; c++) part[c] += dy[c] * x[c] * r;
        }
    }
    if (!dweight) return;
#pragma omp parallel for
    for (size_t c = 0; c < C; c++) {
        real s = 0;
        for (size_t k = 0; k < RMSNORM_CHUNKS; k++) s += work[k * C + c];
        dweight[c] += s;
    }
}
