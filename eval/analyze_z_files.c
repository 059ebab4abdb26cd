/* The files of (a) ranges, (b) boundary alignment, (c) query distance and of a
   text's positions (eval/analyze_z_files.h, docs/analyze.md). */
#include "eval/analyze_z_files.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "eval/analyze_svg.h"
#include "eval/analyze_z_out.h"

typedef struct {
    FILE* f;
    char* buf;
    size_t len;
} MemFile;

static FILE* mem_open(MemFile* m) {
    m->f = open_memstream(&m->buf, &m->len);
    CHECK(m->f, "analyze: open_memstream failed");
    return m->f;
}

static void mem_write(MemFile* m, const char* dir, const char* name) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fclose(m->f);
    file_write_output(path, m->buf, m->len);
    free(m->buf);
    printf("wrote %s\n", path);
}

/* dir/name */
static void figure_path(char* path, size_t n, const char* dir, const char* name) {
    snprintf(path, n, "%s/%s", dir, name);
}

/* "2" or "all": a layer or head column */
static void index_or_all(char* out, size_t n, size_t i, bool all) {
    if (all) snprintf(out, n, "all");
    else snprintf(out, n, "%zu", i);
}

/* every (layer, head) row, then each layer over its heads ("all"), then all layers: calls row(r0, r1, g0, g1) */
typedef void (*GroupRow)(FILE* f, const Analysis* an, const char* layer, const char* head, size_t r0, size_t r1,
                         size_t g0, size_t g1);

static void each_group(FILE* f, const Analysis* an, GroupRow row) {
    size_t R = an->n_repo, KVH = an->cfg.KVH;
    char ls[32], hs[32];
    for (size_t r = 0; r <= R; r++) {
        bool all_layers = r == R;
        index_or_all(ls, sizeof(ls), all_layers ? 0 : an->repo_layer[r], all_layers);
        for (size_t g = 0; g <= KVH; g++) {
            if (all_layers && g < KVH) continue; /* all layers: over every head only */
            index_or_all(hs, sizeof(hs), g, g == KVH);
            row(f, an, ls, hs, all_layers ? 0 : r, all_layers ? R : r + 1, g == KVH ? 0 : g, g == KVH ? KVH : g + 1);
        }
    }
}

static void boundary_row(FILE* f, const Analysis* an, const char* layer, const char* head, size_t r0, size_t r1,
                         size_t g0, size_t g1) {
    BoundarySummary b = boundary_summary(an, r0, r1, g0, g1);
    fprintf(f, "%s,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%zu\n", layer, head, b.share, b.lo, b.hi, b.chance,
            b.chance > 0 ? b.share / b.chance : NAN, b.best, b.items);
}

static void mech_row(FILE* f, const Analysis* an, const char* layer, const char* head, size_t r0, size_t r1, size_t g0,
                     size_t g1) {
    MechSummary m = mech_summary(an, r0, r1, g0, g1);
    fprintf(f, "%s,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%zu\n", layer, head, m.needle, m.filler, m.ratio, m.lo, m.hi, m.items);
}

/* bars: each layer over its heads, and all of them: share of large gaps on boundaries against chance */
static void plot_boundaries(const Analysis* an, const char* path) {
    size_t R = an->n_repo, KVH = an->cfg.KVH;
    const char** group = callocCheck(R + 1, sizeof(char*));
    char(*names)[32] = callocCheck(R + 1, sizeof(*names));
    double* v = callocCheck((R + 1) * 3, sizeof(double));
    double* lo = callocCheck((R + 1) * 3, sizeof(double));
    double* hi = callocCheck((R + 1) * 3, sizeof(double));
    for (size_t r = 0; r <= R; r++) {
        BoundarySummary b = boundary_summary(an, r < R ? r : 0, r < R ? r + 1 : R, 0, KVH);
        if (r < R) snprintf(names[r], sizeof(names[r]), "layer %zu", an->repo_layer[r]);
        else snprintf(names[r], sizeof(names[r]), "all");
        group[r] = names[r];
        v[r * 3] = b.share;
        v[r * 3 + 1] = b.chance;
        v[r * 3 + 2] = b.best;
        lo[r * 3] = b.lo; /* the interval over items of the share; chance and the largest share are exact */
        hi[r * 3] = b.hi;
        lo[r * 3 + 1] = hi[r * 3 + 1] = lo[r * 3 + 2] = hi[r * 3 + 2] = NAN;
    }
    static const char* const series[] = {"on a boundary", "chance", "at most"};
    char title[256];
    snprintf(title, sizeof(title), "boundary alignment: %s, %zu %s item(s), length %zu, top %g of |dz|", an->label,
             an->items, synthetic_family_name(an->family), an->length, an->top_frac);
    BarChart bc = {title, "share of the large gaps", R + 1, 3, group, series, v, 0, lo, hi};
    svg_bars(path, &bc);
    free(group);
    free(names);
    free(v);
    free(lo);
    free(hi);
}

/* one point per (layer, head): x the filler's distance to the query, y the needle's */
static void plot_mechanism(const Analysis* an, const char* path) {
    size_t R = an->n_repo, KVH = an->cfg.KVH, n = R * KVH;
    double* x = mallocCheck(n * sizeof(double));
    double* y = mallocCheck(n * sizeof(double));
    size_t* grp = mallocCheck(n * sizeof(size_t));
    const char** legend = callocCheck(R, sizeof(char*));
    char(*names)[32] = callocCheck(R, sizeof(*names));
    for (size_t r = 0; r < R; r++) {
        snprintf(names[r], sizeof(names[r]), "layer %zu", an->repo_layer[r]);
        legend[r] = names[r];
        for (size_t g = 0; g < KVH; g++) {
            MechSummary m = mech_summary(an, r, r + 1, g, g + 1);
            x[r * KVH + g] = m.filler;
            y[r * KVH + g] = m.needle;
            grp[r * KVH + g] = r;
        }
    }
    char title[256];
    snprintf(title, sizeof(title), "distance to the query in z: %s, %zu item(s)", an->label, an->items);
    Scatter sc = {.title = title,
                  .xlabel = "mean |z_filler - z_query| (one point per head)",
                  .ylabel = "mean |z_needle - z_query|",
                  .n = n,
                  .x = x,
                  .y = y,
                  .group = grp,
                  .legend = legend,
                  .n_groups = R,
                  .diagonal = true};
    svg_scatter(path, &sc);
    free(x);
    free(y);
    free(grp);
    free(legend);
    free(names);
}

/* panels per RePo layer (the plain runs, then the --ranges-yarn ones): per head the span (solid) and max - min
   (dashed) against the length, and RoPE's range L - 1 (dotted), on a log scale */
static void plot_ranges(const Analysis* an, const char* path) {
    size_t R = an->n_repo, KVH = an->cfg.KVH, NR = an->n_ranges, n_sets = 1;
    for (size_t k = 0; k < NR; k++) n_sets = an->ranges[k].with_yarn ? 2 : n_sets;
    size_t n_series = 2 * KVH + 1, n_panels = R * n_sets;
    LinePanel* panels = callocCheck(n_panels, sizeof(LinePanel));
    LineSeries* series = callocCheck(n_panels * n_series, sizeof(LineSeries));
    double* xs = callocCheck(n_panels * n_series * NR, sizeof(double));
    double* ys = callocCheck(n_panels * n_series * NR, sizeof(double));
    char(*titles)[96] = callocCheck(n_panels, sizeof(*titles));
    char(*labels)[48] = callocCheck(n_series, sizeof(*labels));
    for (size_t g = 0; g < KVH; g++) {
        snprintf(labels[2 * g], sizeof(labels[0]), "head %zu 5-95%% span", g);
        snprintf(labels[2 * g + 1], sizeof(labels[0]), "head %zu max - min", g);
    }
    snprintf(labels[2 * KVH], sizeof(labels[0]), "RoPE z = t: L - 1");
    for (size_t set = 0; set < n_sets; set++)
        for (size_t r = 0; r < R; r++) {
            size_t p = set * R + r;
            snprintf(titles[p], sizeof(titles[p]), "layer %zu%s", an->repo_layer[r],
                     set ? ", YaRN factor = length / analysed length" : "");
            for (size_t s = 0; s < n_series; s++) {
                LineSeries* ls = &series[p * n_series + s];
                double* x = xs + (p * n_series + s) * NR;
                double* y = ys + (p * n_series + s) * NR;
                size_t n = 0;
                for (size_t k = 0; k < NR; k++) {
                    const RangeRun* rr = &an->ranges[k];
                    if (rr->with_yarn != (set == 1) && !(set == 1 && rr->mult == 1)) continue; /* 1x: no YaRN */
                    const ZRange* zr = &rr->head[r * KVH + s / 2];
                    x[n] = (double)rr->length;
                    y[n++] = s == 2 * KVH ? (double)rr->length - 1 : s % 2 ? zr->range : zr->span;
                }
                *ls = (LineSeries){labels[s], n, x, y, s == 2 * KVH ? 7 : s / 2, s == 2 * KVH ? 2 : s % 2, 1, false};
            }
            panels[p] = (LinePanel){titles[p], "range of z", &series[p * n_series], n_series, true, false};
        }
    char title[256];
    snprintf(title, sizeof(title), "range of the learned positions against input length: %s", an->label);
    svg_lines(path, title, "input length L (tokens)", panels, n_panels);
    free(panels);
    free(series);
    free(xs);
    free(ys);
    free(titles);
    free(labels);
}

static void write_ranges_csv(const Analysis* an, const char* dir) {
    MemFile m;
    FILE* f = mem_open(&m);
    size_t KVH = an->cfg.KVH;
    fprintf(f, "length,mult,yarn_factor,layer,head,range,span\n");
    for (size_t k = 0; k < an->n_ranges; k++) {
        const RangeRun* rr = &an->ranges[k];
        char yarn[32] = "";
        if (rr->yarn_factor > 1) snprintf(yarn, sizeof(yarn), "%g", rr->yarn_factor);
        for (size_t r = 0; r < an->n_repo; r++)
            for (size_t g = 0; g < KVH; g++)
                fprintf(f, "%zu,%zu,%s,%zu,%zu,%.6g,%.6g\n", rr->length, rr->mult, yarn, an->repo_layer[r], g,
                        rr->head[r * KVH + g].range, rr->head[r * KVH + g].span);
    }
    mem_write(&m, dir, "ranges.csv");
}

void analysis_write_z(const Analysis* an, const char* dir) {
    char path[4200];
    if (analysis_has_bnd(an)) {
        MemFile m;
        FILE* f = mem_open(&m);
        fprintf(f, "layer,head,share,lo,hi,chance,enrichment,best,items\n");
        each_group(f, an, boundary_row);
        mem_write(&m, dir, "boundaries.csv");
        f = mem_open(&m);
        fprintf(f, "layer,head,needle_query,filler_query,ratio,diff_lo,diff_hi,items\n");
        each_group(f, an, mech_row);
        mem_write(&m, dir, "mechanism.csv");
        figure_path(path, sizeof(path), dir, "boundaries.svg");
        plot_boundaries(an, path);
        svg_to_png(path);
        figure_path(path, sizeof(path), dir, "mechanism.svg");
        plot_mechanism(an, path);
        svg_to_png(path);
    }
    if (an->n_ranges) {
        write_ranges_csv(an, dir);
        figure_path(path, sizeof(path), dir, "ranges.svg");
        plot_ranges(an, path);
        svg_to_png(path);
    }
}

/* s as one CSV field: in double quotes, a quote doubled */
static void csv_field(FILE* f, const char* s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void analysis_write_text(const Analysis* an, const char* dir, const size_t* heads, size_t n_heads) {
    size_t T = an->length, KVH = an->cfg.KVH;
    MemFile m;
    FILE* f = mem_open(&m);
    fprintf(f, "layer,head,t,token,piece,z\n");
    for (size_t r = 0; r < an->n_repo; r++)
        for (size_t g = 0; g < KVH; g++)
            for (size_t t = 0; t < T; t++) {
                fprintf(f, "%zu,%zu,%zu,%d,", an->repo_layer[r], g, t, an->tokens0[t]);
                csv_field(f, an->pieces[t]);
                fprintf(f, ",%.9g\n", (double)an->z0[(r * T + t) * KVH + g]);
            }
    mem_write(&m, dir, "text_positions.csv");
    for (size_t r = 0; r < an->n_repo; r++) {
        char path[4200], name[64], title[256];
        snprintf(name, sizeof(name), "text_layer%zu.svg", an->repo_layer[r]);
        figure_path(path, sizeof(path), dir, name);
        snprintf(title, sizeof(title), "learned positions of the text (%s, %zu tokens): %s, layer %zu", an->text_from,
                 T, an->label, an->repo_layer[r]);
        const real* z = an->z0 + r * T * KVH;
        PosPlot pp = {.title = title,
                      .T = T,
                      .KVH = KVH,
                      .n_panels = 1,
                      .layer = &an->repo_layer[r],
                      .z = &z,
                      .heads = heads,
                      .n_heads = n_heads,
                      .fence = TEXT_FENCE,
                      .xlabels = (const char* const*)an->pieces,
                      .per_head = true};
        svg_positions(path, &pp);
        svg_to_png(path);
    }
}
