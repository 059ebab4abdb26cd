/* Causal multi-head attention with grouped-query heads (docs/backward.md, "Attention"):
   per (batch, head) S = scale q k^T (causal; scale = 1/sqrt(hd), or Gemma-3's query_pre_attn_scalar^-1/2),
   P = softmax(S), O = P v.
   Query head h reads kv head h / (H/KVH). Only the output and the per-row
   log-sum-exp are kept; backward recomputes P, so no T×T matrix is stored. */
#ifndef REPOC_ATTENTION_H
#define REPOC_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/real.h"
#include "model/amx.h" /* attention_bf16_pays: whether a bf16 model gives attention BF16 operands */
#include "model/mask.h"

/* Queries and keys go in blocks of 128 where the build has AVX-512 and of 64 otherwise (model/tile_gemm.h,
   ATT_BLOCK, which says why). The tests place their sequence lengths and
   document starts around multiples of the larger, which are multiples of both. */
#define ATT_BLOCK_MAX 128

/* What one call attends over: B rows of T tokens, H query heads in KVH groups of hd features each, the
   scores scaled by scale, and the mask: docs, NULL (causal only) or each token's first key. bf16: the seven
   products take BF16 operands (q, k, v, dout, P and dS rounded to nearest even) with FP32 accumulation;
   softmax, its running max and sum, lse and every output stay FP32 (float builds only). The products run on
   AMX tiles where amx_usable (model/amx.h) for the query blocks whose length and hd are multiples of 32, else
   on vdpbf16ps (or its exact emulation); no_amx keeps them off AMX (tests and benchmarks compare the two).
   work: with bf16, NULL or attention_work_size(s) reals of work space, where each call rounds k and v into the
   layouts the products read once, for all the query blocks that read them (without it, each query block
   rounds every key block it sees), and where the backward sums each kv head's dK and dV in rows of its own
   (without it, in the rows of dk and dv, strided by the other heads': slower on AMX). The same bits either way. */
typedef struct {
    size_t B, T, H, KVH, hd;
    real scale;
    const DocSpans* docs;
    bool bf16, no_amx;
    void* work;
} AttnShape;

/* AttnShape.work for shape s, in reals: first k and v of every key block, each in two layouts of BF16 pairs (4 bytes
   per two values), for key blocks of any size the kernel uses (a portable build compiles it for two,
   model/dispatch.c), rounded up to 64 bytes (attention_pairs_reals); then every kv head's dK and dV, dense (2 B T
   KVH hd reals). Inline, so that they are one function in every build. */
static inline size_t attention_pairs_reals(const AttnShape* s) {
    size_t keys = (s->T + ATT_BLOCK_MAX - 1) / ATT_BLOCK_MAX * ATT_BLOCK_MAX, pairs = (s->hd + 1) / 2;
    return (4 * s->B * s->KVH * keys * pairs * 4 + 63) / 64 * 64 / sizeof(real); /* the dK, dV rows 64-byte aligned */
}
static inline size_t attention_work_size(const AttnShape* s) {
    return attention_pairs_reals(s) + 2 * s->B * s->KVH * s->T * s->hd;
}

/* out (B,T,H*hd)   lse (B,T,H) saved for backward
   q (B,T,H*hd)   k, v (B,T,KVH*hd) */
void attention_forward(real* out, real* lse, const real* q, const real* k, const real* v, const AttnShape* s);
/* dq (B,T,H*hd) =   dk, dv (B,T,KVH*hd) =   dout (B,T,H*hd)
   out, lse, q, k, v, s as forward saw/saved them. One task per (batch, kv head), or, with fewer such pairs than
   2/3 of the threads, split by key block (dk, dv) and query block (dq): the same bits either way. */
void attention_backward(real* dq, real* dk, real* dv, const real* dout, const real* out, const real* lse, const real* q,
                        const real* k, const real* v, const AttnShape* s);
/* the inputs q, k, v of attention_backward_by */
typedef struct {
    const real *q, *k, *v;
} AttnIn3;
/* attention_backward with the way chosen: by_blocks the split (tests compare the two) */
void attention_backward_by(real* dq, real* dk, real* dv, const real* dout, const real* out, const real* lse,
                           const AttnIn3 in, const AttnShape* s, bool by_blocks);

#endif
