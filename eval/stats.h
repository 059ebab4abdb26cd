/* Intervals and paired tests for evaluation scores (docs/eval.md, "Intervals"):
   - Wilson's score interval for a proportion k/n at z = 1.959963984540054 (95%):
       centre (k + z²/2) / (n + z²), half-width z sqrt(k(n-k)/n + z²/4) / (n + z²);
   - the percentile bootstrap of a mean over items: STATS_RESAMPLES resamples of
     n items drawn with replacement (xoshiro256** from a fixed seed, so the same
     scores give the same interval), the 2.5% and 97.5% quantiles of their means
     (linear interpolation between order statistics, numpy's default);
   - the paired bootstrap of mean(b - a): the same, resampling item indices, so
     each item keeps its pair;
   - over seeds and items (runs of S seeds scored on the same n items, paired by seed and by item): each
     resample draws S seeds with replacement, then n items with replacement (one draw for all the chosen
     seeds), and takes the mean of b - a over the chosen (seed, item) pairs; S = 1 is the paired bootstrap;
   - McNemar's exact two-sided p for paired 0/1 scores: with n01 items right
     only in B and n10 only in A, p = min(1, 2 P(X <= min(n01, n10))),
     X ~ Binomial(n01 + n10, 1/2); 1 when no item is discordant;
   - lm-evaluation-harness's standard error of a mean: the sample standard
     deviation (divisor n - 1) / sqrt(n). */
#ifndef REPOC_STATS_H
#define REPOC_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATS_Z95 1.959963984540054 /* the 97.5% quantile of N(0,1) */
#define STATS_RESAMPLES 10000       /* bootstrap resamples */
#define STATS_SEED 20240611u        /* bootstrap seed: the interval is a function of the scores */
#define STATS_MAX_SEEDS 64          /* runs per side of stats_bootstrap_diff_seeds */

typedef struct {
    double lo, hi;
} Interval;

/* k successes of n (k <= n); n = 0 gives [0, 1] */
Interval stats_wilson(size_t k, size_t n);
/* sample std / sqrt(n) of x (n); 0 for n < 2 */
double stats_stderr(const double* x, size_t n);
double stats_mean(const double* x, size_t n);
/* the same for k ones among n 0/1 scores: sqrt(p (1 - p) / (n - 1)), p = k/n */
double stats_stderr_prop(size_t k, size_t n);
/* 95% percentile bootstrap of mean(x), x (n), n >= 1; work (STATS_RESAMPLES) */
Interval stats_bootstrap_mean(const double* x, size_t n, double* work);
/* 95% paired bootstrap of mean(b - a) over the n items, a (n) b (n); work (STATS_RESAMPLES) */
Interval stats_bootstrap_diff(const double* a, const double* b, size_t n, double* work);
/* 95% two-level bootstrap of mean(b - a) over S seeds and n items: a (S,n) b (S,n), row s the scores of
   seed s; work (STATS_RESAMPLES) */
Interval stats_bootstrap_diff_seeds(const double* a, const double* b, size_t S, size_t n, double* work);
/* the q-quantile (q in [0, 1]) of s (n >= 1), sorted ascending: s[h] interpolated linearly at h = (n - 1) q,
   numpy's default */
double stats_quantile(const double* s, size_t n, double q);
/* x (n) sorted ascending in place */
void stats_sort(double* x, size_t n);
/* McNemar's exact two-sided p: n01 items right in B only, n10 right in A only */
double stats_mcnemar_exact(size_t n01, size_t n10);
/* true when every score is exactly 0 or 1 */
bool stats_binary(const double* x, size_t n);

#endif
