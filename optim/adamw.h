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

   BF16 state (OptimConfig.state_bf16): m and v are kept as bfloat16 (m16,
   v16; m and v are NULL), 2 bytes each instead of 4; the weights stay in
   `real`. Each step widens an element's moments to float, updates them exactly
   as above (the weight update reads these float values) and stores them back
   with stochastic rounding: to one of the two neighbouring bf16 values, the
   upper one with probability equal to the distance from the lower one, so
   the stored moment is unbiased and small updates of v at beta2 = 0.999 are
   not lost as they are under round-to-nearest. The random bits come from a
   counter-based hash of (seed, step, moment, gradient-arena index): no RNG
   state, the same bits sharded or not, and a resumed run rounds exactly as
   the uninterrupted one did.

   Gradient accumulation over micro-batches needs nothing here: backward adds
   into the gradients (call model_backward with dloss = 1 / n_micro), the
   gradients are clipped once and adamw_step runs once per optimizer step. */
#ifndef REPOC_ADAMW_H
#define REPOC_ADAMW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/bf16.h"
#include "common/hash.h"
#include "common/real.h"
#include "model/tensors.h"
#include "optim/optim_config.h"

/* the optimizer's view of one tensor of the table, same index */
typedef struct {
    size_t offset;      /* into the parameter arena */
    size_t grad_offset; /* into the gradient, m and v arenas; NO_GRAD = frozen */
    size_t numel;
    bool decay;     /* in the weight-decay group */
    double lr_mult; /* lr_t = lr * lr_mult */
    int lr_source;  /* index of the lr_mult pattern, LR_MULT_REPO or LR_MULT_NONE */
} AdamWTensor;

typedef struct {
    OptimConfig cfg; /* a copy: betas, eps, weight_decay */
    AdamWTensor* t;  /* n_tensors, in table order */
    size_t n_tensors;
    real* m;         /* (hi - lo) first moments of gradient-arena elements lo..hi-1; NULL with bf16 state */
    real* v;         /* (hi - lo) second moments; NULL with bf16 state */
    bf16 *m16, *v16; /* (hi - lo) each, with cfg.state_bf16; else NULL */
    size_t n;        /* == TensorTable.n_grads */
    size_t lo, hi;   /* the slice held and updated: [0, n) unless sharded */
    /* NULL, or the parameters' BF16 mirror (Model.params_bf16) of params[mirror_from ..]: each updated weight's
       bf16_round_nearest is written there in the same pass (train.compute_dtype "bf16") */
    bf16* mirror;
    size_t mirror_from; /* Model.mirror_from: the parameters before it have no copy */
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

/* Moment `which` (0 = m, 1 = v) of slice elements [i0, i0 + n) (indices relative
   to lo) as reals into out, or set from in (bf16 state: round to nearest even,
   the dtype conversion of a checkpoint); the state's own dtype either way. */
void adamw_moment_get(const AdamW* a, int which, size_t i0, size_t n, real* out);
void adamw_moment_set(AdamW* a, int which, size_t i0, size_t n, const real* in);
/* bytes of one moment element: 4 (f32; 8 in the double build) or 2 (bf16) */
size_t adamw_state_bytes(const OptimConfig* cfg);

/* 32 random bits of (key, i): the splitmix64 finaliser, a counter-based generator */
static inline uint32_t sr_bits(uint64_t key, uint64_t i) { return (uint32_t)mix64_final(key + i * HASH_GOLDEN); }

/* The part of gradient-arena elements [offset, offset + n) (one tensor) inside
   the optimizer's slice: [*g0, *g1). Returns false when it is empty. */
bool adamw_slice_part(const AdamW* a, size_t offset, size_t n, size_t* g0, size_t* g1);

/* One step with base learning rate lr (lr_at's value) at 0-based step `step`.
   params (tt.n_params) are updated in place, the slice's elements only.
   grads (tt.n_grads, the whole arena): the slice's elements are read as g·grad_scale, rounded to real as
   an in-place clip would (grad_clip_scale's value; 1 leaves them as they are), and set to 0 after the
   read when zero_grads, so the next step's zero_grad needs no pass of its own. Only the slice is read
   or zeroed. */
void adamw_step(AdamW* a, real* params, real* grads, double lr, size_t step, double grad_scale, bool zero_grads);

#endif
