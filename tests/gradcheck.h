/* The gradient checker's problem description (tests/gradcheck.c). A problem is
   a scalar function L(tensors) with an analytic gradient: for a layer,
   L = Σ out ⊙ proj with a fixed random projection (so dout = proj); for the
   loss layers and the model, L is the loss itself. */
#ifndef REPOC_GRADCHECK_H
#define REPOC_GRADCHECK_H

#include <stddef.h>

#include "common/real.h"
#include "common/rng.h"

#define GC_MAX_TENSORS 160

typedef struct Problem Problem;
struct Problem {
    char name[64];
    size_t n_tensors;
    char tensor_name[GC_MAX_TENSORS][96];
    real* x[GC_MAX_TENSORS];  /* the values L depends on */
    real* dx[GC_MAX_TENSORS]; /* where grad() leaves ∂L/∂x */
    size_t n[GC_MAX_TENSORS];
    double (*loss)(Problem* p); /* forward only */
    void (*grad)(Problem* p);   /* zero dx, forward, backward */
    void (*free_ctx)(Problem* p);
    void* ctx;
};

/* Each layer name maps to a builder that fills one or more problems (e.g. one
   per position mode); returns how many it wrote. */
typedef size_t (*ProblemBuilder)(Problem* out, size_t max, Rng* rng);

typedef struct {
    const char* name;
    const char* what;
    ProblemBuilder build;
    int in_all; /* 0: only by name (the deliberately wrong backward) */
} LayerEntry;

extern const LayerEntry GC_LAYERS[];
extern const size_t GC_N_LAYERS;

/* helpers for builders */
real* gc_random(Rng* rng, size_t n, double lo, double hi);
void gc_add(Problem* p, const char* name, real* x, size_t n);   /* allocates its dx */
double gc_project(const real* out, const real* proj, size_t n); /* Σ out ⊙ proj */

#endif
