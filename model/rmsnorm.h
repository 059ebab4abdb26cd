/* RMSNorm with weight (docs/backward.md, "RMSNorm and QK-norm"): y = (w + off) ⊙ x r,
   r = (mean(x²) + eps)^(-1/2); off is 0, or 1 for Gemma-3's x r (1 + w) (cfg_norm_offset).
   Used for the block norms, for the QK-norms and for the final norm. */
#ifndef REPOC_RMSNORM_H
#define REPOC_RMSNORM_H

#include <stdbool.h>
#include <stddef.h>

#include "common/real.h"

/* A norm's gain w + off: its weight w (C) and the offset off (0, or 1 for Gemma-3's 1 + w, cfg_norm_offset) */
typedef struct {
    const real* w;
    real off;
} NormGain;

/* out (N,C)   rstd (N) saved for backward   inp (N,C)   g.w (C) */
void rmsnorm_forward(real* out, real* rstd, const real* inp, NormGain g, size_t N, size_t C, double eps);
/* out (N,C) = res + rmsnorm(inp): OLMo-2's post-norm residual in one pass (out may be res); the backward of
   the norm part is rmsnorm_backward's, the residual passes its gradient through */
void rmsnorm_residual_forward(real* out, real* rstd, const real* res, const real* inp, NormGain g, size_t N, size_t C,
                              double eps);
/* backward sums dweight over this many chunks of rows, then over the chunks in order: fixed (never the
   thread count), and at least 64 so that a many-core machine has work for every thread */
#define RMSNORM_CHUNKS 128
/* dinp (N,C) = (or += when add)   dweight (C) += (skipped when NULL: the gradient of g.w)   dout (N,C);
   inp, g, rstd as forward saw/saved them;   work (RMSNORM_CHUNKS, C) overwritten when dweight */
void rmsnorm_backward(real* dinp, real* dweight, const real* dout, const real* inp, NormGain g, const real* rstd,
                      real* work, size_t N, size_t C, bool add);

#endif
