/* AdamW with decoupled weight decay and bias correction, exactly torch 1.13's
   torch.optim.AdamW (single-tensor, amsgrad off), per tensor of the table,
   with t = step + 1 (the first step has t = 1):

     lr_t = lr * lr_mult                       (the tensor's group)
     w  = w * (1 - lr_t * wd)                  (tensors in the decay group only)
     m  = b1 m + (1 - b1) g
     v  = b2 v + (1 - b2) g²
     w -= (lr_t / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)

   The update runs in `real`; the bias corrections, lr_t / (1 - b1^t) and
   1 - lr_t * wd are formed in double and rounded once. The decay reads the
   weights before the step. The element loop repeats torch's CPU kernels
   operation for operation (including their fused multiply-adds), so in float
   the result is bit-identical to torch 1.13's AdamW (tests/test_optim.c).

   State layout (docs/design.md, "Memory model"): m and v are one arena each of TensorTable.n_grads
   reals laid out exactly like the gradient arena, so tensor k's moments are
   m + tt->t[k].grad_offset and v + tt->t[k].grad_offset, tt->t[k].numel reals
   each. Frozen tensors (grad_offset == NO_GRAD) have no state and are never
   touched. To save the state, write m and v per tensor under the parameter's
   name; nothing else is needed, as the step number comes from the caller.

   Sharded state (ZeRO stage 1, for data-parallel runs): an optimizer built for the slice
   [lo, hi) of the gradient arena holds m and v for that slice only
   (gradient-arena element i at m[i - lo]) and updates only the parameters
   of that slice; the full state is [0, n_grads). Each element's update is
   the same operation either way, so the union of the slices' updates is
   bit-identical to the full step.

   Gradient accumulation over micro-batches needs nothing here: backward adds
   into the gradients (call model_backward with dloss = 1 / n_micro), the
   gradients are clipped once and adamw_step runs once per optimizer step. */
#ifndef REPOC_ADAMW_H
#define REPOC_ADAMW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/real.h"
#include "model/tensors.h"
#include "optim/optim_config.h"

/* the optimizer's view of one tensor of the table, same index */
typedef struct {
    size_t offset;        /* into the parameter arena */
    size_t grad_offset;   /* into the gradient, m and v arenas; NO_GRAD = frozen */
    size_t numel;
    bool decay;           /* in the weight-decay group */
    double lr_mult;       /* lr_t = lr * lr_mult */
    int lr_source;        /* index of the lr_mult pattern, LR_MULT_REPO or LR_MULT_NONE */
} AdamWTensor;

typedef struct {
    OptimConfig cfg;      /* a copy: betas, eps, weight_decay */
    AdamWTensor* t;       /* n_tensors, in table order */
    size_t n_tensors;
    real* m;              /* (hi - lo) first moments of gradient-arena elements lo..hi-1 */
    real* v;              /* (hi - lo) second moments */
    size_t n;             /* == TensorTable.n_grads */
    size_t lo, hi;        /* the slice held and updated: [0, n) unless sharded */
} AdamW;

/* Validate cfg, check it against the table (every freeze pattern matches a
   tensor and every tensor it matches is frozen in tt; every lr_mult pattern
   matches a tensor), assign each tensor its groups, allocate m and v (zeroed)
   and print the summary to stdout. */
void adamw_build(AdamW* a, const TensorTable* tt, const OptimConfig* cfg);
/* The same for the slice [lo, hi) of the gradient arena only (sharded state). */
void adamw_build_slice(AdamW* a, const TensorTable* tt, const OptimConfig* cfg, size_t lo, size_t hi);
void adamw_free(AdamW* a);
/* The groups: trainable and frozen counts, decay / no decay, each lr_mult group. */
void adamw_print(const AdamW* a, const TensorTable* tt, FILE* fp);

/* The part of gradient-arena elements [offset, offset + n) (one tensor) inside
   the optimizer's slice: [*g0, *g1). Returns false when it is empty. */
bool adamw_slice_part(const AdamW* a, size_t offset, size_t n, size_t* g0, size_t* g1);

/* One step with base learning rate lr (lr_at's value) at 0-based step `step`.
   params (tt.n_params) are updated in place, the slice's elements only;
   grads (tt.n_grads, the whole arena) are read only. */
void adamw_step(AdamW* a, real* params, const real* grads, double lr, size_t step);

#endif
