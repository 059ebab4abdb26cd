/* The memory plan of a training run: the peak resident memory of build/train,
   computed from the config before anything large is allocated, printed as a
   table at start (build/train CONFIG --plan prints it and exits), and checked
   against the memory available to the process (docs/design.md "Memory").

   peak = params + grads + AdamW state + activations + backward scratch
          + batch buffers + token data + eval tasks + runtime, where
     params   4 B x all parameters (8 in the double build)
     grads    4 B x trainable parameters
     state    2 moments x (4 B f32 | 2 B bf16) x trainable parameters / ranks (sharded)
     outer    train.outer (DiLoCo): 2 x 4 B x trainable parameters (the kept copy and the momentum);
              printed only then
     acts, scratch   the arenas model_build_opts lays out, counted by the same layout
              functions (model_arena_sizes): exact, including the logits chunk
     data     the token files' bytes (mapped; pages read count as resident)
     eval     train.eval_tasks: the generator's KV cache and work space for the
              longest length (gen_arena_reals), and for its multiple-choice files the
              scorer's at their window (mc_scorer_reals) and the encoded items (4 bytes
              per byte of the files); printed only when there are tasks
     runtime  libraries, OpenBLAS/OpenMP buffers per thread, the checkpoint
              writer's and reader's staging buffers: a fixed allowance */
#ifndef REPOC_MEMPLAN_H
#define REPOC_MEMPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "model/config.h"
#include "model/model.h"
#include "train/run_config.h"

/* The rows of the memory plan, one per kind of allocation */
typedef enum {
    MP_PARAMS,
    MP_GRADS,
    MP_STATE,
    MP_ACTS,
    MP_SCRATCH,
    MP_BATCH,
    MP_DATA,
    MP_EVAL,
    MP_BF16,  /* train.compute_dtype "bf16": the parameters' BF16 mirror and the activation work space */
    MP_OUTER, /* train.outer (DiLoCo): the kept copy and the outer momentum */
    MP_RUNTIME,
    MP_ROWS
} MemRow;

typedef struct {
    size_t B, T, world, threads;
    bool recompute, state_bf16, sharded;
    size_t head_rows;  /* rows of logits held at once */
    ModelArenaSizes n; /* reals of each arena */
    size_t n_embed;    /* the input embedding's parameters, V*D (the count "without the embedding" leaves out) */
    double bytes[MP_ROWS];
    double total;
    double act_bytes_per_token_layer; /* kept activations of one block per token (without recompute) */
    size_t local_ranks;               /* ranks sharing this machine's memory (set by the caller; 0 = 1) */
    bool plan_only;                   /* --plan: memplan_check warns instead of refusing */
} MemPlan;

/* The plan of rc's run with model cfg on `world` ranks; data_bytes: the token files' total size. */
void memplan_compute(MemPlan* p, const ModelConfig* cfg, const RunConfig* rc, size_t world, size_t data_bytes);
void memplan_print(const MemPlan* p, FILE* fp);

/* Bytes this process may use: MemAvailable of /proc/meminfo, lowered to the
   room left under a cgroup memory limit (v2 memory.max - memory.current, or
   v1 limit_in_bytes - usage_in_bytes) when there is one. `what` gets a
   description of where the number came from. 0 when nothing can be read. */
double memplan_available(char* what, size_t len);

/* Die (exit 1) with the estimate (x local_ranks), what is available and the settings that would fit when
   the plan exceeds `available` (rc->run.check_memory), or print a warning
   (check_memory false). Nothing when it fits. */
void memplan_check(const MemPlan* p, const ModelConfig* cfg, const RunConfig* rc, double available,
                   const char* available_what);

/* The rows of logits held at once for rc (ModelOpts.head_chunk): train.head_chunk
   when set, else all B*T rows while their logits take at most 512 MiB, else
   128 MiB of logit rows (the chunked head recomputes logits in backward: whole
   batches stay whole where that costs little memory). */
size_t memplan_head_chunk(const RunConfig* rc, size_t V);

/* The data row: the bytes of every file data.train and data.val name, as
   token_data_open expands them (data_files_expand), in the list form or the
   mixture form (each source's files); token files are mapped whole, JSONL
   files counted at their size. */
size_t memplan_data_bytes(const RunConfig* rc);

#endif
