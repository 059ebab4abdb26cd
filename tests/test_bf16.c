/* BF16 products (train.compute_dtype "bf16", model/products.h, model/gemm_onednn.h):
   1. gemm_bf16 against a double-precision product of the same BF16 operands, on odd shapes, strides
      wider than the rows, all four transposes, alpha and beta: equal up to the order of FP32 accumulation,
      |C - ref| <= 2 K 2^-24 (|alpha| sum_k |a_ik b_kj| + |beta c_ij|) + 2^-24 |ref|;
   2. product() with its operands as weights (a region's BF16 copy) and activations (rounded at the
      product), and in chunks of rows when the work space is smaller than an activation (both chunkings):
      the same bound; a weight outside every region is rounded and counted;
   3. a model's training step: no weight rounded at a product, no primitive created after the first step,
      AdamW's fused pass leaves the mirror equal to the rounded weights, and a LoRA model on a BF16 base
      trains in bf16 mode with the same loss as in f32 up to BF16 rounding.
   Skipped, with the reason, where the build has no oneDNN or the CPU no BF16 instructions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/rng.h"
#include "model/gemm_onednn.h"
#include "model/linear.h"
#include "model/model.h"
#include "model/products.h"
#include "model/swiglu.h"
#include "optim/adamw.h"
#include "optim/clip.h"
#include "testutil.h"

/* x (n): uniform in [-1, 1) rounded to BF16 (so the FP32 and BF16 operands hold the same values) */
static void fill(Rng* r, float* x, bf16* h, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h[i] = bf16_round_nearest((float)(2 * rng_uniform(r) - 1));
        x[i] = bf16_to_f32(h[i]);
    }
}

/* C0 (M,N; ldc) -> the reference and its error bound for alpha op(A) op(B) + beta C0, laid out as s says
   (alpha and beta exact in float) */
static void reference(const GemmShape* s, const float* A, const float* B, const float* C0, double* ref, double* bound) {
    bool ta = s->ta, tb = s->tb;
    size_t M = s->M, N = s->N, K = s->K, lda = s->lda, ldb = s->ldb, ldc = s->ldc;
    double alpha = s->alpha, beta = s->beta;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double sum = 0, mag = 0;
            for (size_t k = 0; k < K; k++) {
                double a = ta ? A[k * lda + i] : A[i * lda + k], b = tb ? B[j * ldb + k] : B[k * ldb + j];
                sum += a * b;
                mag += fabs(a * b);
            }
            double c = beta != 0 ? C0[i * ldc + j] : 0;
            ref[i * N + j] = alpha * sum + beta * c;
            bound[i * N + j] =
                2.0 * (double)(K + 2) * 0x1p-24 * (fabs(alpha) * mag + fabs(beta * c)) + 0x1p-24 * fabs(ref[i * N + j]);
        }
}

/* the worst |got - ref| / bound over C (M,N; ldc); columns past N of each row must be left as they were */
static double worst_ratio(const float* C, size_t ldc, const double* ref, const double* bound, size_t M, size_t N,
                          const float* C0, bool* pad_kept) {
    double w = 0;
    *pad_kept = true;
    for (size_t i = 0; i < M; i++) {
        for (size_t j = 0; j < N; j++) {
            double e = fabs(C[i * ldc + j] - ref[i * N + j]), b = bound[i * N + j];
            double r = b > 0 ? e / b : (e == 0 ? 0 : INFINITY);
            w = r > w || isnan(r) ? r : w;
        }
        for (size_t j = N; j < ldc; j++) *pad_kept &= !memcmp(&C[i * ldc + j], &C0[i * ldc + j], sizeof(float));
    }
    return w;
}

static void test_gemm(Rng* rng) {
    const size_t shapes[][3] = {{1, 1, 1}, {37, 53, 29}, {64, 17, 300}, {5, 1000, 3}, {129, 65, 257}, {2, 3, 4096}};
    const double alphas[] = {1, 0.375}, betas[] = {0, 1, -0.5};
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        for (int t = 0; t < 4; t++) {
            bool ta = t & 1, tb = t & 2;
            size_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2; /* strides past the rows */
            size_t na = (ta ? K : M) * lda, nb = (tb ? N : K) * ldb, nc = M * ldc;
            float *A = mallocCheck(na * 4), *B = mallocCheck(nb * 4), *C = mallocCheck(nc * 4),
                  *C0 = mallocCheck(nc * 4);
            bf16 *Ah = mallocCheck(na * 2), *Bh = mallocCheck(nb * 2), *C0h = mallocCheck(nc * 2);
            double *ref = mallocCheck(M * N * 8), *bound = mallocCheck(M * N * 8);
            fill(rng, A, Ah, na);
            fill(rng, B, Bh, nb);
            fill(rng, C0, C0h, nc);
            double worst = 0;
            bool kept = true;
            for (int ai = 0; ai < 2; ai++)
                for (int bi = 0; bi < 3; bi++) {
                    memcpy(C, C0, nc * 4);
                    GemmShape s = {ta, tb, M, N, K, lda, ldb, ldc, (float)alphas[ai], (float)betas[bi]};
                    gemm_bf16(&s, Ah, Bh, C);
                    reference(&s, A, B, C0, ref, bound);
                    bool k;
                    double w = worst_ratio(C, ldc, ref, bound, M, N, C0, &k);
                    worst = w > worst || isnan(w) ? w : worst;
                    kept &= k;
                }
            EXPECT(worst <= 1 && kept,
                   "gemm_bf16 %zux%zux%zu%s%s, alpha 1/0.375, beta 0/1/-0.5: worst error %.3f of the FP32-order bound, "
                   "columns past N untouched",
                   M, N, K, ta ? " A^T" : "", tb ? " B^T" : "", worst);
            free(A), free(B), free(C), free(C0), free(Ah), free(Bh), free(C0h), free(ref), free(bound);
        }
    }
}

/* product() in a context: B a weight in a region (tb: stored (N,K)) or an activation, A an activation;
   cap: the work space per operand (small caps force chunks of rows) */
static void test_product(Rng* rng) {
    const size_t M = 96, N = 40, K = 72;
    float *A = mallocCheck(M * K * 4), *W = mallocCheck(N * K * 4), *Bt = mallocCheck(K * N * 4);
    bf16 *Ah = mallocCheck(M * K * 2), *Wh = mallocCheck(N * K * 2), *Bth = mallocCheck(K * N * 2);
    float *C = mallocCheck(M * N * 4), *C0 = mallocCheck(M * N * 4);
    bf16* C0h = mallocCheck(M * N * 2);
    double *ref = mallocCheck(M * N * 8), *bound = mallocCheck(M * N * 8);
    fill(rng, A, Ah, M * K);
    fill(rng, W, Wh, N * K);
    fill(rng, Bt, Bth, K * N);
    fill(rng, C0, C0h, M * N);
    bf16* work = mallocCheck(2 * M * K * 2);
    const size_t caps[] = {M * K, 16 * K, 16 * N + 16 * M};
    for (int c = 0; c < 3; c++) {
        Bf16Products p = {.region = {{W, N * K, Wh}}, .act = {work, work + M * K}, .act_cap = caps[c]};
        bool kept;
        /* C = A W^T, W (N,K) a weight: chunks of M when the work space is small */
        memcpy(C, C0, sizeof(float) * M * N);
        product(&p, M, N, K, 1, op_act(A, K, false), op_weight(W, K, true), 1, C, N);
        reference(&(GemmShape){false, true, M, N, K, K, K, N, 1, 1}, A, W, C0, ref, bound);
        double w1 = worst_ratio(C, N, ref, bound, M, N, C0, &kept);
        /* C (K... here M x N) = A^T-shaped: C (N,K)?  dW = dout^T x: (N,M)^T... use A stored (K',M) */
        /* C = A^T Bt with A stored (M rows = the shared K of the product), Bt (M, N): chunks of the shared rows */
        float* D = mallocCheck(K * N * 4);
        float* D0 = callocCheck(K * N, 4);
        double *rd = mallocCheck(K * N * 8), *bd = mallocCheck(K * N * 8);
        float* X = mallocCheck(M * N * 4);
        bf16* Xh = mallocCheck(M * N * 2);
        fill(rng, X, Xh, M * N);
        memset(D, 0, K * N * 4);
        product(&p, K, N, M, 0.5, op_act(A, K, true), op_act(X, N, false), 0, D, N);
        reference(&(GemmShape){true, false, K, N, M, K, N, N, 0.5f, 0}, A, X, D0, rd, bd);
        double w2 = worst_ratio(D, N, rd, bd, K, N, D0, &kept);
        EXPECT(w1 <= 1 && w2 <= 1 && p.weight_rounded == 0,
               "product, work space %zu: A W^T (W's BF16 copy) %.3f and 0.5 A^T X (activations) %.3f of the bound, "
               "no weight rounded",
               caps[c], w1, w2);
        free(D), free(D0), free(rd), free(bd), free(X), free(Xh);
    }
    /* a weight in no region: rounded at the product, counted */
    Bf16Products p = {.act = {work, work + M * K}, .act_cap = M * K};
    product(&p, M, N, K, 1, op_act(A, K, false), op_weight(W, K, true), 0, C, N);
    reference(&(GemmShape){false, true, M, N, K, K, K, N, 1, 0}, A, W, C0, ref, bound);
    bool kept;
    double w = worst_ratio(C, N, ref, bound, M, N, C, &kept);
    EXPECT(p.weight_rounded == 1 && w <= 1,
           "a weight outside every region: rounded at its product (%zu), %.3f of the bound", p.weight_rounded, w);
    free(A), free(W), free(Bt), free(Ah), free(Wh), free(Bth), free(C), free(C0), free(C0h), free(ref), free(bound);
    free(work);
}

/* OPERAND_ACT_KEPT: the BF16 copy the previous product made of the same operand in the same place is read
   again (shown by changing the FP32 values in between: the kept product still sees the old ones), and an
   operand whose place now holds another is rounded anew */
static void test_kept(Rng* rng) {
    const size_t M = 48, N = 32, K = 40;
    float *A = mallocCheck(M * K * 4), *X = mallocCheck(M * K * 4), *W = mallocCheck(N * K * 4);
    bf16 *Ah = mallocCheck(M * K * 2), *Xh = mallocCheck(M * K * 2), *Wh = mallocCheck(N * K * 2);
    float *C1 = mallocCheck(M * N * 4), *C2 = mallocCheck(M * N * 4), *C3 = mallocCheck(M * N * 4);
    fill(rng, A, Ah, M * K);
    fill(rng, X, Xh, M * K);
    fill(rng, W, Wh, N * K);
    bf16* work = mallocCheck(2 * M * K * 2);
    Bf16Products p = {.region = {{W, N * K, Wh}}, .act = {work, work + M * K}, .act_cap = M * K};
    Operand w = op_weight(W, K, true);
    product(&p, M, N, K, 1, op_act(A, K, false), w, 0, C1, N);
    float a0 = A[0];
    A[0] = a0 * 4 + 1; /* the kept product must not see this */
    product(&p, M, N, K, 1, op_act_kept(A, K, false, true), w, 0, C2, N);
    bool reused = !memcmp(C1, C2, M * N * 4);
    A[0] = a0;
    product(&p, M, N, K, 1, op_act(X, K, false), w, 0, C2, N);            /* the place now holds X */
    product(&p, M, N, K, 1, op_act_kept(A, K, false, true), w, 0, C3, N); /* so A is rounded anew */
    EXPECT(reused && !memcmp(C1, C3, M * N * 4),
           "a kept operand: its BF16 copy read again (%s), rounded anew once its place holds another (%s)",
           reused ? "yes" : "no", memcmp(C1, C3, M * N * 4) ? "differs" : "the same bits");
    free(A), free(X), free(W), free(Ah), free(Xh), free(Wh), free(C1), free(C2), free(C3), free(work);
}

/* products_hold: the copy a pass writes into the work space is what the next product taking the same operand
   as kept reads (shown by writing there the rounding of other values: that product then gives their result);
   without room for the operand it returns NULL. SwiGLU and GeGLU write, in the same pass, copies equal to
   bf16_round_nearest of what they write in FP32 (forward m; backward rows [dg | du]). */
static void test_hold(Rng* rng) {
    enum { M = 48, N = 32, K = 40 };
    float *A = mallocCheck(M * K * 4), *X = mallocCheck(M * K * 4), *W = mallocCheck(N * K * 4);
    bf16 *Ah = mallocCheck(M * K * 2), *Xh = mallocCheck(M * K * 2), *Wh = mallocCheck(N * K * 2);
    float *C1 = mallocCheck(M * N * 4), *C2 = mallocCheck(M * N * 4);
    fill(rng, A, Ah, M * K);
    fill(rng, X, Xh, M * K);
    fill(rng, W, Wh, N * K);
    bf16* work = mallocCheck(2 * M * K * 2);
    Bf16Products p = {.region = {{W, N * K, Wh}}, .act = {work, work + M * K}, .act_cap = M * K};
    bf16* h = products_hold(&p, 0, A, M, K, K);
    if (h) memcpy(h, Xh, M * K * sizeof(bf16)); /* X's rounding in place of A's */
    product(&p, M, N, K, 1, op_act_kept(A, K, false, true), op_weight(W, K, true), 0, C1, N);
    product(&p, M, N, K, 1, op_act(X, K, false), op_weight(W, K, true), 0, C2, N);
    EXPECT(h && !memcmp(C1, C2, M * N * 4) && !products_hold(&p, 1, A, M + 1, K, K) &&
               !products_hold(NULL, 0, A, 1, 1, 1),
           "products_hold: the product of a kept operand reads the copy its pass wrote; NULL past the work space "
           "or without a context");
    enum { R = 7, F = 45 };
    float g[R * 2 * F], d[R * F], m[R * F], dgu[R * 2 * F];
    bf16 mh[R * F] = {0}, dh[R * 2 * F] = {0};
    for (size_t i = 0; i < R * 2 * F; i++) g[i] = (float)(6 * rng_uniform(rng) - 3);
    for (size_t i = 0; i < R * F; i++) d[i] = (float)(2 * rng_uniform(rng) - 1);
    for (int gelu = 0; gelu < 2; gelu++) {
        (gelu ? geglu_forward : swiglu_forward)(m, g, g + F, R, F, 2 * F, mh);
        memcpy(dgu, g, sizeof(g));
        (gelu ? geglu_backward : swiglu_backward)(dgu, dgu + F, d, dgu, dgu + F, R, F, 2 * F, dh);
        size_t differ = 0;
        for (size_t i = 0; i < R * F; i++) differ += mh[i] != bf16_round_nearest(m[i]);
        for (size_t i = 0; i < R * 2 * F; i++) differ += dh[i] != bf16_round_nearest(dgu[i]);
        EXPECT(differ == 0, "%s: the BF16 copies written with m and [dg | du] are their rounding (%zu differ)",
               gelu ? "GeGLU" : "SwiGLU", differ);
    }
    free(A), free(X), free(W), free(Ah), free(Xh), free(Wh), free(C1), free(C2), free(work);
}

/* A linear's backward with BF16 products whose output gradient dout (rows x OC) is larger than the work
   space (the LM head's logits, model/linear.c): by blocks of dout's columns, the last one narrower, against
   the double product of the same values within the FP32-order bound, every weight read from its region;
   the work space's record shows the last block was dout's last 44 columns */
static void test_head_backward(Rng* rng) {
    enum { R = 48, C = 40, OC = 300 };
    const float alpha = 0.375f;
    float *x = mallocCheck(R * C * 4), *W = mallocCheck(OC * C * 4), *g = mallocCheck(R * OC * 4);
    float *dx = mallocCheck(R * C * 4), *dW = mallocCheck(OC * C * 4), *dW0 = mallocCheck(OC * C * 4);
    bf16 *xh = mallocCheck(R * C * 2), *Wh = mallocCheck(OC * C * 2), *gh = mallocCheck(R * OC * 2);
    bf16 *dW0h = mallocCheck(OC * C * 2), *work = mallocCheck(2 * R * 64 * 2);
    double *rx = mallocCheck(R * C * 8), *bx = mallocCheck(R * C * 8), *rw = mallocCheck(OC * C * 8),
           *bw = mallocCheck(OC * C * 8);
    fill(rng, x, xh, R * C);
    fill(rng, W, Wh, OC * C);
    fill(rng, g, gh, R * OC);
    fill(rng, dW0, dW0h, OC * C);
    reference(&(GemmShape){false, false, R, C, OC, OC, C, C, alpha, 0}, g, W, dx, rx, bx);
    reference(&(GemmShape){true, false, OC, C, R, OC, C, C, alpha, 1}, g, x, dW0, rw, bw);
    /* the work space: x, or a block of 64 of dout's 300 columns */
    Bf16Products p = {.region = {{W, OC * C, Wh}}, .act = {work, work + R * 64}, .act_cap = R * 64};
    memcpy(dW, dW0, OC * C * 4);
    linear_backward_ld(&p, dx, dW, (LinearDout){g, OC, alpha, false}, x, W, R, C, OC, false);
    bool kept;
    double wx = worst_ratio(dx, C, rx, bx, R, C, dx, &kept), ww = worst_ratio(dW, C, rw, bw, OC, C, dW, &kept);
    bool last = p.held[0].p == g + 256 && p.held[0].cols == 44 && p.held[0].rows == R;
    EXPECT(wx <= 1 && ww <= 1 && p.weight_rounded == 0 && last,
           "linear backward, dout %d x %d past a work space of %d x 64: dinp %.3f, dW %.3f of the bound, by blocks "
           "of columns (the last 44 wide: %s)",
           R, OC, R, wx, ww, last ? "yes" : "no");
    free(x), free(W), free(g), free(dx), free(dW), free(dW0), free(xh), free(Wh), free(gh), free(dW0h);
    free(work), free(rx), free(bx), free(rw), free(bw);
}

enum { B = 2, T = 24, N = B * T };

static ModelConfig config(void) {
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, 101, 64, 3, 4, 2, 96);
    model_config_plan_positions(&cfg, "repo", 1);
    return cfg;
}

/* forward + backward + AdamW on the batch; returns the loss */
static double train_step(Model* m, AdamW* opt, const Batch* b, size_t step) {
    double loss = model_forward_train(m, b).loss;
    model_backward(m, b, 1.0);
    double norm = grad_global_norm(m->grads, m->tensors.n_grads);
    adamw_step(opt, m->params, m->grads, 1e-3, step, grad_clip_scale(1.0, norm), true);
    return loss;
}

static void quiet_adamw(AdamW* a, const Model* m) {
    OptimConfig oc;
    optim_config_default(&oc);
    FILE* saved = stdout;
    stdout = fopen("/dev/null", "w");
    adamw_build(a, &m->tensors, &oc);
    fclose(stdout);
    stdout = saved;
}

static void test_model_step(Rng* rng) {
    ModelConfig cfg = config();
    int32_t tok[N], tgt[N];
    for (size_t n = 0; n < N; n++) {
        tok[n] = (int32_t)rng_below(rng, cfg.V);
        tgt[n] = (int32_t)rng_below(rng, cfg.V);
    }
    Batch b = {.B = B, .T = T, .tokens = tok, .targets = tgt};
    Model m, f;
    model_build_opts(&m, &cfg, B, T, NULL, 0, &(ModelOpts){.compute_bf16 = true}, false);
    model_build_opts(&f, &cfg, B, T, NULL, 0, &(ModelOpts){0}, false);
    model_init_weights(&m, &(ModelInit){.seed = 5, .std = 0.05});
    model_init_weights(&f, &(ModelInit){.seed = 5, .std = 0.05});
    AdamW om, of;
    quiet_adamw(&om, &m);
    quiet_adamw(&of, &f);
    om.mirror = m.params_bf16;
    om.mirror_from = m.mirror_from;
    double l0 = train_step(&m, &om, &b, 0), f0 = train_step(&f, &of, &b, 0);
    size_t created = onednn_created();
    double l1 = train_step(&m, &om, &b, 1), f1 = train_step(&f, &of, &b, 1);
    EXPECT(onednn_created() == created, "second step: no oneDNN primitive created (%zu after the first)", created);
    EXPECT(m.products->prod.weight_rounded == 0, "two steps: every weight operand read from the mirror (%zu rounded)",
           m.products->prod.weight_rounded);
    size_t stale = 0;
    size_t n = m.tensors.n_params - m.mirror_from;
    for (size_t i = 0; i < n; i++) stale += m.params_bf16[i] != bf16_round_nearest(m.params[m.mirror_from + i]);
    EXPECT(stale == 0 && m.mirror_from == (size_t)cfg.V * cfg.D,
           "after AdamW's fused pass the mirror is the rounded weights (%zu of %zu differ); it starts after the "
           "untied input embedding (%zu)",
           stale, n, m.mirror_from);
    EXPECT(fabs(l0 - f0) < 0.01 * f0 && fabs(l1 - f1) < 0.01 * f1 && l1 < l0,
           "bf16 losses %.6f, %.6f vs f32 %.6f, %.6f: within 1%%, and the step lowers the loss", l0, l1, f0, f1);
    adamw_free(&om);
    adamw_free(&of);
    model_free(&m);
    model_free(&f);
}

int main(void) {
    char why[512];
    if (!products_bf16_available(why, sizeof(why))) {
        printf("SKIP: %s\n", why);
        printf("0 passed, 0 failed\n");
        return 0;
    }
    printf("products: %s\n", products_name(true));
    Rng rng;
    rng_seed(&rng, 11);
    test_gemm(&rng);
    test_product(&rng);
    test_kept(&rng);
    test_hold(&rng);
    test_head_backward(&rng);
    test_model_step(&rng);
    printf("%d passed, %d failed\n", test_passes, test_failures);
    return test_failures != 0;
}
