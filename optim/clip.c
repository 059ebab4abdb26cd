/* Global gradient norm, clipping, non-finite detection (optim/clip.h). */
#include "optim/clip.h"

#include <math.h>

/* sum of x² over x[0..n) in double, in a fixed order: 8 interleaved partial
   sums (a layout the compiler can vectorise without reordering), then added
   in index order */
static double sum_squares(const real* x, size_t n) {
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t j = 0; j < 8; j++) acc[j] += (double)x[i + j] * (double)x[i + j];
    for (; i < n; i++) acc[i % 8] += (double)x[i] * (double)x[i];
    double s = 0.0;
    for (size_t j = 0; j < 8; j++) s += acc[j];
    return s;
}

/* chunks summed in parallel, their sums added serially (see clip.h) */
double grad_global_norm(const real* grads, size_t n) {
    double part[NORM_CHUNKS];
    /* chunk c holds q or q+1 elements (the first r chunks one more): the ranges
       depend on n only */
    size_t q = n / NORM_CHUNKS, r = n % NORM_CHUNKS;
#ifdef OMP
#pragma omp parallel for schedule(static)
#endif
    for (size_t c = 0; c < NORM_CHUNKS; c++) {
        size_t lo = c * q + (c < r ? c : r);
        part[c] = sum_squares(grads + lo, q + (c < r));
    }
    double total = 0.0;
    for (size_t c = 0; c < NORM_CHUNKS; c++) total += part[c]; /* serial, fixed order */
    return sqrt(total);
}

/* NaN norms and max_norm 0 fall through to "no clipping" (the caller stops on NaN) */
double grad_clip_scale(double max_norm, double norm) { return max_norm > 0 && norm > max_norm ? max_norm / norm : 1.0; }

/* table order, so the name reported is the first tensor in the model */
long first_nonfinite_tensor(const TensorTable* tt, const real* grads) {
    for (size_t k = 0; k < tt->n; k++) {
        const TensorInfo* t = &tt->t[k];
        if (t->grad_offset == NO_GRAD) continue;
        const real* g = grads + t->grad_offset;
        for (size_t i = 0; i < t->numel; i++)
            if (!isfinite(g[i])) return (long)k;
    }
    return -1;
}
