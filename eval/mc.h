/* Multiple-choice log-likelihood scoring as lm-evaluation-harness does it (docs/eval.md,
   "Multiple choice"). */
#ifndef REPOC_MC_H
#define REPOC_MC_H

#include <stdbool.h>
#include <stddef.h>

/* The choice the harness picks: the argmax over i < n of ll[i] (acc), or of ll[i] / chars[i] (acc_norm,
   chars = the choice's length in Unicode code points), the first on a tie (numpy's argmax) */
size_t mc_pick(const double* ll, const double* chars, size_t n, bool norm);

#endif
