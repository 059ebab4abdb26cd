/* build/gradcheck: finite-difference gradient checks for every layer and the
   whole model (always built in double precision, -DREPOC_F64).
   For each tensor element x_i it compares the analytic ∂L/∂x_i with the
   fourth-order central difference
       (-L(x+2h) + 8 L(x+h) - 8 L(x-h) + L(x-2h)) / 12h,   h = 2e-4 (--step),
   whose truncation error is O(h⁴). Per tensor it prints the max absolute error
   and the max relative error, rel_i = |a_i - n_i| / max(|a_i|, |n_i|, 1e-4·max_j |n_j|)
   (elements far below the tensor's own scale are judged at that scale), and
   PASS when rel <= --tol (default 1e-6) and every analytic and numeric value is
   finite (a NaN or Inf gradient is a FAIL: a comparison with NaN is never
   true, so it could not fail otherwise). Exit status 1 on any FAIL, 2 on a
   usage error. */
#include "tests/gradcheck.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/threads.h"
#include "programs/cli.h"

#ifndef REPOC_F64
#error "gradcheck must be compiled with -DREPOC_F64 (double precision)"
#endif

static double H_STEP = 2e-4;
static const double SCALE_FLOOR = 1e-4;

real* gc_random(Rng* rng, size_t n, double lo, double hi) {
    real* p = mallocCheck((n ? n : 1) * sizeof(real));
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * rng_uniform(rng);
    return p;
}

void gc_add(Problem* p, const char* name, real* x, size_t n) {
    CHECK(p->n_tensors < GC_MAX_TENSORS, "gradcheck: too many tensors in %s", p->name);
    size_t i = p->n_tensors++;
    snprintf(p->tensor_name[i], sizeof(p->tensor_name[i]), "%s", name);
    p->x[i] = x;
    p->dx[i] = callocCheck(n ? n : 1, sizeof(real));
    p->n[i] = n;
}

double gc_project(const real* out, const real* proj, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += out[i] * proj[i];
    return s;
}

typedef struct {
    double max_abs, max_rel, max_ref; /* over the elements where both gradients are finite */
    size_t bad_analytic, bad_numeric; /* elements whose gradient is NaN or ±Inf */
    int pass;
} TensorResult;

static double numeric_grad(Problem* p, real* x) {
    real x0 = *x;
    double f[4];
    const double offs[4] = {2, 1, -1, -2};
    for (int k = 0; k < 4; k++) {
        *x = x0 + offs[k] * H_STEP;
        f[k] = p->loss(p);
    }
    *x = x0;
    return (-f[0] + 8 * f[1] - 8 * f[2] + f[3]) / (12 * H_STEP);
}

/* the failed tensors, for the list at the end: a failure deep in --all's output is not missed */
#define MAX_LISTED 64
static struct {
    char what[160];
    double max_rel;
} failures[MAX_LISTED];
static size_t n_failures;

static void note_failure(const Problem* p, size_t t, double max_rel) {
    if (n_failures < MAX_LISTED) {
        snprintf(failures[n_failures].what, sizeof failures[0].what, "%.80s: %.70s", p->name, p->tensor_name[t]);
        failures[n_failures].max_rel = max_rel;
    }
    n_failures++;
}

/* check one problem; returns the number of failed tensors */
static int check_problem(Problem* p, double tol, double perturb, int verbose) {
    p->grad(p);
    if (perturb != 0) /* --perturb: scale the analytic gradients, to show the checker notices */
        for (size_t t = 0; t < p->n_tensors; t++)
            for (size_t i = 0; i < p->n[t]; i++) p->dx[t][i] *= 1 + perturb;
    int failed = 0;
    printf("%s\n", p->name);
    for (size_t t = 0; t < p->n_tensors; t++) {
        size_t n = p->n[t];
        double* num = mallocCheck((n ? n : 1) * sizeof(double));
        TensorResult r = {0, 0, 0, 0, 0, 1};
        for (size_t i = 0; i < n; i++) {
            num[i] = numeric_grad(p, &p->x[t][i]);
            if (!isfinite(num[i])) r.bad_numeric++;
            else if (fabs(num[i]) > r.max_ref) r.max_ref = fabs(num[i]);
        }
        double floor_abs = SCALE_FLOOR * r.max_ref;
        for (size_t i = 0; i < n; i++) {
            double a = p->dx[t][i];
            if (verbose && i < 5) printf("      [%zu] analytic %+.12e numeric %+.12e\n", i, a, num[i]);
            if (!isfinite(a)) r.bad_analytic++;
            if (!isfinite(a) || !isfinite(num[i])) continue;
            double e = fabs(a - num[i]);
            double den = fmax(fmax(fabs(a), fabs(num[i])), floor_abs);
            double rel = den > 0 ? e / den : 0;
            if (e > r.max_abs) r.max_abs = e;
            if (rel > r.max_rel) r.max_rel = rel;
        }
        /* a tensor whose gradient is exactly zero everywhere checks nothing */
        int degenerate = r.max_ref == 0 && n > 0 && !r.bad_numeric;
        r.pass = r.max_rel <= tol && !degenerate && !r.bad_analytic && !r.bad_numeric;
        failed += !r.pass;
        if (!r.pass) note_failure(p, t, r.max_rel);
        printf("  %-52s n=%-5zu max|grad| %.3e  max abs err %.3e  max rel err %.3e  %s%s", p->tensor_name[t], n,
               r.max_ref, r.max_abs, r.max_rel, r.pass ? "PASS" : "FAIL",
               degenerate ? " (gradient identically zero: nothing was checked)" : "");
        if (r.bad_analytic || r.bad_numeric)
            printf(" (non-finite gradients: %zu analytic, %zu numeric)", r.bad_analytic, r.bad_numeric);
        printf("\n");
        free(num);
    }
    return failed;
}

static void free_problem(Problem* p) {
    if (p->free_ctx) p->free_ctx(p);
    for (size_t t = 0; t < p->n_tensors; t++) free(p->dx[t]);
}

static void usage(FILE* fp) {
    fprintf(fp,
            "usage: build/gradcheck (--layer NAME | --all) [--seed N] [--tol X] [--step H] [--perturb X] [--verbose]\n"
            "  Compares analytic gradients with 4th-order central finite differences in double precision.\n"
            "  --layer NAME   one of the layers below      --all     every layer below marked *\n"
            "  --seed N       random inputs and parameters (default 1)\n"
            "  --tol X        max relative error to pass (default 1e-6)\n"
            "  --step H       finite-difference step, > 0 (default 2e-4)\n"
            "  --perturb X    multiply the analytic gradients by (1+X) before comparing (checks the checker)\n"
            "  --verbose      print the first analytic/numeric pairs of every tensor\n"
            "layers:\n");
    for (size_t i = 0; i < GC_N_LAYERS; i++)
        fprintf(fp, "  %c %-14s %s\n", GC_LAYERS[i].in_all ? '*' : ' ', GC_LAYERS[i].name, GC_LAYERS[i].what);
}

/* --perturb: any number strtod reads, NaN and Inf included (they must make the check FAIL) */
static double parse_any_double(const char* opt, const char* s) {
    char* end;
    double v = strtod(s, &end);
    if (!*s || *end) cli_bad_option("%s: expected a number, got '%s'", opt, s);
    return v;
}

int main(int argc, char** argv) {
    cli_init("gradcheck");
    const char* layer = NULL;
    int all = 0, verbose = 0;
    unsigned long long seed = 1;
    double tol = 1e-6, perturb = 0;
    int seen_layer = 0, seen_all = 0, seen_seed = 0, seen_tol = 0, seen_perturb = 0, seen_step = 0, seen_verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--all")) {
            cli_once(a, &seen_all);
            all = 1;
        } else if (!strcmp(a, "--verbose")) {
            cli_once(a, &seen_verbose);
            verbose = 1;
        } else if (!strcmp(a, "--layer") && has_val) {
            cli_once(a, &seen_layer);
            layer = argv[++i];
        } else if (!strcmp(a, "--seed") && has_val) {
            cli_once(a, &seen_seed);
            seed = cli_parse_size(a, argv[++i], 0, SIZE_MAX);
        } else if (!strcmp(a, "--tol") && has_val) {
            cli_once(a, &seen_tol);
            tol = cli_parse_double(a, argv[++i]);
            if (tol < 0) cli_bad_option("--tol: expected a number >= 0, got '%s'", argv[i]);
        } else if (!strcmp(a, "--perturb") && has_val) {
            cli_once(a, &seen_perturb);
            perturb = parse_any_double(a, argv[++i]);
        } else if (!strcmp(a, "--step") && has_val) {
            cli_once(a, &seen_step);
            H_STEP = cli_parse_double(a, argv[++i]);
            if (!(H_STEP > 0)) cli_bad_option("--step: expected a number > 0, got '%s'", argv[i]);
        } else {
            fprintf(stderr, "gradcheck: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (all && layer) cli_bad_option("--all and --layer %s exclude each other: give one", layer);
    if (!all && !layer) {
        usage(stderr);
        return 2;
    }
    threads_init(1); /* the problems are tiny: thread start-up would dominate */
    int failed = 0, checked = 0, found = 0;
    for (size_t i = 0; i < GC_N_LAYERS; i++) {
        const LayerEntry* e = &GC_LAYERS[i];
        if (all ? !e->in_all : strcmp(e->name, layer) != 0) continue;
        found = 1;
        Rng rng;
        rng_seed(&rng, seed * 1000003ull + i);
        Problem probs[8];
        memset(probs, 0, sizeof(probs));
        size_t np = e->build(probs, 8, &rng);
        for (size_t k = 0; k < np; k++) {
            int f = check_problem(&probs[k], tol, perturb, verbose);
            failed += f;
            checked += (int)probs[k].n_tensors;
            free_problem(&probs[k]);
        }
    }
    if (!found) {
        fprintf(stderr, "gradcheck: unknown layer '%s'\n", layer);
        usage(stderr);
        return 2;
    }
    if (n_failures) printf("failed tensors (problem: tensor, max rel err):\n");
    for (size_t k = 0; k < n_failures && k < MAX_LISTED; k++)
        printf("  FAIL %s  %.3e\n", failures[k].what, failures[k].max_rel);
    if (n_failures > MAX_LISTED) printf("  ... and %zu more\n", n_failures - MAX_LISTED);
    printf("gradcheck: %d tensors checked, %d failed (tol %.1e, seed %llu)\n", checked, failed, tol, seed);
    return failed ? 1 : 0;
}
