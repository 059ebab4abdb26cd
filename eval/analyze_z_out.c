/* Reports of (a) ranges, (b) boundary alignment, (c) query distance and of a
   text's positions (eval/analyze_z_out.h, docs/analyze.md). */
#include "eval/analyze_z_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "eval/analyze_svg.h"
#include "eval/stats.h"

/* v (items, n_repo, KVH) of item i averaged over layers [r0, r1) and heads [g0, g1); NAN when any is NAN */
static double group_mean(const Analysis* an, const double* v, size_t i, size_t r0, size_t r1, size_t g0, size_t g1) {
    size_t KVH = an->cfg.KVH;
    double s = 0;
    for (size_t r = r0; r < r1; r++)
        for (size_t g = g0; g < g1; g++) s += v[(i * an->n_repo + r) * KVH + g];
    return s / (double)((r1 - r0) * (g1 - g0));
}

BoundarySummary boundary_summary(const Analysis* an, size_t r0, size_t r1, size_t g0, size_t g1) {
    size_t n = an->items;
    double* x = mallocCheck(n * sizeof(double));
    double* work = mallocCheck(STATS_RESAMPLES * sizeof(double));
    for (size_t i = 0; i < n; i++) x[i] = group_mean(an, an->bnd_share, i, r0, r1, g0, g1);
    Interval ci = stats_bootstrap_mean(x, n, work);
    BoundarySummary b = {stats_mean(x, n), ci.lo, ci.hi, stats_mean(an->bnd_chance, n), stats_mean(an->bnd_best, n), n};
    free(x);
    free(work);
    return b;
}

MechSummary mech_summary(const Analysis* an, size_t r0, size_t r1, size_t g0, size_t g1) {
    double* needle = mallocCheck(an->items * sizeof(double));
    double* filler = mallocCheck(an->items * sizeof(double));
    double* diff = mallocCheck(an->items * sizeof(double));
    double* work = mallocCheck(STATS_RESAMPLES * sizeof(double));
    size_t n = 0;
    for (size_t i = 0; i < an->items; i++) {
        double f = group_mean(an, an->d_filler, i, r0, r1, g0, g1);
        if (isnan(f)) continue; /* no filler in this item */
        needle[n] = group_mean(an, an->d_needle, i, r0, r1, g0, g1);
        filler[n] = f;
        diff[n] = f - needle[n];
        n++;
    }
    MechSummary m = {NAN, NAN, NAN, NAN, NAN, n};
    if (n) {
        Interval ci = stats_bootstrap_mean(diff, n, work);
        m = (MechSummary){stats_mean(needle, n), stats_mean(filler, n), 0, ci.lo, ci.hi, n};
        m.ratio = m.filler > 0 ? m.needle / m.filler : NAN;
    }
    free(needle);
    free(filler);
    free(diff);
    free(work);
    return m;
}

bool analysis_has_bnd(const Analysis* an) { return an->bnd_share != NULL; }

ZRange range_layer_mean(const Analysis* an, const RangeRun* rr, size_t r) {
    ZRange m = {0, 0};
    for (size_t g = 0; g < an->cfg.KVH; g++) {
        m.range += rr->head[r * an->cfg.KVH + g].range / (double)an->cfg.KVH;
        m.span += rr->head[r * an->cfg.KVH + g].span / (double)an->cfg.KVH;
    }
    return m;
}

void analysis_print_z(const Analysis* an) {
    size_t KVH = an->cfg.KVH;
    if (analysis_has_bnd(an)) {
        printf("\nboundary alignment: large = the top %g of each item's %zu gaps |z[t+1] - z[t]| (%zu), on a boundary "
               "gap when a block, the query, the answer or a document begins after it\n",
               an->top_frac, an->length - 1, an->bnd_large);
        for (size_t r = 0; r <= an->n_repo; r++) {
            bool all = r == an->n_repo;
            BoundarySummary b = boundary_summary(an, all ? 0 : r, all ? an->n_repo : r + 1, 0, KVH);
            char name[32];
            snprintf(name, sizeof(name), all ? "all" : "layer %zu", all ? 0 : an->repo_layer[r]);
            printf("  %-14s on boundaries %.3f [%.3f, %.3f]  chance %.3f  (%.2fx)  at most %.3f\n", name, b.share, b.lo,
                   b.hi, b.chance, b.chance > 0 ? b.share / b.chance : NAN, b.best);
        }
        printf("\nquery distance: mean |z_i - z_j| of needle tokens i and of filler tokens i to query tokens j\n");
        for (size_t r = 0; r <= an->n_repo; r++) {
            bool all = r == an->n_repo;
            MechSummary m = mech_summary(an, all ? 0 : r, all ? an->n_repo : r + 1, 0, KVH);
            char name[32];
            snprintf(name, sizeof(name), all ? "all" : "layer %zu", all ? 0 : an->repo_layer[r]);
            printf("  %-14s needle %.4f  filler %.4f  ratio %.3f  filler - needle [%.4f, %.4f]\n", name, m.needle,
                   m.filler, m.ratio, m.lo, m.hi);
        }
    }
    if (an->n_ranges) {
        printf("\nz range against input length: max - min and the 5-95%% span, means over items and heads\n");
        for (size_t k = 0; k < an->n_ranges; k++) {
            const RangeRun* rr = &an->ranges[k];
            char name[64];
            int n = snprintf(name, sizeof(name), "L=%zu (%zux", rr->length, rr->mult);
            if (rr->yarn_factor > 1) snprintf(name + n, sizeof(name) - (size_t)n, ", YaRN %g)", rr->yarn_factor);
            else snprintf(name + n, sizeof(name) - (size_t)n, ")");
            for (size_t r = 0; r < an->n_repo; r++) {
                ZRange m = range_layer_mean(an, rr, r);
                printf("  %-22s layer %-3zu range %9.3f  span %9.3f\n", name, an->repo_layer[r], m.range, m.span);
            }
        }
    }
}

static void add_num_or_null(cJSON* o, const char* key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

/* {keys[i]: v[i]} for i < n, a non-finite value as null */
static cJSON* num_obj(const char* const* keys, const double* v, size_t n) {
    cJSON* o = cJSON_CreateObject();
    for (size_t i = 0; i < n; i++) add_num_or_null(o, keys[i], v[i]);
    return o;
}

static cJSON* bnd_obj(const BoundarySummary* b) {
    static const char* const keys[] = {"share", "lo", "hi", "chance", "enrichment", "best", "items"};
    double v[] = {b->share, b->lo,           b->hi, b->chance, b->chance > 0 ? b->share / b->chance : NAN,
                  b->best,  (double)b->items};
    return num_obj(keys, v, 7);
}

static cJSON* mech_obj(const MechSummary* m) {
    static const char* const keys[] = {"needle_query", "filler_query", "ratio", "diff_lo", "diff_hi", "items"};
    double v[] = {m->needle, m->filler, m->ratio, m->lo, m->hi, (double)m->items};
    return num_obj(keys, v, 6);
}

/* the summary of layers [r0, r1) and heads [g0, g1) as JSON: boundary alignment, or else query distance */
static cJSON* summary_obj(const Analysis* an, bool boundary, size_t r0, size_t r1, size_t g0, size_t g1) {
    if (boundary) {
        BoundarySummary b = boundary_summary(an, r0, r1, g0, g1);
        return bnd_obj(&b);
    }
    MechSummary m = mech_summary(an, r0, r1, g0, g1);
    return mech_obj(&m);
}

/* {"overall": .., "layers": [{"layer": l, .., "heads": [{"head": g, ..}]}]} of one summary kind */
static cJSON* per_layer_head(const Analysis* an, bool boundary) {
    size_t KVH = an->cfg.KVH, R = an->n_repo;
    cJSON* root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "overall", summary_obj(an, boundary, 0, R, 0, KVH));
    cJSON* layers = cJSON_AddArrayToObject(root, "layers");
    for (size_t r = 0; r < R; r++) {
        cJSON* lo = summary_obj(an, boundary, r, r + 1, 0, KVH);
        cJSON_AddNumberToObject(lo, "layer", (double)an->repo_layer[r]);
        cJSON* heads = cJSON_AddArrayToObject(lo, "heads");
        for (size_t g = 0; g < KVH; g++) {
            cJSON* ho = summary_obj(an, boundary, r, r + 1, g, g + 1);
            cJSON_AddNumberToObject(ho, "head", (double)g);
            cJSON_AddItemToArray(heads, ho);
        }
        cJSON_AddItemToArray(layers, lo);
    }
    return root;
}

cJSON* boundary_json(const Analysis* an) {
    if (!analysis_has_bnd(an)) return NULL;
    cJSON* o = per_layer_head(an, true);
    cJSON_AddNumberToObject(o, "top_frac", an->top_frac);
    cJSON_AddNumberToObject(o, "gaps_per_item", (double)(an->length - 1));
    cJSON_AddNumberToObject(o, "large_per_item", (double)an->bnd_large);
    if (an->eos >= 0) cJSON_AddNumberToObject(o, "eos", an->eos);
    else cJSON_AddNullToObject(o, "eos");
    cJSON* ch = cJSON_AddArrayToObject(o, "chance_per_item");
    for (size_t i = 0; i < an->items; i++) cJSON_AddItemToArray(ch, cJSON_CreateNumber(an->bnd_chance[i]));
    return o;
}

cJSON* mechanism_json(const Analysis* an) { return analysis_has_bnd(an) ? per_layer_head(an, false) : NULL; }

cJSON* ranges_json(const Analysis* an) {
    if (!an->n_ranges) return NULL;
    size_t KVH = an->cfg.KVH;
    cJSON* o = cJSON_CreateObject();
    cJSON* q = cJSON_AddArrayToObject(o, "span_quantiles");
    cJSON_AddItemToArray(q, cJSON_CreateNumber(Z_SPAN_LO));
    cJSON_AddItemToArray(q, cJSON_CreateNumber(Z_SPAN_HI));
    cJSON* runs = cJSON_AddArrayToObject(o, "runs");
    for (size_t k = 0; k < an->n_ranges; k++) {
        const RangeRun* rr = &an->ranges[k];
        cJSON* ro = cJSON_CreateObject();
        cJSON_AddNumberToObject(ro, "length", (double)rr->length);
        cJSON_AddNumberToObject(ro, "mult", (double)rr->mult);
        add_num_or_null(ro, "yarn_factor", rr->yarn_factor > 1 ? rr->yarn_factor : NAN);
        cJSON_AddNumberToObject(ro, "items", (double)rr->items);
        cJSON* layers = cJSON_AddArrayToObject(ro, "layers");
        for (size_t r = 0; r < an->n_repo; r++) {
            ZRange m = range_layer_mean(an, rr, r);
            cJSON* lo = cJSON_CreateObject();
            cJSON_AddNumberToObject(lo, "layer", (double)an->repo_layer[r]);
            cJSON_AddNumberToObject(lo, "range", m.range);
            cJSON_AddNumberToObject(lo, "span", m.span);
            cJSON* heads = cJSON_AddArrayToObject(lo, "heads");
            for (size_t g = 0; g < KVH; g++) {
                cJSON* ho = cJSON_CreateObject();
                cJSON_AddNumberToObject(ho, "head", (double)g);
                cJSON_AddNumberToObject(ho, "range", rr->head[r * KVH + g].range);
                cJSON_AddNumberToObject(ho, "span", rr->head[r * KVH + g].span);
                cJSON_AddItemToArray(heads, ho);
            }
            cJSON_AddItemToArray(layers, lo);
        }
        cJSON_AddItemToArray(runs, ro);
    }
    return o;
}
