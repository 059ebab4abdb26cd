/* Learning-rate schedules (docs/design.md, "One training step"): a pure function of (config, step).
   W = warmup_steps, N = total_steps (the argument), s = step (0-based),
   lr and min_lr from the config:

     warmup (s < W):    lr * (s + 1) / W          (reaches lr at s = W - 1)
     after warmup, with progress p = (s - W) / (N - W) clamped to [0, 1]
     (p = 1 when N <= W):
       constant:        lr
       linear:          lr - (lr - min_lr) * p
       cosine:          min_lr + 0.5 * (lr - min_lr) * (1 + cos(pi * p))
     wsd (warmup, stable, decay): D = decay_steps, or (when 0)
     ceil(decay_fraction * N), at most N - W; the decay starts at S = N - D:
       s < S:           lr                        (stable)
       s >= S:          q = (s - S + 1) / D, in (0, 1]
                        linear: lr - (lr - min_lr) * q
                        sqrt:   min_lr + (lr - min_lr) * (1 - sqrt(q))
     so the last step (s = N - 1) already runs at min_lr (with D = 0 the run
     stays at lr to the end).

   Extending a run (resuming with a larger train.steps): N changes, and every
   schedule is recomputed from the new N. constant: nothing changes. linear
   and cosine: p shrinks, so the lr jumps back up at the resumed step to where
   the longer curve is. wsd: a run resumed while still stable just decays
   later, with no jump; one resumed inside its decay (or after it) jumps back
   to lr and decays again over the new last D steps. So save a checkpoint
   before the decay (at N - D) if the run may be extended.

   Linear and cosine share p, so both reach min_lr at s = N, one step after
   the last step (llm.c's convention): the last step still learns when
   min_lr = 0. The value is the base lr; AdamW multiplies it by each tensor's
   lr_mult. */
#ifndef REPOC_SCHEDULE_H
#define REPOC_SCHEDULE_H

#include <stddef.h>

#include "optim/optim_config.h"

double lr_at(const OptimConfig* c, size_t step, size_t total_steps);

/* model.positions.repo_pdrop's p before optimizer step `step` (0 for the first): p0 max(0, 1 - step/n),
   p0 at step 0 and 0 from step n on; n = 0: 0 (the mix itself: repo_pdrop_forward, model/repo.h) */
double repo_pdrop_at(double p0, size_t n, size_t step);

#endif
