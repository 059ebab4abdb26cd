/* Learning-rate and repo_pdrop schedules; the formulas are written out in optim/schedule.h. */
#include "optim/schedule.h"

#include <math.h>

/* pure: no state, so a resumed run gets the same lr for the same step */
double lr_at(const OptimConfig* c, size_t step, size_t total_steps) {
    size_t W = c->warmup_steps;
    if (step < W) return c->lr * (double)(step + 1) / (double)W; /* linear warmup, never 0 */
    if (c->schedule == SCHED_CONSTANT) return c->lr;
    if (c->schedule == SCHED_WSD) {
        size_t D = c->decay_steps ? c->decay_steps : (size_t)ceil(c->decay_fraction * (double)total_steps);
        if (D > total_steps - W) D = total_steps > W ? total_steps - W : 0;
        size_t S = total_steps - D; /* the first decay step */
        if (step < S || D == 0) return c->lr;
        double q = (double)(step - S + 1) / (double)D;
        if (q > 1.0) q = 1.0;
        double f = c->decay_shape == DECAY_SQRT ? 1.0 - sqrt(q) : 1.0 - q;
        return c->min_lr + (c->lr - c->min_lr) * f;
    }
    /* progress through the decay phase, in [0, 1] */
    double p = total_steps > W ? (double)(step - W) / (double)(total_steps - W) : 1.0;
    if (p > 1.0) p = 1.0;
    if (c->schedule == SCHED_LINEAR) return c->lr - (c->lr - c->min_lr) * p;
    return c->min_lr + 0.5 * (c->lr - c->min_lr) * (1.0 + cos(M_PI * p)); /* cosine */
}

/* pure, as lr_at: a resumed run gets the same p for the same step */
double repo_pdrop_at(double p0, size_t n, size_t step) {
    if (p0 <= 0 || n == 0 || step >= n) return 0;
    return p0 * (1 - (double)step / (double)n);
}
