/* Causal multi-head attention with grouped-query heads (docs/design.md, "Attention"):
   per (batch, head) S = q k^T / sqrt(hd) (causal), P = softmax(S), O = P v.
   Query head h reads kv head h / (H/KVH). Only the output and the per-row
   log-sum-exp are kept; backward recomputes P, so no T×T matrix is stored. */
#ifndef REPOC_ATTENTION_H
#define REPOC_ATTENTION_H

#include <stddef.h>

#include "common/real.h"

/* out (B,T,H*hd)   lse (B,T,H) saved for backward
   q (B,T,H*hd)   k, v (B,T,KVH*hd) */
void attention_forward(real* out, real* lse, const real* q, const real* k, const real* v,
                       size_t B, size_t T, size_t H, size_t KVH, size_t hd);
/* dq (B,T,H*hd) +=   dk, dv (B,T,KVH*hd) +=   dout (B,T,H*hd)
   out, lse, q, k, v as forward saw/saved them */
void attention_backward(real* dq, real* dk, real* dv, const real* dout,
                        const real* out, const real* lse, const real* q, const real* k, const real* v,
                        size_t B, size_t T, size_t H, size_t KVH, size_t hd);

#endif
