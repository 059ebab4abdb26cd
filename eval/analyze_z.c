/* Range, boundary alignment and query distance of learned positions
   (eval/analyze_z.h, docs/analyze.md). */
#include "eval/analyze_z.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "eval/stats.h"

/* z[t * stride], t < T; sorted into work (T): range = z_(T-1) - z_(0), span = q(0.95) - q(0.05) */
ZRange z_range(const real* z, size_t stride, size_t T, double* work) {
    for (size_t t = 0; t < T; t++) work[t] = z[t * stride];
    stats_sort(work, T);
    return (ZRange){work[T - 1] - work[0], stats_quantile(work, T, Z_SPAN_HI) - stats_quantile(work, T, Z_SPAN_LO)};
}

/* token b (0 < b < T) begins a segment: gap b - 1 is a boundary gap */
static void mark(uint8_t* is_boundary, size_t b, size_t T) {
    if (b > 0 && b < T) is_boundary[b - 1] = 1;
}

size_t item_boundary_gaps(uint8_t* is_boundary, const ItemSpans* s, const int32_t* x, size_t P, size_t T, int32_t eos) {
    memset(is_boundary, 0, T - 1);
    for (size_t b = 0; b < s->n_blocks; b++) {
        mark(is_boundary, s->block[b].begin, T);
        mark(is_boundary, s->block[b].end, T);
    }
    mark(is_boundary, s->query.begin, T);
    mark(is_boundary, P, T);
    for (size_t t = 0; eos >= 0 && t + 1 < T; t++)
        if (x[t] == eos) mark(is_boundary, t + 1, T);
    size_t n = 0;
    for (size_t t = 0; t + 1 < T; t++) n += is_boundary[t];
    return n;
}

/* a gap by its |step|, for sorting: larger first, then the earlier gap */
typedef struct {
    double step;
    size_t t;
} Gap;

static int cmp_gap(const void* a, const void* b) {
    const Gap *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? 1 : -1;
    return (x->t > y->t) - (x->t < y->t);
}

/* dz_t = z[t+1] - z[t] for the G = T - 1 gaps; the k = ceil(top_frac G) largest |dz_t| (earlier first on a
   tie), and of them those with is_boundary[t] */
BoundaryCount boundary_count(const real* z, size_t stride, size_t T, const uint8_t* is_boundary, double top_frac) {
    CHECK(T >= 2 && top_frac > 0 && top_frac <= 1, "boundary_count: T %zu (at least 2), top fraction %g in (0, 1]", T,
          top_frac);
    size_t G = T - 1; /* gaps */
    Gap* g = mallocCheck(G * sizeof(Gap));
    BoundaryCount c = {(size_t)ceil(top_frac * (double)G - 1e-9), 0, G, 0}; /* 0.1 x 90 = 9, not 10 */
    if (c.large < 1) c.large = 1;
    for (size_t t = 0; t < G; t++) {
        g[t] = (Gap){fabs((double)z[(t + 1) * stride] - (double)z[t * stride]), t};
        c.boundary_gaps += is_boundary[t];
    }
    qsort(g, G, sizeof(Gap), cmp_gap);
    for (size_t i = 0; i < c.large; i++) c.large_on += is_boundary[g[i].t];
    free(g);
    return c;
}

double boundary_share(const BoundaryCount* c) { return c->large ? (double)c->large_on / (double)c->large : 0; }
double boundary_best(const BoundaryCount* c) {
    size_t m = c->boundary_gaps < c->large ? c->boundary_gaps : c->large;
    return c->large ? (double)m / (double)c->large : 0;
}
double boundary_chance(const BoundaryCount* c) { return c->gaps ? (double)c->boundary_gaps / (double)c->gaps : 0; }

static bool in_any(size_t j, const Span* spans, size_t n) {
    for (size_t b = 0; b < n; b++)
        if (j >= spans[b].begin && j < spans[b].end) return true;
    return false;
}

/* mean over i and j in the query of |z_i - z_j|, i over the needle tokens (needle) or over the filler:
   the tokens before the query in no block */
static double mean_to_query(const real* z, size_t stride, const ItemSpans* s, bool needle) {
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < s->query.begin; i++) {
        bool take = needle ? in_any(i, s->needle, s->n_needles) : !in_any(i, s->block, s->n_blocks);
        if (!take) continue;
        for (size_t j = s->query.begin; j < s->query.end; j++)
            sum += fabs((double)z[i * stride] - (double)z[j * stride]);
        n += s->query.end - s->query.begin;
    }
    return n ? sum / (double)n : NAN;
}

ZDist z_query_distance(const real* z, size_t stride, const ItemSpans* s) {
    return (ZDist){mean_to_query(z, stride, s, true), mean_to_query(z, stride, s, false)};
}
