/* The plain O(T²) reference of causal GQA attention that tests/test_attention.c checks the tiled
   kernel of model/attention.c against: forward (out, lse) and backward (dq, dk, dv), every sum in
   double, one query row at a time, the T scores of a row held whole. Slow; for tests only. */
#ifndef REPOC_ATTENTION_REF_H
#define REPOC_ATTENTION_REF_H

#include <stddef.h>
#include <stdint.h>

#include "common/real.h"
#include "model/attention.h"

/* q, dout (B,T,H*hd)   k, v (B,T,KVH*hd)   s: the sizes, the scale and the mask (each token's document or
   window start; NULL docs: causal only), as attention_forward takes them.
   Writes out (B,T,H*hd), lse (B,T,H) = log sum_j exp(scale q·k_j), dq (B,T,H*hd), dk, dv (B,T,KVH*hd)
   for the loss sum(dout ⊙ out) with scores scale q·k; query head h reads kv head h / (H / KVH). */
void attention_reference(double* out, double* lse, double* dq, double* dk, double* dv, const real* q, const real* k,
                         const real* v, const real* dout, const AttnShape* s);

#endif
