/* AdamW's state on disk: optimizer.safetensors of a checkpoint directory.
   Tensors exp_avg.<name> and exp_avg_sq.<name> (the first and second moments
   of every trained tensor, under the tensor table's names) in the state's
   dtype (F32, or BF16 for optim.state_dtype bf16: stored exactly as kept), and
   master.<name> (the F32 master weights) when the model file is not F32;
   metadata format "repoc-adamw", repoc_optimizer_version 1. A sharded
   optimizer (ZeRO-1, each rank holding the moments of one slice of the
   gradient arena) writes the same file as one rank and reads its own slice
   only, so any number of ranks can resume from it. */
#ifndef REPOC_ADAMW_IO_H
#define REPOC_ADAMW_IO_H

#include <stdbool.h>

#include "model/model.h"
#include "optim/adamw.h"

/* Rank 0: write m's optimizer state to path (master weights too when with_master, except for BF16 tensors,
   which are their own master). Collective when the state is sharded: the other ranks call
   adamw_serve_save meanwhile. */
void adamw_save(const char* path, const Model* m, const AdamW* opt, bool with_master);

/* Every rank but 0 while rank 0 runs adamw_save: sends its slice of the moments piece by piece as rank 0
   asks; returns at once when the state is not sharded. */
void adamw_serve_save(const AdamW* opt);

/* Read the moments of opt's slice (and the master weights into m->params when with_master) from path,
   written by adamw_save for a model of the same tensor table: every name, count and dtype is checked, every
   moment finite (v also >= 0); F32 and BF16 moments convert to the state's dtype. */
void adamw_load(const char* path, Model* m, AdamW* opt, bool with_master);

#endif
