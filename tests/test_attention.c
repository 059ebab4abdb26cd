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
    AttnShape as = {B, T, H, KVH, hd, (real)scale, start ? &docs : NULL};
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
    printf("test_attention: %d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}
