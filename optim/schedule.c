/* Learning-rate schedules; the formulas are written out in optim/schedule.h. */
#include "optim/schedule.h"

#include <math.h>

/* pure: no state, so a resumed run gets the same lr for the same step */
double lr_at(const OptimConfig* c, size_t step, size_t total_steps) {
    size_t W = c->warmup_steps;
    if (step < W) return c->lr * (double)(step + 1) / (double)W;   /* linear warmup, never 0 */
    if (c->schedule == SCHED_CONSTANT) return c->lr;
    /* progress through the decay phase, in [0, 1] */
    double p = total_steps > W ? (double)(step - W) / (double)(total_steps - W) : 1.0;
    if (p > 1.0) p = 1.0;
    if (c->schedule == SCHED_LINEAR) return c->lr - (c->lr - c->min_lr) * p;
    return c->min_lr + 0.5 * (c->lr - c->min_lr) * (1.0 + cos(M_PI * p));   /* cosine */
}
