/* The float attention kernel (model/attention.c) against its plain O(T²) reference in double
   (model/attention_ref.c), forward (out, lse) and backward (dq, dk, dv), over the shapes that take its
   different paths: head sizes that fill whole vector groups, leave a vector or single columns over, or
   are narrower than one vector (the 8-row blocks); T below, at and across the 64-row blocks; GQA; and
   document masks with boundaries inside and on block edges. The gradient checker covers the same code
   in double at small sizes; this test covers the float build at the sizes training uses. Sliding windows
   (Gemma-3) are starts of window_starts, with and without documents, and a scale other than 1/sqrt(hd)
   (query_pre_attn_scalar). The gradient buffers start as NaN: backward writes each before it adds into it.
   The backward's two ways (one task per kv head, or split by key and query block) give the same bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/rng.h"
#include "common/threads.h"
#include "model/attention.h"
#include "model/attention_ref.h"
#include "tests/testutil.h"

static void fill(float* x, size_t n, Rng* rng, double sd) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(sd * rng_normal(rng));
}

static void to_float(float* y, const double* x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = (float)x[i];
}

/* doc_len > 0: documents of doc_len tokens (the last one shorter), shifted by b so rows differ;
   window > 0: a sliding window of that many keys; scalar > 0: scores scaled by scalar^-1/2, not hd^-1/2 */
static void check_window(size_t B, size_t T, size_t H, size_t KVH, size_t hd, size_t doc_len, size_t window,
                         double scalar, Rng* rng) {
    size_t N = B * T, nq = N * H * hd, nk = N * KVH * hd;
    float* f = mallocCheck((7 * nq + 5 * nk + 2 * N * H) * sizeof(float));
    float *q = f, *dout = q + nq, *out = dout + nq, *dq = out + nq, *out_ref = dq + nq, *dq_ref = out_ref + nq;
    float *k = dq_ref + nq, *v = k + nk, *dk = v + nk, *dv = dk + nk, *dk_ref = dv + nk, *dv_ref = dk_ref + nk;
    float *lse = dv_ref + nk, *lse_ref = lse + N * H;
    double* r = mallocCheck((2 * nq + 2 * nk + N * H) * sizeof(double));
    double *ro = r, *rdq = ro + nq, *rdk = rdq + nq, *rdv = rdk + nk, *rlse = rdv + nk;
    fill(q, nq, rng, 1.5);
    fill(k, nk, rng, 1.5);
    fill(v, nk, rng, 1);
    fill(dout, nq, rng, 1);
    int32_t *start = NULL, *ids = NULL;
    if (doc_len) {
        start = mallocCheck(N * sizeof(int32_t));
        ids = mallocCheck(N * sizeof(int32_t));
        for (size_t b = 0; b < B; b++)
            for (size_t t = 0; t < T; t++) ids[b * T + t] = (int32_t)((t + 3 * b) / doc_len);
        doc_starts_from_ids(start, ids, B, T);
    }
    if (window) { /* the window's starts, over the documents' when there are some */
        int32_t* ws = mallocCheck(N * sizeof(int32_t));
        window_starts(ws, start, B, T, window);
        free(start);
        start = ws;
    }
    double scale = 1 / sqrt(scalar > 0 ? scalar : (double)hd);
    DocSpans docs = {start};
    AttnShape as = {B, T, H, KVH, hd, (real)scale, start ? &docs : NULL, false, false, NULL};
    attention_forward(out, lse, q, k, v, &as);
    for (size_t i = 0; i < nq; i++) dq[i] = NAN; /* backward writes every gradient before it adds into it */
    for (size_t i = 0; i < nk; i++) dk[i] = dv[i] = NAN;
    attention_backward(dq, dk, dv, dout, out, lse, q, k, v, &as);
    attention_reference(ro, rlse, rdq, rdk, rdv, q, k, v, dout, &as);
    to_float(out_ref, ro, nq);
    to_float(lse_ref, rlse, N * H);
    to_float(dq_ref, rdq, nq);
    to_float(dk_ref, rdk, nk);
    to_float(dv_ref, rdv, nk);
    char label[96];
    const char* names[5] = {"out", "lse", "dq", "dk", "dv"};
    const float* got[5] = {out, lse, dq, dk, dv};
    const float* ref[5] = {out_ref, lse_ref, dq_ref, dk_ref, dv_ref};
    size_t n[5] = {nq, N * H, nq, nk, nk};
    for (int i = 0; i < 5; i++) {
        snprintf(label, sizeof label, "B%zu T%zu H%zu/%zu hd%zu docs%zu window%zu scalar%g: %s", B, T, H, KVH, hd,
                 doc_len, window, scalar, names[i]);
        /* float rounding over sums of T terms of size ~1: a few 1e-6 (also where the exact value is 0,
           as dq at T = 1, where dP - delta cancels) */
        expect_close(label, got[i], ref[i], n[i], 1e-5, 2e-5, "float kernel vs double reference");
    }
    /* both ways of running the backward, whichever attention_backward chose, give the same bits */
    float* g2 = mallocCheck((nq + 2 * nk) * sizeof(float));
    bool same = true;
    for (int by_blocks = 0; by_blocks < 2; by_blocks++) {
        for (size_t i = 0; i < nq + 2 * nk; i++) g2[i] = NAN;
        attention_backward_by(g2, g2 + nq, g2 + nq + nk, dout, out, lse, (AttnIn3){q, k, v}, &as, by_blocks);
        same = same && !memcmp(g2, dq, nq * sizeof(float)) && !memcmp(g2 + nq, dk, nk * sizeof(float)) &&
               !memcmp(g2 + nq + nk, dv, nk * sizeof(float));
    }
    EXPECT(same,
           "B%zu T%zu H%zu/%zu hd%zu docs%zu window%zu: one task per kv head and the split by blocks give the "
           "same bits",
           B, T, H, KVH, hd, doc_len, window);
    free(g2);
    free(f);
    free(r);
    free(start);
    free(ids);
}

/* BF16 operands (AttnShape.bf16) against the FP32 kernel, on inputs that make every FP32 product and sum of
   both exact: q, k in -2..2 and v, dout in -3..3 (integers, exact in BF16), a power-of-2 scale, sums far below
   2^24. S, lse and dP then come out the same in both kernels, and with the same O (the FP32 forward's) so do P
   and dS: lse must be bit-identical. What differs is BF16's rounding of P and dS in the products that read them
   (relative 2^-8 each) and each kernel's FP32 accumulation over the n terms of a sum (n 2^-24 of the sum of
   the terms' magnitudes). So, per element, with u = 2^-8 + 2 n 2^-24 (n: T, or T times the group for dk, dv):
     out_i: u Σ_j P_ij |v_j|               dv_j: u Σ_h Σ_i P_ij |dO_i|
     dq_i:  u scale Σ_j |dS_ij| |k_j|      dk_j: u scale Σ_h Σ_i |dS_ij| |q_i|
   the sums over the keys j each query i sees (the mask) and the group's heads h; P and dS in double here.
   Where dP_ij - delta_i cancels, the kernels' FP32 dS (the same in both) is not the exact one: delta = dO·O
   is an FP32 sum of hd terms, off by up to hd 2^-24 Σ|dO O|, and a dS of exactly 0 in double can be
   1e-7 in FP32 (seen in a portable build, whose code generation rounds differently); so each |dS_ij| above
   is taken as |P (dP - delta)| + 2 hd 2^-24 P Σ|dO_i O_i|, the FP32 dS's distance from 0 at most. */
typedef struct {
    size_t B, T, H, KVH, hd;
    double scale;
    const int32_t* start; /* each token's first key, or NULL (causal) */
    const float *q, *k, *v, *dout, *out, *lse;
} Bf16Case;

/* the bounds above: tol[0] (out), tol[1] (dq) (B,T,H*hd); tol[2] (dk), tol[3] (dv) (B,T,KVH*hd) */
static void bf16_bounds(double* tol[4], const Bf16Case* c) {
    size_t T = c->T, hd = c->hd, qs = c->H * hd, ks = c->KVH * hd, group = c->H / c->KVH;
    double ut = 0x1p-8 + 2.0 * (double)(T * group) * 0x1p-24;
    for (size_t b = 0; b < c->B; b++)
        for (size_t h = 0; h < c->H; h++)
            for (size_t i = 0; i < T; i++) {
                size_t qi = (b * T + i) * qs + h * hd, j0 = c->start ? (size_t)c->start[b * T + i] : 0;
                double delta = 0, delta_abs = 0;
                for (size_t d = 0; d < hd; d++) {
                    delta += (double)c->dout[qi + d] * c->out[qi + d];
                    delta_abs += fabs((double)c->dout[qi + d] * c->out[qi + d]);
                }
                for (size_t j = j0; j <= i; j++) {
                    size_t kj = (b * T + j) * ks + h / group * hd;
                    double s = 0, dp = 0;
                    for (size_t d = 0; d < hd; d++) {
                        s += (double)c->q[qi + d] * c->k[kj + d];
                        dp += (double)c->dout[qi + d] * c->v[kj + d];
                    }
                    double p = exp(c->scale * s - c->lse[(b * T + i) * c->H + h]);
                    double ds = fabs(p * (dp - delta)) + 2.0 * (double)hd * 0x1p-24 * p * delta_abs;
                    for (size_t d = 0; d < hd; d++) {
                        tol[0][qi + d] += ut * p * fabs(c->v[kj + d]);
                        tol[1][qi + d] += ut * c->scale * ds * fabs(c->k[kj + d]);
                        tol[2][kj + d] += ut * c->scale * ds * fabs(c->q[qi + d]);
                        tol[3][kj + d] += ut * p * fabs(c->dout[qi + d]);
                    }
                }
            }
}

/* how many of the n elements differ by more than tol; *worst: the largest |got - ref| / tol */
static size_t count_beyond(const float* got, const float* ref, const double* tol, size_t n, double* worst) {
    size_t bad = 0;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]);
        bad += !(e <= tol[i]);
        *worst = fmax(*worst, tol[i] > 0 ? e / tol[i] : (e > 0 ? INFINITY : 0));
    }
    return bad;
}

static void fill_int(float* x, size_t n, Rng* rng, int m) {
    for (size_t i = 0; i < n; i++) x[i] = (float)((int)(rng_uniform(rng) * (2 * m + 1)) - m);
}

/* window > 0: a sliding window; doc_len > 0: documents, as check_window; scale 4^-k, the power of 2 nearest
   hd^-1/2 from below */
static void check_bf16(size_t B, size_t T, size_t H, size_t KVH, size_t hd, size_t doc_len, size_t window, Rng* rng) {
    size_t N = B * T, nq = N * H * hd, nk = N * KVH * hd;
    float* f = mallocCheck((6 * nq + 6 * nk + 2 * N * H) * sizeof(float));
    float *q = f, *dout = q + nq, *out = dout + nq, *dq = out + nq, *out16 = dq + nq, *dq16 = out16 + nq;
    float *k = dq16 + nq, *v = k + nk, *dk = v + nk, *dv = dk + nk, *dk16 = dv + nk, *dv16 = dk16 + nk;
    float *lse = dv16 + nk, *lse16 = lse + N * H;
    fill_int(q, nq, rng, 2);
    fill_int(k, nk, rng, 2);
    fill_int(v, nk, rng, 3);
    fill_int(dout, nq, rng, 3);
    int32_t *start = NULL, *mask = NULL; /* mask: document starts, then the window's */
    if (doc_len || window) {
        mask = mallocCheck(2 * N * sizeof(int32_t));
        for (size_t i = 0; i < N; i++) mask[N + i] = doc_len ? (int32_t)((i % T + 3 * (i / T)) / doc_len) : 0;
        doc_starts_from_ids(mask, mask + N, B, T);
        start = mask;
        if (window) window_starts(start = mask + N, doc_len ? mask : NULL, B, T, window);
    }
    double scale = 1;
    while (scale * scale * (double)hd > 1) scale /= 2;
    DocSpans docs = {start};
    AttnShape as = {B, T, H, KVH, hd, (real)scale, start ? &docs : NULL, false, false, NULL};
    attention_forward(out, lse, q, k, v, &as);
    attention_backward(dq, dk, dv, dout, out, lse, q, k, v, &as);
    double* tol[4];
    size_t n[4] = {nq, nq, nk, nk};
    for (int i = 0; i < 4; i++) tol[i] = calloc(n[i], sizeof(double));
    bf16_bounds(tol, &(Bf16Case){B, T, H, KVH, hd, scale, start, q, k, v, dout, out, lse});
    /* on AMX (its whole blocks), then on vdpbf16ps or its emulation: where the CPU has no AMX, only the latter */
    for (int on_amx = amx_usable(); on_amx >= 0; on_amx--) {
        AttnShape a16 = as;
        a16.bf16 = true;
        a16.no_amx = !on_amx;
        const char* kernel = on_amx ? "AMX" : "pairs";
        attention_forward(out16, lse16, q, k, v, &a16);
        attention_backward(dq16, dk16, dv16, dout, out, lse, q, k, v, &a16); /* the FP32 forward's O and lse */
        EXPECT(!memcmp(lse, lse16, N * H * sizeof(float)),
               "bf16 (%s) B%zu T%zu H%zu/%zu hd%zu docs%zu window%zu: lse bit-identical", kernel, B, T, H, KVH, hd,
               doc_len, window);
        const char* names[4] = {"out", "dq", "dk", "dv"};
        const float* got[4] = {out16, dq16, dk16, dv16};
        const float* ref[4] = {out, dq, dk, dv};
        for (int i = 0; i < 4; i++) {
            double worst;
            size_t bad = count_beyond(got[i], ref[i], tol[i], n[i], &worst);
            EXPECT(bad == 0,
                   "bf16 (%s) B%zu T%zu H%zu/%zu hd%zu docs%zu window%zu: %s within the bound of its P, dS rounding "
                   "(%zu of %zu beyond; largest |diff| / bound %.3f)",
                   kernel, B, T, H, KVH, hd, doc_len, window, names[i], bad, n[i], worst);
        }
        /* the backward's two ways give the same bits with BF16 operands too */
        float* g2 = mallocCheck((nq + 2 * nk) * sizeof(float));
        attention_backward_by(g2, g2 + nq, g2 + nq + nk, dout, out, lse, (AttnIn3){q, k, v}, &a16,
                              B * KVH * 3 >= 2 * (size_t)threads_max());
        EXPECT(!memcmp(g2, dq16, nq * sizeof(float)) && !memcmp(g2 + nq, dk16, nk * sizeof(float)) &&
                   !memcmp(g2 + nq + nk, dv16, nk * sizeof(float)),
               "bf16 (%s) B%zu T%zu H%zu/%zu hd%zu: one task per kv head and the split by blocks give the same bits",
               kernel, B, T, H, KVH, hd);
        /* k and v rounded once per call, dK and dV summed dense (AttnShape.work, as a model runs it): the same bits,
           both ways */
        float* f2 = mallocCheck((2 * nq + 4 * nk + N * H) * sizeof(float));
        float *o2 = f2 + nq + 2 * nk, *l2 = o2 + nq, *h2 = l2 + N * H;
        a16.work = mallocCheck(attention_work_size(&a16) * sizeof(real));
        attention_forward(o2, l2, q, k, v, &a16);
        bool same = !memcmp(o2, out16, nq * sizeof(float)) && !memcmp(l2, lse16, N * H * sizeof(float));
        for (int by_blocks = 0; by_blocks < 2; by_blocks++) {
            memcpy(h2, k, nk * sizeof(float)); /* k changed since: a call must round the k it is given */
            for (size_t i = 0; i < nk; i++) h2[i] = -h2[i];
            attention_forward(o2, l2, q, h2, v, &a16);
            attention_backward_by(f2, f2 + nq, f2 + nq + nk, dout, out, lse, (AttnIn3){q, k, v}, &a16, by_blocks);
            same &= !memcmp(f2, dq16, nq * sizeof(float)) && !memcmp(f2 + nq, dk16, nk * sizeof(float)) &&
                    !memcmp(f2 + nq + nk, dv16, nk * sizeof(float));
        }
        EXPECT(
            same,
            "bf16 (%s) B%zu T%zu H%zu/%zu hd%zu: k and v in pairs once per call, dK and dV dense, give the same bits",
            kernel, B, T, H, KVH, hd);
        free(a16.work);
        free(f2);
    }
    for (int i = 0; i < 4; i++) free(tol[i]);
    free(f);
    free(mask);
}

static void check_case(size_t B, size_t T, size_t H, size_t KVH, size_t hd, size_t doc_len, Rng* rng) {
    check_window(B, T, H, KVH, hd, doc_len, 0, 0, rng);
}

int main(void) {
    Rng rng;
    rng_seed(&rng, 11);
    /* sequence lengths and document starts around multiples of ATT_BLOCK_MAX (model/attention.h): block edges
       of every block size the kernel uses */
    const size_t BM = ATT_BLOCK_MAX;
    static const size_t hds[] = {4, 8, 16, 20, 32, 40, 64, 72, 128}; /* vector groups, tails, narrow */
    for (size_t i = 0; i < sizeof hds / sizeof hds[0]; i++) check_case(1, BM + 3, 2, 1, hds[i], 0, &rng);
    const size_t Ts[] = {1, 5, BM - 1, BM, BM + 1, 2 * BM, 3 * BM + 8}; /* below, at, across blocks */
    for (size_t i = 0; i < sizeof Ts / sizeof Ts[0]; i++) check_case(2, Ts[i], 4, 2, 32, 0, &rng);
    check_case(2, 3 * BM + 8, 4, 2, 64, BM, &rng); /* document starts on block edges (row 0) */
    check_case(2, 3 * BM + 8, 4, 4, 48, 37, &rng); /* inside blocks */
    /* a query block past whole earlier key blocks: the one from 2 BM starts in a document that starts at
       BM + 22 */
    check_case(1, 2 * BM + 44, 2, 1, 32, BM + 22, &rng);
    /* sliding windows: inside one block, a block wide (whole key blocks skipped), across documents, at
       Gemma-3-270M's head size 256 with its scale, and one wider than the row (plain causal) */
    check_window(2, BM + 3, 4, 2, 32, 0, 5, 0, &rng);
    check_window(1, 3 * BM + 8, 2, 1, 32, 0, BM - 1, 0, &rng);
    check_window(2, 3 * BM + 8, 4, 2, 16, 37, 50, 0, &rng);
    check_window(1, 2 * BM + 5, 4, 1, 256, 0, BM + 7, 256, &rng);
    check_window(2, 40, 4, 2, 16, 0, 64, 10, &rng);
    /* BF16 operands: head sizes with whole vectors, tails and an odd one (a padded pair), T below, across and
       off the blocks (an odd tile), GQA, documents and a sliding window, Gemma-3's 256 */
    static const size_t bf_hds[] = {5, 16, 40, 64, 72, 128};
    for (size_t i = 0; i < sizeof bf_hds / sizeof bf_hds[0]; i++) check_bf16(1, BM + 3, 2, 1, bf_hds[i], 0, 0, &rng);
    check_bf16(2, 1, 4, 2, 32, 0, 0, &rng);
    check_bf16(2, 2 * BM + 1, 4, 2, 32, 0, 0, &rng);
    check_bf16(2, 3 * BM + 8, 4, 2, 48, 37, 0, &rng);
    check_bf16(2, 2 * BM + 5, 4, 2, 16, 37, 50, &rng);
    check_bf16(1, 2 * BM + 5, 4, 1, 256, 0, BM + 7, &rng);
    /* whole blocks, the AMX kernel's (and a last block of 32 rows): documents, a window, GQA, hd 64 and 128 */
    check_bf16(2, 2 * BM + 32, 4, 2, 64, 37, 0, &rng);
    check_bf16(1, 2 * BM, 4, 1, 128, 0, BM + 7, &rng);
    check_bf16(1, 3 * BM, 2, 2, 32, BM, 0, &rng);
    printf("test_attention: %d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}
