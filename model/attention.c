/* Causal GQA attention, forward and backward (DESIGN.md §3 "Attention").
   Forward streams the keys of each query row in blocks with an online softmax
   (running max and sum), keeping only O and lse = log Σ_j exp(s_j).
   Backward recomputes p_j = exp(s_j - lse) and uses
     D = rowsum(dP ⊙ P) = dO·O,  dS = P ⊙ (dP - D),
     dq += dS k / sqrt(hd),  dk += dS^T q / sqrt(hd),  dv += P^T dO.
   Forward is parallel over (batch, head); backward over (batch, kv head), so
   the query heads that share a kv head never race on its dk, dv. */
#include "model/attention.h"

#include <math.h>

#include "common/check.h"

#define ATT_BLOCK 64
#define ATT_MAX_HD 512

static inline real dot(const real* a, const real* b, size_t n) {
    real s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

void attention_forward(real* out, real* lse, const real* q, const real* k, const real* v,
                       size_t B, size_t T, size_t H, size_t KVH, size_t hd) {
    CHECK(hd <= ATT_MAX_HD && H % KVH == 0, "attention: hd %zu (max %d), H %zu, KVH %zu", hd, ATT_MAX_HD, H, KVH);
    size_t group = H / KVH, qs = H * hd, ks = KVH * hd;
    real scale = (real)(1.0 / sqrt((double)hd));
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (size_t b = 0; b < B; b++) {
        for (size_t h = 0; h < H; h++) {
            size_t g = h / group;
            for (size_t t = 0; t < T; t++) {
                const real* q_t = q + (b * T + t) * qs + h * hd;
                real acc[ATT_MAX_HD];
                real s[ATT_BLOCK];
                for (size_t i = 0; i < hd; i++) acc[i] = 0;
                real m = -INFINITY, l = 0;
                for (size_t j0 = 0; j0 <= t; j0 += ATT_BLOCK) {
                    size_t j1 = j0 + ATT_BLOCK <= t + 1 ? j0 + ATT_BLOCK : t + 1;
                    real bm = -INFINITY;
                    for (size_t j = j0; j < j1; j++) {
                        s[j - j0] = scale * dot(q_t, k + (b * T + j) * ks + g * hd, hd);
                        if (s[j - j0] > bm) bm = s[j - j0];
                    }
                    real m_new = bm > m ? bm : m;
                    real corr = (real)exp(m - m_new);   /* rescale what was summed under the old max */
                    l *= corr;
                    for (size_t i = 0; i < hd; i++) acc[i] *= corr;
                    for (size_t j = j0; j < j1; j++) {
                        real p = (real)exp(s[j - j0] - m_new);
                        l += p;
                        const real* v_j = v + (b * T + j) * ks + g * hd;
#pragma omp simd
                        for (size_t i = 0; i < hd; i++) acc[i] += p * v_j[i];
                    }
                    m = m_new;
                }
                real* o_t = out + (b * T + t) * qs + h * hd;
                for (size_t i = 0; i < hd; i++) o_t[i] = acc[i] / l;
                lse[(b * T + t) * H + h] = m + (real)log(l);
            }
        }
    }
}

void attention_backward(real* dq, real* dk, real* dv, const real* dout,
                        const real* out, const real* lse, const real* q, const real* k, const real* v,
                        size_t B, size_t T, size_t H, size_t KVH, size_t hd) {
    size_t group = H / KVH, qs = H * hd, ks = KVH * hd;
    real scale = (real)(1.0 / sqrt((double)hd));
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (size_t b = 0; b < B; b++) {
        for (size_t g = 0; g < KVH; g++) {
            for (size_t h = g * group; h < (g + 1) * group; h++) {
                for (size_t t = 0; t < T; t++) {
                    size_t row = (b * T + t) * qs + h * hd;
                    const real* q_t = q + row;
                    const real* do_t = dout + row;
                    real* dq_t = dq + row;
                    real D = dot(do_t, out + row, hd);        /* rowsum(dP ⊙ P) */
                    real lse_t = lse[(b * T + t) * H + h];
                    for (size_t j = 0; j <= t; j++) {
                        size_t kv = (b * T + j) * ks + g * hd;
                        real p = (real)exp(scale * dot(q_t, k + kv, hd) - lse_t);
                        real dp = dot(do_t, v + kv, hd);           /* dP = dO v^T */
                        real ds = p * (dp - D) * scale;           /* dS, with the 1/sqrt(hd) folded in */
                        real* dk_j = dk + kv;
                        real* dv_j = dv + kv;
                        const real* k_j = k + kv;
#pragma omp simd
                        for (size_t i = 0; i < hd; i++) {
                            dq_t[i] += ds * k_j[i];
                            dk_j[i] += ds * q_t[i];
                            dv_j[i] += p * do_t[i];
                        }
                    }
                }
            }
        }
    }
}
