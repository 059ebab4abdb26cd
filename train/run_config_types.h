/* The structs of the training job's configuration (train/run_config.h says what they hold and how a key
   is defined): a header of its own, without a source, so that the key table (run_config_keys.h) and the
   functions over a RunConfig (run_config.h) can both build on it without including each other. */
#ifndef REPOC_RUN_CONFIG_TYPES_H
#define REPOC_RUN_CONFIG_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h> /* data.synthetic is kept as a cJSON object */

#include "data/tokens.h"        /* DataOrder */
#include "eval/eval_tasks.h"    /* EvalPlan: train.eval_tasks */
#include "model/config.h"       /* ModelConfig, BlockStyle, PosMode, MAX_LAYERS */
#include "model/tensors.h"      /* TENSOR_NAME_LEN: the longest name pattern */
#include "optim/optim_config.h" /* Schedule, OptimConfig */

#define RC_PATH_LEN 512             /* longest path or string value, with its NUL */
#define RC_WORD_LEN 16              /* longest enum name, with its NUL */
#define RC_LIST_MAX 32              /* most entries of a list or of lr_mult */
#define RC_KEYS_MAX 112             /* capacity of the was-set flags (>= keys in RC_KEYS) */
#define RC_UNSET REPO_START_DEFAULT /* a size given as JSON null: "the default that follows from others" */

typedef struct { /* a list of strings: files / globs, or name patterns */
    size_t n;
    char v[RC_LIST_MAX][RC_PATH_LEN];
} RcList;

typedef struct { /* optim.lr_mult: pattern -> multiplier, in file order */
    size_t n;
    struct {
        char pattern[TENSOR_NAME_LEN];
        double mult;
    } v[RC_LIST_MAX];
} RcLrMult;

/* run.resume, decoded: "auto" (resume from out_dir's latest checkpoint if
   out_dir has one, else start fresh), "never" (always start fresh, from
   init_from or a new model, whatever out_dir holds), or any other string: the
   path of the checkpoint to resume from (a step_NNNNNNN/ directory, or a run
   directory whose `latest` names one); the trainer checks that it exists. */
typedef enum { RESUME_AUTO, RESUME_NEVER, RESUME_PATH } ResumeMode;

typedef struct {
    char out_dir[RC_PATH_LEN]; /* "runs/default": checkpoints, logs, the saved config */
    uint64_t seed;             /* 1: weights, data order and every other random stream */
    size_t threads;            /* 0 = all cores (or OMP_NUM_THREADS) */
    char resume[RC_PATH_LEN];  /* "auto" | "never" | a checkpoint path (ResumeMode above) */
    ResumeMode resume_mode;    /* derived from resume by run_config_load */
    /* false: a run that does not continue out_dir's checkpoints refuses an out_dir holding an earlier run; true: it
       starts over there */
    bool overwrite;
    /* true: refuse to start when the memory plan exceeds the memory available (MemAvailable, cgroup limit); false: warn
       only */
    bool check_memory;
    /* 0 (JSON null) = not given; the line rate in Gb/s of the link between the machines: at start, the step time
       of each way of communicating over it and the one it favours (train/linkplan.h) */
    double link_gbps;
} RcRun;

/* model.positions: the keys whose run-config form is not a ModelConfig field (the plan by name, the length
   of an explicit list); the list itself and the YaRN numbers are RcModel.cfg's (pos, yarn_*). */
typedef struct {
    char mode[RC_WORD_LEN];  /* "rope" | "repo" | "nope" | "r2n1" | "n2r1" (plans: model/config.h) */
    size_t repo_start_layer; /* RC_UNSET (JSON null) = floor(n_layers/3); mode "repo" only */
    /* 0 (JSON null) = no explicit list; else the length of model.positions.layers, held in RcModel.cfg.pos (the entries
       after it are rope) */
    size_t n_layers_list;
    /* 0.02: std of a newly initialised RePo final projection (final_map, Wz), which sets how far z spreads at the start */
    double repo_final_init_std;
    double repo_gate_init_std;    /* 0.02: the same for the gate map (gate_map, Wg) */
    double repo_content_init_std; /* 0.02: the same for the content map (content_map, Wc) */
    char rope_type[RC_WORD_LEN];  /* rope_scaling.rope_type: "yarn" (the only type supported) */
    double repo_pdrop_init;       /* repo_pdrop.init, p0 in [0, 1]; 0 (JSON null section) = off */
    size_t repo_pdrop_steps;      /* repo_pdrop.anneal_steps n >= 1; RC_UNSET unless the section is given */
} RcPositions;

typedef struct { /* model.lora beyond RcModel.cfg's lora_* fields */
    /* empty = all seven: q_proj k_proj v_proj o_proj gate_proj up_proj down_proj, in the order given
       (ModelConfig.lora_targets is their set) */
    RcList targets;
    /* false: a checkpoint names the frozen base (path, fingerprint) instead of holding a copy of it */
    bool save_base;
} RcLora;

/* The section "model". Every key that is a ModelConfig field is stored in cfg itself, so its name, type, range
   and default are given once (RC_KEYS, model_config_default): arch = block, vocab_size = V, d_model = D,
   n_layers = L, n_heads = H, n_kv_heads = KVH (RC_UNSET, JSON null = n_heads; run_config_load sets it for a
   fresh model), d_ff = F, rope_theta, norm_eps, tie_embeddings, positions.layers = pos (with
   positions.n_layers_list), positions.rope_scaling.factor, original_max_position_embeddings, beta_fast,
   beta_slow, attention_factor = yarn_factor, yarn_orig_max, yarn_beta_fast, yarn_beta_slow,
   yarn_attention_factor (0, JSON null = 0.1 ln(factor) + 1), lora.rank, alpha (32 here), dropout, rslora =
   lora_rank, lora_alpha, lora_dropout, lora_rslora. cfg is the keys' values, not a model: run_config_model
   (a fresh model) and run_config_apply_checkpoint (init_from, resume) turn it into one. */
typedef struct {
    ModelConfig cfg;
    char init_from[RC_PATH_LEN]; /* "" (JSON null) = a fresh model; else an HF checkpoint dir */
    /* "" (JSON null); else a config.json (or a directory holding one): a fresh model of that architecture, sizes from
       the file */
    char from_config[RC_PATH_LEN];
    /* 0.02: std of new matrices (new RePo weights use model.positions.repo_{gate,content,final}_init_std, 0.02 each) */
    double init_std;
    RcPositions positions;
    RcLora lora;
    /* "f32" | "bf16": frozen layer matrices kept in BF16 (needs init_from); ModelConfig.base_bf16 */
    char base_dtype[RC_WORD_LEN];
} RcModel;

typedef struct {
    RcList train; /* empty: files or globs (token formats: data/README.md) */
    RcList val;   /* empty: files or globs for evaluation */
    /* NULL: data.train in the mixture form, a list of sources {"name", "files", "weight", "exhausted"}
       (data/mixture.h), owned; train is then empty */
    cJSON* train_sources;
    cJSON* val_sources;          /* NULL: data.val in the same form (weights ignored); one loss each */
    char format[RC_WORD_LEN];    /* "auto" | "bin" | "npy" | "u16" | "u32" | "jsonl" (data/jsonl.h) */
    char tokenizer[RC_PATH_LEN]; /* "" (JSON null): jsonl text records use model.init_from's tokenizer.json */
    size_t seq_len;              /* 256: T, tokens per row */
    DataOrder order;             /* shuffle | sequential */
    /* NULL (JSON null): generator settings, owned; the data module validates its keys; given instead of train */
    cJSON* synthetic;
    /* false: attention within each document of a packed row, rope positions restarting per document (data/documents.h) */
    bool document_mask;
    /* RC_UNSET (null): the end-of-document token; null = model.init_from's eos_token_id, required with document_mask
       otherwise */
    size_t eos_token_id;
} RcData;

/* The section "optim". Every key that is an OptimConfig field is stored in cfg itself, with
   optim_config_default's default, except warmup_steps (100 here, 0 there) and decay_steps (RC_UNSET, JSON
   null = decay_fraction of train.steps; 0 there): lr, min_lr, schedule, warmup_steps, decay_steps,
   decay_fraction, decay_shape, beta1, beta2, eps, weight_decay, decay_embeddings, decay_norms, decay_biases, grad_clip.
   run_config_optim turns cfg and the keys below into the optimizer's config. */
typedef struct {
    OptimConfig cfg;
    double z_loss; /* 0: coefficient of OLMo-2's z-loss (ModelOpts.z_loss) */
    /* "f32" | "bf16": AdamW moments kept (and saved) in this dtype; bf16 with stochastic rounding, the master weights
       stay f32 (state_bf16) */
    char state_dtype[RC_WORD_LEN];
    /* {"repo": 1}: any key but "repo" is an fnmatch pattern over HF names, the first matching one wins; "repo" = the
       RePo module's tensors that no pattern matched (OptimConfig.repo_lr_mult) */
    RcLrMult lr_mult;
    RcList freeze; /* empty: fnmatch patterns over HF names */
} RcOptim;

/* train.outer: the DiLoCo outer loop (train/outer.h); every = RC_UNSET (the section not given) = off */
typedef struct {
    size_t every;    /* H >= 1: inner AdamW steps per outer step */
    double lr;       /* 0.7: the outer SGD's learning rate */
    double momentum; /* 0.9 */
    bool nesterov;   /* true */
} RcOuter;

typedef struct {
    size_t batch_size;   /* 8: rows per micro-batch (B) */
    size_t grad_accum;   /* 1: micro-batches per optimizer step */
    size_t steps;        /* 1000: optimizer steps */
    size_t log_every;    /* 10 */
    size_t eval_every;   /* 100; 0 = never */
    size_t eval_batches; /* 10 */
    /* 0 = off; N: every N steps (and at the last), per RePo layer the statistics of z on one fixed validation batch
       into metrics.jsonl */
    size_t log_positions;
    size_t save_every;            /* 500; 0 = only the final checkpoint */
    size_t keep_last;             /* 2: checkpoints kept in out_dir */
    char save_dtype[RC_WORD_LEN]; /* "f32" | "bf16": weights in saved checkpoints */
    /* config.json's names for a layout with RePo or NoPE layers (hf/hf_loaders.h): "repoc" (refused by stock
       transformers), "released" (olmo2, for the RePo paper's loader), "auto" (as the source checkpoint has) */
    char save_model_type[RC_WORD_LEN];
    /* true: with N MPI ranks each keeps the AdamW moments of 1/N of the parameters and all-gathers the weights
       (ZeRO-1); false: every rank keeps all moments; one rank: no effect */
    bool shard_optimizer;
    /* true: with N MPI ranks a thread sums each layer's gradients over the ranks while the layers below run their
       backward (train/grad_reduce.h); false: the whole arena after the backward; one rank: no effect */
    bool overlap_grad_reduce;
    /* false: keep only block inputs and recompute each block's activations in backward (ModelOpts.recompute;
       bit-identical gradients) */
    bool recompute;
    /* "f32" | "bf16": the operands of every product (ModelOpts.compute_bf16; FP32 accumulation, FP32 master weights,
       docs/design.md); "auto": bf16 where its products measure faster (model/engine.h), which train/trainer_products.c
       writes here before the model is built */
    char compute_dtype[RC_WORD_LEN];
    /* "auto" | "openblas" | "onednn": what runs the FP32 products; auto becomes the engine model/engine.h chooses, as
       compute_dtype does */
    char f32_engine[RC_WORD_LEN];
    /* 0 = automatic: all B*T rows while their logits take at most 512 MiB, else chunks of 128 MiB of logits; N > 0: N
       rows at once (>= B*T: all); memplan_head_chunk resolves it (ModelOpts.head_chunk) */
    size_t head_chunk;
    /* NULL (JSON null): synthetic retrieval scored at every evaluation, {"families": [...], "lengths": [tokens...],
       "items": N, "seed": S} (eval/eval_tasks.h, train_tasks_parse), owned */
    cJSON* eval_tasks;
    /* "f32" | "bf16": the dtype gradients travel in between ranks (common/dist.h); bf16 halves the bytes, the sums
       stay FP32 */
    char grad_wire_dtype[RC_WORD_LEN];
    RcOuter outer;
} RcTrain;

typedef struct {
    RcRun run;
    RcModel model;
    RcData data;
    RcOptim optim;
    RcTrain train;
    char source[RC_PATH_LEN]; /* the file loaded ("" = none), for messages */
    bool set[RC_KEYS_MAX];    /* per key of RC_KEYS: given in the file or by --set */
    char notes[512];          /* defaults run_config_load adapted to the run, printed with it */
    /* per key of RC_KEYS: the last --set argument that gave it (the caller's string, which outlives rc), NULL = the
       file or the default */
    const char* set_arg[RC_KEYS_MAX];
} RunConfig;

/* The two functions of the key table (train/run_config_keys.c) that every user of a RunConfig needs. */
/* Every default, in one place (the values documented in run_config.h). Owns nothing. */
void run_config_defaults(RunConfig* rc);
/* Whether the key at path (e.g. "model.d_model", or a section "model") was
   given explicitly (for a section: it or any key inside it). */
bool run_config_was_set(const RunConfig* rc, const char* path);

#endif
