/* The optimizer's hyperparameters (the config section "optim"): AdamW, the
   learning-rate schedule, gradient clipping, parameter groups (decay, lr_mult)
   and frozen tensors. Every field is named after its config key; every default
   is set in optim_config_default and listed here. Groups are decided per
   tensor from its Hugging Face name and the TensorTable flags (docs/formats.md, "Hugging Face checkpoint directory"). */
#ifndef REPOC_OPTIM_CONFIG_H
#define REPOC_OPTIM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "model/tensors.h"

/* The learning-rate schedule after warmup (optim/schedule.h has the formulas) */
typedef enum { SCHED_CONSTANT, SCHED_LINEAR, SCHED_COSINE, SCHED_WSD } Schedule;
/* The WSD decay: linear or 1 - sqrt */
typedef enum { DECAY_LINEAR, DECAY_SQRT } DecayShape;

#define OPTIM_MAX_PATTERNS 32 /* per list: lr_mult and freeze */

/* one entry of lr_mult: tensors whose name matches the fnmatch glob get lr * mult */
typedef struct {
    char pattern[TENSOR_NAME_LEN];
    double mult;
} LrMult;

/* Defaults (optim_config_default):
     lr 3e-4            peak learning rate
     min_lr 0           floor of linear / cosine decay
     schedule cosine    constant | linear | cosine | wsd (optim/schedule.h has the formulas)
     decay_steps 0      wsd: steps of the final decay; 0 = decay_fraction of total_steps
     decay_fraction 0.2 wsd: the decay's share of total_steps when decay_steps is 0
     decay_shape linear wsd: linear | sqrt (1 - sqrt of the decay's progress)
     warmup_steps 0     linear warmup steps (0 = none)
     total_steps 0      schedule length; 0 = the run's number of steps (the trainer fills it in)
     beta1 0.9, beta2 0.95, eps 1e-8     (OLMo-2's pretraining values)
     weight_decay 0.1   decoupled, applied as w *= 1 - lr_t*wd
     decay_embeddings false   the input embedding embed_tokens only (a tied head is that tensor);
                              an untied lm_head decays like every Linear weight, as in OLMo-2's trainer
     decay_norms true         every RMSNorm weight (is_norm)
     decay_biases false       the attention biases (is_bias: Qwen's q, k, v, o), as transformers' Trainer
                              exempts every bias
     grad_clip 1.0      max global L2 norm of the gradient; 0 = off
     repo_lr_mult 1.0   lr multiplier of the RePo tensors (is_repo) that no lr_mult pattern matched
     lr_mult  (empty)   {pattern, mult} list; the first matching pattern wins
     freeze   (empty)   glob patterns; matching tensors get no gradient and no AdamW state */
typedef struct {
    double lr, min_lr;
    Schedule schedule;
    size_t warmup_steps, total_steps;
    size_t decay_steps;
    double decay_fraction;
    DecayShape decay_shape;
    double beta1, beta2, eps;
    double weight_decay;
    bool decay_embeddings, decay_norms, decay_biases;
    double grad_clip;
    double repo_lr_mult;
    bool state_bf16; /* moments in bf16 with stochastic rounding (false: f32) */
    uint64_t seed;   /* keys the stochastic rounding: (seed, step, element) */
    LrMult lr_mult[OPTIM_MAX_PATTERNS];
    size_t n_lr_mult;
    char freeze[OPTIM_MAX_PATTERNS][TENSOR_NAME_LEN];
    size_t n_freeze;
} OptimConfig;

void optim_config_default(OptimConfig* c);
/* Dies with a message naming the key when a value is out of range. */
void optim_config_validate(const OptimConfig* c);
void optim_config_print(const OptimConfig* c, FILE* fp);

/* Append to the lists; die when a list is full or the pattern is too long. */
void optim_config_add_lr_mult(OptimConfig* c, const char* pattern, double mult);
void optim_config_add_freeze(OptimConfig* c, const char* pattern);
/* Pointers to the freeze patterns, in the form tensor_table_build / model_build
   take (valid while c lives and is not modified). Returns how many. */
size_t optim_freeze_patterns(const OptimConfig* c, const char* out[OPTIM_MAX_PATTERNS]);

const char* schedule_name(Schedule s);
/* "constant" | "linear" | "cosine"; returns false for any other name */
bool schedule_parse(const char* s, Schedule* out);

/* The groups of one tensor. Decay: the input embedding only if decay_embeddings, norms
   only if decay_norms, everything else yes (with weight_decay 0 "yes" is a no-op).
   lr_mult: the first lr_mult pattern matching the name; else repo_lr_mult for a
   RePo tensor; else 1. *source (may be NULL) gets the index of the pattern, or
   LR_MULT_REPO / LR_MULT_NONE. */
#define LR_MULT_REPO (-1)
#define LR_MULT_NONE (-2)
bool optim_tensor_decays(const OptimConfig* c, const TensorInfo* t);
double optim_tensor_lr_mult(const OptimConfig* c, const TensorInfo* t, int* source);

#endif
