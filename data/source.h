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

#include "data/batch.h"
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
    bool has_val; /* val files given, or synthetic (a held-out stream) */
    DataOrder order;
    uint64_t seed;
    /* the end-of-document token of token-file, mixture and synthetic rows (document ids, data/documents.h); -1: none,
       each row is one document. Set by the caller after open; JSONL rows take their record boundaries instead. */
    int32_t eos;
} DataSource;

/* data.synthetic as JSON: an object of SyntheticConfig fields ("weights": {family: w},
   first_id, n_cols, alphabet, filler_vocab, markov_order, markov_branching,
   filler_seed, key_len, value_len, n_needles, n_queries, n_values, n_distractors,
   table_rows, answer_weight). Unknown keys and wrong types are errors naming "data.synthetic.<key>".
   Returns 0 or non-zero with err set. */
int synthetic_from_json(SyntheticConfig* cfg, const cJSON* obj, char* err, size_t err_len);

/* What data_source_open reads: the data.* keys of a run config, the run's seed, the model's vocabulary and
   the row length T. */
typedef struct {
    const cJSON* synthetic;   /* data.synthetic, or NULL for files */
    const char* const* train; /* data.train as a list of files (globs), n_train of them */
    size_t n_train;
    const char* const* val; /* data.val likewise; n_val = 0: no validation files */
    size_t n_val;
    const cJSON* train_sources; /* data.train / data.val in the mixture form (a list of source */
    const cJSON* val_sources;   /* objects, data/mixture.h), else NULL and the lists above are used */
    const char* format;         /* data.format of token files: "auto", "bin", "npy", "u16", "u32" */
    const char* tokenizer;      /* data.format "jsonl" only: tokenizer.json, NULL = pre-tokenized */
    DataOrder order;
    uint64_t seed;
    size_t vocab_size, T;
} DataSourceSpec;

/* Open files (dies naming file and offset on bad data) or set up the generator, from spec's synthetic,
   train / val (or train_sources / val_sources), format, order, seed, vocab_size and T. With format "jsonl"
   the files train / val are JSON Lines records (data/jsonl.h), tokenized with spec->tokenizer (NULL:
   pre-tokenized lines only) and packed into rows of T, and the record counts and loss-token fraction are
   printed; such a spec has no synthetic and no sources (refused, saying so). */
void data_source_open(DataSource* ds, const DataSourceSpec* spec);
void data_source_close(DataSource* ds);
/* What a run of `steps` steps of rows_per_step rows of T tokens will read, printed at its start: the tokens,
   the steps one pass over the data takes (per source for a mixture) and what happens at its end */
void data_source_describe(const DataSource* ds, size_t rows_per_step, size_t T, size_t steps, FILE* fp);

/* Rows row0 .. row0+b->B-1 of step `step` (rows_per_step global rows), b->T tokens each, into b; val = the
   held-out stream. Fills b->tokens and b->targets, and when they are not NULL:
   b->doc_ids: the document id of each token for data.document_mask (data/documents.h: a run of equal ids
     within a row is one document): packed JSONL rows from their record boundaries (0, 1, ... in each row; a
     document split over rows is doc 0 of its later rows; padding is a document of its own); every other
     source from ds->eos (doc_ids_from_eos), or 0 everywhere when eos < 0;
   b->target_weights: data.synthetic.answer_weight where the target is a synthetic answer token, 1 elsewhere
     (every target of other sources).
   The LoRA dropout fields of b are left as they are. */
void data_source_batch(const DataSource* ds, bool val, size_t step, size_t rows_per_step, size_t row0, Batch* b);
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
/* Batch `batch` of stream k into b: rows batch*B .. batch*B+B-1, row j the window from j*T; b->doc_ids and
   b->target_weights (when not NULL) as data_source_batch fills them */
void data_source_val_batch(const DataSource* ds, size_t k, size_t batch, Batch* b);

#endif
