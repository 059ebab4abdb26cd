/* Training checkpoints in a run directory (docs/formats.md, "Run directory and checkpoints"; the
   files of a step directory: train/run_dir.h):
     out_dir/step_NNNNNNN/  config.json + model.safetensors   (a Hugging Face model)
                            optimizer.safetensors             (AdamW moments under the parameter names,
                                                               plus F32 master weights when the model is BF16)
                            trainer_state.json                (step, tokens, run id, the resolved run config)
                            tokenizer.json, ... (CKPT_CARRIED: those the source model has)
     out_dir/latest         the name of the newest complete checkpoint
   A LoRA run's checkpoint holds PEFT's adapter_config.json + adapter_model.safetensors instead of
   model.safetensors: the adapters and trained RePo weights; the frozen base is named by its path and
   weights fingerprint (model/ckpt_weights.h) and not copied, unless model.lora.save_base (or a base
   that is not on disk, a fresh model) asks for model.safetensors too. config.json stays: the model's
   architecture, its RePo layers included.
   A checkpoint is written into step_NNNNNNN.tmp.<pid>/, every file fsynced, the
   directory renamed into place and the parent fsynced, then `latest` is
   replaced atomically: a crash at any moment leaves the previous checkpoint
   intact, and a leftover *.tmp.* directory is never mistaken for a checkpoint. */
#ifndef REPOC_CHECKPOINT_H
#define REPOC_CHECKPOINT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/safetensors.h"
#include "hf/peft.h"
#include "model/model.h"
#include "optim/adamw.h"

#define TRAINER_STATE_VERSION 1

typedef struct {
    size_t step;            /* optimizer steps completed; also the data cursor and the schedule position */
    size_t tokens_seen;     /* training tokens consumed so far */
    size_t rows_per_step;   /* global batch in rows (batch_size x grad_accum x ranks); 0 = not recorded */
    size_t world_size;      /* data-parallel ranks that wrote it; 0 = not recorded */
    size_t threads;         /* threads per rank that computed it; 0 = not recorded */
    char f32_engine[16];    /* what ran its FP32 products, "openblas" | "onednn"; "" = not recorded */
    char compute_dtype[16]; /* "f32" | "bf16": its products' operands; "" = not recorded */
    double last_loss;       /* loss of the last completed step */
    bool has_loss;
    /* the run that wrote it (kept across resumes; 0 = not recorded): keep_last prunes the checkpoints of earlier runs
       in out_dir (run.overwrite) before this run's */
    uint64_t run_id;
    /* a LoRA run's base, which its checkpoints name (ckpt_weights_load, or the resumed checkpoint's adapter names it);
       path "" = none on disk, so each checkpoint keeps a copy */
    LoraBase lora_base;
} TrainerState;

/* A file of the checkpoint beyond those above, of a part of the trainer that owns it (train.outer's
   outer.safetensors): rank 0 calls write(ctx, dir) with the temporary directory before it is renamed, while
   every other rank calls serve(ctx) (the writer may gather from them) */
typedef struct {
    void (*write)(const void* ctx, const char* dir);
    void (*serve)(const void* ctx);
    const void* ctx;
} CkptExtra;

/* Write checkpoint `st->step` into out_dir (see above), then keep only the
   newest keep_last checkpoints, those of other runs (another run_id) counting as older than this run's.
   config_json: the resolved run config. save_base: a LoRA model's checkpoint keeps model.safetensors
   (always when st->lora_base names no base on disk).
   Collective under MPI (common/dist.h): every rank calls it; rank 0 writes,
   gathering the AdamW state when it is sharded (the file is the same as from
   one rank, so any number of ranks can resume from it), and every rank
   returns once the checkpoint is complete. carry_dir: the directory whose CKPT_CARRIED files are copied in
   (each written atomically like the others; those it lacks are left out), or NULL. extra: one more file, or
   NULL. */
void ckpt_save(const char* out_dir, const Model* m, const AdamW* opt, const TrainerState* st, const char* config_json,
               StDtype model_dtype, size_t keep_last, bool save_base, const char* carry_dir, const CkptExtra* extra);

/* The newest complete checkpoint of out_dir into path: the one `latest` names
   if it is complete, else the highest-numbered complete step directory.
   Returns false when there is none. */
bool ckpt_find_latest(const char* out_dir, char* path, size_t len);

/* Restore weights, AdamW moments and trainer state from a checkpoint directory
   into a model and optimizer built with the same configuration. A LoRA checkpoint
   without a base copy reads its base from the path it names, fingerprint checked
   (hf/ckpt_weights.h); st->lora_base gets the base it names (none: later
   checkpoints keep a copy). A sharded
   optimizer reads the moments of its own slice only. */
void ckpt_load(const char* dir, Model* m, AdamW* opt, TrainerState* st);

/* Read and check a checkpoint's trainer_state.json alone (ckpt_load's first
   step), so a run can refuse to resume before building anything large */
void ckpt_load_state(const char* dir, TrainerState* st);
/* the resolved run config trainer_state.json of checkpoint dir holds ("config"), NULL in older checkpoints;
   the caller cJSON_Deletes it */
cJSON* ckpt_load_config(const char* dir);

/* The resolved config JSON stored in a checkpoint's trainer_state.json (malloc'd). */
char* ckpt_read_config(const char* dir);

#endif
