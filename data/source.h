/* The configured data of a run: token files (train and optional val) or the
   built-in synthetic generator, behind one call that fills rows of a step.
   Rows are pure functions of (seed, step, row), so resume and data-parallel
   slicing need no cursor (data/tokens.h, data/synthetic.h). */
#ifndef REPOC_DATA_SOURCE_H
#define REPOC_DATA_SOURCE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/jsonl.h"
#include "data/mixture.h"
#include "data/synthetic.h"
#include "data/tokens.h"

typedef struct {
    bool synthetic;
    SyntheticConfig syn;
    TokenData train, val;       /* the single-stream form (a list of files) */
    Mixture train_mix, val_mix; /* the mixture form (a list of sources, data/mixture.h): n > 0 */
    bool jsonl;                 /* data.format "jsonl": packed instruction rows instead of token files */
    PackedRows jtrain, jval;
    bool has_val;          /* val files given, or synthetic (a held-out stream) */
    DataOrder order;
    uint64_t seed;
    int32_t eos;           /* the end-of-document token of token-file, mixture and synthetic rows (document
                              ids, data/documents.h); -1: none, each row is one document. Set by the caller
                              after open; JSONL rows take their record boundaries instead. */
} DataSource;

/* data.synthetic as JSON: an object of SyntheticConfig fields ("weights": {family: w},
   first_id, n_cols, alphabet, filler_vocab, markov_order, markov_branching,
   filler_seed, key_len, value_len, n_needles, n_queries, n_values, n_distractors,
   table_rows, answer_weight). Unknown keys and wrong types are errors naming "data.synthetic.<key>".
   Returns 0 or non-zero with err set. */
int synthetic_from_json(SyntheticConfig* cfg, const cJSON* obj, char* err, size_t err_len);

/* Open files (dies naming file and offset on bad data) or set up the
   generator. train_sources / val_sources: data.train / data.val in the
   mixture form (a list of source objects), else NULL and the file lists
   train / val are used. */
void data_source_open(DataSource* ds, const cJSON* synthetic, const char* const* train, size_t n_train,
                      const char* const* val, size_t n_val, const cJSON* train_sources, const cJSON* val_sources,
                      const char* format, DataOrder order, uint64_t seed, size_t vocab_size, size_t T);
/* data.format "jsonl": the files are JSON Lines records (data/jsonl.h), tokenized with tokenizer (NULL:
   pre-tokenized lines only) and packed into rows of T; prints the record counts and loss-token fraction. */
void data_source_open_jsonl(DataSource* ds, const char* const* train, size_t n_train, const char* const* val,
                            size_t n_val, const char* tokenizer, DataOrder order, uint64_t seed, size_t vocab_size,
                            size_t T);
void data_source_close(DataSource* ds);

/* rows row0 .. row0+n-1 of step `step` (rows_per_step global rows); val = the held-out stream.
   answer_mask (n*T, may be NULL): 1 where targets[i] is a synthetic answer token, else 0.
   doc_ids (n*T, may be NULL): the document id of each token for data.document_mask (data/documents.h: a run
   of equal ids within a row is one document): packed JSONL rows from their record boundaries (0, 1, ... in
   each row; a document split over rows is doc 0 of its later rows; padding is a document of its own); every
   other source from ds->eos (doc_ids_from_eos), or 0 everywhere when eos < 0. */
void data_source_rows(const DataSource* ds, bool val, size_t step, size_t rows_per_step, size_t row0, size_t n,
                      size_t T, int32_t* tokens, int32_t* targets, uint8_t* answer_mask, int32_t* doc_ids);
/* Validation streams: one per data.val source in the mixture form, else one
   (the val files, or the synthetic held-out stream). name: the source's name,
   NULL for the single stream. */
size_t data_source_val_streams(const DataSource* ds);
const char* data_source_val_name(const DataSource* ds, size_t k);
/* Batches of B rows that stream k is evaluated on: eval_batches for the
   single stream; for a source, at most its whole windows of T + 1 tokens
   (neighbours sharing one token, as build/eval --ppl reads them), so its loss
   is build/eval's perplexity over the same windows; at least 1. */
size_t data_source_val_batches(const DataSource* ds, size_t k, size_t eval_batches, size_t B, size_t T);
/* Batch `batch` of stream k: rows batch*B .. batch*B+B-1, row j the window from j*T; doc_ids (may be NULL)
   as data_source_rows fills them */
void data_source_val_rows(const DataSource* ds, size_t k, size_t batch, size_t B, size_t T, int32_t* tokens,
                          int32_t* targets, int32_t* doc_ids);

#endif
