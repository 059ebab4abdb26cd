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

#include "data/synthetic.h"
#include "data/tokens.h"

typedef struct {
    bool synthetic;
    SyntheticConfig syn;
    TokenData train, val;
    bool has_val;          /* val files given, or synthetic (a held-out stream) */
    DataOrder order;
    uint64_t seed;
} DataSource;

/* data.synthetic as JSON: an object of SyntheticConfig fields ("weights": {family: w},
   first_id, n_cols, alphabet, filler_vocab, markov_order, markov_branching,
   filler_seed, key_len, value_len, n_needles, n_queries, n_values, n_distractors,
   table_rows, answer_weight). Unknown keys and wrong types are errors naming "data.synthetic.<key>".
   Returns 0 or non-zero with err set. */
int synthetic_from_json(SyntheticConfig* cfg, const cJSON* obj, char* err, size_t err_len);

/* Open files (dies naming file and offset on bad data) or set up the generator. */
void data_source_open(DataSource* ds, const cJSON* synthetic, const char* const* train, size_t n_train,
                      const char* const* val, size_t n_val, const char* format, DataOrder order, uint64_t seed,
                      size_t vocab_size, size_t T);
void data_source_close(DataSource* ds);

/* Document ids for data.document_mask are not filled here: data/documents.h defines them, one int32 per
   token (n*T) next to tokens and targets, a run of equal ids within a row being one document; token files get
   them from data.eos_token_id (doc_ids_from_eos), other sources from their own record boundaries. */

/* rows row0 .. row0+n-1 of step `step` (rows_per_step global rows); val = the held-out stream.
   answer_mask (n*T, may be NULL): 1 where targets[i] is a synthetic answer token, else 0 */
void data_source_rows(const DataSource* ds, bool val, size_t step, size_t rows_per_step, size_t row0, size_t n,
                      size_t T, int32_t* tokens, int32_t* targets, uint8_t* answer_mask);

#endif
