/* Figures as SVG written by hand (no plotting library). For build/analyze:
   learned positions z against the token index, one panel per RePo layer and
   one polyline per chosen head with the needle and query spans shaded (the y
   axis clamped to Tukey's fences on request, outliers marked on its edge);
   grouped bar charts (attention mass needle / query / rest, segment shares);
   scatter plots (needle against filler distance to the query).
   For build/plot: panels of line series over steps (training curves of
   several runs). Each is also converted to PNG when rsvg-convert is on PATH. */
#ifndef REPOC_ANALYZE_SVG_H
#define REPOC_ANALYZE_SVG_H

#include <stdbool.h>
#include <stddef.h>

#include "common/real.h"
#include "eval/analyze_stats.h"

#define SVG_MAX_SHADE (SYN_MAX_ITEMS + 1)

typedef struct {
    const char* title;
    size_t T, KVH; /* tokens; heads per row of z */
    size_t n_panels;
    const size_t* layer;  /* (n_panels) layer index of each panel */
    const real* const* z; /* (n_panels) each (T,KVH) */
    const size_t* heads;  /* (n_heads) the KV heads drawn */
    size_t n_heads;
    Span shade[SVG_MAX_SHADE]; /* token spans shaded behind the lines */
    const char* shade_label[SVG_MAX_SHADE];
    size_t n_shade;
    /* > 0: each panel's y axis ends at Tukey's fences of its drawn values, Q1 - fence IQR and Q3 + fence IQR (or at the
       extremes where they lie within), a point beyond drawn on the edge and marked with a triangle pointing out
       (class="outlier"); 0: the full range */
    double fence;
    const char* const* xlabels; /* NULL, or (T) a label under each token (text: its piece) */
    bool per_head;              /* each head in a panel of its own (each on its own axis), not one per layer */
} PosPlot;

/* points (x, y), one colour per group, with the diagonal y = x when diagonal */
typedef struct {
    const char* title;
    const char* xlabel;
    const char* ylabel;
    size_t n;
    const double* x;           /* (n) */
    const double* y;           /* (n) non-finite points are left out */
    const size_t* group;       /* (n) colour index */
    const char* const* legend; /* (n_groups) the legend's text of each group */
    size_t n_groups;
    bool diagonal;
} Scatter;

typedef struct {
    const char* title;
    const char* ylabel;
    size_t n_groups, n_series;
    const char* const* group;  /* (n_groups) labels under the groups */
    const char* const* series; /* (n_series) legend */
    const double* value;       /* (n_groups, n_series) */
    /* > 0: series [0, split) and [split, n_series) in two panels side by side, each on its own scale (small needle
       masses next to a large rest) */
    size_t split;
    /* NULL, or (n_groups, n_series) an interval drawn as a whisker on each bar (a non-finite end: none on that bar) */
    const double *lo, *hi;
} BarChart;

/* one polyline of a LinePanel */
typedef struct {
    const char* label; /* legend text, and the polyline's data-series attribute */
    size_t n;
    const double* x; /* (n) */
    const double* y; /* (n) non-finite points are left out */
    size_t color;    /* index into the palette (runs keep their colour across panels) */
    size_t dash;     /* 0 solid, then dashed, dotted, dash-dot (metrics within a panel) */
    double opacity;  /* 1; lower for a raw curve under its smoothed one */
    bool markers;    /* a dot at each point (evaluations, which are few and far between) */
} LineSeries;

typedef struct {
    const char* title; /* also the polylines' data-panel attribute */
    const char* ylabel;
    const LineSeries* series;
    size_t n_series;
    bool log_y;  /* log scale, ticks labelled with the values (every y > 0 then; others are left out) */
    bool unit_y; /* y axis [0, 1] whatever the data (accuracies) */
} LinePanel;

/* Write the figure to path (atomically); returns nothing, dies naming the path */
void svg_positions(const char* path, const PosPlot* pp);
void svg_bars(const char* path, const BarChart* bc);
void svg_scatter(const char* path, const Scatter* sc);
/* Panels stacked, one per LinePanel, sharing the x label; each with its legend on the right.
   Every polyline carries data-panel="<panel title>" data-series="<label>" (for tests). */
void svg_lines(const char* path, const char* title, const char* xlabel, const LinePanel* panels, size_t n_panels);

/* path.svg -> path.png with rsvg-convert when it is on PATH; returns 1 when
   written, 0 when the converter is absent or path.svg is a stream (a FIFO, a
   device: file_output_kind) that cannot be read back; dies when it fails. */
int svg_to_png(const char* svg_path);

#endif
