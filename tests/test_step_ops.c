/* The speed-ups of the training step give the same bits as the plain code (or, where they sum in
   another order, the same values to float rounding):
   1. rope_forward / rope_backward with the angle cache of positions 0..n-1
      (rope_cache_fill) against the same calls computing every angle, on
      integer positions, on positions with a fractional part and on positions
      past the cache (those two are computed either way);
   2. model_build fills the cache for the T positions when a layer is rope, and
      leaves it out when none is;
   3. a whole training step (loss, every gradient) of a model with rope and
      RePo layers, OLMo-2 and Llama blocks, with the cache and with it taken
      away, and with the backward's work space filled with NaN beforehand
      (every backward buffer is written before it is read: nothing is cleared);
   4. the fused head of a training step (model_forward_train: G in the logits
      buffer, dloss / W in the LM head's GEMMs) against model_forward and
      xent_backward, with weights, z-loss and an ignored row: the same loss,
      gradients to float rounding;
   5. linear_forward and linear_backward with a small weight, whose rows the threads split among
      themselves (each calling BLAS on its own rows), against one BLAS call, and through row strides
      against contiguous rows: the same bits;
   6. in a portable build (make PORTABLE=1, REPOC_DISPATCH), the x86-64-v3 and
      x86-64-v4 variants of attention, when this CPU runs both (model/dispatch.c
      chooses between them at load time): forward to the bit, backward to
      float rounding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/cpu_has.h"
#include "common/rng.h"
#include "common/threads.h"
#include "model/attention.h"
#include "model/linear.h"
#include "model/model.h"
#include "model/rope.h"
#include "tests/testutil.h"

/* a (na), b (nb), c (nc), d (nd): N(0,1) draws, in that order, from one stream seeded by seed */
static void fill_normal4(uint64_t seed, real* a, size_t na, real* b, size_t nb, real* c, size_t nc, real* d,
                         size_t nd) {
    Rng rng;
    rng_seed(&rng, seed);
    real* x[4] = {a, b, c, d};
    size_t n[4] = {na, nb, nc, nd};
    for (int j = 0; j < 4; j++)
        for (size_t i = 0; i < n[j]; i++) x[j][i] = (real)rng_normal(&rng);
}

static int same_bits(const real* a, const real* b, size_t n) { return memcmp(a, b, n * sizeof(real)) == 0; }

/* rope forward and backward on (N, H, KVH, P=KVH) with and without the cache of n_cache positions */
static void check_rope_cache(const real* pos, size_t N, size_t n_cache, const char* what) {
    size_t H = 4, KVH = 2, hd = 16, half = hd / 2, qd = H * hd, kvd = KVH * hd;
    RopeTable plain, cached;
    rope_table_init(&plain, hd, 10000.0, 4.0, 64, 32, 1, 0); /* YaRN on: m != 1 goes through the cache too */
    cached = plain;
    double* cs = mallocCheck(n_cache * half * sizeof(double));
    double* sn = mallocCheck(n_cache * half * sizeof(double));
    rope_cache_fill(&cached, cs, sn, n_cache);
    size_t nq = N * qd, nk = N * kvd;
    real* buf = calloc(6 * nq + 6 * nk + 2 * N * KVH, sizeof(real));
    real *q1 = buf, *q2 = q1 + nq, *dq = q2 + nq, *dqin1 = dq + nq, *dqin2 = dqin1 + nq, *k1 = dqin2 + nq;
    real *k2 = k1 + nk, *dk = k2 + nk, *dkin1 = dk + nk, *dkin2 = dkin1 + nk, *dp1 = dkin2 + nk, *dp2 = dp1 + N * KVH;
    fill_normal4(5, q1, nq, k1, nk, dq, nq, dk, nk);
    memcpy(q2, q1, nq * sizeof(real));
    memcpy(k2, k1, nk * sizeof(real));
    rope_forward(q1, k1, pos, &plain, (RopeShape){N, H, KVH, KVH});
    rope_forward(q2, k2, pos, &cached, (RopeShape){N, H, KVH, KVH});
    EXPECT(same_bits(q1, q2, nq) && same_bits(k1, k2, nk), "rope_forward, %s: cached angles give the same bits", what);
    rope_backward(dqin1, dkin1, dp1, dq, dk, q1, k1, pos, &plain, (RopeShape){N, H, KVH, KVH});
    rope_backward(dqin2, dkin2, dp2, dq, dk, q2, k2, pos, &cached, (RopeShape){N, H, KVH, KVH});
    EXPECT(same_bits(dqin1, dqin2, nq) && same_bits(dkin1, dkin2, nk) && same_bits(dp1, dp2, N * KVH),
           "rope_backward, %s: dq, dk and dpos have the same bits", what);
    free(buf);
    free(cs);
    free(sn);
}

static void test_rope_cache(void) {
    size_t N = 24, KVH = 2, T = 12;
    real* pos = mallocCheck(N * KVH * sizeof(real));
    for (size_t n = 0; n < N; n++) /* two rows of T, the second with a document starting at t = 5 */
        for (size_t g = 0; g < KVH; g++) pos[n * KVH + g] = (real)(n < T ? n : (n - T < 5 ? n - T : n - T - 5));
    check_rope_cache(pos, N, T, "integer positions 0..T-1");
    for (size_t i = 0; i < N * KVH; i++) pos[i] = (real)(0.37 * i + 0.5 * (i % 3));
    check_rope_cache(pos, N, T, "fractional positions (RePo)");
    for (size_t i = 0; i < N * KVH; i++) pos[i] = (real)(T + i);
    check_rope_cache(pos, N, T, "positions past the cache");
    free(pos);
}

static void small_config(ModelConfig* c, const char* plan) {
    model_config_default(c);
    test_model_sizes(c, 64, 32, 3, 4, 2, 48);
    CHECK(model_config_plan_positions(c, plan, 1), "plan %s", plan);
}

static void test_model_cache(void) {
    ModelConfig c;
    Model m;
    small_config(&c, "repo"); /* layer 0 rope, 1..2 repo */
    model_build(&m, &c, 2, 16, NULL, 0, false);
    EXPECT(m.rope.cos_t == m.rope_cos && m.rope_cos && m.rope.n_cached == 16,
           "a model with a rope layer caches the angles of its T = 16 positions (n_cached %zu)", m.rope.n_cached);
    model_free(&m);
    small_config(&c, "nope");
    model_build(&m, &c, 2, 16, NULL, 0, false);
    EXPECT(!m.rope.cos_t && !m.rope_cos, "a model without rope layers has no angle cache");
    model_free(&m);
}

static void fill_nan(real* p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (real)NAN;
}

/* loss and gradients of one step of an OLMo-2 (llama false) or Llama block with rope and RePo layers;
   with_cache false takes the cache away after build; poison fills the backward's work space and the
   residual-stream gradients with NaN first */
static double step_grads(real* grads, size_t* n_grads, bool with_cache, bool llama, bool poison) {
    ModelConfig c;
    small_config(&c, "repo");
    if (llama) c.block = BLOCK_LLAMA;
    Model m;
    size_t B = 2, T = 16, N = B * T;
    model_build(&m, &c, B, T, NULL, 0, false);
    model_init_weights(&m, &(ModelInit){.seed = 3, .std = 0.05});
    if (!with_cache) m.rope.cos_t = m.rope.sin_t = NULL;
    if (poison) fill_nan(m.scratch, m.n_scratch); /* the residual gradients dres and dfinal too */
    int32_t tok[32], tgt[32];
    Rng rng;
    rng_seed(&rng, 9);
    for (size_t i = 0; i < N; i++) {
        tok[i] = (int32_t)rng_below(&rng, c.V);
        tgt[i] = (int32_t)rng_below(&rng, c.V);
    }
    Batch b = {.B = B, .T = T, .tokens = tok, .targets = tgt};
    double loss = model_forward_train(&m, &b).loss;
    model_backward(&m, &b, 1.0);
    *n_grads = m.tensors.n_grads;
    if (grads) memcpy(grads, m.grads, m.tensors.n_grads * sizeof(real));
    model_free(&m);
    return loss;
}

static void test_model_step(void) {
    for (int llama = 0; llama < 2; llama++) {
        const char* block = llama ? "Llama" : "OLMo-2";
        size_t n;
        step_grads(NULL, &n, true, llama, false);
        real* g1 = mallocCheck(n * sizeof(real));
        real* g2 = mallocCheck(n * sizeof(real));
        double l1 = step_grads(g1, &n, true, llama, false), l2 = step_grads(g2, &n, false, llama, false);
        EXPECT(l1 == l2 && same_bits(g1, g2, n),
               "%s: a training step with the angle cache: the same loss (%.9g, "
               "%.9g) and the same bits in all %zu gradients as computing every angle",
               block, l1, l2, n);
        /* the backward writes every buffer before it reads it (model/block.c): NaN left in them changes nothing */
        l2 = step_grads(g2, &n, true, llama, true);
        EXPECT(l1 == l2 && same_bits(g1, g2, n),
               "%s: the backward's work space and residual gradients filled with "
               "NaN beforehand: the same loss and the same bits in all %zu gradients",
               block, n);
        free(g1);
        free(g2);
    }
}

/* model_forward_train leaves G in the logits buffer and backward folds dloss / weight_sum into the LM
   head's GEMMs; model_forward + model_backward take the logits through xent_backward. With per-row
   weights, z-loss and an ignored row: the same loss and the same gradients to float rounding. */
static void test_fused_head(void) {
    ModelConfig c;
    small_config(&c, "repo");
    size_t B = 2, T = 16, N = B * T;
    int32_t tok[32], tgt[32];
    real w[32];
    Rng rng;
    rng_seed(&rng, 11);
    for (size_t i = 0; i < N; i++) {
        tok[i] = (int32_t)rng_below(&rng, c.V);
        tgt[i] = i == 5 ? -1 : (int32_t)rng_below(&rng, c.V);
        w[i] = (real)(0.5 + 1.5 * rng_uniform(&rng));
    }
    Model m;
    model_build_opts(&m, &c, B, T, NULL, 0, &(ModelOpts){.z_loss = 1e-3}, false);
    model_init_weights(&m, &(ModelInit){.seed = 3, .std = 0.05});
    Batch b = {.B = B, .T = T, .tokens = tok, .targets = tgt, .target_weights = w};
    size_t n = m.tensors.n_grads;
    real* g = mallocCheck(2 * n * sizeof(real));
    double loss[2];
    for (int fused = 0; fused < 2; fused++) {
        model_zero_grad(&m);
        loss[fused] = fused ? model_forward_train(&m, &b).loss : model_forward(&m, &b).loss;
        EXPECT(m.logits_hold_grad == (fused == 1), "model_forward%s: the logits buffer holds %s", fused ? "_train" : "",
               fused ? "the loss gradient" : "the logits");
        model_backward(&m, &b, 0.5);
        memcpy(g + fused * n, m.grads, n * sizeof(real));
    }
    EXPECT(fabs(loss[1] - loss[0]) <= 1e-12 * fabs(loss[0]), "the loss: %.12g fused, %.12g plain", loss[1], loss[0]);
    expect_close("gradients, fused head vs xent_backward", g + n, g, n, 0, 2e-6,
                 "float rounding: softmax as e/sum vs exp(x - lse), dloss/W in the GEMM");
    free(g);
    model_free(&m);
    ModelOpts chunked = {.head_chunk = 10};
    model_build_opts(&m, &c, B, T, NULL, 0, &chunked, false);
    model_init_weights(&m, &(ModelInit){.seed = 3, .std = 0.05});
    b.target_weights = NULL;
    model_forward_train(&m, &b);
    EXPECT(!m.logits_hold_grad, "model_forward_train with head chunks of 10 rows keeps xent_backward's path");
    model_backward(&m, &b, 1.0);
    model_free(&m);
}

/* linear_forward and linear_backward_ld (both ways of adding) on rows the threads split, against one
   single-threaded cblas_gemm each (made by one thread of an active region, where OpenBLAS does not thread);
   with 2 threads whatever the cores, so the split runs on a one-core machine too. A kernel family may add a
   row's terms in another order when the row sits elsewhere in a call (OpenBLAS's Haswell kernels on a Zen 5
   do; its Cooperlake ones on a Zen 4 gave the same bits), so the split is held to twice the FP32 bound of one
   product (testutil.h) against one call, and to the same bits when it runs again: a step is deterministic for
   a given thread count. */
static void check_linear_split(size_t N, size_t C, size_t OC) {
    size_t nx = N * C, ny = N * OC, nw = OC * C;
    real* buf = calloc(3 * nx + 3 * ny + 5 * nw, sizeof(real));
    real *x = buf, *dy = x + nx, *w = dy + ny, *dw0 = w + nw;
    real *y[2] = {dw0 + nw, dw0 + nw + ny}, *dx[2] = {y[1] + ny, y[1] + ny + nx};
    real* dw[2] = {dx[1] + nx, dx[1] + nx + nw};
    fill_normal4(21, x, nx, dy, ny, w, nw, dw0, nw);
    real alpha = 0.375f;
    for (int add = 0; add < 2; add++) {
        memcpy(dx[0], x, nx * sizeof(real)); /* something to add to */
        memcpy(dx[1], x, nx * sizeof(real));
        memcpy(dw[0], dw0, nw * sizeof(real));
        memcpy(dw[1], dw0, nw * sizeof(real));
        linear_forward(NULL, y[0], x, w, N, C, OC);
        linear_backward_ld(NULL, dx[0], dw[0], (LinearDout){dy, OC, alpha, false}, x, w, N, C, OC, add);
#pragma omp parallel num_threads(2)
        if (threads_id() == 0) {
            cblas_gemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)OC, (int)C, 1, x, (int)C, w, (int)C, 0,
                       y[1], (int)OC);
            cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)C, (int)OC, alpha, dy, (int)OC, w,
                       (int)C, add ? 1 : 0, dx[1], (int)C);
            cblas_gemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)OC, (int)C, (int)N, alpha, dy, (int)OC, x, (int)C,
                       1, dw[1], (int)C);
        }
        char label[160], why[96];
        snprintf(label, sizeof(label), "linear on rows split among %zu threads (N %zu, C %zu, OC %zu, add %d)",
                 threads_blas_split(), N, C, OC, add);
        size_t K = C > OC ? C : OC;
        K = K > N ? K : N;
        double rtol = 2 * fp32_chain_rtol(1, (double)K);
        snprintf(why, sizeof(why), "2 K 2^-24 = %.1e x max|ref|, K %zu, against one single-threaded call", rtol, K);
        expect_close(label, y[0], y[1], ny, 0, rtol, why);
        expect_close(label, dx[0], dx[1], nx, 0, rtol, why);
        expect_close(label, dw[0], dw[1], nw, 0, rtol, why);
        memcpy(dx[1], x, nx * sizeof(real)); /* the split again, on the same inputs */
        memcpy(dw[1], dw0, nw * sizeof(real));
        linear_forward(NULL, y[1], x, w, N, C, OC);
        linear_backward_ld(NULL, dx[1], dw[1], (LinearDout){dy, OC, alpha, false}, x, w, N, C, OC, add);
        EXPECT(same_bits(y[0], y[1], ny) && same_bits(dx[0], dx[1], nx) && same_bits(dw[0], dw[1], nw),
               "%s: the same bits when run again", label);
    }
    free(buf);
}

/* linear_forward_ld and linear_backward_ld through rows of stride ld > OC (two products side by side, as
   the MLP's gate and up when their weights lie apart): the bits of the contiguous calls, with the columns
   from OC on left alone */
static void check_linear_stride(size_t N, size_t C, size_t OC) {
    size_t ld = OC + 5, nx = N * C, ny = N * OC, nw = OC * C;
    real* buf = calloc(6 * nx + 3 * ny + 2 * N * ld + 4 * nw, sizeof(real));
    real *x = buf, *dx[2] = {x + nx, x + 2 * nx}, *dy = x + 3 * nx, *y = dy + ny, *ys = y + ny, *dys = ys + N * ld;
    real *w = dys + N * ld, *dw[2] = {w + nw, w + 2 * nw}, *y_ref = dw[1] + nw, *dx_ref = y_ref + ny;
    fill_normal4(22, x, nx, dy, ny, w, nw, dw[0], nw);
    memcpy(dw[1], dw[0], nw * sizeof(real));
    /* every output written (not added into) starts as 7: a product that adds instead shows */
    for (size_t i = 0; i < N * ld; i++) ys[i] = 7;
    for (size_t i = 0; i < ny; i++) y[i] = 7;
    for (size_t i = 0; i < nx; i++) dx[0][i] = dx[1][i] = 7;
    for (size_t n = 0; n < N; n++) memcpy(dys + n * ld, dy + n * OC, OC * sizeof(real));
    linear_forward(NULL, y, x, w, N, C, OC);
    linear_forward_ld(NULL, ys, ld, x, w, N, C, OC);
    linear_backward_ld(NULL, dx[0], dw[0], (LinearDout){dy, OC, 0.5f, false}, x, w, N, C, OC, false);
    linear_backward_ld(NULL, dx[1], dw[1], (LinearDout){dys, ld, 0.5f, false}, x, w, N, C, OC, false);
    bool same = true, pad = true;
    for (size_t n = 0; n < N; n++) {
        same = same && same_bits(y + n * OC, ys + n * ld, OC);
        for (size_t o = OC; o < ld; o++) pad = pad && ys[n * ld + o] == 7;
    }
    EXPECT(same && pad && same_bits(dx[0], dx[1], nx) && same_bits(dw[0], dw[1], nw),
           "linear through rows of stride %zu (N %zu, C %zu, OC %zu, %zu threads splitting): the bits of the "
           "contiguous products, the other columns untouched",
           ld, N, C, OC, threads_blas_split());
    linear_forward_naive(y_ref, x, w, N, C, OC);
    for (size_t n = 0; n < N; n++)
        for (size_t c = 0; c < C; c++) {
            double acc = 0;
            for (size_t o = 0; o < OC; o++) acc += (double)dy[n * OC + o] * w[o * C + c];
            dx_ref[n * C + c] = (real)(0.5 * acc);
        }
    const char* why = "float sums of C or OC products against double ones";
    expect_close("  y = x W^T against a double loop (7s overwritten)", y, y_ref, ny, 0, 1e-5, why);
    expect_close("  dx = 0.5 dy W against a double loop (7s overwritten)", dx[0], dx_ref, nx, 0, 1e-5, why);
    free(buf);
}

static void test_linear_split(void) {
    int team = threads_init(0);
    threads_init(2);
    if (threads_blas_split() < 2)
        printf("  NOTE    built without OpenMP or with another OpenBLAS than its OpenMP build: linear never "
               "splits rows here, so this checks the one-call path only\n");
    check_linear_split(1024, 64, 96);    /* backward: dx and dW on two threads at once */
    check_linear_split(1000, 256, 256);  /* a ragged split, K = 256 */
    check_linear_split(2048, 1024, 256); /* K = 1024 forward, 2048 for dW */
    check_linear_split(512, 256, 4096);  /* the widest weight split (2^20 reals) */
    check_linear_stride(1000, 256, 256); /* split rows, dx and dW at once */
    check_linear_stride(1024, 64, 1024); /* split forward, one call each backward */
    check_linear_stride(7, 16, 12);      /* one call each */
    /* one call that OpenBLAS threads, its output cleared first (linear.c, write_beta): the forward's rows of
       stride ld, then a contiguous dx */
    check_linear_stride(400, 64, 1024);
    check_linear_stride(400, 1024, 96);
    threads_init(team);
}

#ifdef REPOC_DISPATCH
extern __typeof__(attention_forward) attention_forward_v3, attention_forward_v4;
extern __typeof__(attention_backward) attention_backward_v3, attention_backward_v4;

/* out, lse, dq, dk, dv of both variants on random q, k, v, dout with GQA and a causal T not a tile multiple */
static void test_dispatch_variants(void) {
    __builtin_cpu_init();
    if (!CPU_HAS_V4()) {
        printf("  SKIP    this CPU has no x86-64-v4: only the v3 attention variant runs here\n");
        return;
    }
    size_t B = 2, T = 77, H = 4, KVH = 2, hd = 32, N = B * T, nq = N * H * hd, nk = N * KVH * hd;
    real* buf = calloc(2 * (2 * nq + N * H + 2 * nk) + 2 * nq + 2 * nk, sizeof(real));
    real *q = buf, *k = q + nq, *v = k + nk, *dout = v + nk, *r[2][6];
    real* p = dout + nq;
    for (int i = 0; i < 2; i++) { /* out, lse, dq, dk, dv per variant */
        r[i][0] = p;
        r[i][1] = r[i][0] + nq;
        r[i][2] = r[i][1] + N * H;
        r[i][3] = r[i][2] + nq;
        r[i][4] = r[i][3] + nk;
        p = r[i][4] + nk;
    }
    fill_normal4(11, q, nq, k, nk, v, nk, dout, nq);
    AttnShape as = {B, T, H, KVH, hd, (real)(1 / sqrt((double)hd)), NULL, false};
    attention_forward_v3(r[0][0], r[0][1], q, k, v, &as);
    attention_forward_v4(r[1][0], r[1][1], q, k, v, &as);
    attention_backward_v3(r[0][2], r[0][3], r[0][4], dout, r[0][0], r[0][1], q, k, v, &as);
    attention_backward_v4(r[1][2], r[1][3], r[1][4], dout, r[1][0], r[1][1], q, k, v, &as);
    /* the variants use blocks of 64 and 128 (attention.c, ATT_BLOCK): the online softmax of the forward meets
       the keys in other groups, and backward's tiles on the causal diagonal and at the ragged end (T = 77) group
       the sums differently per vector width, so the variants agree to float rounding, not to the bit */
    const char* why = "float rounding of sums of ~T terms grouped by another block size and vector width";
    expect_close("attention forward out, v3 vs v4", r[1][0], r[0][0], nq, 0, 1e-6, why);
    expect_close("attention forward lse, v3 vs v4", r[1][1], r[0][1], N * H, 0, 1e-6, why);
    expect_close("attention backward dq, v3 vs v4", r[1][2], r[0][2], nq, 0, 1e-6, why);
    expect_close("attention backward dk, v3 vs v4", r[1][3], r[0][3], nk, 0, 1e-6, why);
    expect_close("attention backward dv, v3 vs v4", r[1][4], r[0][4], nk, 0, 1e-6, why);
    free(buf);
}
#endif

int main(void) {
    test_rope_cache();
    test_model_cache();
    test_model_step();
    test_fused_head();
    test_linear_split();
#ifdef REPOC_DISPATCH
    test_dispatch_variants();
#endif
    printf("%d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}
