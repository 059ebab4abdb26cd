/* build/plot RUN_DIR [RUN_DIR ...] --out FILE.svg: the training curves of one
   or more runs from their metrics.jsonl (train/metrics.h), overlaid, one
   colour per run: training loss (raw, faint, and smoothed), validation loss
   (the mean, and each data.val source dashed), learning rate, gradient norm
   (log scale), tokens/s and, with train.eval_tasks, the retrieval accuracies.
   A panel without data in any run is left out. Drawn by svg_lines
   (eval/analyze_svg.h); FILE.png too when rsvg-convert is on PATH. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "eval/analyze_svg.h"
#include "programs/cli.h"

#define MAX_RUNS 10        /* one palette colour each */
#define MAX_CURVES 64      /* per run: 5 step metrics, val_loss, sources, tasks */
#define SMOOTH 0.9         /* EMA weight of the smoothed training loss (debiased, as TensorBoard) */

typedef struct {           /* one metric of one run over steps, growable */
    char name[96];         /* "loss", "lr", ..., "val_loss", "val_loss_source/web", "retrieval/single@64" */
    double *x, *y;
    size_t n, cap;
} Curve;

typedef struct {
    char label[128];       /* the run's name in legends: its directory */
    Curve c[MAX_CURVES];
    size_t n;
} Run;

static Curve* curve(Run* r, const char* name) {
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->c[i].name, name)) return &r->c[i];
    CHECK(r->n < MAX_CURVES, "plot: %s: more than %d metrics", r->label, MAX_CURVES);
    Curve* c = &r->c[r->n++];
    snprintf(c->name, sizeof(c->name), "%s", name);
    return c;
}

static void push(Curve* c, double x, double y) {
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        double* nx = mallocCheck(c->cap * sizeof(double));
        double* ny = mallocCheck(c->cap * sizeof(double));
        if (c->n) {
            memcpy(nx, c->x, c->n * sizeof(double));
            memcpy(ny, c->y, c->n * sizeof(double));
        }
        free(c->x);
        free(c->y);
        c->x = nx;
        c->y = ny;
    }
    c->x[c->n] = x;
    c->y[c->n++] = y;
}

/* every number of one metrics.jsonl line; objects of numbers (val_loss_source, retrieval) as "key/name" */
static void read_line(Run* r, const cJSON* j) {
    const cJSON* step = cJSON_GetObjectItemCaseSensitive(j, "step");
    const cJSON* it;
    cJSON_ArrayForEach(it, j) {
        if (it == step || !strcmp(it->string, "tokens_seen") || !strcmp(it->string, "ms")) continue;
        if (cJSON_IsNumber(it)) push(curve(r, it->string), step->valuedouble, it->valuedouble);
        if (!cJSON_IsObject(it) || !strcmp(it->string, "source_tokens") || strstr(it->string, "batches")) continue;
        const cJSON* e;
        char name[96];
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

/* the training loss smoothed: a debiased exponential moving average */
static void smooth(const Curve* c, double* out) {
    double ema = 0, w = 0;
    for (size_t i = 0; i < c->n; i++) {
        ema = SMOOTH * ema + (1 - SMOOTH) * c->y[i];
        w = SMOOTH * w + (1 - SMOOTH);
        out[i] = ema / w;
    }
}

typedef struct {           /* a panel being filled */
    LinePanel p;
    LineSeries s[MAX_RUNS * MAX_CURVES];
    char labels[MAX_RUNS * MAX_CURVES][240];
} Panel;

static void add(Panel* pn, const Run* r, size_t run, const Curve* c, const double* y, const char* what,
                size_t dash, double opacity) {
    size_t k = pn->p.n_series++;
    snprintf(pn->labels[k], sizeof(pn->labels[k]), "%.127s %.100s", r->label, what);
    pn->s[k] = (LineSeries){pn->labels[k], c->n, c->x, y ? y : c->y, run, dash, opacity};
    pn->p.series = pn->s;
}

int main(int argc, char** argv) {
    cli_init("plot");
    const char* out = NULL;
    const char* dirs[MAX_RUNS];
    size_t n_runs = 0;
    int seen_out = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: build/plot RUN_DIR [RUN_DIR ...] --out FILE.svg\n"
                   "  training loss (raw and smoothed), validation loss (and per data.val source), learning\n"
                   "  rate, gradient norm, tokens/s and retrieval accuracies (train.eval_tasks) over steps,\n"
                   "  from each RUN_DIR/metrics.jsonl, one colour per run; FILE.png too with rsvg-convert\n");
            return 0;
        }
        if (!strcmp(argv[i], "--out")) {
            cli_once("--out", &seen_out);
            out = cli_value("--out", i + 1 < argc ? argv[i + 1] : NULL);
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
    if (ol < 5 || strcmp(out + ol - 4, ".svg")) cli_bad_option("--out: expected a file name ending in .svg");
    cli_check_output_file("--out", out);

    static Run runs[MAX_RUNS];
    for (size_t r = 0; r < n_runs; r++) read_run(&runs[r], dirs[r]);
    short_labels(runs, n_runs);

    /* panel order: training loss, validation, lr, grad norm, tokens/s, retrieval */
    static Panel pn[6];
    const char* titles[6] = {"training loss", "validation loss", "learning rate", "gradient norm", "tokens/s",
                             "retrieval accuracy (exact match)"};
    const char* ylabels[6] = {"loss (nats)", "loss (nats)", "lr", "L2 norm", "k tokens/s", "accuracy"};
    double* smoothed[MAX_RUNS] = {0};
    double* k_tokens[MAX_RUNS] = {0};   /* tokens/s in thousands: short tick labels */
    for (size_t r = 0; r < n_runs; r++) {
        Run* run = &runs[r];
        size_t dash_val = 1, dash_ret = 0;
        for (size_t i = 0; i < run->n; i++) {
            Curve* c = &run->c[i];
            if (!strcmp(c->name, "loss")) {
                smoothed[r] = mallocCheck(c->n * sizeof(double));
                smooth(c, smoothed[r]);
                add(&pn[0], run, r, c, NULL, "loss", 0, 0.3);
                add(&pn[0], run, r, c, smoothed[r], "loss (smoothed)", 0, 1);
            } else if (!strcmp(c->name, "val_loss")) add(&pn[1], run, r, c, NULL, "val_loss", 0, 1);
            else if (!strncmp(c->name, "val_loss_source/", 16)) add(&pn[1], run, r, c, NULL, c->name + 16, dash_val++, 1);
            else if (!strcmp(c->name, "lr")) add(&pn[2], run, r, c, NULL, "lr", 0, 1);
            else if (!strcmp(c->name, "grad_norm")) add(&pn[3], run, r, c, NULL, "grad norm", 0, 1);
            else if (!strcmp(c->name, "tokens_per_s")) {
                k_tokens[r] = mallocCheck(c->n * sizeof(double));
                for (size_t t = 0; t < c->n; t++) k_tokens[r][t] = c->y[t] / 1e3;
                add(&pn[4], run, r, c, k_tokens[r], "tokens/s", 0, 1);
            }
            else if (!strncmp(c->name, "retrieval/", 10)) add(&pn[5], run, r, c, NULL, c->name + 10, dash_ret++, 1);
        }
    }
    LinePanel panels[6];
    size_t n_panels = 0;
    for (int k = 0; k < 6; k++) {
        if (!pn[k].p.n_series) continue;
        pn[k].p.title = titles[k];
        pn[k].p.ylabel = ylabels[k];
        pn[k].p.log_y = k == 3;
        pn[k].p.unit_y = k == 5;
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
        for (size_t i = 0; i < runs[r].n; i++) {
            free(runs[r].c[i].x);
            free(runs[r].c[i].y);
        }
    }
    return 0;
}
