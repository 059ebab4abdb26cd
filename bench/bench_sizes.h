/* Shared by build/bench/bench_step and build/bench/bench_products: the reference sizes S, M, L and long
   (bench_step's header lists them; docs/performance.md) and the median of repeated timings. */
#ifndef REPOC_BENCH_SIZES_H
#define REPOC_BENCH_SIZES_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "tests/testutil.h" /* test_model_sizes */

static inline int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* median of x[0..n) (sorts x) */
static inline double median(double* x, size_t n) {
    qsort(x, n, sizeof(double), cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* the reference sizes S, M, L, long (bench_step.c lists them); false for an unknown name */
static inline bool size_config(ModelConfig* c, const char* size, size_t* B, size_t* T) {
    *B = 8; /* S: model_config_default's sizes */
    *T = 256;
    if (!strcmp(size, "S")) return true;
    if (!strcmp(size, "M") || !strcmp(size, "long")) {
        test_model_sizes(c, 32000, 512, 8, 8, 8, 1376);
        *B = 4;
        *T = 1024;
        if (!strcmp(size, "long")) {
            *B = 1;
            *T = 4096;
        }
        return true;
    }
    if (!strcmp(size, "L")) {
        test_model_sizes(c, 50304, 768, 12, 12, 12, 3072);
        *B = 2;
        *T = 1024;
        return true;
    }
    return false;
}

#endif
