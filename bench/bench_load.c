/* build/bench/bench_load: peak resident memory and time of loading a BF16
   checkpoint of the OLMo-2 1B shape (D=2048, L=16, H=16, F=8192, V=100352,
   untied; N ≈ 1.48e9 parameters) into the F32 parameter arena; the load
   must stay within 4 bytes per parameter + 256 MiB of RSS.
     bench_load --generate DIR   write a random BF16 checkpoint there (~3 GB)
     bench_load --load DIR       load it in this process; print peak RSS and time;
                                 exit 1 if peak RSS > 4N bytes + 256 MiB
   `make bench-load` runs both in a temporary directory and deletes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/threads.h"
#include "hf/hf_checkpoint.h"
#include "hf/hf_config.h"
#include "model/model.h"
#include "tests/testutil.h"

static double peak_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* kilobytes on Linux */
}

static void olmo2_1b(ModelConfig* c) {
    model_config_default(c);
    c->block = BLOCK_OLMO2;
    test_model_sizes(c, 100352, 2048, 16, 16, 16, 8192);
    c->rope_theta = 500000;
}

int main(int argc, char** argv) {
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: bench_load --generate DIR | --load DIR   (make bench-load runs both)\n");
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "--generate") && strcmp(argv[1], "--load"))) {
        fprintf(stderr, "usage: bench_load --generate DIR | --load DIR\n");
        return 2;
    }
    threads_init(0);
    ModelConfig cfg;
    olmo2_1b(&cfg);
    const char* frozen[] = {"*"}; /* loading needs no gradient arena */
    Model m;
    if (!strcmp(argv[1], "--generate")) {
        model_build(&m, &cfg, 1, 1, frozen, 1, true);
        double t0 = now_s();
#pragma omp parallel for
        for (size_t i = 0; i < m.tensors.n_params; i++) { /* cheap pseudo-random weights in [-0.05, 0.05) */
            uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull;
            z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
            m.params[i] = (real)((double)(z >> 11) * 0x1.0p-53 * 0.1 - 0.05);
        }
        hf_save(&m, argv[2], ST_BF16);
        printf("generated %s: %zu parameters in BF16 (%.1f s)\n", argv[2], m.tensors.n_params, now_s() - t0);
        model_free(&m);
        return 0;
    }
    double t0 = now_s();
    ModelConfig from_disk;
    hf_config_read(argv[2], &from_disk);
    model_build(&m, &from_disk, 1, 1, frozen, 1, true);
    double t_build = now_s() - t0;
    hf_load_weights(&m, argv[2], 1, true);
    double t_load = now_s() - t0 - t_build;
    double n = (double)m.tensors.n_params;
    double budget = 4.0 * n / 1048576.0 + 256.0, peak = peak_rss_mib();
    printf("N = %.0f parameters (%.3e)\n", n, n);
    printf("peak RSS %.0f MiB; budget 4N + 256 MiB = %.0f MiB; the F32 arena alone is %.0f MiB\n", peak, budget,
           4.0 * n / 1048576.0);
    printf("time: build (allocate + zero the arena) %.1f s, load + convert %.1f s\n", t_build, t_load);
    printf("%s\n", peak <= budget ? "PASS: peak RSS within 4N + 256 MiB" : "FAIL: peak RSS over 4N + 256 MiB");
    model_free(&m);
    return peak <= budget ? 0 : 1;
}
