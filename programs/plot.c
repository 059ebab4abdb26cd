/* build/plot RUN_DIR [RUN_DIR ...] --out FILE.svg: the training curves of one
   or more runs from their metrics.jsonl (train/metrics.h), overlaid, one
   colour per run: training loss (raw, faint, and smoothed), validation loss
   (the mean, and each data.val source dashed), learning rate, gradient norm
   (log scale), tokens/s and, with train.eval_tasks, the retrieval accuracies
   and the multiple-choice acc and acc_norm of each file.
   A panel without data in any run is left out. With --positions, instead:
   the learned positions that train.log_positions logged, per RePo layer
   (one dash per layer): range, mean |step| and the three segment shares. Drawn by svg_lines
   (eval/analyze_svg.h); FILE.png too when rsvg-convert is on PATH. With --csv FILE.csv, the same numbers
   for a spreadsheet: one row per run and step, one column per metric (RFC 4180). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "eval/analyze_svg.h"
#include "programs/cli.h"

#define MAX_RUNS 10 /* one palette colour each */

typedef struct {    /* one metric of one run over steps, growable */
    char name[160]; /* "loss", ..., "val_loss_source/web", "retrieval/single@64", "mc/hellaswag/acc_norm" */
    double *x, *y;
    size_t n, cap;
} Curve;

typedef struct {
    char label[128]; /* the run's name in legends: its directory */
    Curve* c;        /* (cap): 5 step metrics, val_loss, sources, tasks, 5 per RePo layer, ... */
    size_t n, cap;
} Run;

/* n_items (n, with room for cap) grown by doubling to hold one more of size bytes */
static void* grow(void* items, size_t n, size_t* cap, size_t size) {
    if (n < *cap) return items;
    *cap = *cap ? 2 * *cap : 16;
    void* g = mallocCheck(*cap * size);
    if (n) memcpy(g, items, n * size);
    free(items);
    return g;
}

static Curve* curve(Run* r, const char* name) {
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->c[i].name, name)) return &r->c[i];
    r->c = grow(r->c, r->n, &r->cap, sizeof(Curve));
    Curve* c = &r->c[r->n++];
    *c = (Curve){0};
    snprintf(c->name, sizeof(c->name), "%s", name);
    return c;
}

static void push(Curve* c, double x, double y) {
    size_t cap = c->cap;
    c->x = grow(c->x, c->n, &cap, sizeof(double));
    c->y = grow(c->y, c->n, &c->cap, sizeof(double));
    c->x[c->n] = x;
    c->y[c->n++] = y;
}

/* the position statistics of a "positions" line (train.log_positions) as "positions/<layer>/<field>" */
static const char* const POS_FIELDS[] = {"range", "mean_abs_step", "constant", "monotonic", "hybrid"};
#define N_POS_FIELDS (sizeof(POS_FIELDS) / sizeof(POS_FIELDS[0]))

static void read_positions(Run* r, double step, const cJSON* pos) {
    const cJSON* layers = cJSON_GetObjectItemCaseSensitive(pos, "layers");
    const cJSON* l;
    char name[96];
    cJSON_ArrayForEach(l, layers) {
        const cJSON* layer = cJSON_GetObjectItemCaseSensitive(l, "layer");
        if (!cJSON_IsNumber(layer)) continue;
        for (size_t f = 0; f < N_POS_FIELDS; f++) {
            const cJSON* v = cJSON_GetObjectItemCaseSensitive(l, POS_FIELDS[f]);
            if (!cJSON_IsNumber(v)) continue;
            snprintf(name, sizeof(name), "positions/%d/%s", layer->valueint, POS_FIELDS[f]);
            push(curve(r, name), step, v->valuedouble);
        }
    }
}

/* every number of one metrics.jsonl line; objects of numbers (val_loss_source, retrieval) as "key/name" */
static void read_line(Run* r, const cJSON* j) {
    const cJSON* step = cJSON_GetObjectItemCaseSensitive(j, "step");
    const cJSON* it;
    cJSON_ArrayForEach(it, j) {
        if (it == step || !strcmp(it->string, "tokens_seen") || !strcmp(it->string, "ms")) continue;
        if (!strcmp(it->string, "positions")) {
            read_positions(r, step->valuedouble, it);
            continue;
        }
        if (cJSON_IsNumber(it)) push(curve(r, it->string), step->valuedouble, it->valuedouble);
        if (!cJSON_IsObject(it) || !strcmp(it->string, "source_tokens") || strstr(it->string, "batches")) continue;
        const cJSON* e;
        char name[160];
        cJSON_ArrayForEach(e, it) {
            if (!cJSON_IsNumber(e)) continue;
            snprintf(name, sizeof(name), "%s/%s", it->string, e->string);
            push(curve(r, name), step->valuedouble, e->valuedouble);
        }
    }
}

static void read_run(Run* r, const char* dir) {
    char path[4096];
    snprintf(r->label, sizeof(r->label), "%s", dir);
    size_t n = strlen(r->label);
    while (n > 1 && r->label[n - 1] == '/') r->label[--n] = 0;
    snprintf(path, sizeof(path), "%s/metrics.jsonl", dir);
    size_t len;
    char* text = file_read_all_or_null(path, &len);
    if (!text) cli_bad_option("%s: cannot read %s (a run directory holds one)", dir, path);
    size_t lineno = 0;
    for (char *line = text, *nl; line < text + len; line = nl + 1) {
        nl = memchr(line, '\n', (size_t)(text + len - line));
        if (!nl) nl = text + len;
        *nl = 0;
        lineno++;
        cJSON* j = cJSON_Parse(line);
        const cJSON* step = j ? cJSON_GetObjectItemCaseSensitive(j, "step") : NULL;
        if (cJSON_IsNumber(step)) read_line(r, j);
        else if (*line) printf("warning: %s line %zu: not a metrics line, skipped\n", path, lineno);
        cJSON_Delete(j);
    }
    free(text);
    if (!r->n) printf("warning: %s has no steps yet\n", path);
}

/* a run's label is its directory's last name, unless two runs share it (then the whole path) */
static void short_labels(Run* runs, size_t n) {
    const char* base[MAX_RUNS];
    for (size_t r = 0; r < n; r++) {
        const char* slash = strrchr(runs[r].label, '/');
        base[r] = slash && slash[1] ? slash + 1 : runs[r].label;
    }
    for (size_t r = 0; r < n; r++)
        for (size_t q = 0; q < n; q++)
            if (q != r && !strcmp(base[q], base[r])) return;
    for (size_t r = 0; r < n; r++) memmove(runs[r].label, base[r], strlen(base[r]) + 1);
}

/* The training loss smoothed over steps, not over logged points: an exponential moving average whose weight
   halves every half_life steps (so the lag, about 1.4 half-lives, is the same at any log_every), debiased
   at the start as TensorBoard's is */
static void smooth(const Curve* c, double half_life, double* out) {
    double ema = 0, w = 0;
    for (size_t i = 0; i < c->n; i++) {
        double keep = i ? pow(0.5, (c->x[i] - c->x[i - 1]) / half_life) : 0;
        ema = keep * ema + (1 - keep) * c->y[i];
        w = keep * w + (1 - keep);
        out[i] = ema / w;
    }
}

typedef struct { /* a panel being filled */
    LinePanel p;
    bool markers;  /* its series get a dot at each point (evaluations) */
    LineSeries* s; /* (cap) */
    char** labels; /* (cap) one allocation each, so that growing s keeps them */
    size_t cap;
} Panel;

static void add(Panel* pn, const Run* r, size_t run, const Curve* c, const double* y, const char* what, size_t dash,
                double opacity) {
    size_t k = pn->p.n_series++, cap = pn->cap;
    pn->s = grow(pn->s, k, &pn->cap, sizeof(LineSeries));
    pn->labels = grow(pn->labels, k, &cap, sizeof(char*));
    pn->labels[k] = mallocCheck(240);
    snprintf(pn->labels[k], 240, "%.127s %.100s", r->label, what);
    pn->s[k] = (LineSeries){.label = pn->labels[k],
                            .n = c->n,
                            .x = c->x,
                            .y = y ? y : c->y,
                            .color = run,
                            .dash = dash,
                            .opacity = opacity,
                            .markers = pn->markers};
    pn->p.series = pn->s;
}

static void free_panels(Panel* pn, size_t n) {
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < pn[k].p.n_series; i++) free(pn[k].labels[i]);
        free(pn[k].labels);
        free(pn[k].s);
    }
}

static void free_runs(Run* runs, size_t n_runs) {
    for (size_t r = 0; r < n_runs; r++)
        for (size_t i = 0; i < runs[r].n; i++) {
            free(runs[r].c[i].x);
            free(runs[r].c[i].y);
        }
    for (size_t r = 0; r < n_runs; r++) free(runs[r].c);
}

/* s as one CSV field: quoted, with its quotes doubled, when it holds a comma, a quote or a line break */
static void csv_field(FILE* f, const char* s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* x in the fewest significant digits (up to 17) that read back as x: 0.1 rather than 0.10000000000000001 */
static const char* shortest(double x, char* out, size_t n) {
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(out, n, "%.*g", digits, x);
        if (strtod(out, NULL) == x) break;
    }
    return out;
}

/* --csv: columns run, step, then every metric of any run in the order first met; a cell is empty where the
   run did not log the metric at that step. Linear in the points: one cursor per column. */
static void write_csv(const Run* runs, size_t n_runs, const char* path) {
    const char** cols = NULL;
    size_t n_cols = 0, cap_cols = 0;
    for (size_t r = 0; r < n_runs; r++)
        for (size_t i = 0; i < runs[r].n; i++) {
            size_t k = 0;
            while (k < n_cols && strcmp(cols[k], runs[r].c[i].name)) k++;
            if (k < n_cols) continue;
            cols = grow(cols, n_cols, &cap_cols, sizeof(char*));
            cols[n_cols++] = runs[r].c[i].name;
        }
    FILE* f = fopenCheck(path, "w");
    fputs("run,step", f);
    for (size_t k = 0; k < n_cols; k++) {
        fputc(',', f);
        csv_field(f, cols[k]);
    }
    fputc('\n', f);
    for (size_t r = 0; r < n_runs; r++) {
        size_t n = 0;
        for (size_t i = 0; i < runs[r].n; i++) n += runs[r].c[i].n;
        double* steps = mallocCheck((n ? n : 1) * sizeof(double));
        n = 0;
        for (size_t i = 0; i < runs[r].n; i++)
            for (size_t t = 0; t < runs[r].c[i].n; t++) steps[n++] = runs[r].c[i].x[t];
        qsort(steps, n, sizeof(double), cmp_double);
        /* each column's curve in this run (NULL: not logged) and a cursor into it: the steps ascend, and so do
           a curve's, so every point is visited once */
        const Curve** curve_of = callocCheck(n_cols ? n_cols : 1, sizeof(Curve*));
        size_t* at = callocCheck(n_cols ? n_cols : 1, sizeof(size_t));
        for (size_t k = 0; k < n_cols; k++)
            for (size_t i = 0; i < runs[r].n && !curve_of[k]; i++)
                if (!strcmp(runs[r].c[i].name, cols[k])) curve_of[k] = &runs[r].c[i];
        char num[32];
        for (size_t t = 0; t < n; t++) {
            if (t && steps[t] == steps[t - 1]) continue;
            csv_field(f, runs[r].label);
            fprintf(f, ",%.0f", steps[t]);
            for (size_t k = 0; k < n_cols; k++) {
                const Curve* c = curve_of[k];
                while (c && at[k] < c->n && c->x[at[k]] < steps[t]) at[k]++;
                if (c && at[k] < c->n && c->x[at[k]] == steps[t])
                    fprintf(f, ",%s", shortest(c->y[at[k]], num, sizeof num));
                else fputc(',', f);
            }
            fputc('\n', f);
        }
        free(curve_of);
        free(at);
        free(steps);
    }
    fcloseCheck(f, path);
    free(cols);
    printf("wrote %s (%zu metrics)\n", path, n_cols);
}

/* --positions: one panel per statistic, one polyline per (run, RePo layer): colour = run, dash = layer */
static void plot_positions(const Run* runs, size_t n_runs, const char* out) {
    static Panel pn[N_POS_FIELDS];
    const char* titles[N_POS_FIELDS] = {"RePo positions: range of z over the row", "mean |z[t+1] - z[t]|",
                                        "near-constant segments", "monotonic segments", "hybrid segments"};
    const char* ylabels[N_POS_FIELDS] = {"position units", "position units", "share", "share", "share"};
    for (size_t r = 0; r < n_runs; r++) {
        size_t n_layer = 0;
        for (size_t i = 0; i < runs[r].n; i++) {
            const Curve* c = &runs[r].c[i];
            int layer;
            char field[64];
            if (sscanf(c->name, "positions/%d/%63s", &layer, field) != 2) continue;
            char what[32];
            snprintf(what, sizeof(what), "layer %d", layer);
            for (size_t f = 0; f < N_POS_FIELDS; f++)
                if (!strcmp(field, POS_FIELDS[f])) add(&pn[f], &runs[r], r, c, NULL, what, n_layer % 4, 1);
            if (!strcmp(field, POS_FIELDS[N_POS_FIELDS - 1])) n_layer++; /* the last field closes a layer */
        }
    }
    LinePanel panels[N_POS_FIELDS];
    for (size_t f = 0; f < N_POS_FIELDS; f++) {
        pn[f].p.title = titles[f];
        pn[f].p.ylabel = ylabels[f];
        pn[f].p.log_y = f < 2; /* ranges from near 0 (fresh RePo) to tens of units */
        pn[f].p.unit_y = f >= 2;
        panels[f] = pn[f].p;
    }
    if (!pn[0].p.n_series)
        DIE("plot: no \"positions\" lines in the metrics.jsonl of %s%s (train.log_positions logs them, for a model "
            "with RePo layers)",
            runs[0].label, n_runs > 1 ? " or the others" : "");
    svg_lines(out, "RePo's learned positions over training (train.log_positions)", "step", panels, N_POS_FIELDS);
    svg_to_png(out);
    free_panels(pn, N_POS_FIELDS);
}

int main(int argc, char** argv) {
    cli_init("plot");
    const char* out = NULL;
    const char* csv = NULL;
    const char* dirs[MAX_RUNS];
    size_t n_runs = 0;
    int seen_out = 0, seen_csv = 0, seen_smooth = 0;
    double half_life = -1; /* --smooth; < 0: the default, 1% of the longest run's steps */
    bool positions = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: build/plot RUN_DIR [RUN_DIR ...] [--positions] [--out FILE.svg] [--csv FILE.csv]\n"
                   "  training loss (raw and smoothed), validation loss (and per data.val source), learning\n"
                   "  rate, gradient norm, tokens/s, retrieval and multiple-choice accuracies (train.eval_tasks)\n"
                   "  over steps, from each RUN_DIR/metrics.jsonl, one colour per run; FILE.png too with\n"
                   "  rsvg-convert\n"
                   "  --positions: instead, RePo's learned positions logged by train.log_positions: range,\n"
                   "  mean |step| and the constant / monotonic / hybrid segment shares, one dash per layer\n"
                   "  --smooth STEPS: the half-life in steps of the smoothed training loss (default 1%% of the\n"
                   "  longest run's steps; 0: no smoothed curve)\n"
                   "  --csv FILE.csv: the numbers for a spreadsheet, one row per run and step, one column per\n"
                   "  metric (with or instead of --out)\n");
            return 0;
        }
        if (!strcmp(argv[i], "--positions")) positions = true;
        else if (!strcmp(argv[i], "--out")) {
            cli_once("--out", &seen_out);
            out = cli_value("--out", i + 1 < argc ? argv[i + 1] : NULL);
            i++;
        } else if (!strcmp(argv[i], "--smooth")) {
            cli_once("--smooth", &seen_smooth);
            half_life = cli_parse_double("--smooth", cli_value("--smooth", i + 1 < argc ? argv[i + 1] : NULL));
            if (!(half_life >= 0))
                cli_bad_option("--smooth: expected a half-life in steps >= 0, got '%s'", argv[i + 1]);
            i++;
        } else if (!strcmp(argv[i], "--csv")) {
            cli_once("--csv", &seen_csv);
            csv = cli_value("--csv", i + 1 < argc ? argv[i + 1] : NULL);
            i++;
        } else if (argv[i][0] == '-') {
            cli_bad_option("unknown option '%s'", argv[i]);
        } else {
            if (n_runs == MAX_RUNS) cli_bad_option("more than %d run directories", MAX_RUNS);
            dirs[n_runs++] = argv[i];
        }
    }
    if (!n_runs) cli_bad_option("expected at least one run directory");
    size_t ol = out ? strlen(out) : 0;
    if (!out && !csv) cli_bad_option("expected --out FILE.svg or --csv FILE.csv");
    if (out && (ol < 5 || strcmp(out + ol - 4, ".svg"))) cli_bad_option("--out: expected a file name ending in .svg");
    if (out) cli_check_output_file("--out", out);
    if (csv) cli_check_output_file("--csv", csv);

    static Run runs[MAX_RUNS];
    for (size_t r = 0; r < n_runs; r++) read_run(&runs[r], dirs[r]);
    short_labels(runs, n_runs);
    if (csv) write_csv(runs, n_runs, csv);
    if (!out) {
        free_runs(runs, n_runs);
        return 0;
    }
    if (positions) {
        plot_positions(runs, n_runs, out);
        free_runs(runs, n_runs);
        return 0;
    }

    /* panel order: training loss, validation, lr, grad norm, tokens/s, retrieval, multiple choice */
    enum { N_PANELS = 7 };
    static Panel pn[N_PANELS];
    const char* titles[N_PANELS] = {"training loss",
                                    "validation loss",
                                    "learning rate",
                                    "gradient norm",
                                    "tokens/s",
                                    "retrieval accuracy (exact match)",
                                    "multiple-choice accuracy (acc, acc_norm)"};
    const char* ylabels[N_PANELS] = {"loss (nats)", "loss (nats)", "lr",      "L2 norm",
                                     "k tokens/s",  "accuracy",    "accuracy"};
    if (half_life < 0) { /* 1% of the longest run's steps */
        double last = 0;
        for (size_t r = 0; r < n_runs; r++)
            for (size_t i = 0; i < runs[r].n; i++)
                if (runs[r].c[i].n) last = fmax(last, runs[r].c[i].x[runs[r].c[i].n - 1]);
        half_life = fmax(1, last / 100);
    }
    char smooth_label[64];
    snprintf(smooth_label, sizeof smooth_label, "loss (smoothed, half-life %g step%s)", half_life,
             half_life == 1 ? "" : "s");
    pn[1].markers = pn[5].markers = pn[6].markers = true; /* evaluations: few points, each one marked */
    double* smoothed[MAX_RUNS] = {0};
    double* k_tokens[MAX_RUNS] = {0}; /* tokens/s in thousands: short tick labels */
    for (size_t r = 0; r < n_runs; r++) {
        Run* run = &runs[r];
        size_t dash_val = 1, dash_ret = 0, dash_mc = 0;
        for (size_t i = 0; i < run->n; i++) {
            Curve* c = &run->c[i];
            if (!strcmp(c->name, "loss")) {
                add(&pn[0], run, r, c, NULL, "loss", 0, half_life > 0 ? 0.45 : 1);
                if (half_life > 0) {
                    smoothed[r] = mallocCheck(c->n * sizeof(double));
                    smooth(c, half_life, smoothed[r]);
                    add(&pn[0], run, r, c, smoothed[r], smooth_label, 0, 1);
                }
            } else if (!strcmp(c->name, "val_loss")) add(&pn[1], run, r, c, NULL, "val_loss", 0, 1);
            else if (!strncmp(c->name, "val_loss_source/", 16))
                add(&pn[1], run, r, c, NULL, c->name + 16, dash_val++, 1);
            else if (!strcmp(c->name, "lr")) add(&pn[2], run, r, c, NULL, "lr", 0, 1);
            else if (!strcmp(c->name, "grad_norm")) add(&pn[3], run, r, c, NULL, "grad norm", 0, 1);
            else if (!strcmp(c->name, "tokens_per_s")) {
                k_tokens[r] = mallocCheck(c->n * sizeof(double));
                for (size_t t = 0; t < c->n; t++) k_tokens[r][t] = c->y[t] / 1e3;
                add(&pn[4], run, r, c, k_tokens[r], "tokens/s", 0, 1);
            } else if (!strncmp(c->name, "retrieval/", 10)) add(&pn[5], run, r, c, NULL, c->name + 10, dash_ret++, 1);
            else if (!strncmp(c->name, "mc/", 3)) add(&pn[6], run, r, c, NULL, c->name + 3, dash_mc++, 1);
        }
    }
    LinePanel panels[N_PANELS];
    size_t n_panels = 0;
    for (int k = 0; k < N_PANELS; k++) {
        if (!pn[k].p.n_series) continue;
        pn[k].p.title = titles[k];
        pn[k].p.ylabel = ylabels[k];
        pn[k].p.log_y = k == 3;
        pn[k].p.unit_y = k >= 5;
        panels[n_panels++] = pn[k].p;
    }
    if (!n_panels) DIE("plot: no metrics in %s%s: nothing to draw", dirs[0], n_runs > 1 ? " and the others" : "");
    char title[256];
    snprintf(title, sizeof(title), "%s%s", n_runs == 1 ? "run " : "runs: ", n_runs == 1 ? runs[0].label : "");
    for (size_t r = 0; n_runs > 1 && r < n_runs; r++)
        snprintf(title + strlen(title), sizeof(title) - strlen(title), "%s%.100s", r ? " vs " : "", runs[r].label);
    svg_lines(out, title, "step", panels, n_panels);
    svg_to_png(out);
    for (size_t r = 0; r < n_runs; r++) {
        free(smoothed[r]);
        free(k_tokens[r]);
    }
    free_panels(pn, N_PANELS);
    free_runs(runs, n_runs);
    return 0;
}
