/* Wilson and bootstrap intervals, McNemar's exact test, the harness's standard error (eval/stats.h). */
#include "eval/stats.h"

#include <math.h>
#include <stdlib.h>

#include "common/check.h"
#include "common/rng.h"

Interval stats_wilson(size_t k, size_t n) {
    if (n == 0) return (Interval){0, 1};
    double z = STATS_Z95, z2 = z * z, nn = (double)n, kk = (double)k;
    double centre = (kk + z2 / 2) / (nn + z2);
    double half = z * sqrt(kk * (nn - kk) / nn + z2 / 4) / (nn + z2);
    Interval r = {centre - half, centre + half};
    if (k == 0) r.lo = 0; /* exact at the ends: centre = half there, up to rounding */
    if (k == n) r.hi = 1;
    return r;
}

double stats_mean(const double* x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return n ? s / (double)n : 0;
}

double stats_stderr(const double* x, size_t n) {
    if (n < 2) return 0;
    double m = stats_mean(x, n), ss = 0;
    for (size_t i = 0; i < n; i++) ss += (x[i] - m) * (x[i] - m);
    return sqrt(ss / (double)(n - 1)) / sqrt((double)n);
}

double stats_stderr_prop(size_t k, size_t n) {
    if (n < 2) return 0;
    double p = (double)k / (double)n; /* sample variance n p (1 - p) / (n - 1), over n */
    return sqrt(p * (1 - p) / (double)(n - 1));
}

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

void stats_sort(double* x, size_t n) { qsort(x, n, sizeof(double), cmp_double); }

double stats_quantile(const double* s, size_t n, double q) {
    double h = (double)(n - 1) * q;
    size_t i = (size_t)h;
    return i + 1 < n ? s[i] + (h - (double)i) * (s[i + 1] - s[i]) : s[n - 1];
}

/* the 2.5% and 97.5% quantiles of the STATS_RESAMPLES resampled means in work (sorted in place) */
static Interval percentile_interval(double* work) {
    stats_sort(work, STATS_RESAMPLES);
    return (Interval){stats_quantile(work, STATS_RESAMPLES, 0.025), stats_quantile(work, STATS_RESAMPLES, 0.975)};
}

/* resample item indices; each resample's mean of b[i] - a[i] (a NULL: of b[i]) into work */
static Interval bootstrap(const double* a, const double* b, size_t n, double* work) {
    Rng rng;
    rng_seed(&rng, STATS_SEED);
    for (size_t r = 0; r < STATS_RESAMPLES; r++) {
        double s = 0;
        for (size_t j = 0; j < n; j++) {
            size_t i = (size_t)rng_below(&rng, n);
            s += a ? b[i] - a[i] : b[i];
        }
        work[r] = s / (double)n;
    }
    return percentile_interval(work);
}

Interval stats_bootstrap_mean(const double* x, size_t n, double* work) { return bootstrap(NULL, x, n, work); }

Interval stats_bootstrap_diff(const double* a, const double* b, size_t n, double* work) {
    return bootstrap(a, b, n, work);
}

Interval stats_bootstrap_diff_seeds(const double* a, const double* b, size_t S, size_t n, double* work) {
    if (S == 1) return bootstrap(a, b, n, work);
    Rng rng;
    rng_seed(&rng, STATS_SEED);
    size_t seeds[STATS_MAX_SEEDS];
    CHECK(S >= 1 && S <= STATS_MAX_SEEDS, "stats: %zu seeds (expected 1 .. %d)", S, STATS_MAX_SEEDS);
    for (size_t r = 0; r < STATS_RESAMPLES; r++) {
        for (size_t k = 0; k < S; k++) seeds[k] = (size_t)rng_below(&rng, S); /* the seeds, then the items */
        double sum = 0;
        for (size_t j = 0; j < n; j++) {
            size_t i = (size_t)rng_below(&rng, n);
            for (size_t k = 0; k < S; k++) sum += b[seeds[k] * n + i] - a[seeds[k] * n + i];
        }
        work[r] = sum / (double)(S * n);
    }
    return percentile_interval(work);
}

double stats_mcnemar_exact(size_t n01, size_t n10) {
    size_t N = n01 + n10, k = n01 < n10 ? n01 : n10;
    if (N == 0) return 1;
    /* P(X <= k) = sum_i C(N, i) / 2^N, each term in logs (N may be large) */
    double lgN = lgamma((double)N + 1), tail = 0;
    for (size_t i = 0; i <= k; i++)
        tail += exp(lgN - lgamma((double)i + 1) - lgamma((double)(N - i) + 1) - (double)N * log(2.0));
    double p = 2 * tail;
    return p < 1 ? p : 1;
}

bool stats_binary(const double* x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (x[i] != 0 && x[i] != 1) return false;
    return true;
}
