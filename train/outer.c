/* The DiLoCo outer step (train/outer.h): the averaged parameter change, SGD with Nesterov momentum on the
   kept copy, every rank's parameters set to it. */
#include "train/outer.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/dist.h"

void outer_init(Outer* o, const RunConfig* rc, const Model* m) {
    memset(o, 0, sizeof(*o));
    o->on = rc->train.outer.every != RC_UNSET;
    if (!o->on) return;
    o->every = rc->train.outer.every;
    o->lr = rc->train.outer.lr;
    o->momentum = rc->train.outer.momentum;
    o->nesterov = rc->train.outer.nesterov;
    o->wire_bf16 = !strcmp(rc->train.grad_wire_dtype, "bf16");
    o->n = m->tensors.n_grads;
    o->kept = mallocCheck(o->n * sizeof(real));
    o->mom = callocCheck(o->n, sizeof(real));
    model_trained_params_get(m, o->kept);
    printf("DiLoCo outer loop: every %zu inner steps, SGD lr %g momentum %g%s on the averaged change (%s on the "
           "wire); each rank trains its own rows with its own AdamW in between\n",
           o->every, o->lr, o->momentum, o->nesterov ? " Nesterov" : "", o->wire_bf16 ? "bf16" : REAL_NAME);
}

void outer_free(Outer* o) {
    free(o->kept);
    free(o->mom);
    memset(o, 0, sizeof(*o));
}

bool outer_due(const Outer* o, size_t step) { return o->on && (step + 1) % o->every == 0; }

void outer_apply(real* kept, real* mom, const real* delta, size_t n, double lr, double momentum, bool nesterov) {
    real mu = (real)momentum, eta = (real)lr;
    for (size_t i = 0; i < n; i++) {
        mom[i] = mu * mom[i] + delta[i];
        real g = nesterov ? delta[i] + mu * mom[i] : mom[i];
        kept[i] -= eta * g;
    }
}

void outer_step(Outer* o, Model* m) {
    real* delta = m->grads; /* free between an AdamW step that zeroed it and the next backward */
    model_trained_params_get(m, delta);
    for (size_t i = 0; i < o->n; i++) delta[i] = o->kept[i] - delta[i];
    dist_allreduce_sum(delta, o->n, o->wire_bf16);
    real inv = (real)(1.0 / (double)dist_world());
    for (size_t i = 0; i < o->n; i++) delta[i] *= inv;
    outer_apply(o->kept, o->mom, delta, o->n, o->lr, o->momentum, o->nesterov);
    model_trained_params_set(m, o->kept);
    memset(delta, 0, o->n * sizeof(real));
}
