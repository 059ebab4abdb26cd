/* eval/stats.h against known values: Wilson intervals to 4 decimals (the textbook cases and
   Newcombe 1998, Statistics in Medicine 17:857, Table I, method 3), McNemar's exact p against
   binomial sums by hand, the harness's standard error, and the bootstrap on cases whose answer
   is known: constant scores, two items, a constant paired shift, and a large sample against
   the normal interval it approaches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "eval/mc.h"
#include "eval/stats.h"
#include "tests/testutil.h"

static void check_wilson(void) {
    printf("Wilson 95%% score interval, rounded to 4 decimals\n");
    struct {
        size_t k, n;
        double lo, hi;
    } c[] = {
        {8, 10, 0.4902, 0.9433},   {0, 10, 0.0, 0.2775},      {10, 10, 0.7225, 1.0}, {50, 100, 0.4038, 0.5962},
        {81, 263, 0.2553, 0.3662}, {15, 148, 0.0624, 0.1605}, {0, 20, 0.0, 0.1611},  {1, 29, 0.0061, 0.1718},
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        Interval w = stats_wilson(c[i].k, c[i].n);
        /* published to 4 decimals: the rounded value must equal it */
        EXPECT(fabs(round(w.lo * 1e4) / 1e4 - c[i].lo) < 1e-9 && fabs(round(w.hi * 1e4) / 1e4 - c[i].hi) < 1e-9,
               "%3zu/%-3zu [%.6f, %.6f], published [%.4f, %.4f]", c[i].k, c[i].n, w.lo, w.hi, c[i].lo, c[i].hi);
    }
    Interval e = stats_wilson(0, 0);
    EXPECT(e.lo == 0 && e.hi == 1, "0/0: [%g, %g], the whole range", e.lo, e.hi);
}

static void check_mcnemar(void) {
    printf("McNemar exact two-sided p = min(1, 2 P(Binomial(n01 + n10, 1/2) <= min(n01, n10)))\n");
    struct {
        size_t n01, n10;
        double p;
        const char* how;
    } c[] = {
        {9, 1, 22.0 / 1024, "2 (C(10,0) + C(10,1)) / 2^10 = 22/1024"},
        {1, 9, 22.0 / 1024, "the same, the other way round"},
        {0, 5, 2.0 / 32, "2 / 2^5"},
        {7, 23, 5608024.0 / 1073741824.0, "2 (1+30+435+4060+27405+142506+593775+2035800) / 2^30"},
        {5, 5, 1.0, "2 x 638/1024 > 1: capped at 1"},
        {0, 0, 1.0, "no discordant pair"},
        {0, 20, 2.0 / 1048576, "2 / 2^20"},
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        double p = stats_mcnemar_exact(c[i].n01, c[i].n10);
        /* lgamma sums: a few ulps of each term */
        EXPECT(fabs(p - c[i].p) <= 1e-12 * c[i].p, "n01 %zu n10 %zu: p %.15g, by hand %.15g (%s)", c[i].n01, c[i].n10,
               p, c[i].p, c[i].how);
    }
    double big = stats_mcnemar_exact(5000, 5000);
    EXPECT(big == 1, "n01 = n10 = 5000: p %g (1: no evidence either way; no overflow)", big);
}

static void check_stderr(void) {
    printf("standard error = sample std (n - 1) / sqrt(n), as lm-evaluation-harness\n");
    double x[] = {1, 0, 1, 1};
    double se = stats_stderr(x, 4); /* mean 0.75, sum of squares 0.75, var 0.25, sd 0.5, / 2 */
    EXPECT(fabs(se - 0.25) < 1e-15, "{1,0,1,1}: %.17g, by hand 0.25", se);
    EXPECT(stats_stderr(x, 1) == 0, "one item: 0");
    double p = stats_stderr_prop(3, 4);
    EXPECT(fabs(p - 0.25) < 1e-15, "3 ones of 4 from the counts: %.17g", p);
}

static void check_bootstrap(void) {
    printf("percentile bootstrap (%d resamples, fixed seed)\n", STATS_RESAMPLES);
    double* work = malloc(STATS_RESAMPLES * sizeof(double));
    double x[400], y[400];
    for (size_t i = 0; i < 50; i++) x[i] = 0.75; /* a sum of them is exact in binary */
    Interval c = stats_bootstrap_mean(x, 50, work);
    EXPECT(c.lo == 0.75 && c.hi == 0.75, "constant 0.75: [%.17g, %.17g] (every resample has mean 0.75)", c.lo, c.hi);
    x[0] = 0;
    x[1] = 1;
    c = stats_bootstrap_mean(x, 2, work);
    EXPECT(c.lo == 0 && c.hi == 1, "{0, 1}: [%g, %g] (means 0, 1/2, 1 with probabilities 1/4, 1/2, 1/4)", c.lo, c.hi);
    for (size_t i = 0; i < 400; i++) {
        x[i] = (double)(i % 2) * 0.5; /* 0 or 0.5 */
        y[i] = x[i] + 0.25;           /* exact in binary */
    }
    c = stats_bootstrap_diff(x, y, 400, work);
    EXPECT(c.lo == 0.25 && c.hi == 0.25, "paired shift of 0.25: [%.17g, %.17g]", c.lo, c.hi);
    for (size_t i = 0; i < 400; i++) x[i] = (double)(i % 2); /* p = 1/2, n = 400 */
    c = stats_bootstrap_mean(x, 400, work);
    double half = STATS_Z95 * 0.5 / 20; /* 1.96 sqrt(p (1 - p) / n) = 0.049 */
    /* the quantiles of the resampled means approach the normal ones; their Monte Carlo error is 7e-4 and the
       means lie on a grid of 1/400: within 0.005 */
    EXPECT(fabs(c.lo - (0.5 - half)) < 0.005 && fabs(c.hi - (0.5 + half)) < 0.005,
           "400 items, half of them 1: [%.4f, %.4f], normal [%.4f, %.4f]", c.lo, c.hi, 0.5 - half, 0.5 + half);
    Interval again = stats_bootstrap_mean(x, 400, work);
    EXPECT(again.lo == c.lo && again.hi == c.hi, "the same scores give the same interval");

    printf("two-level bootstrap over seeds and items\n");
    for (size_t i = 0; i < 400; i++) y[i] = x[i] + 0.25;
    Interval one = stats_bootstrap_diff(x, y, 400, work), s1 = stats_bootstrap_diff_seeds(x, y, 1, 400, work);
    EXPECT(one.lo == s1.lo && one.hi == s1.hi, "one seed: the paired bootstrap, [%.17g, %.17g]", s1.lo, s1.hi);
    double a[2 * 50], b[2 * 50]; /* seed 0: every item +1 (0 -> 1); seed 1: every item -1 (1 -> 0) */
    for (size_t i = 0; i < 50; i++) {
        a[i] = 0, b[i] = 1;
        a[50 + i] = 1, b[50 + i] = 0;
    }
    c = stats_bootstrap_diff_seeds(a, b, 2, 50, work);
    EXPECT(c.lo == -1 && c.hi == 1,
           "seeds +1 and -1 on every item: [%g, %g] (means -1, 0, 1 with probabilities 1/4, 1/2, 1/4, whatever the "
           "items drawn)",
           c.lo, c.hi);
    Interval pooled = stats_bootstrap_diff(a, b, 100, work); /* the same 100 pairs as one seed */
    EXPECT(pooled.hi - pooled.lo < 0.5, "the same pairs read as one seed: [%.3f, %.3f], far narrower", pooled.lo,
           pooled.hi);
    for (size_t i = 0; i < 100; i++) b[i] = a[i] + 0.5;
    c = stats_bootstrap_diff_seeds(a, b, 2, 50, work);
    EXPECT(c.lo == 0.5 && c.hi == 0.5, "both seeds +0.5 on every item: [%.17g, %.17g]", c.lo, c.hi);
    free(work);
}

static void check_mc_pick(void) {
    printf("mc_pick: argmax of ll (acc) or ll / chars (acc_norm), the first on a tie\n");
    double ll[] = {-4, -2, -2, -3}, chars[] = {4, 1, 1, 6};
    EXPECT(mc_pick(ll, chars, 4, false) == 1, "acc: the tie of choices 1 and 2 goes to 1");
    EXPECT(mc_pick(ll, chars, 4, true) == 3, "acc_norm: -4/4, -2, -2, -3/6 = -0.5 picks 3");
}

int main(void) {
    check_wilson();
    check_mcnemar();
    check_stderr();
    check_bootstrap();
    check_mc_pick();
    printf("%d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}
