/* One training run: everything programs/train.c sets up from a
   RunConfig, the step, validation, checkpointing. train.c reads like a list:
   trainer_setup, then the loop of trainer_step / trainer_eval / trainer_save.

   Data parallel (common/dist.h): every rank runs the same calls.
   The global batch is batch_size x grad_accum x world rows; micro-batch k of
   rank r is global rows [(k*world + r)*B, +B) of the step, so a run's data
   depends on the global batch only. Backward scales by 1/(grad_accum*world),
   the gradients are summed over ranks (all-reduce, in place), then clipped
   and checked; the loss is the all-reduced mean. With train.shard_optimizer
   each rank keeps AdamW state for dist_share's slice of the gradient arena,
   updates those parameters and all-gathers the rest (ZeRO stage 1). Rank 0
   writes logs, metrics.jsonl and checkpoints; validation batches are split
   over the ranks. With train.outer (DiLoCo, train/outer.h) nothing is summed
   after backward: each rank steps its own AdamW on its own rows' gradients
   (backward scales by 1/grad_accum) and every H steps the ranks average the
   change of the parameters in an outer step. */
#ifndef REPOC_TRAINER_H
#define REPOC_TRAINER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "data/source.h"
#include "eval/eval_tasks.h"
#include "eval/mc_set.h"
#include "model/model.h"
#include "optim/adamw.h"
#include "train/checkpoint.h"
#include "train/grad_reduce.h"
#include "train/metrics.h"
#include "train/outer.h"
#include "train/run_config.h"

#define MC_METRIC_LEN 144 /* "NAME/acc_norm", NAME a file's base name (McResult.name) */

/* train.eval_tasks' multiple-choice files (train/trainer_mc.c): checked, then encoded once at setup, scored
   at every evaluation by build/eval --mc's code */
typedef struct {
    bool on;
    McPlan plan; /* its strings point into the run config */
    McFields fields;
    size_t n_items[MC_MAX_FILES]; /* what each file scores (mc_limit) */
    size_t W;                     /* the window */
    Tokenizer* tok;               /* the run's tokenizer (trainer_tokenizer_json) */
    McScorer scorer;              /* a generator of W tokens over the training model's weights */
    McSet sets[MC_MAX_FILES];
} TrainerMc;

typedef struct {
    RunConfig rc;
    char* config_json; /* the resolved config, saved with every checkpoint */
    ModelConfig mcfg;
    Model model;
    OptimConfig ocfg;
    AdamW opt;
    DataSource data;
    Metrics metrics;
    TrainerState state;
    size_t B, T, rows_per_step;          /* rows_per_step: the global batch, all ranks */
    int rank, world;                     /* data-parallel rank (0 of 1 without MPI) */
    bool sharded;                        /* AdamW state split over the ranks (train.shard_optimizer, world > 1) */
    size_t *shard_counts, *shard_displs; /* (world) each rank's slice of the gradient arena */
    double comm_s;                       /* seconds in all-reduce / all-gather in the last step */
    size_t wire_bytes;                   /* bytes this rank handed to MPI to send in the last step */
    bool wire_bf16;                      /* train.grad_wire_dtype "bf16": gradients summed with BF16 on the wire */
    Outer outer;                         /* train.outer: the DiLoCo outer loop (off unless given) */
    GradReduce reduce;                   /* the synchronous modes' gradient sum over the ranks */
    bool grads_zeroed;                   /* the last adamw_step zeroed the whole gradient arena (not sharded) */
    /* one micro-batch (B,T), filled by the data source: doc_ids with data.document_mask, target_weights with
       data.synthetic.answer_weight != 1 */
    Batch batch;
    char resumed_from[4096]; /* "" when the run started fresh */
    char init_dir[4096];     /* the checkpoint model.init_from resolved to */
    /* whose tokenizer files every checkpoint carries: the resumed checkpoint, init_dir, model.from_config's directory;
       "" = none */
    char tok_dir[4096];
    double first_loss; /* loss of the first step this process ran */
    bool has_first_loss;
    double last_val_loss;
    bool has_val_loss;
    size_t val_step; /* the step last_val_loss was measured at */
    bool has_tasks;  /* train.eval_tasks names retrieval families: scored at every evaluation */
    EvalPlan tasks;
    SyntheticConfig task_syn;          /* the items' generator: data.synthetic's settings, else the defaults */
    Generator gen;                     /* KV cache over the training model's weights, for the tasks */
    TrainerMc mc;                      /* train.eval_tasks' multiple-choice files */
    const volatile sig_atomic_t* stop; /* non-zero: a signal asked to stop (checked between eval batches); or NULL */
    real* pos_prev;       /* (RePo layers, B, T, KVH) z at the last train.log_positions measurement, or NULL */
    size_t pos_prev_step; /* its step; has_pos_prev: there was one in this process */
    bool has_pos_prev;
} Trainer;

/* Resolve the model (resume > init_from > fresh), open the data, build model and
   optimizer, restore or initialise the weights, create out_dir and its logs.
   Every check that can fail on the user's input runs before out_dir is touched. */
void trainer_setup(Trainer* tr);
/* train/trainer_resume.c. The checkpoint to resume from into path, if any (run.resume: auto | never | a path) */
bool trainer_find_resume(const RunConfig* rc, char* path, size_t len);
/* Rank 0 locks out_dir (one run per out_dir) before reading what it holds, finds the checkpoint to resume
   from into tr->resumed_from and refuses an earlier run this one does not continue; every rank then checks
   that the checkpoint continues with the same rows per step and data, and keeps its thread count. */
void trainer_lock_and_find_resume(Trainer* tr);
/* The memory plan (train/memplan.h) of the resolved model and config: printed;
   then, unless plan_only, a run that does not fit is refused (exit 1) when
   run.check_memory is true. trainer_setup calls it before allocating. */
void trainer_memory_plan(Trainer* tr, bool plan_only);
/* build/train --plan: resolve the model config (resume > init_from > fresh,
   reading headers only), print the plan and what is available; allocates
   nothing large and writes nothing. */
void trainer_plan_only(Trainer* tr);
void trainer_free(Trainer* tr);

/* train/trainer_model.c. The model config into tr->mcfg (resume > init_from > from_config > typed sizes) and
   tr->init_dir, tr->tok_dir; dies on a config that disagrees, or on init_from without weights (plan_only: a
   note that the weights were not checked). */
void trainer_resolve_model(Trainer* tr, bool plan_only);
/* init_from names a checkpoint directory, or a run directory whose `latest` names one: the checkpoint into dir */
void trainer_resolve_init_from(const char* from, char* dir, size_t len);
/* The tokenizer.json of the run: data.tokenizer, else tok_dir's, else init_from's; false when there is none */
bool trainer_tokenizer_json(const Trainer* tr, char* path, size_t len);
/* The std of a fresh model's matrices: model.init_std, or with model.from_config (init_std not set) the
   config.json's initializer_range when it has one, as transformers initialises from a config */
double trainer_init_std(const Trainer* tr);

/* train/trainer_products.c. train.f32_engine and train.compute_dtype: "auto" resolved (model/engine.h; a resumed
   run keeps its checkpoint's), rank 0 deciding for all, written back into tr->rc, printed, and the FP32 engine
   set for the products. Before the memory plan: it depends on compute_dtype. */
void trainer_choose_products(Trainer* tr);

/* One optimizer step: grad_accum micro-batches, all-reduce, clip, schedule,
   AdamW (and all-gather when sharded), log.
   Dies (after the last good checkpoint) on a NaN or Inf loss or gradient. */
void trainer_step(Trainer* tr);
/* Whether the data lets the next step run: false (with a message) when a
   data.train source with "exhausted": "stop" would start its second pass in
   it; a source that wraps prints a note at each new pass. */
bool trainer_data_left(Trainer* tr);
/* Mean validation loss over train.eval_batches batches into last_val_loss (logged); with data.val given
   as sources, each source's loss over its batches and the token-weighted mean of them; with
   train.eval_tasks, the exact-match accuracy of each family and length (eval_task, as build/eval) and each
   multiple-choice file's acc and acc_norm (trainer_mc_eval, build/eval --mc's code); false,
   with nothing logged, when *tr->stop was set on any rank before the last batch. */
bool trainer_eval(Trainer* tr);
/* A checkpoint of the current step; first checks that every rank holds the same weights. */
void trainer_save(Trainer* tr);
/* tr->batch as validation reads it: the same buffers, every target weighing 1 (the plain mean) and the
   adapters without dropout */
Batch trainer_eval_batch(const Trainer* tr);
/* train/trainer_mc.c. Before the memory plan: train.eval_tasks' multiple-choice files checked line by line
   (dies naming file, line and field) and the run's tokenizer loaded (dies when there is none or it exceeds
   the vocabulary); nothing when the run has no "mc" key. */
void trainer_mc_check(Trainer* tr);
/* After the model is built: the scorer (a generator of W tokens over its weights) and every file's items
   encoded (dies naming file and line for a continuation without tokens or longer than W) */
void trainer_mc_setup(Trainer* tr);
/* Each file scored with the current weights into name[k] = "NAME/acc" | "NAME/acc_norm" and value[k], *n
   of them; false when a signal asked to stop (the check between files and after the last keeps the ranks
   together, as the retrieval tasks do) */
bool trainer_mc_eval(Trainer* tr, char (*name)[MC_METRIC_LEN], const char** name_ptr, double* value, size_t* n);
void trainer_mc_free(Trainer* tr);
/* train.log_positions (train/trainer_positions.c): the learned positions of every RePo layer on one fixed
   batch, summarised into a "positions" line of metrics.jsonl (rank 0; the others return) */
void trainer_log_positions(Trainer* tr);
/* Its snapshot of z, allocated at setup (rank 0, log_positions > 0, RePo layers); trainer_free frees it */
void trainer_positions_setup(Trainer* tr);

#endif
