/* The run directory (run.out_dir) as the trainer owns it: one run at a time
   (a flock on out_dir/run.lock, released by the kernel when the process
   dies, so kill -9 never leaves a stale lock), and removal that only ever
   touches what repoc wrote: never a file through a symbolic link, never a
   name repoc does not write. Rank 0 alone calls these. What repoc writes there
   (docs/design.md, "Run directory and checkpoints"):
     out_dir/step_NNNNNNN/  a checkpoint (train/checkpoint.h), the files of CKPT_FILES:
                            config.json + model.safetensors   (a Hugging Face model)
                            optimizer.safetensors             (AdamW moments under the parameter names,
                                                               plus F32 master weights when the model is BF16;
                                                               optim/adamw_io.h)
                            trainer_state.json                (step, tokens, run id, the resolved run config)
                            outer.safetensors                 (train.outer: DiLoCo's state, train/outer.h)
                            tokenizer.json, ... (CKPT_CARRIED: those the source model has)
     out_dir/latest         the name of the newest complete checkpoint
     out_dir/run_config.json, metrics.jsonl, run.lock
   A LoRA run's checkpoint holds PEFT's adapter_config.json + adapter_model.safetensors instead of
   model.safetensors: the adapters and trained RePo weights; the frozen base is named by its path and
   weights fingerprint (hf/ckpt_weights.h) and not copied, unless model.lora.save_base (or a base
   that is not on disk, a fresh model) asks for model.safetensors too. config.json stays: the model's
   architecture, its RePo layers included. */
#ifndef REPOC_RUN_DIR_H
#define REPOC_RUN_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Every file repoc writes in a checkpoint directory (the layout above), for completeness checks and
   removal: a complete checkpoint has every CKPT_ALWAYS file and all CKPT_BASE or all CKPT_ADAPTER ones;
   a CKPT_OPTIONAL file (outer.safetensors, of train.outer runs) only where its run writes it */
typedef enum { CKPT_ALWAYS, CKPT_BASE, CKPT_ADAPTER, CKPT_OPTIONAL } CkptRole;
typedef struct {
    const char* name;
    CkptRole role;
} CkptFile;
#define CKPT_N_FILES 7
extern const CkptFile CKPT_FILES[CKPT_N_FILES];
/* The tokenizer and generation files a checkpoint carries from the model it was made from, when that has them
   (tokenizer.json, tokenizer_config.json, special_tokens_map.json, generation_config.json): repoc's files too,
   for pruning and cleanup */
#define CKPT_N_CARRIED 4
extern const char* const CKPT_CARRIED[CKPT_N_CARRIED];

/* N of a name step_N: digits only, at most 19 of them (below 2^64); false for any other name */
bool run_dir_step_of(const char* name, size_t* step);

/* The steps N of out_dir's entries named step_N (N decimal digits only, as
   ckpt_save writes them; step_N.tmp.<pid>, step_+N and the like are not
   steps), ascending, into *steps (malloc'd; the caller frees); returns their count */
size_t run_dir_list_steps(const char* out_dir, size_t** steps);

/* Take the exclusive lock on out_dir (which must exist) and record this pid in
   out_dir/run.lock; die naming the holder's pid when another process has it.
   The lock is held until the process exits. Does nothing when already held. */
void run_dir_lock(const char* out_dir);
/* the lock released and run.lock removed: at the end of a run that took it */
void run_dir_unlock(void);

/* Remove a checkpoint directory repoc wrote (step_NNNNNNN or its .tmp.<pid>):
   its checkpoint files (and their .tmp.<pid> leftovers) are unlinked, never
   followed; anything else in it, and a step path that is itself a link or not
   a directory, is left in place with a note on stdout. */
void run_dir_remove_checkpoint(const char* dir);

/* Remove what a killed run left half-written in out_dir, by exact name:
   step_NNNNNNN.tmp.<pid>/ (through run_dir_remove_checkpoint) and
   latest|run_config.json|metrics.jsonl .tmp.<pid> files, where <pid> is not
   this process and no live process has that pid. Call with the lock held. */
void run_dir_clean_stale(const char* out_dir);

/* What out_dir holds of an earlier run: step_N entries (run_dir_list_steps) and whether
   metrics.jsonl has any content. */
typedef struct {
    size_t n_steps;
    bool metrics;
} RunDirContents;
RunDirContents run_dir_contents(const char* out_dir);

#endif
