/* SVG figures for build/analyze and build/plot (eval/analyze_svg.h). A figure is printed into
   a memory stream and written atomically; coordinates are pixels, y grows down.
   Ticks are "nice" numbers (1, 2 or 5 times a power of ten), about six per axis. */
#include "eval/analyze_svg.h"

#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/check.h"
#include "common/fileio.h"
#include "eval/stats.h"

extern char** environ;

/* matplotlib's tab10: distinguishable on screen and in print */
static const char* const COLORS[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                     "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define N_COLORS (sizeof(COLORS) / sizeof(COLORS[0]))
static const char* const SHADES[] = {"#f4c542", "#9ecae1", "#c7e9c0", "#fdd0a2"};
#define N_SHADES (sizeof(SHADES) / sizeof(SHADES[0]))

/* the plotting area of one panel and the data range it shows */
typedef struct {
    double x0, y0, w, h; /* pixels: left, top, width, height */
    double xmin, xmax, ymin, ymax;
    bool log_y; /* y is log10 of the value: ticks at 1, 2, 5 x 10^k labelled with the values */
} Axes;

static double px(const Axes* a, double x) { return a->x0 + (x - a->xmin) / (a->xmax - a->xmin) * a->w; }
static double py(const Axes* a, double y) { return a->y0 + a->h - (y - a->ymin) / (a->ymax - a->ymin) * a->h; }

/* s with the XML specials escaped (text and attribute values) */
static void put_escaped(FILE* f, const char* s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

static void put_text(FILE* f, double x, double y, const char* anchor, int size, const char* extra, const char* s) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"%s%s>", x, y, anchor, size,
            extra ? " " : "", extra ? extra : "");
    put_escaped(f, s);
    fputs("</text>\n", f);
}

static void line(FILE* f, double x1, double y1, double x2, double y2, const char* color) {
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", x1, y1, x2, y2, color);
}

/* a step of 1, 2 or 5 x 10^k giving about `want` intervals over [lo, hi] */
static double nice_step(double lo, double hi, double want) {
    double raw = (hi - lo) / want, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

/* widen [lo, hi] to multiples of its nice step (a flat range gets +-0.5) */
static void nice_range(double* lo, double* hi) {
    if (!(*hi - *lo > 1e-12)) {
        *lo -= 0.5;
        *hi += 0.5;
    }
    double st = nice_step(*lo, *hi, 5);
    *lo = floor(*lo / st) * st;
    *hi = ceil(*hi / st) * st;
}

static void tick_label(char* buf, size_t n, double v, double step) {
    int digits = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (fabs(v) < step * 1e-6) v = 0; /* no "-0" */
    snprintf(buf, n, "%.*f", digits, v);
}

/* one y tick at v (the axis' coordinate) labelled text; returns the label's width in pixels (11 px text) */
static double y_tick(FILE* f, const Axes* a, double v, const char* text) {
    double y = py(a, v);
    line(f, a->x0, y, a->x0 + a->w, y, "#ddd"); /* grid */
    line(f, a->x0 - 4, y, a->x0, y, "#333");    /* tick */
    put_text(f, a->x0 - 7, y + 4, "end", 11, NULL, text);
    return 6.2 * (double)strlen(text);
}

/* the y ticks: on a log axis the values 1, 2 and 5 x 10^k in range (only the powers of ten over more than
   two decades), labelled with the values themselves; returns the widest label's width */
static double y_ticks(FILE* f, const Axes* a) {
    char buf[64];
    double widest = 0;
    if (a->log_y) {
        bool few = a->ymax - a->ymin > 2.0;
        for (double k = floor(a->ymin); k <= ceil(a->ymax); k++)
            for (int m = 0; m < (few ? 1 : 3); m++) {
                double v = k + log10((const double[]){1, 2, 5}[m]);
                if (v < a->ymin - 1e-9 || v > a->ymax + 1e-9) continue;
                snprintf(buf, sizeof buf, "%g", pow(10, v));
                widest = fmax(widest, y_tick(f, a, v, buf));
            }
        return widest;
    }
    double st = nice_step(a->ymin, a->ymax, 5);
    for (double v = ceil(a->ymin / st - 1e-9) * st; v <= a->ymax + st * 1e-9; v += st) {
        tick_label(buf, sizeof(buf), v, st);
        widest = fmax(widest, y_tick(f, a, v, buf));
    }
    return widest;
}

/* frame, grid lines, ticks with labels, axis labels (the y label clear of the widest tick label) and the
   title */
static void draw_axes(FILE* f, const Axes* a, const char* xlabel, const char* ylabel, const char* title, bool x_ticks) {
    char buf[64];
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n", a->x0,
            a->y0, a->w, a->h);
    double widest = y_ticks(f, a), st;
    if (x_ticks) {
        st = nice_step(a->xmin, a->xmax, 8);
        for (double v = ceil(a->xmin / st - 1e-9) * st; v <= a->xmax + st * 1e-9; v += st) {
            double x = px(a, v), yb = a->y0 + a->h;
            line(f, x, yb, x, yb + 4, "#333");
            tick_label(buf, sizeof(buf), v, st);
            put_text(f, x, yb + 16, "middle", 11, NULL, buf);
        }
    }
    if (xlabel) put_text(f, a->x0 + a->w / 2, a->y0 + a->h + 32, "middle", 12, NULL, xlabel);
    if (ylabel) {
        char tr[96];
        double x = fmax(12, a->x0 - 7 - widest - 12), y = a->y0 + a->h / 2;
        snprintf(tr, sizeof(tr), "transform=\"rotate(-90 %.1f %.1f)\"", x, y);
        put_text(f, x, y, "middle", 12, tr, ylabel);
    }
    if (title) put_text(f, a->x0 + a->w / 2, a->y0 - 8, "middle", 13, "font-weight=\"bold\"", title);
}

static const char* const DASHES[] = {"", " stroke-dasharray=\"6 3\"", " stroke-dasharray=\"2 2\"",
                                     " stroke-dasharray=\"7 3 2 3\""};
#define N_DASHES (sizeof(DASHES) / sizeof(DASHES[0]))

/* one legend entry at (x, y): a swatch and its label */
static void legend_entry(FILE* f, double x, double y, const char* color, double opacity, const char* label) {
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"%s\" fill-opacity=\"%.2f\"/>\n", x, y - 9,
            color, opacity);
    put_text(f, x + 19, y, "start", 11, NULL, label);
}

static FILE* svg_open(char** buf, size_t* len, double W, double H) {
    FILE* f = open_memstream(buf, len);
    CHECK(f, "svg: open_memstream failed");
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H);
    return f;
}

static void svg_close(FILE* f, char** buf, size_t* len, const char* path) {
    fputs("</svg>\n", f);
    fclose(f);
    file_write_output(path, *buf, *len);
    free(*buf);
    printf("wrote %s\n", path);
}

#define POS_W 960.0
#define POS_PANEL_H 215.0
#define MARGIN_L 80.0
#define MARGIN_R 150.0 /* the legend */
#define MARGIN_TOP 50.0
#define POS_MAX_XLABELS 160 /* more tokens than this: no label under each */

/* the y axis of one panel: every drawn value, or those within Tukey's fences Q1 - k IQR, Q3 + k IQR */
static void pos_y_range(Axes* a, const PosPlot* pp, const real* z, size_t h0, size_t h1) {
    size_t n = pp->T * (h1 - h0);
    double* v = mallocCheck(n * sizeof(double));
    for (size_t i = h0; i < h1; i++)
        for (size_t t = 0; t < pp->T; t++) v[(i - h0) * pp->T + t] = z[t * pp->KVH + pp->heads[i]];
    stats_sort(v, n);
    a->ymin = v[0];
    a->ymax = v[n - 1];
    if (pp->fence > 0) {
        double q1 = stats_quantile(v, n, 0.25), q3 = stats_quantile(v, n, 0.75);
        a->ymin = fmax(a->ymin, q1 - pp->fence * (q3 - q1));
        a->ymax = fmin(a->ymax, q3 + pp->fence * (q3 - q1));
    }
    free(v);
    nice_range(&a->ymin, &a->ymax);
}

/* a triangle on the axis edge at x pointing up (above the axis) or down (below) */
static void outlier_mark(FILE* f, double x, double y, bool up, const char* color) {
    double d = up ? -6 : 6;
    fprintf(f, "<path class=\"outlier\" d=\"M%.2f,%.2f L%.2f,%.2f L%.2f,%.2f Z\" fill=\"%s\"/>\n", x, y + d, x - 3.5, y,
            x + 3.5, y, color);
}

/* one head's polyline, values outside the axis drawn on its edge and marked */
static void pos_line(FILE* f, const Axes* a, const PosPlot* pp, const real* z, size_t i) {
    const char* color = COLORS[i % N_COLORS];
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.3\" points=\"", color);
    for (size_t t = 0; t < pp->T; t++) {
        double v = z[t * pp->KVH + pp->heads[i]];
        fprintf(f, "%.2f,%.2f ", px(a, t), py(a, fmin(fmax(v, a->ymin), a->ymax)));
    }
    fputs("\"/>\n", f);
    for (size_t t = 0; t < pp->T; t++) {
        double v = z[t * pp->KVH + pp->heads[i]];
        if (v > a->ymax || v < a->ymin)
            outlier_mark(f, px(a, t), v > a->ymax ? a->y0 : a->y0 + a->h, v > a->ymax, color);
    }
}

/* each token's label under the axis, turned to read upwards */
static void pos_xlabels(FILE* f, const Axes* a, const PosPlot* pp) {
    for (size_t t = 0; t < pp->T; t++) {
        char tr[96];
        double x = px(a, t) + 3, y = a->y0 + a->h + 44;
        snprintf(tr, sizeof(tr), "transform=\"rotate(-60 %.1f %.1f)\"", x, y);
        put_text(f, x, y, "end", 9, tr, pp->xlabels[t]);
    }
}

/* one panel, its top at top: panel pn's heads pp->heads[h0 .. h1) on their own y axis */
static void pos_panel(FILE* f, const PosPlot* pp, size_t pn, size_t h0, size_t h1, double top, bool labels) {
    const real* z = pp->z[pn];
    Axes a = {MARGIN_L, top, POS_W - MARGIN_L - MARGIN_R, POS_PANEL_H - 75, -0.5, (double)pp->T - 0.5, 0, 0, false};
    pos_y_range(&a, pp, z, h0, h1);
    for (size_t s = 0; s < pp->n_shade; s++) { /* spans behind everything */
        double x1 = px(&a, pp->shade[s].begin - 0.5), x2 = px(&a, pp->shade[s].end - 0.5);
        fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"0.45\"/>\n",
                x1, a.y0, fmax(x2 - x1, 1.0), a.h, SHADES[s % N_SHADES]);
    }
    char title[64];
    if (pp->per_head) snprintf(title, sizeof(title), "layer %zu, head %zu", pp->layer[pn], pp->heads[h0]);
    else snprintf(title, sizeof(title), "layer %zu", pp->layer[pn]);
    draw_axes(f, &a, labels ? NULL : "token index t", "position z", title, true);
    if (labels) pos_xlabels(f, &a, pp);
    for (size_t i = h0; i < h1; i++) pos_line(f, &a, pp, z, i);
    double lx = a.x0 + a.w + 15, ly = a.y0 + 12;
    for (size_t i = h0; i < h1; i++, ly += 17) {
        char lab[32];
        snprintf(lab, sizeof(lab), "head %zu", pp->heads[i]);
        legend_entry(f, lx, ly, COLORS[i % N_COLORS], 1, lab);
    }
    for (size_t s = 0; s < pp->n_shade; s++, ly += 17)
        legend_entry(f, lx, ly, SHADES[s % N_SHADES], 0.45, pp->shade_label[s]);
    if (pp->fence > 0) {
        char note[96];
        snprintf(note, sizeof(note), "Q1 - %g IQR .. Q3 + %g IQR", pp->fence, pp->fence);
        put_text(f, lx, ly + 4, "start", 9, NULL, "y axis: Tukey's fences");
        put_text(f, lx, ly + 16, "start", 9, NULL, note);
        put_text(f, lx, ly + 28, "start", 9, NULL, "triangles: points beyond");
    }
}

void svg_positions(const char* path, const PosPlot* pp) {
    char* buf;
    size_t len;
    bool labels = pp->xlabels && pp->T <= POS_MAX_XLABELS;
    size_t per_panel = pp->per_head ? 1 : pp->n_heads, n = pp->n_panels * (pp->n_heads / per_panel);
    double panel_h = POS_PANEL_H + (labels ? 60 : 0), H = MARGIN_TOP + n * panel_h;
    FILE* f = svg_open(&buf, &len, POS_W, H);
    put_text(f, POS_W / 2, 22, "middle", 15, "font-weight=\"bold\"", pp->title);
    size_t k = 0;
    for (size_t pn = 0; pn < pp->n_panels; pn++)
        for (size_t h0 = 0; h0 < pp->n_heads; h0 += per_panel, k++)
            pos_panel(f, pp, pn, h0, h0 + per_panel, MARGIN_TOP + k * panel_h + 10, labels);
    svg_close(f, &buf, &len, path);
}

#define SC_W 620.0
#define SC_H 480.0

void svg_scatter(const char* path, const Scatter* sc) {
    char* buf;
    size_t len;
    FILE* f = svg_open(&buf, &len, SC_W, SC_H);
    Axes a = {MARGIN_L, MARGIN_TOP, SC_W - MARGIN_L - MARGIN_R, SC_H - MARGIN_TOP - 55, 0, 0, 0, 0, false};
    for (size_t i = 0; i < sc->n; i++) {
        if (!isfinite(sc->x[i]) || !isfinite(sc->y[i])) continue;
        a.xmax = fmax(a.xmax, sc->x[i]);
        a.ymax = fmax(a.ymax, sc->y[i]);
    }
    if (sc->diagonal) a.xmax = a.ymax = fmax(a.xmax, a.ymax); /* one scale: y = x is the diagonal */
    nice_range(&a.xmin, &a.xmax);
    nice_range(&a.ymin, &a.ymax);
    draw_axes(f, &a, sc->xlabel, sc->ylabel, sc->title, true);
    if (sc->diagonal)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n",
                px(&a, 0), py(&a, 0), px(&a, a.xmax), py(&a, a.xmax));
    for (size_t i = 0; i < sc->n; i++) {
        if (!isfinite(sc->x[i]) || !isfinite(sc->y[i])) continue;
        fprintf(f, "<circle class=\"point\" cx=\"%.2f\" cy=\"%.2f\" r=\"4\" fill=\"%s\" fill-opacity=\"0.8\"/>\n",
                px(&a, sc->x[i]), py(&a, sc->y[i]), COLORS[sc->group[i] % N_COLORS]);
    }
    double lx = a.x0 + a.w + 15, ly = a.y0 + 12;
    for (size_t g = 0; g < sc->n_groups; g++, ly += 17) legend_entry(f, lx, ly, COLORS[g % N_COLORS], 1, sc->legend[g]);
    if (sc->diagonal) put_text(f, lx, ly + 4, "start", 10, NULL, "dashed: y = x");
    svg_close(f, &buf, &len, path);
}

#define BAR_W 20.0
#define BAR_GAP 28.0   /* between groups */
#define PANEL_GAP 90.0 /* between the two panels of a split chart: ticks and y label */

/* an interval from y_lo to y_hi (pixels) at x, with caps */
static void whisker(FILE* f, double x, double y_lo, double y_hi) {
    line(f, x, y_lo, x, y_hi, "#222");
    line(f, x - 4, y_lo, x + 4, y_lo, "#222");
    line(f, x - 4, y_hi, x + 4, y_hi, "#222");
}

/* series s0 .. s0+ns-1 of every group into axes a (its x0, y0, w, h set), on their own scale */
static void bar_panel(FILE* f, Axes* a, const BarChart* bc, size_t s0, size_t ns, const char* ylabel) {
    double group_w = ns * BAR_W + BAR_GAP;
    a->xmin = 0;
    a->xmax = 1;
    a->ymin = 0;
    a->ymax = 0;
    for (size_t g = 0; g < bc->n_groups; g++)
        for (size_t s = s0; s < s0 + ns; s++) {
            a->ymax = fmax(a->ymax, bc->value[g * bc->n_series + s]);
            if (bc->hi && isfinite(bc->hi[g * bc->n_series + s])) a->ymax = fmax(a->ymax, bc->hi[g * bc->n_series + s]);
        }
    a->ymax = a->ymax > 0 ? a->ymax * 1.15 : 1; /* room for the value labels */
    nice_range(&a->ymin, &a->ymax);
    a->ymin = 0;
    draw_axes(f, a, NULL, ylabel, NULL, false);
    double x = a->x0 + (a->w - bc->n_groups * group_w) / 2 + BAR_GAP / 2;
    for (size_t g = 0; g < bc->n_groups; g++, x += group_w) {
        for (size_t s = s0; s < s0 + ns; s++) {
            double v = bc->value[g * bc->n_series + s], bx = x + (s - s0) * BAR_W, top = py(a, v);
            char lab[32], tr[96];
            fprintf(f, "<rect x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" fill=\"%s\"/>\n", bx, top, BAR_W - 2,
                    a->y0 + a->h - top, COLORS[s % N_COLORS]);
            double ly = top; /* the value's label starts above the bar, or above its whisker */
            if (bc->lo && isfinite(bc->lo[g * bc->n_series + s]) && isfinite(bc->hi[g * bc->n_series + s])) {
                whisker(f, bx + (BAR_W - 2) / 2, py(a, bc->lo[g * bc->n_series + s]),
                        py(a, bc->hi[g * bc->n_series + s]));
                ly = fmin(ly, py(a, bc->hi[g * bc->n_series + s]));
            }
            snprintf(lab, sizeof(lab), "%.3g", v);
            snprintf(tr, sizeof(tr), "transform=\"rotate(-90 %.1f %.1f)\"", bx + BAR_W / 2 + 3, ly - 4);
            put_text(f, bx + BAR_W / 2 + 3, ly - 4, "start", 9, tr, lab);
        }
        put_text(f, x + ns * BAR_W / 2, a->y0 + a->h + 18, "middle", 11, NULL, bc->group[g]);
    }
}

void svg_bars(const char* path, const BarChart* bc) {
    size_t n_panels = bc->split ? 2 : 1;
    size_t s0[2] = {0, bc->split}, ns[2] = {bc->split ? bc->split : bc->n_series, bc->n_series - bc->split};
    double pw[2] = {0, 0}, H = 370, W = MARGIN_L + MARGIN_R + (n_panels - 1) * PANEL_GAP;
    for (size_t p = 0; p < n_panels; p++) {
        pw[p] = fmax(n_panels == 1 ? 320 : 160, bc->n_groups * (ns[p] * BAR_W + BAR_GAP));
        W += pw[p];
    }
    double title_w = 8.6 * (double)strlen(bc->title) + 40; /* bold 14 px: about 8.6 px a character */
    if (title_w > W) {
        pw[0] += title_w - W;
        W = title_w;
    }
    char* buf;
    size_t len;
    FILE* f = svg_open(&buf, &len, W, H);
    put_text(f, W / 2, 22, "middle", 14, "font-weight=\"bold\"", bc->title);
    double x0 = MARGIN_L;
    Axes a = {0};
    for (size_t p = 0; p < n_panels; p++, x0 += pw[p - 1] + PANEL_GAP) {
        a = (Axes){x0, MARGIN_TOP, pw[p], H - MARGIN_TOP - 45, 0, 0, 0, 0, false};
        bar_panel(f, &a, bc, s0[p], ns[p], bc->ylabel);
    }
    double lx = a.x0 + a.w + 15, ly = a.y0 + 12;
    for (size_t s = 0; s < bc->n_series; s++, ly += 17) legend_entry(f, lx, ly, COLORS[s % N_COLORS], 1, bc->series[s]);
    svg_close(f, &buf, &len, path);
}

/* is name an executable file in a directory of PATH? */
#define LINE_W 1000.0
#define LINE_PANEL_H 250.0
#define LINE_MARGIN_R 270.0 /* the legends */

/* [lo, hi] in log10 widened to the 1, 2 or 5 x 10^k just outside it (a flat range to the ones around it) */
static void log_range(double* lo, double* hi) {
    static const double M[] = {1, 2, 5, 10};
    double l = floor(*lo), h = floor(*hi), nlo = l, nhi = h + 1;
    for (int m = 0; m < 4; m++) {
        if (l + log10(M[m]) <= *lo + 1e-12 && l + log10(M[m]) < *hi) nlo = l + log10(M[m]);
        if (h + log10(M[3 - m]) >= *hi - 1e-12 && h + log10(M[3 - m]) > *lo) nhi = h + log10(M[3 - m]);
    }
    *lo = nlo;
    *hi = nhi;
}

/* a point's y on the panel's scale: log10 for a log panel; NAN when it cannot be drawn */
static double scale_y(const LinePanel* p, double y) {
    if (!isfinite(y) || (p->log_y && !(y > 0))) return NAN;
    return p->log_y ? log10(y) : y;
}

void svg_lines(const char* path, const char* title, const char* xlabel, const LinePanel* panels, size_t n_panels) {
    char* buf;
    size_t len;
    double H = MARGIN_TOP + n_panels * LINE_PANEL_H;
    FILE* f = svg_open(&buf, &len, LINE_W, H);
    put_text(f, LINE_W / 2, 22, "middle", 15, "font-weight=\"bold\"", title);
    for (size_t pn = 0; pn < n_panels; pn++) {
        const LinePanel* p = &panels[pn];
        Axes a = {MARGIN_L,
                  MARGIN_TOP + pn * LINE_PANEL_H + 10,
                  LINE_W - MARGIN_L - LINE_MARGIN_R,
                  LINE_PANEL_H - 75,
                  INFINITY,
                  -INFINITY,
                  INFINITY,
                  -INFINITY,
                  false};
        for (size_t s = 0; s < p->n_series; s++)
            for (size_t i = 0; i < p->series[s].n; i++) {
                double y = scale_y(p, p->series[s].y[i]);
                if (isnan(y)) continue;
                a.xmin = fmin(a.xmin, p->series[s].x[i]);
                a.xmax = fmax(a.xmax, p->series[s].x[i]);
                a.ymin = fmin(a.ymin, y);
                a.ymax = fmax(a.ymax, y);
            }
        if (a.xmin > a.xmax) { /* nothing to draw */
            a.xmin = 0;
            a.xmax = 1;
            a.ymin = 0;
            a.ymax = 1;
        }
        if (!(a.xmax > a.xmin)) a.xmax = a.xmin + 1;
        a.log_y = p->log_y;
        if (p->unit_y) {
            a.ymin = 0;
            a.ymax = 1;
        } else if (p->log_y) {
            log_range(&a.ymin, &a.ymax);
        } else {
            nice_range(&a.ymin, &a.ymax);
        }
        char ylabel[96];
        snprintf(ylabel, sizeof(ylabel), "%s%s", p->ylabel, p->log_y ? " (log scale)" : "");
        draw_axes(f, &a, pn + 1 == n_panels ? xlabel : NULL, ylabel, p->title, true);
        double lx = a.x0 + a.w + 15, ly = a.y0 + 12;
        for (size_t s = 0; s < p->n_series; s++) {
            const LineSeries* ls = &p->series[s];
            const char* color = COLORS[ls->color % N_COLORS];
            fprintf(f,
                    "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.4\" stroke-opacity=\"%.2f\"%s "
                    "data-panel=\"",
                    color, ls->opacity, DASHES[ls->dash % N_DASHES]);
            put_escaped(f, p->title);
            fputs("\" data-series=\"", f);
            put_escaped(f, ls->label);
            fputs("\" points=\"", f);
            for (size_t i = 0; i < ls->n; i++) {
                double y = scale_y(p, ls->y[i]);
                if (!isnan(y)) fprintf(f, "%.2f,%.2f ", px(&a, ls->x[i]), py(&a, y));
            }
            fputs("\"/>\n", f);
            for (size_t i = 0; ls->markers && i < ls->n; i++) { /* each measured point (evaluations) */
                double y = scale_y(p, ls->y[i]);
                if (!isnan(y))
                    fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.6\" fill=\"%s\" fill-opacity=\"%.2f\"/>\n",
                            px(&a, ls->x[i]), py(&a, y), color, ls->opacity);
            }
            if (ly > a.y0 + a.h + 40) continue; /* the legend is full: the panel is crowded anyway */
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" "
                    "stroke-opacity=\"%.2f\"%s/>\n",
                    lx, ly - 4, lx + 22, ly - 4, color, ls->opacity, DASHES[ls->dash % N_DASHES]);
            put_text(f, lx + 27, ly, "start", 11, NULL, ls->label);
            ly += 15;
        }
    }
    svg_close(f, &buf, &len, path);
}

static bool on_path(const char* name) {
    const char* path = getenv("PATH");
    char dir[4096], full[4200];
    for (const char* p = path; p && *p;) {
        size_t n = strcspn(p, ":");
        snprintf(dir, sizeof(dir), "%.*s", (int)n, p);
        snprintf(full, sizeof(full), "%s/%s", n ? dir : ".", name);
        if (access(full, X_OK) == 0) return true;
        p += n + (p[n] == ':');
    }
    return false;
}

int svg_to_png(const char* svg_path) {
    if (!on_path("rsvg-convert")) return 0;
    OutputKind kind;
    char target[4096], err[4400];
    if (file_output_kind(svg_path, &kind, target, sizeof(target), err, sizeof(err)) || kind == OUT_STREAM) {
        printf("note: %s is not a regular file, so no PNG is made from it\n", svg_path); /* it cannot be read back */
        return 0;
    }
    char png[4200];
    size_t n = strlen(svg_path);
    CHECK(n > 4 && !strcmp(svg_path + n - 4, ".svg"), "svg_to_png: '%s' does not end in .svg", svg_path);
    snprintf(png, sizeof(png), "%.*s.png", (int)(n - 4), svg_path);
    char* argv[] = {"rsvg-convert", "-o", png, (char*)svg_path, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "rsvg-convert", NULL, NULL, argv, environ), st = 0;
    CHECK(rc == 0, "rsvg-convert: cannot start it: %s", strerror(rc));
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rsvg-convert -o %s %s failed (status %d)", png, svg_path, st);
    printf("wrote %s\n", png);
    return 1;
}
