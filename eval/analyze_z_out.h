/* build/analyze's reports of the paper's analyses (eval/analyze_z.h, docs/analyze.md):
   (a) ranges at several input lengths, (b) boundary alignment, (c) the query
   distance of needle and filler: their summaries with intervals, terminal
   lines and JSON objects (eval/analyze_z_files.h writes their files). */
#ifndef REPOC_ANALYZE_Z_OUT_H
#define REPOC_ANALYZE_Z_OUT_H

#include <cjson/cJSON.h>

#include "eval/analyze_types.h"

/* Summaries over items with a 95% bootstrap interval over the items (eval/stats.h) of a group of
   RePo layers [r0, r1) and KV heads [g0, g1): each item's value is its mean over the group */
typedef struct {
    double share, lo, hi; /* large gaps on boundaries: mean share and its interval */
    double chance;        /* the share at random: mean boundary gaps / gaps */
    double best;          /* the largest share possible: mean min(k, boundary gaps) / k */
    size_t items;
} BoundarySummary;
BoundarySummary boundary_summary(const Analysis* an, size_t r0, size_t r1, size_t g0, size_t g1);

typedef struct {
    double needle, filler; /* mean |z_needle - z_query|, mean |z_filler - z_query| */
    double ratio;          /* needle / filler (< 1: the needle sits nearer the query than the filler) */
    double lo, hi;         /* interval of the mean of filler - needle */
    size_t items;          /* items with filler */
} MechSummary;
MechSummary mech_summary(const Analysis* an, size_t r0, size_t r1, size_t g0, size_t g1);

/* were (b) and (c) measured? */
bool analysis_has_bnd(const Analysis* an);
/* mean over the KV heads of one range run's RePo layer r (its r-th) */
ZRange range_layer_mean(const Analysis* an, const RangeRun* rr, size_t r);

/* the terminal lines of what was measured */
void analysis_print_z(const Analysis* an);
/* "boundaries" and "mechanism" (inside "positions") and "ranges": NULL when not measured */
cJSON* boundary_json(const Analysis* an);
cJSON* mechanism_json(const Analysis* an);
cJSON* ranges_json(const Analysis* an);

#endif
