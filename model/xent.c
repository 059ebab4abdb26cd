/* Fused softmax cross-entropy with z-loss, optionally weighted per row (docs/backward.md,
   "Cross-entropy with z-loss and weights"):
     loss = (1/W) Σ_valid w_n [lse - logit_target + c lse²],   W = Σ_valid w_n  (w = 1: W = n)
     dlogits = w_n (softmax - onehot + 2 c lse softmax) / W,  0 on ignored rows. */
#include "model/xent.h"

#include <math.h>
#include <string.h>

#include "common/mathf.h"

/* max_i x_i of a row: a vector reduction (the same value; a NaN row's loss is NaN either way) */
static real row_max(const real* x, size_t V) {
    real mx = x[0];
#pragma omp simd reduction(max : mx)
    for (size_t i = 1; i < V; i++) mx = x[i] > mx ? x[i] : mx;
    return mx;
}

/* lse = log Σ_i exp(x_i) of a row, as max + log Σ exp(x_i - max) */
static double row_lse(const real* x, size_t V) {
    real mx = row_max(x, V);
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (size_t i = 0; i < V; i++) sum += exp_nonpos_r(x[i] - mx); /* each term in [0, 1]; summed in double */
    return (double)mx + log(sum);
}

/* The sums run over XENT_CHUNKS fixed ranges of rows, each in row order, then over the ranges in order: the
   same bits at any thread count (an OpenMP reduction adds in the threads' order), and the row weights' sum W
   scales the gradient */
#define XENT_CHUNKS 64

/* row n's share of the sums: weight w, its loss lse - logit_target, its lse */
static void add_row(XentSums* s, double w, double row, double l, double z_loss) {
    s->total += w * (row + z_loss * l * l);
    s->z += w * z_loss * l * l; /* the z-loss share, logged apart (total is unchanged) */
    s->weight += w;
    s->n_valid++;
}

static XentSums sum_parts(const XentSums* part) {
    XentSums s = {0};
    for (size_t c = 0; c < XENT_CHUNKS; c++) {
        s.total += part[c].total;
        s.z += part[c].z;
        s.weight += part[c].weight;
        s.n_valid += part[c].n_valid;
    }
    return s;
}

XentSums xent_forward_sum(real* losses, real* lse, const real* logits, const int32_t* targets, const real* weights,
                          size_t N, size_t V, double z_loss) {
    XentSums part[XENT_CHUNKS] = {{0}};
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < XENT_CHUNKS; c++)
        for (size_t n = N * c / XENT_CHUNKS; n < N * (c + 1) / XENT_CHUNKS; n++) {
            const real* x = logits + n * V;
            double l = row_lse(x, V);
            lse[n] = (real)l;
            double row = 0.0;
            if (targets[n] >= 0) {
                row = l - (double)x[targets[n]];
                add_row(&part[c], weights ? (double)weights[n] : 1.0, row, l, z_loss);
            }
            if (losses) losses[n] = (real)row;
        }
    return sum_parts(part);
}

/* row n of xent_forward_grad: its loss and lse, and its logits replaced by their gradient (times W) */
static void grad_row(XentSums* s, real* losses, real* lse, real* logits, const int32_t* targets, const real* weights,
                     size_t n, size_t V, double z_loss) {
    real* x = logits + n * V;
    if (targets[n] < 0) { /* its lse as the plain forward gives it, then G = 0 */
        lse[n] = (real)row_lse(x, V);
        if (losses) losses[n] = 0;
        memset(x, 0, V * sizeof(real));
        return;
    }
    real mx = row_max(x, V), xt = x[targets[n]];
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (size_t i = 0; i < V; i++) { /* e_i = exp(x_i - max), kept in place of the logit */
        x[i] = exp_nonpos_r(x[i] - mx);
        sum += x[i];
    }
    double l = (double)mx + log(sum), w = weights ? (double)weights[n] : 1.0, row = l - (double)xt;
    lse[n] = (real)l;
    if (losses) losses[n] = (real)row;
    add_row(s, w, row, l, z_loss);
    /* ∂/∂x_i of w (lse + c lse² - x_t) = w (1 + 2 c lse) softmax_i - w [i = t]; softmax_i = e_i / sum.
       The row is still in cache from the pass above. */
    real coef = (real)(w * (1.0 + 2.0 * z_loss * l) / sum);
#pragma omp simd
    for (size_t i = 0; i < V; i++) x[i] *= coef;
    x[targets[n]] -= (real)w;
}

XentSums xent_forward_grad(real* losses, real* lse, real* logits, const int32_t* targets, const real* weights, size_t N,
                           size_t V, double z_loss) {
    XentSums part[XENT_CHUNKS] = {{0}};
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < XENT_CHUNKS; c++)
        for (size_t n = N * c / XENT_CHUNKS; n < N * (c + 1) / XENT_CHUNKS; n++)
            grad_row(&part[c], losses, lse, logits, targets, weights, n, V, z_loss);
    return sum_parts(part);
}

double xent_forward(real* losses, real* lse, const real* logits, const int32_t* targets, const real* weights, size_t N,
                    size_t V, double z_loss, XentSums* sums) {
    XentSums s = xent_forward_sum(losses, lse, logits, targets, weights, N, V, z_loss);
    if (sums) *sums = s;
    return s.n_valid ? s.total / s.weight : 0.0;
}

void xent_backward(real* logits, const real* lse, const int32_t* targets, const real* weights, size_t N, size_t V,
                   double z_loss, double weight_sum, double dloss) {
    double unit = weight_sum > 0 ? dloss / weight_sum : 0.0;
#pragma omp parallel for
    for (size_t n = 0; n < N; n++) {
        real* x = logits + n * V;
        if (targets[n] < 0) {
            memset(x, 0, V * sizeof(real));
            continue;
        }
        real l = lse[n];
        double scale = weights ? unit * (double)weights[n] : unit;
        real coef = (real)(scale * (1.0 + 2.0 * z_loss * l)); /* softmax term, with the z-loss share */
#pragma omp simd
        for (size_t i = 0; i < V; i++) x[i] = coef * exp_nonpos_r(x[i] - l);
        x[targets[n]] -= (real)scale;
    }
}
