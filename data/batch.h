/* One micro-batch: everything a forward and its backward read that changes from batch to batch. data/ fills
   it (data_source_batch, data/source.h), the trainer adds the LoRA dropout key, and model_forward /
   model_backward take it as an argument (model/model.h); the model keeps none of it between batches. A
   batch must stay unchanged from a forward to its backward. */
#ifndef REPOC_DATA_BATCH_H
#define REPOC_DATA_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/real.h"

typedef struct {
    size_t B, T;     /* rows and tokens per row: the (B, T) the model was built for */
    int32_t* tokens; /* (B,T) input ids in [0, V) */
    /* (B,T) the next token of each input in [-1, V), -1 = no loss; NULL: logits only (model_forward, no backward) */
    int32_t* targets;
    /* (B,T) loss weight of each target, NULL = all 1 (the plain mean); the loss is sum w_i loss_i / sum w_i over the
       targets that are not -1 (model/xent.h) */
    real* target_weights;
    /* (B,T) document id of each token, NULL = one document per row; a run of equal ids within a row is one document
       (data/documents.h): attention stays within it and rope positions restart at 0 */
    int32_t* doc_ids;
    bool lora_dropout_on;      /* apply cfg.lora_dropout in this forward and its backward (training) */
    uint64_t lora_dropout_key; /* the dropout masks' key, one per (run seed, step, micro-batch, rank) */
    /* p of model.positions.repo_pdrop in this forward and its backward: RePo layers rotate by (1 - p) z + p t; 0: off
       (evaluation, generation) */
    double repo_pdrop;
} Batch;

/* Allocate tokens and targets (B,T), and doc_ids and target_weights when asked (else NULL); dropout off.
   Dies when out of memory. */
void batch_alloc(Batch* b, size_t B, size_t T, bool doc_ids, bool target_weights);
void batch_free(Batch* b);

#endif
