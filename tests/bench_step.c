/* build/bench/bench_step: time full training steps (zero_grad, forward,
   backward, clip, AdamW) of a reference size after warm-up.
     bench_step [--size S|M|L|long] [--mode rope|repo|nope|r2n1|n2r1] [--steps N] [--warmup N]
                [--threads N] [--block olmo2|llama]
   Sizes (issue #5): S D=256 L=4 H=8 F=1024 V=4096 B=8 T=256; M D=512 L=8 H=8 F=1376
   V=32000 B=4 T=1024; L D=768 L=12 H=12 F=3072 V=50304 B=2 T=1024; long = M at B=1 T=4096. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/check.h"
#include "common/rng.h"
#include "common/threads.h"
#include "model/model.h"
#include "optim/adamw.h"
#include "optim/clip.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
    const char *size = "S", *mode = "repo", *block = "olmo2";
    int steps = 5, warmup = 2, threads = 0;
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: bench_step [--size S|M|L|long] [--mode rope|repo|nope|r2n1|n2r1] [--steps N] [--warmup N]\n"
               "                  [--threads N] [--block olmo2|llama]\n");
        return 0;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--size")) size = argv[i + 1];
        else if (!strcmp(argv[i], "--mode")) mode = argv[i + 1];
        else if (!strcmp(argv[i], "--block")) block = argv[i + 1];
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else { fprintf(stderr, "bench_step: unknown option %s\n", argv[i]); return 2; }
    }
    threads_init(threads);
    ModelConfig c;
    model_config_default(&c);
    c.block = strcmp(block, "llama") ? BLOCK_OLMO2 : BLOCK_LLAMA;
    size_t B = 8, T = 256;
    if (!strcmp(size, "M") || !strcmp(size, "long")) {
        c.D = 512, c.L = 8, c.H = c.KVH = 8, c.F = 1376, c.V = 32000, B = 4, T = 1024;
        if (!strcmp(size, "long")) B = 1, T = 4096;
    } else if (!strcmp(size, "L")) {
        c.D = 768, c.L = 12, c.H = c.KVH = 12, c.F = 3072, c.V = 50304, B = 2, T = 1024;
    }
    CHECK(model_config_plan_positions(&c, mode, REPO_START_DEFAULT), "unknown mode %s", mode);
    Model m;
    model_build(&m, &c, B, T, NULL, 0, false);
    model_init_weights(&m, 1, 0.02);
    OptimConfig oc;
    optim_config_default(&oc);
    AdamW opt;
    FILE* devnull = fopen("/dev/null", "w");
    FILE* saved = stdout;
    stdout = devnull;   /* adamw_build prints its groups */
    adamw_build(&opt, &m.tensors, &oc);
    stdout = saved;
    fclose(devnull);
    size_t N = B * T;
    int32_t* tok = mallocCheck(N * sizeof(int32_t));
    int32_t* tgt = mallocCheck(N * sizeof(int32_t));
    Rng rng;
    rng_seed(&rng, 1);
    for (size_t i = 0; i < N; i++) tok[i] = (int32_t)rng_below(&rng, c.V), tgt[i] = (int32_t)rng_below(&rng, c.V);
    double best = 1e30, total = 0;
    for (int s = 0; s < warmup + steps; s++) {
        double t0 = now_s();
        model_zero_grad(&m);
        model_forward(&m, tok, tgt);
        model_backward(&m, 1.0);
        double norm = grad_global_norm(m.grads, m.tensors.n_grads);
        grad_clip(m.grads, m.tensors.n_grads, 1.0, norm);
        adamw_step(&opt, m.params, m.grads, 1e-4, (size_t)s);
        double dt = now_s() - t0;
        if (s >= warmup) total += dt, best = dt < best ? dt : best;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("size %s mode %s: params %zu, B=%zu T=%zu: mean %.1f ms/step, best %.1f ms, %.0f tokens/s, peak RSS %.0f MiB\n",
           size, mode, m.tensors.n_params, B, T, total / steps * 1e3, best * 1e3, N / (total / steps),
           ru.ru_maxrss / 1024.0);
    adamw_free(&opt);
    model_free(&m);
    return 0;
}
