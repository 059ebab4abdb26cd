/* The paper's three analyses of learned positions, on one sequence z of a RePo
   layer's KV head at a time (docs/analyze.md gives the definitions):
   (a) range: how far z spreads over an input, max - min and the outlier-robust
       span between its 5th and 95th percentiles, measured at several input
       lengths (the basis of the paper's argument about YaRN);
   (b) boundary alignment: of the large jumps |z[t+1] - z[t]| (the top
       fraction of an item's T - 1 gaps), the share that fall on the gaps
       where one segment of a synthetic item ends and the next begins,
       against the share of such gaps among all (what chance gives);
   (c) the mechanism: how close the needle sits to the query in z,
       mean |z_i - z_j| over needle tokens i and query tokens j, against the
       same over filler tokens i. */
#ifndef REPOC_ANALYZE_Z_H
#define REPOC_ANALYZE_Z_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/real.h"
#include "eval/analyze_stats.h"

#define Z_SPAN_LO 0.05 /* the robust span runs from this quantile ... */
#define Z_SPAN_HI 0.95 /* ... to this one */
#define BOUNDARY_TOP_FRAC_DEFAULT 0.1

/* (a) one sequence z[t * stride], t < T (T >= 1): max - min and q95 - q05
   (stats_quantile: linear interpolation); work (T) */
typedef struct {
    double range, span;
} ZRange;
ZRange z_range(const real* z, size_t stride, size_t T, double* work);

/* (b) The boundary gaps of a synthetic item of T tokens whose prompt is P tokens:
   gap t lies between tokens t and t + 1 (t < T - 1), and it is a boundary gap
   when token t + 1 begins a segment: a block (needle, distractor, table row)
   begins or ends there, the query begins there (s->query.begin), the answer
   begins there (P, when P < T), or token t ends a document (x[t] == eos; eos < 0:
   none). is_boundary (T - 1) gets 1 or 0; returns the count. */
size_t item_boundary_gaps(uint8_t* is_boundary, const ItemSpans* s, const int32_t* x, size_t P, size_t T, int32_t eos);

/* The k = ceil(top_frac (T - 1)) gaps with the largest |z[t+1] - z[t]| (ties: the
   earlier gap first) and how many of them are boundary gaps (T >= 2). */
typedef struct {
    size_t large;         /* k */
    size_t large_on;      /* of them boundary gaps */
    size_t gaps;          /* T - 1 */
    size_t boundary_gaps; /* of all gaps */
} BoundaryCount;
BoundaryCount boundary_count(const real* z, size_t stride, size_t T, const uint8_t* is_boundary, double top_frac);
/* large_on / large, and boundary_gaps / gaps (the share the k gaps would have if drawn at random) */
double boundary_share(const BoundaryCount* c);
double boundary_chance(const BoundaryCount* c);
/* the largest share possible: min(k, boundary gaps) / k (fewer boundary gaps than large ones cap it) */
double boundary_best(const BoundaryCount* c);

/* (c) mean |z_i - z_j| over needle tokens i (s->needle) and query tokens j
   (s->query), and over filler tokens i (before the query, outside every block)
   and query tokens j */
typedef struct {
    double needle, filler;
} ZDist;
ZDist z_query_distance(const real* z, size_t stride, const ItemSpans* s);

#endif
