/* Shared by build/bench/bench_step and build/bench/bench_attention: the sgemm rate (the denominator of
   MFU), and random q, k, v, dO of one attention shape with one timed forward + backward call pair. The
   attention buffers come from arenaAlloc like the model's activations: with 4 KiB pages (plain malloc)
   the same calls run up to 1.5x slower on this VM. */
#ifndef REPOC_TESTS_BENCH_COMMON_H
#define REPOC_TESTS_BENCH_COMMON_H

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/check.h"
#include "common/rng.h"
#include "model/attention.h"
#include "train/timeplan.h" /* sgemm_gflops */

/* best GFLOP/s of cblas_sgemm C = A B on n×n matrices over 5 calls, after one warm-up call, timed by
   `clock` (seconds); *best_ms: the time of the best call */
static inline double sgemm_rate(int n, double (*clock)(void), double* best_ms) {
    CHECK(n > 0 && n <= 16384, "sgemm size %d must be in [1, 16384]", n);
    return sgemm_gflops((size_t)n, (size_t)n, (size_t)n, 5, 0, clock, best_ms);
}

typedef struct {
    size_t B, T, H, KVH, hd;
    real *buf, *q, *out, *dq, *dout, *lse, *k, *v, *dk, *dv;
    const DocSpans* docs; /* NULL (causal), or a mask such as a sliding window's starts */
    bool bf16, no_amx;    /* BF16 operands (AttnShape.bf16), kept off AMX (AttnShape.no_amx) */
    void* work;           /* AttnShape.work, as a model gives it */
} AttBench;

static inline AttBench att_bench_init(size_t B, size_t T, size_t H, size_t KVH, size_t hd) {
    AttBench a = {.B = B, .T = T, .H = H, .KVH = KVH, .hd = hd};
    size_t N = B * T, qd = H * hd, kvd = KVH * hd;
    size_t np = attention_work_size(&(AttnShape){.B = B, .T = T, .H = H, .KVH = KVH, .hd = hd});
    a.buf = arenaAlloc((4 * N * qd + 4 * N * kvd + N * H + np) * sizeof(real));
    a.q = a.buf;
    a.out = a.q + N * qd;
    a.dq = a.out + N * qd;
    a.dout = a.dq + N * qd;
    a.lse = a.dout + N * qd;
    a.k = a.lse + N * H;
    a.v = a.k + N * kvd;
    a.dk = a.v + N * kvd;
    a.dv = a.dk + N * kvd;
    a.work = a.dv + N * kvd;
    Rng rng;
    rng_seed(&rng, 3);
    for (size_t i = 0; i < N * qd; i++) {
        a.q[i] = (real)rng_normal(&rng);
        a.dout[i] = (real)rng_normal(&rng);
    }
    for (size_t i = 0; i < N * kvd; i++) {
        a.k[i] = (real)rng_normal(&rng);
        a.v[i] = (real)rng_normal(&rng);
    }
    return a;
}

/* seconds (by `clock`) of one forward + backward pair; the gradients are zeroed before, untimed */
static inline double att_bench_pair(AttBench* a, double (*clock)(void)) {
    size_t N = a->B * a->T, qd = a->H * a->hd, kvd = a->KVH * a->hd;
    memset(a->dq, 0, N * qd * sizeof(real));
    memset(a->dk, 0, 2 * N * kvd * sizeof(real)); /* dk, dv */
    double t0 = clock();
    AttnShape s = {a->B,    a->T,    a->H,      a->KVH, a->hd, (real)(1 / sqrt((double)a->hd)),
                   a->docs, a->bf16, a->no_amx, a->work};
    attention_forward(a->out, a->lse, a->q, a->k, a->v, &s);
    attention_backward(a->dq, a->dk, a->dv, a->dout, a->out, a->lse, a->q, a->k, a->v, &s);
    return clock() - t0;
}

/* seconds (by `clock`) of the backward alone, run one way (attention_backward_by); forward run once before */
static inline double att_bench_backward(AttBench* a, double (*clock)(void), bool by_blocks) {
    AttnShape s = {a->B,    a->T,    a->H,      a->KVH, a->hd, (real)(1 / sqrt((double)a->hd)),
                   a->docs, a->bf16, a->no_amx, a->work};
    attention_forward(a->out, a->lse, a->q, a->k, a->v, &s);
    double t0 = clock();
    attention_backward_by(a->dq, a->dk, a->dv, a->dout, a->out, a->lse, (AttnIn3){a->q, a->k, a->v}, &s, by_blocks);
    return clock() - t0;
}

static inline void att_bench_free(AttBench* a) { free(a->buf); }

#endif /* REPOC_TESTS_BENCH_COMMON_H */
