/* Linear layer without bias, y = x W^T with W in the Hugging Face [out, in]
   layout (docs/backward.md, "Linear"). Every matmul goes through OpenBLAS: one cblas_gemm call, or one per
   thread on its rows for a small weight (docs/design.md, "Threads and BLAS"); the naive triple loop stays
   for tests (docs/contributing.md, "Ops"). */
#ifndef REPOC_LINEAR_H
#define REPOC_LINEAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* The output gradient as linear_backward_ld reads it: rows of stride ld >= OC, scaled by alpha */
typedef struct {
    const real* p;
    size_t ld;
    real alpha;
} LinearDout;
/* linear_backward with dout scaled and strided: dinp (=|+=) alpha dout W, dweight += alpha dout^T inp */
void linear_backward_ld(Bf16Products* bf, real* dinp, real* dweight, LinearDout dout, const real* inp,
                        const real* weight, size_t N, size_t C, size_t OC, bool add);
/* Two weights W1, W2 (OC,C) applied to one input, their gradients dW1, dW2 (+=; NULL: frozen), and whether
   they may run as one product (join) */
typedef struct {
    const real *W1, *W2;
    real *dW1, *dW2;
    bool join;
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

/* LoRA dropout on the adapter's input, as PEFT's lora_dropout: xd = inp * mask / (1 - p), element i of
   inp (N,C) kept (mask 1) when u_i >= p, u_i in [0,1) from the top 53 bits of mix64(key + i). The mask is
   a pure function of (key, i), so backward and a recomputed forward make the same one. NULL = no dropout. */
typedef struct {
    double p;     /* the probability of dropping, in (0, 1) */
    uint64_t key; /* one per (run seed, step, micro-batch, layer, projection) */
    real* xd;     /* (N,C) work space: the dropped input */
} LoraDropout;
/* out (N,C) = (add ? out : 0) + inp * mask / (1 - p)   inp (N,C) */
void lora_dropout_apply(real* out, const real* inp, bool add, const LoraDropout* d, size_t N, size_t C);

/* One adapted projection, as lora_forward computes it and lora_backward reads it again:
   out (N,OC) += scale · (x A^T) B^T, scale = alpha / r, x = inp or its dropout. */
typedef struct {
    const real* inp; /* (N,C) the projection's input */
    real* ax;        /* (N,r) x A^T: written by forward, read by backward */
    const real* A;   /* (r,C) */
    const real* B;   /* (OC,r) */
    real scale;
    const LoraDropout* drop; /* NULL or the dropout (its xd is overwritten by both) */
    size_t N, C, OC, r;
} LoraOp;
/* out (N,OC), row stride ldo, += scale · (x A^T) B^T; saves op->ax */
void lora_forward(Bf16Products* bf, real* out, size_t ldo, const LoraOp* op);
/* dinp (N,C) += scale · ((dout B) A) * mask / (1 - p) (skipped when NULL)   dA (r,C) += scale · (dout B)^T x
   dB (OC,r) += scale · dout^T ax   (dA, dB skipped when NULL; a frozen adapter)
   dax (N,r): work space, overwritten   dout (N,OC), row stride ldd   op: as forward saw it */
void lora_backward(Bf16Products* bf, real* dinp, real* dA, real* dB, real* dax, const real* dout, size_t ldd,
                   const LoraOp* op);

#endif
