/* Fused softmax cross-entropy with z-loss (DESIGN.md §3):
     loss = (1/n) Σ_valid [lse - logit_target + c lse²]
     dlogits = (softmax - onehot + 2 c lse softmax) / n,  0 on ignored rows. */
#include "model/xent.h"

#include <math.h>
#include <string.h>

#include "common/mathf.h"

double xent_forward(real* losses, real* lse, const real* logits, const int32_t* targets,
                    size_t N, size_t V, double z_loss, size_t* n_valid) {
    double total = 0.0;
    size_t count = 0;
#pragma omp parallel for reduction(+ : total, count)
    for (size_t n = 0; n < N; n++) {
        const real* x = logits + n * V;
        real mx = x[0];
        for (size_t i = 1; i < V; i++) mx = x[i] > mx ? x[i] : mx;
        double m = mx, sum = 0.0;
#pragma omp simd reduction(+ : sum)
        for (size_t i = 0; i < V; i++) sum += exp_r(x[i] - mx);   /* each term in [0, 1]; summed in double */
        double l = m + log(sum);
        lse[n] = (real)l;
        double row = 0.0;
        if (targets[n] >= 0) {
            row = l - (double)x[targets[n]];
            total += row + z_loss * l * l;
            count++;
        }
        if (losses) losses[n] = (real)row;
    }
    *n_valid = count;
    return count ? total / (double)count : 0.0;
}

void xent_backward(real* logits, const real* lse, const int32_t* targets, size_t N, size_t V,
                   double z_loss, size_t n_valid, double dloss) {
    double scale = n_valid ? dloss / (double)n_valid : 0.0;
#pragma omp parallel for
    for (size_t n = 0; n < N; n++) {
        real* x = logits + n * V;
        if (targets[n] < 0) {
            memset(x, 0, V * sizeof(real));
            continue;
        }
        real l = lse[n];
        real coef = (real)(scale * (1.0 + 2.0 * z_loss * l));   /* softmax term, with the z-loss share */
#pragma omp simd
        for (size_t i = 0; i < V; i++) x[i] = coef * exp_r(x[i] - l);
        x[targets[n]] -= (real)scale;
    }
}
