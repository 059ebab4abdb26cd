/* Attention masks beyond causality, as each token's first visible key: document masking of packed rows
   (docs/positions.md, "Document masking") and sliding windows (Gemma-3's sliding layers). Query t sees keys
   start[t] .. t (model/attention.h). */
#ifndef REPOC_MASK_H
#define REPOC_MASK_H

#include <stddef.h>
#include <stdint.h>

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

#endif
