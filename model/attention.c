/* Causal GQA attention, forward and backward (docs/design.md, "Attention"), tiled
   in the FlashAttention-2 manner so no T×T matrix is ever stored:
   - forward, one task per (batch, head, block of ATT_BQ queries): keys and values
     stream by in blocks of ATT_BK (the key block transposed once, so each score
     row is a vectorised loop over keys); an online softmax keeps the running max
     and sum per row; only O and lse = log Σ_j exp(s_j) are written;
   - backward, one task per (batch, kv head), so the query heads sharing a kv head
     never race on its dk, dv: for each key block, every later query row
     recomputes p_j = exp(s_j - lse) and applies
       delta = rowsum(dP ⊙ P) = dO·O,  dS = P ⊙ (dP - delta),
       dq += dS k / sqrt(hd),  dk += dS^T q / sqrt(hd),  dv += P^T dO.
   Works for any T (partial blocks) and any hd <= ATT_MAX_HD.
   Document masking narrows each query row's keys from [0, t] to [start_t, t]: the forward
   begins at the key block holding the query block's first start (starts never decrease
   along a row), the backward ends each key block's query loop at the end of the document
   holding the block's last key, and inside a block each row uses the key range
   [max(start_t - j0, 0), n). Whole key blocks outside a document are never visited, and
   without masking the ranges are the causal ones: no per-key test. */
#include "model/attention.h"

#include <math.h>

#include "common/check.h"
#include "common/mathf.h"

#define ATT_BQ 32
#define ATT_BK 64
#define ATT_MAX_HD 256

/* kT[d][j] = k[j][d] for the nk rows of one key block (row stride ks) */
static void transpose_block(real* kT, const real* k, size_t nk, size_t ks, size_t hd) {
    for (size_t j = 0; j < nk; j++)
        for (size_t d = 0; d < hd; d++) kT[d * ATT_BK + j] = k[j * ks + d];
}

/* s[j] = scale q·k_j for j < n, from the transposed block */
static inline void scores(real* s, const real* q, const real* kT, size_t n, size_t hd, real scale) {
    for (size_t j = 0; j < n; j++) s[j] = 0;
    for (size_t d = 0; d < hd; d++) {
        real qd = q[d] * scale;
        const real* row = kT + d * ATT_BK;
#pragma omp simd
        for (size_t j = 0; j < n; j++) s[j] += qd * row[j];
    }
}

/* forward for query rows [t0, t1) of head h in batch row b */
/* Both block functions are inlined at two call sites, one with the spans NULL: there every span test folds
   away, and the unmasked path runs the plain causal code. */
#define ATT_INLINE static inline __attribute__((always_inline))

ATT_INLINE void forward_block(real* out, real* lse, const real* q, const real* k, const real* v, const int32_t* start,
                          size_t b, size_t h, size_t t0, size_t t1, size_t T, size_t H, size_t KVH, size_t hd) {
    size_t g = h / (H / KVH), qs = H * hd, ks = KVH * hd, nq = t1 - t0;
    real scale = (real)(1.0 / sqrt((double)hd));
    real acc[ATT_BQ][ATT_MAX_HD], m[ATT_BQ], l[ATT_BQ], s[ATT_BK], kT[ATT_MAX_HD * ATT_BK];
    for (size_t i = 0; i < nq; i++) {
        m[i] = -INFINITY;
        l[i] = 0;
        for (size_t d = 0; d < hd; d++) acc[i][d] = 0;
    }
    const real* kb_base = k + b * T * ks + g * hd;
    const real* vb_base = v + b * T * ks + g * hd;
    size_t jfirst = start ? (size_t)start[b * T + t0] / ATT_BK * ATT_BK : 0;   /* blocks before it: other docs */
    for (size_t j0 = jfirst; j0 < t1; j0 += ATT_BK) {
        size_t nk = j0 + ATT_BK < t1 ? ATT_BK : t1 - j0;
        transpose_block(kT, kb_base + j0 * ks, nk, ks, hd);
        for (size_t i = 0; i < nq; i++) {
            size_t t = t0 + i;
            if (j0 > t) continue;
            size_t n = t + 1 - j0 < nk ? t + 1 - j0 : nk;   /* causal: keys j <= t */
            size_t st = start ? (size_t)start[b * T + t] : 0, jlo = st > j0 ? st - j0 : 0;   /* keys j >= start_t */
            if (jlo >= n) continue;
            scores(s + jlo, q + (b * T + t) * qs + h * hd, kT + jlo, n - jlo, hd, scale);
            real bm = m[i];
            for (size_t j = jlo; j < n; j++) bm = s[j] > bm ? s[j] : bm;
            real corr = exp_r(m[i] - bm);   /* rescale what was summed under the old max */
            real sum = 0;
#pragma omp simd reduction(+ : sum)
            for (size_t j = jlo; j < n; j++) {
                s[j] = exp_r(s[j] - bm);
                sum += s[j];
            }
            l[i] = l[i] * corr + sum;
            m[i] = bm;
            real* a = acc[i];
            for (size_t d = 0; d < hd; d++) a[d] *= corr;
            for (size_t j = jlo; j < n; j++) {
                const real* vj = vb_base + (j0 + j) * ks;
                real p = s[j];
#pragma omp simd
                for (size_t d = 0; d < hd; d++) a[d] += p * vj[d];
            }
        }
    }
    for (size_t i = 0; i < nq; i++) {
        size_t row = (b * T + t0 + i);
        real inv = 1 / l[i];
        for (size_t d = 0; d < hd; d++) out[row * qs + h * hd + d] = acc[i][d] * inv;
        lse[row * H + h] = m[i] + (real)log(l[i]);
    }
}

void doc_spans_from_ids(int32_t* start, int32_t* end, const int32_t* doc, size_t B, size_t T) {
    for (size_t b = 0; b < B; b++) {
        const int32_t* d = doc + b * T;
        int32_t* s = start + b * T;
        int32_t* e = end + b * T;
        for (size_t t = 0; t < T; t++) s[t] = t > 0 && d[t] == d[t - 1] ? s[t - 1] : (int32_t)t;
        for (size_t t = T; t-- > 0;) e[t] = t + 1 < T && d[t] == d[t + 1] ? e[t + 1] : (int32_t)(t + 1);
    }
}

void attention_forward(real* out, real* lse, const real* q, const real* k, const real* v, const DocSpans* docs,
                       size_t B, size_t T, size_t H, size_t KVH, size_t hd) {
    CHECK(hd <= ATT_MAX_HD && H % KVH == 0, "attention: hd %zu (max %d), H %zu, KVH %zu", hd, ATT_MAX_HD, H, KVH);
    size_t nqb = (T + ATT_BQ - 1) / ATT_BQ;
    /* later query blocks see more keys: dynamic scheduling evens the load */
#pragma omp parallel for collapse(3) schedule(dynamic, 1)
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t qb = 0; qb < nqb; qb++) {
                size_t t0 = qb * ATT_BQ, t1 = t0 + ATT_BQ < T ? t0 + ATT_BQ : T;
                if (docs) forward_block(out, lse, q, k, v, docs->start, b, h, t0, t1, T, H, KVH, hd);
                else forward_block(out, lse, q, k, v, NULL, b, h, t0, t1, T, H, KVH, hd);
            }
}

/* backward for kv head g of batch row b: all its query heads, all key blocks */
ATT_INLINE void backward_group(real* dq, real* dk, real* dv, const real* dout, const real* out, const real* lse,
                           const real* q, const real* k, const real* v, const DocSpans* docs, size_t b, size_t g,
                           size_t T, size_t H, size_t KVH, size_t hd) {
    size_t group = H / KVH, qs = H * hd, ks = KVH * hd;
    real scale = (real)(1.0 / sqrt((double)hd));
    real kT[ATT_MAX_HD * ATT_BK], vT[ATT_MAX_HD * ATT_BK], p[ATT_BK], ds[ATT_BK];
    const real* kb_base = k + b * T * ks + g * hd;
    const real* vb_base = v + b * T * ks + g * hd;
    real* dkb = dk + b * T * ks + g * hd;
    real* dvb = dv + b * T * ks + g * hd;
    for (size_t j0 = 0; j0 < T; j0 += ATT_BK) {
        size_t nk = j0 + ATT_BK < T ? ATT_BK : T - j0;
        transpose_block(kT, kb_base + j0 * ks, nk, ks, hd);
        transpose_block(vT, vb_base + j0 * ks, nk, ks, hd);
        /* queries after the document of the block's last key see none of its keys */
        size_t tend = docs ? (size_t)docs->end[b * T + j0 + nk - 1] : T;
        for (size_t h = g * group; h < (g + 1) * group; h++) {
            for (size_t t = j0; t < tend; t++) {
                size_t row = (b * T + t) * qs + h * hd;
                const real* q_t = q + row;
                const real* do_t = dout + row;
                real* dq_t = dq + row;
                size_t n = t + 1 - j0 < nk ? t + 1 - j0 : nk;
                size_t st = docs ? (size_t)docs->start[b * T + t] : 0, jlo = st > j0 ? st - j0 : 0;
                if (jlo >= n) continue;   /* every key of this block is in an earlier document */
                real delta = 0;   /* rowsum(dP ⊙ P) = dO·O, not the model width D */
#pragma omp simd reduction(+ : delta)
                for (size_t d = 0; d < hd; d++) delta += do_t[d] * out[row + d];
                real l = lse[(b * T + t) * H + h];
                scores(p + jlo, q_t, kT + jlo, n - jlo, hd, scale);
#pragma omp simd
                for (size_t j = jlo; j < n; j++) p[j] = exp_r(p[j] - l);
                scores(ds + jlo, do_t, vT + jlo, n - jlo, hd, 1);   /* dP = dO v^T */
#pragma omp simd
                for (size_t j = jlo; j < n; j++) ds[j] = p[j] * (ds[j] - delta) * scale;   /* dS / sqrt(hd) */
                for (size_t j = jlo; j < n; j++) {
                    const real* k_j = kb_base + (j0 + j) * ks;
                    real* dk_j = dkb + (j0 + j) * ks;
                    real* dv_j = dvb + (j0 + j) * ks;
                    real sj = ds[j], pj = p[j];
#pragma omp simd
                    for (size_t d = 0; d < hd; d++) {
                        dq_t[d] += sj * k_j[d];
                        dk_j[d] += sj * q_t[d];
                        dv_j[d] += pj * do_t[d];
                    }
                }
            }
        }
    }
}

void attention_backward(real* dq, real* dk, real* dv, const real* dout,
                        const real* out, const real* lse, const real* q, const real* k, const real* v,
                        const DocSpans* docs, size_t B, size_t T, size_t H, size_t KVH, size_t hd) {
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (size_t b = 0; b < B; b++)
        for (size_t g = 0; g < KVH; g++)
            if (docs) backward_group(dq, dk, dv, dout, out, lse, q, k, v, docs, b, g, T, H, KVH, hd);
            else backward_group(dq, dk, dv, dout, out, lse, q, k, v, NULL, b, g, T, H, KVH, hd);
}
