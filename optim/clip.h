/* Gradient checks before the optimizer step: the global L2 norm, clipping to
   a maximum norm (config grad_clip, applied by adamw_step), and the first tensor holding a NaN or Inf.
   All take the gradient arena (TensorTable.n_grads reals, frozen tensors have
   no slot). */
#ifndef REPOC_CLIP_H
#define REPOC_CLIP_H

#include <stddef.h>

#include "common/real.h"
#include "model/tensors.h"

/* sqrt(sum g²) over grads (n), summed in double. Deterministic: the array is cut
   into NORM_CHUNKS fixed ranges (independent of the thread count), each summed
   serially in a fixed order, and the chunk sums are added serially, so the
   result is bit-identical across runs and thread counts (exact resume). */
#define NORM_CHUNKS 1024
double grad_global_norm(const real* grads, size_t n);

/* The factor that clips the gradient to max_norm: max_norm / norm when max_norm > 0
   and norm > max_norm, otherwise 1 (also for a NaN norm). norm is the value
   grad_global_norm returned; adamw_step applies the factor as it reads each
   gradient. (torch's clip_grad_norm_ divides by norm + 1e-6 instead; we clip to
   exactly max_norm.) */
double grad_clip_scale(double max_norm, double norm);

/* Index of the first tensor (table order) whose gradient holds a NaN or Inf,
   or -1. Scans every trainable tensor serially, so call it only when
   grad_global_norm is not finite; -1 then means the sum of squares overflowed
   (possible only in the double build). */
long first_nonfinite_tensor(const TensorTable* tt, const real* grads);

#endif
