/* Learning-rate schedules (docs/design.md, "One training step"): a pure function of (config, step).
   W = warmup_steps, N = total_steps (the argument), s = step (0-based),
   lr and min_lr from the config:

     warmup (s < W):    lr * (s + 1) / W          (reaches lr at s = W - 1)
     after warmup, with progress p = (s - W) / (N - W) clamped to [0, 1]
     (p = 1 when N <= W):
       constant:        lr
       linear:          lr - (lr - min_lr) * p
       cosine:          min_lr + 0.5 * (lr - min_lr) * (1 + cos(pi * p))

   Linear and cosine share p, so both reach min_lr at s = N, one step after
   the last step (llm.c's convention): the last step still learns when
   min_lr = 0. The value is the base lr; AdamW multiplies it by each tensor's
   lr_mult. */
#ifndef REPOC_SCHEDULE_H
#define REPOC_SCHEDULE_H

#include <stddef.h>

#include "optim/optim_config.h"

double lr_at(const OptimConfig* c, size_t step, size_t total_steps);

#endif
