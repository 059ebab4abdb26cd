/* A request for rows of training data, the one argument every row reader of data/ takes (token files
   token_data_rows, mixtures mixture_rows, packed JSONL records packed_rows, the synthetic generator
   synthetic_rows): rows row0 .. row0+n-1 of optimizer step `step`, out of rows_per_step global rows per
   step (batch_size x grad_accum x world_size), each of T tokens, picked in `order` with `seed`. A row is a
   pure function of (data, order, seed, step, row), so any split of a step's rows into requests, a resumed
   run and every process of a data-parallel job get the same rows. */
#ifndef REPOC_DATA_ROWS_H
#define REPOC_DATA_ROWS_H

#include <stddef.h>
#include <stdint.h>

/* How a reader maps a global row to its data: in the data's own order, or drawn by a seeded Rng */
typedef enum { ORDER_SEQUENTIAL, ORDER_SHUFFLE } DataOrder;

typedef struct {
    DataOrder order; /* the synthetic generator draws every row and ignores it */
    uint64_t seed;
    size_t step;
    size_t rows_per_step; /* global rows per optimizer step */
    size_t row0, n;       /* the rows asked: row0 .. row0+n-1 of the step's */
    size_t T;             /* tokens per row (a packed JSONL source has its own, which must be this) */
} RowRequest;

#endif
