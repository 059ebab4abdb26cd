/* The time estimate of a run (train/timeplan.h). */
#include "train/timeplan.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/rng.h"
#include "model/engine.h" /* engine_clamp_dim: the probed shape */
#include "model/products.h"
#include "train/memplan.h" /* memplan_head_chunk: whether the LM head is chunked */

/* in·out summed over the block linears (q, k, v, o, gate, up, down, and RePo's maps) */
static double block_in_out(const ModelConfig* c) {
    double D = (double)c->D, hd = (double)cfg_hd(c), qd = c->H * hd, kvd = c->KVH * hd, F = (double)c->F;
    double dp = (double)cfg_dp(c), sum = 0;
    for (size_t l = 0; l < c->L; l++) {
        sum += D * qd + 2 * D * kvd + qd * D + 3 * D * F;
        if (c->pos[l] == POS_REPO) sum += 2 * D * dp + dp * (double)c->KVH; /* gate_map, content_map, final_map */
    }
    return sum;
}

/* causal attention forward of all layers: QKᵀ and PV, each 2·B·H·hd per (query, visible key) pair: T²/2 pairs
   in a layer, or about T·W on a sliding layer of window W < T (Gemma-3) */
static double causal_attention_flops(const ModelConfig* c, size_t B, size_t T) {
    double pairs = 0, t = (double)T;
    for (size_t l = 0; l < c->L; l++) {
        double w = (double)c->sliding_window;
        pairs += cfg_sliding(c, l) && w < t ? w * (w + 1) / 2 + (t - w) * w : t * t / 2;
    }
    return 4.0 * (double)B * (double)c->H * (double)cfg_hd(c) * pairs;
}

double model_train_flops(const ModelConfig* c, size_t B, size_t T, double* attn) {
    double N = (double)B * (double)T, a = 3.0 * causal_attention_flops(c, B, T);
    if (attn) *attn = a;
    return 6.0 * N * (block_in_out(c) + (double)c->D * (double)c->V) + a;
}

/* the best rate of C[m,n] = A[m,k] B[k,n]: the FP32 engine in use (cblas_sgemm or oneDNN's), or gemm_bf16 on the
   same values rounded to BF16 */
static double product_gflops(size_t m, size_t k, size_t n, int calls, double max_s, double (*clock)(void),
                             double* best_ms, bool use_bf16) {
    if (!clock) clock = now_s;
    float* a = mallocCheck((m * k + k * n + m * n) * sizeof(float));
    float *b = a + m * k, *out = b + k * n;
    bf16* h = use_bf16 ? mallocCheck((m * k + k * n) * sizeof(bf16)) : NULL;
    Rng rng;
    rng_seed(&rng, 7);
    for (size_t i = 0; i < m * k + k * n; i++) a[i] = (float)(rng_uniform(&rng) - 0.5);
    if (h) bf16_from_f32(h, a, 1, m * k + k * n, m * k + k * n);
    double best = 1e30, start = clock();
    for (int r = 0; r <= calls; r++) { /* call 0 warms up: threads, packing buffers, oneDNN's primitive */
        double t0 = clock();
        GemmShape s = {false, false, m, n, k, k, n, n, 1.0f, 0.0f};
        if (h) gemm_bf16(&s, h, h + m * k, out);
        else if (products_f32_engine() == F32_ONEDNN) gemm_f32_onednn(&s, a, b, out);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)k, b, (int)n,
                        0.0f, out, (int)n);
        double dt = clock() - t0;
        if (r > 0 && dt < best) best = dt;
        if (r > 0 && max_s > 0 && clock() - start > max_s) break;
    }
    free(a);
    free(h);
    if (best_ms) *best_ms = best * 1e3;
    return 2.0 * (double)m * (double)k * (double)n / best * 1e-9;
}

double sgemm_gflops(size_t m, size_t k, size_t n, int calls, double max_s, double (*clock)(void), double* best_ms) {
    return product_gflops(m, k, n, calls, max_s, clock, best_ms, false);
}

void timeplan_compute(TimePlan* p, const ModelConfig* cfg, const RunConfig* rc, size_t done) {
    memset(p, 0, sizeof(*p));
    size_t B = rc->train.batch_size, T = rc->data.seq_len, N = B * T;
    double per_batch = model_train_flops(cfg, B, T, NULL);
    if (rc->train.recompute) /* one more forward of the blocks */
        per_batch += 2.0 * (double)N * block_in_out(cfg) + causal_attention_flops(cfg, B, T);
    size_t chunk = memplan_head_chunk(rc, cfg->V);
    if (chunk && chunk < N) per_batch += 2.0 * (double)N * (double)cfg->D * (double)cfg->V; /* logits again */
    p->flop_step = per_batch * (double)rc->train.grad_accum;
    p->probe_m = engine_clamp_dim(N);
    p->probe_k = engine_clamp_dim(cfg->D);
    p->probe_n = engine_clamp_dim(cfg->F);
    p->bf16 = !strcmp(rc->train.compute_dtype, "bf16");
    char why[512];
    if (p->bf16 && !products_bf16_available(why, sizeof(why))) p->bf16 = false; /* the run itself refuses */
    p->efficiency = p->bf16 ? TIMEPLAN_EFFICIENCY_BF16 : TIMEPLAN_EFFICIENCY;
    p->gflops = product_gflops(p->probe_m, p->probe_k, p->probe_n, 8, 0.2, NULL, NULL, p->bf16);
    p->s_per_step = p->flop_step / (p->gflops * 1e9 * p->efficiency);
    p->steps_left = rc->train.steps > done ? rc->train.steps - done : 0;
}

/* "850 ms", "34 s", "12 min", "19 h", "3.2 d" */
static void duration(double s, char* out, size_t len) {
    if (s < 1) snprintf(out, len, "%.0f ms", s * 1e3);
    else if (s < 100) snprintf(out, len, "%.*f s", s < 10 ? 1 : 0, s);
    else if (s < 6000) snprintf(out, len, "%.0f min", s / 60);
    else if (s < 3 * 86400) snprintf(out, len, "%.*f h", s < 36000 ? 1 : 0, s / 3600);
    else snprintf(out, len, "%.1f d", s / 86400);
}

/* "1.2 TFLOP", "830 GFLOP", "4.1 MFLOP" */
static void flops_text(double f, char* out, size_t len) {
    static const char* unit[] = {"", "k", "M", "G", "T", "P"};
    int u = 0;
    while (u < 5 && f >= 1000) {
        f /= 1000;
        u++;
    }
    snprintf(out, len, "%.*f %sFLOP", f < 10 ? 1 : 0, f, unit[u]);
}

void timeplan_print(const TimePlan* p, FILE* fp) {
    char step[32], all[32], fl[32];
    duration(p->s_per_step, step, sizeof(step));
    duration(p->s_per_step * (double)p->steps_left, all, sizeof(all));
    flops_text(p->flop_step, fl, sizeof(fl));
    fprintf(fp,
            "time: ≈ %s/step, %zu step%s ≈ %s (estimate: model %s/step at %.0f GFLOP/s measured %s "
            "%zux%zux%zu, x%.2f efficiency; evaluation not counted)\n",
            step, p->steps_left, p->steps_left == 1 ? "" : "s", all, fl, p->gflops,
            p->bf16                               ? "BF16 product"
            : products_f32_engine() == F32_ONEDNN ? "oneDNN f32 matmul"
                                                  : "sgemm",
            p->probe_m, p->probe_k, p->probe_n, p->efficiency);
}
