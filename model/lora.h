/* LoRA, the low-rank adapter on a projection (docs/finetune.md, "LoRA"), and its dropout:
     out += scale (x A^T) B^T,   x = inp, or dropout(inp) while training,   scale = alpha / r (alpha / sqrt(r)
   with rsLoRA). The base product is linear_forward's; this adds the adapter's term. */
#ifndef REPOC_LORA_H
#define REPOC_LORA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/real.h"
#include "model/products.h" /* Bf16Products */

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
