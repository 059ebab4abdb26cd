/* build/bench/bench_products: each distinct product of one training step, timed with FP32 operands on
   OpenBLAS and on oneDNN (train.f32_engine) and with BF16 operands (oneDNN, train.compute_dtype "bf16"), side
   by side on the same buffers: the tables of docs/cpus.md, "BF16 products" and "Engines per CPU".
     bench_products [--size S|M|L|long] [--threads N] [--reps N] [--cold]
   Sizes as bench_step's (OLMo-2 block, mode rope). Per product, the GEMM's M x N x K for y = x W^T
   (forward: N rows x out x in), dx = dy W (input gradient: rows x in x out) and dW += dy^T x (weight
   gradient: out x in x rows), the median of
   --reps calls of each kind alternated OpenBLAS, oneDNN f32, bf16, OpenBLAS, ..., the GFLOP/s of each and
   the ratios to OpenBLAS. The BF16
   times include rounding the activation operands (the weights' copies are made once per optimizer step).
   Each line ends with the kernel oneDNN chose. The last line weights the products by how often a step
   runs them (L times per layer product, once for the head). --cold writes over COLD_BYTES before every timed
   call, so that each product finds its operands outside the cores' L2 caches, as in a training step, where
   the other layers' work runs between two products; without it the same buffers stay hot from call to call. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/cpu.h"
#include "common/rng.h"
#include "common/threads.h"
#include "bench/bench_sizes.h"
#include "model/dispatch.h"
#include "model/linear.h"
#include "model/model.h"
#include "tests/testutil.h"

typedef struct {
    const char* name;
    size_t OC, C, count; /* weight (OC, C); runs per step */
    const real* W;
    real* dW;
} Proj;

/* the bytes --cold writes over before each call: several times any L2 cache of these machines (1-2 MiB a
   core), in parallel, so that every core's L2 is evicted */
#define COLD_BYTES ((size_t)64 << 20)
static real* cold_buffer;

/* seconds of one call: kind 0 forward, 1 input gradient, 2 weight gradient */
static double one_call(Bf16Products* bf, int kind, const Proj* p, real* x, real* y, size_t N) {
    if (cold_buffer) {
        size_t n = COLD_BYTES / sizeof(real);
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) cold_buffer[i] = cold_buffer[i] * (real)0.5 + (real)1;
    }
    double t0 = now_s();
    if (kind == 0) linear_forward(bf, y, x, p->W, N, p->C, p->OC);
    else if (kind == 1) linear_backward(bf, x, NULL, y, x, p->W, N, p->C, p->OC, false);
    else linear_backward(bf, NULL, p->dW, y, x, p->W, N, p->C, p->OC, false);
    return now_s() - t0;
}

/* mode e from now on: 0 FP32 on OpenBLAS, 1 FP32 on oneDNN, 2 BF16; returns its products' context */
static Bf16Products* use_mode(const Model* m, int e) {
    products_set_f32_engine(e == 1 ? F32_ONEDNN : F32_OPENBLAS);
    return e == 2 ? model_products(m) : NULL;
}

int main(int argc, char** argv) {
    threads_startup();
    const char* size = "S";
    int threads = 0, reps = 5;
    bool cold = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--cold")) cold = true;
        else if (v && !strcmp(a, "--size")) size = argv[++i];
        else if (v && !strcmp(a, "--threads")) threads = atoi(argv[++i]);
        else if (v && !strcmp(a, "--reps")) reps = atoi(argv[++i]);
        else
            DIE("bench_products: %s %s (--size S|M|L|long, --threads N, --reps N, --cold)", a,
                v ? "is not an option" : "needs a value");
    }
    if (cold) {
        cold_buffer = calloc(COLD_BYTES / sizeof(real), sizeof(real));
        CHECK(cold_buffer, "bench_products: --cold: no memory for its %zu MiB", COLD_BYTES >> 20);
    }
    CHECK(reps >= 1 && reps <= 1000, "bench_products: --reps in [1, 1000]");
    threads = threads_init(threads);
    char why[512];
    bool bf16 = products_bf16_available(why, sizeof(why)); /* without: the BF16 columns print nan */
    int modes = bf16 ? 3 : 2;
    ModelConfig c;
    model_config_default(&c);
    size_t B, T;
    CHECK(size_config(&c, size, &B, &T), "bench_products: unknown size %s (S, M, L, long)", size);
    model_config_plan_positions(&c, "rope", REPO_START_DEFAULT);
    Model m;
    model_build_opts(&m, &c, B, T, NULL, 0, &(ModelOpts){.compute_bf16 = bf16}, false);
    model_init_weights(&m, &(ModelInit){.seed = 1, .std = 0.02});
    size_t N = B * T, D = c.D, F = c.F, qd = c.H * cfg_hd(&c), kvd = c.KVH * cfg_hd(&c);
    const LayerWeights* w = &m.w.layer[0];
    LayerWeights* dw = &m.dw.layer[0];
    Proj ps[] = {{"q_proj", qd, D, c.L, w->wq, dw->wq},       {"k_proj, v_proj", kvd, D, 2 * c.L, w->wk, dw->wk},
                 {"o_proj", D, qd, c.L, w->wo, dw->wo},       {"gate_proj + up_proj", 2 * F, D, c.L, w->gate, dw->gate},
                 {"down_proj", D, F, c.L, w->down, dw->down}, {"lm_head", c.V, D, 1, m.w.lm_head, m.dw.lm_head}};
    size_t widest = c.V > 2 * F ? c.V : 2 * F;
    real* x = arenaAlloc(N * (F > qd ? F : qd) * sizeof(real));
    real* y = arenaAlloc(N * widest * sizeof(real));
    Rng rng;
    rng_seed(&rng, 2);
    for (size_t i = 0; i < N * (F > qd ? F : qd); i++) x[i] = (real)rng_normal(&rng);
    for (size_t i = 0; i < N * widest; i++) y[i] = (real)(0.01 * rng_normal(&rng));
    char cpu[256];
    cpu_model(cpu, sizeof(cpu));
    printf("bench_products: size %s (B=%zu T=%zu, N=%zu rows), %d threads, %d reps%s; cpu: %s (%s); OpenBLAS core %s\n",
           size, B, T, N, threads, reps, cold_buffer ? ", caches written over before each call (--cold)" : "", cpu,
           cpu_level(), cpu_blas_core());
    printf("bf16: %s\n\n", bf16 ? products_name(true) : why);
    printf(
        "| product | M x N x K | runs/step | OpenBLAS f32 GFLOP/s | oneDNN f32 GFLOP/s | bf16 GFLOP/s | oneDNN f32 / "
        "OpenBLAS | bf16 / OpenBLAS | bf16 / best f32 |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    static const char* kinds[] = {"forward", "input gradient", "weight gradient"};
    double total[3] = {0, 0, bf16 ? 0 : NAN}, flop_all = 0;
    double* samples = mallocCheck(3 * (size_t)reps * sizeof(double));
    for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
        for (int kind = 0; kind < 3; kind++) {
            const Proj* p = &ps[k];
            for (int e = 0; e < modes; e++) { /* each mode's primitives created untimed */
                one_call(use_mode(&m, e), kind, p, x, y, N);
            }
            for (int r = 0; r < reps; r++)
                for (int e = 0; e < modes; e++) { samples[e * reps + r] = one_call(use_mode(&m, e), kind, p, x, y, N); }
            double t[3] = {NAN, NAN, NAN}, flop = 2.0 * (double)N * (double)p->C * (double)p->OC;
            for (int e = 0; e < modes; e++) {
                t[e] = median(samples + e * reps, (size_t)reps);
                total[e] += t[e] * (double)p->count;
            }
            flop_all += flop * (double)p->count;
            size_t gm = kind == 2 ? p->OC : N, gn = kind == 0 ? p->OC : p->C,
                   gk = kind == 0   ? p->C
                        : kind == 1 ? p->OC
                                    : N;
            printf("| %s, %s | %zu x %zu x %zu | %zu | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f |\n", p->name,
                   kinds[kind], gm, gn, gk, p->count, flop / t[0] * 1e-9, flop / t[1] * 1e-9, flop / t[2] * 1e-9,
                   t[0] / t[1], t[0] / t[2], fmin(t[0], t[1]) / t[2]);
        }
    }
    printf("| the step's products, weighted by runs/step | | | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f |\n",
           flop_all / total[0] * 1e-9, flop_all / total[1] * 1e-9, flop_all / total[2] * 1e-9, total[0] / total[1],
           total[0] / total[2], fmin(total[0], total[1]) / total[2]);
    printf("\nkernels oneDNN chose:\n");
    onednn_print(stdout);
    free(samples);
    free(cold_buffer);
    free(x);
    free(y);
    model_free(&m);
    return 0;
}
