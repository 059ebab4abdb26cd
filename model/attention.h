/* Causal multi-head attention with grouped-query heads (docs/backward.md, "Attention"):
   per (batch, head) S = scale q k^T (causal; scale = 1/sqrt(hd), or Gemma-3's query_pre_attn_scalar^-1/2),
   P = softmax(S), O = P v.
   Query head h reads kv head h / (H/KVH). Only the output and the per-row
   log-sum-exp are kept; backward recomputes P, so no T×T matrix is stored. */
#ifndef REPOC_ATTENTION_H
#define REPOC_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "common/real.h"

/* Queries and keys go in blocks of 128 where the build has AVX-512 and of 64 otherwise (model/attention.c,
   ATT_BLOCK, which says why). The tests place their sequence lengths and
   document starts around multiples of the larger, which are multiples of both. */
#define ATT_BLOCK_MAX 128

/* Document masking of packed rows: documents are contiguous runs of a row, and token t attends only the keys
   j of its own document, start[t] <= j <= t. start is (B,T), indices within the row. A NULL DocSpans* is
   plain causal attention (start 0). */
typedef struct {
    const int32_t* start;
} DocSpans;

/* start (B,T) from doc (B,T): a document is a maximal run of equal ids within a row (a row always starts
   one) */
void doc_starts_from_ids(int32_t* start, const int32_t* doc, size_t B, size_t T);
/* A sliding window is the same mask with a later start: token t sees keys max(doc_start[t], t - window + 1)
   .. t, its own key and the window - 1 before it (Gemma-3's sliding layers). start (B,T) from doc_start (B,T)
   or NULL (one document per row). The kernel skips every key block before a query block's first start, so
   a window makes long rows cheaper. */
void window_starts(int32_t* start, const int32_t* doc_start, size_t B, size_t T, size_t window);
/* the first key that token t sees through a window of `window` keys (0: no window, the row's first) */
static inline size_t window_first(size_t t, size_t window) { return window && t + 1 > window ? t + 1 - window : 0; }

/* out (B,T,H*hd)   lse (B,T,H) saved for backward
   q (B,T,H*hd)   k, v (B,T,KVH*hd)   docs: NULL or the document spans */
void attention_forward(real* out, real* lse, const real* q, const real* k, const real* v, const DocSpans* docs,
                       size_t B, size_t T, size_t H, size_t KVH, size_t hd, real scale);
/* dq (B,T,H*hd) =   dk, dv (B,T,KVH*hd) =   dout (B,T,H*hd)
   out, lse, q, k, v, docs as forward saw/saved them */
void attention_backward(real* dq, real* dk, real* dv, const real* dout, const real* out, const real* lse, const real* q,
                        const real* k, const real* v, const DocSpans* docs, size_t B, size_t T, size_t H, size_t KVH,
                        size_t hd, real scale);

#endif
