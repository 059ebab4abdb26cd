/* Linear layer without bias, y = x W^T with W in the Hugging Face [out, in]
   layout (docs/backward.md, "Linear"). Every matmul goes through OpenBLAS: one cblas_gemm call, or one per
   thread on its rows for a small weight (docs/design.md, "Threads and BLAS"); the naive triple loop stays
   for tests (docs/contributing.md, "Ops"). */
#ifndef REPOC_LINEAR_H
#define REPOC_LINEAR_H

#include <stdbool.h>
#include <stddef.h>

#include "common/real.h"
#include "model/products.h"

/* Every function here but the reference runs its products with the context bf (model/products.h; NULL: FP32).
   out (N,OC)   inp (N,C)   weight (OC,C) */
void linear_forward(Bf16Products* bf, real* out, const real* inp, const real* weight, size_t N, size_t C, size_t OC);
/* linear_forward into rows of stride ldo >= OC: out[n * ldo + o], the columns from OC on left alone
   (two products side by side in one buffer, e.g. the MLP's gate and up) */
void linear_forward_ld(Bf16Products* bf, real* out, size_t ldo, const real* inp, const real* weight, size_t N, size_t C,
                       size_t OC);
/* dinp (N,C) = dout W, or += when add (skipped when NULL)   dweight (OC,C) += dout^T inp (skipped when NULL)
   dout (N,OC)   inp (N,C)   weight (OC,C) */
void linear_backward(Bf16Products* bf, real* dinp, real* dweight, const real* dout, const real* inp, const real* weight,
                     size_t N, size_t C, size_t OC, bool add);
/* A linear's input p, and kept: the previous call of the same kind (forward, or backward with a weight gradient)
   read the same p, unchanged since, so with BF16 products its BF16 copy is read again when the work space still
   holds it (OPERAND_ACT_KEPT, model/products.h), else rounded anew */
typedef struct {
    const real* p;
    bool kept;
} LinearInp;
/* linear_forward and linear_backward on such an input */
void linear_forward_kept(Bf16Products* bf, real* out, LinearInp inp, const real* weight, size_t N, size_t C, size_t OC);
void linear_backward_kept(Bf16Products* bf, real* dinp, real* dweight, const real* dout, LinearInp inp,
                          const real* weight, size_t N, size_t C, size_t OC, bool add);
/* The output gradient as linear_backward_ld reads it: rows of stride ld >= OC, scaled by alpha; kept: with BF16
   products, the pass that wrote it also wrote its BF16 copy into the work space (products_hold), which both
   products then read */
typedef struct {
    const real* p;
    size_t ld;
    real alpha;
    bool kept;
} LinearDout;
/* linear_backward with dout scaled and strided: dinp (=|+=) alpha dout W, dweight += alpha dout^T inp */
void linear_backward_ld(Bf16Products* bf, real* dinp, real* dweight, LinearDout dout, const real* inp,
                        const real* weight, size_t N, size_t C, size_t OC, bool add);
/* Two weights W1, W2 (OC,C) applied to one input, their gradients dW1, dW2 (+=; NULL: frozen), whether
   they may run as one product (join), and for the backward whether dout's BF16 copy (N, 2 OC) is in the work
   space (dout_kept: LinearDout.kept, read when they run as one) */
typedef struct {
    const real *W1, *W2;
    real *dW1, *dW2;
    bool join, dout_kept;
} LinearPair;
/* Two products of one input side by side: out (N,2 OC) rows [inp W1^T | inp W2^T]. One product of twice the
   width when join and W2 starts where W1 ends (as the parameter list lays out a layer's gate and up), else
   two into the halves of each row (docs/backward.md, "Linear"). */
void linear_pair_forward(Bf16Products* bf, real* out, const real* inp, const LinearPair* w, size_t N, size_t C,
                         size_t OC);
/* its backward: dinp (N,C) = (or += when add) dout W over both halves; w->dW1, w->dW2 +=
   dout (N,2 OC) rows [dout1 | dout2] */
void linear_pair_backward(Bf16Products* bf, real* dinp, const real* dout, const real* inp, const LinearPair* w,
                          size_t N, size_t C, size_t OC, bool add);
/* the reference: same contract as linear_forward, plain loops */
void linear_forward_naive(real* out, const real* inp, const real* weight, size_t N, size_t C, size_t OC);

#endif
