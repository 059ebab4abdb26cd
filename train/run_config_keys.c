/* The run config's keys (run_config.h), each defined once: the key table
   RC_KEYS (path, field, type, range or capacity, flags, choices, aliases) and
   the defaults, run_config_defaults, which take the model's and the
   optimizer's from model_config_default and optim_config_default; plus the
   look-ups that need only the table. Parsing is in run_config_parse.c;
   loading, checks and output in run_config.c. */
#include "train/run_config_keys.h"

#include <math.h>
#include <string.h>

#include "common/check.h" /* CHECK */

#define O(f) offsetof(RunConfig, f)
#define SEC(p) \
    { p, KT_OBJ, 0, 0, 0, 0, NULL, NULL }
#define STR(p, f, fl, al) \
    { p, KT_STR, O(f), 0, RC_PATH_LEN, fl, NULL, al }
#define WORD(p, f, ch, fl, al) \
    { p, KT_WORD, O(f), 0, RC_WORD_LEN, fl, ch, al }
#define ENUM(p, f, ch, fl, al) \
    { p, KT_ENUM, O(f), 0, 0, fl, ch, al }
#define BOOL(p, f, fl, al) \
    { p, KT_BOOL, O(f), 0, 0, fl, NULL, al }
#define SIZE(p, f, lo, hi, fl, al) \
    { p, KT_SIZE, O(f), lo, hi, fl, NULL, al }
#define REAL(p, f, lo, hi, fl, al) \
    { p, KT_REAL, O(f), lo, hi, fl, NULL, al }
#define LIST(p, f, cap, fl, al) \
    { p, KT_LIST, O(f), 0, cap, fl, NULL, al }
#define RS "model.positions.rope_scaling"

/* Every key, once: path, field, range (or capacity), flags, choices, aliases.
   The field is the ModelConfig (model.cfg) or OptimConfig (optim.cfg) field
   itself where the model or the optimizer has one. A section's own keys
   follow it, before its subsections (run_config_print relies on it). */
const RcKey RC_KEYS[] = {
    SEC("run"),
    STR("run.out_dir", run.out_dir, KF_NONEMPTY, "output_dir|out|dir"),
    {"run.seed", KT_U64, O(run.seed), 0, BIG, 0, NULL, "random_seed"},
    SIZE("run.threads", run.threads, 0, 4096, 0, "num_threads|n_threads"),
    STR("run.resume", run.resume, KF_NONEMPTY, "resume_from"),
    BOOL("run.overwrite", run.overwrite, 0, NULL),
    BOOL("run.check_memory", run.check_memory, 0, "memory_check"),
    REAL("run.link_gbps", run.link_gbps, 0, HUGE_VAL, KF_NULL | KF_LO_OPEN, "network_gbps|bandwidth_gbps|link_speed"),
    SEC("model"),
    STR("model.init_from", model.init_from, KF_NULL, "checkpoint|init|model_path|from"),
    STR("model.from_config", model.from_config, KF_NULL, "config|config_json|architecture_config"),
    ENUM("model.arch", model.cfg.block, "olmo2|llama|qwen2|qwen3", KF_CKPT, "architecture|architectures"),
    SIZE("model.vocab_size", model.cfg.V, 1, 2147483647.0, KF_CKPT, "vocab|n_vocab"),
    SIZE("model.d_model", model.cfg.D, 1, BIG, KF_CKPT, "hidden_size|dim|n_embd"),
    SIZE("model.n_layers", model.cfg.L, 1, MAX_LAYERS, KF_CKPT, "num_hidden_layers|n_layer|layers"),
    SIZE("model.n_heads", model.cfg.H, 1, BIG, KF_CKPT, "num_attention_heads|n_head|heads"),
    SIZE("model.n_kv_heads", model.cfg.KVH, 1, BIG, KF_CKPT | KF_NULL, "num_key_value_heads|n_kv_head|kv_heads"),
    SIZE("model.d_ff", model.cfg.F, 1, BIG, KF_CKPT, "intermediate_size|ffn_dim|hidden_dim"),
    REAL("model.rope_theta", model.cfg.rope_theta, 1, HUGE_VAL, KF_CKPT | KF_LO_OPEN, "theta|rope_base"),
    REAL("model.norm_eps", model.cfg.norm_eps, 0, 1, KF_CKPT | KF_LO_OPEN | KF_HI_OPEN, "rms_norm_eps|eps"),
    BOOL("model.tie_embeddings", model.cfg.tie_embeddings, KF_CKPT, "tie_word_embeddings|tied"),
    REAL("model.init_std", model.init_std, 0, HUGE_VAL, KF_LO_OPEN, "initializer_range|std"),
    WORD("model.base_dtype", model.base_dtype, "f32|bf16", 0, "frozen_dtype"),
    SEC("model.positions"),
    WORD("model.positions.mode", model.positions.mode, "rope|repo|nope|r2n1|n2r1", KF_CKPT, "dynamic_pe_mode|plan"),
    SIZE("model.positions.repo_start_layer", model.positions.repo_start_layer, 0, MAX_LAYERS, KF_CKPT | KF_NULL,
         "dynamic_pe_start_layer|start_layer"),
    {"model.positions.layers", KT_LAYERS, O(model.cfg.pos), 0, 0, KF_CKPT | KF_NULL, "rope|repo|nope",
     "dynamic_pe_layer_ids"},
    REAL("model.positions.repo_final_init_std", model.positions.repo_final_init_std, 0, HUGE_VAL, KF_LO_OPEN,
         "repo_init_std|final_map_std"),
    REAL("model.positions.repo_gate_init_std", model.positions.repo_gate_init_std, 0, HUGE_VAL, KF_LO_OPEN,
         "gate_map_std"),
    REAL("model.positions.repo_content_init_std", model.positions.repo_content_init_std, 0, HUGE_VAL, KF_LO_OPEN,
         "content_map_std"),
    {RS, KT_OBJ, 0, 0, 0, KF_CKPT | KF_NULL, NULL, "yarn"},
    WORD(RS ".rope_type", model.positions.rope_type, "yarn", KF_CKPT, "type"),
    REAL(RS ".factor", model.cfg.yarn_factor, 1, HUGE_VAL, KF_CKPT, "scale"),
    REAL(RS ".original_max_position_embeddings", model.cfg.yarn_orig_max, 1, HUGE_VAL, KF_CKPT,
         "max_position_embeddings|original_max"),
    REAL(RS ".beta_fast", model.cfg.yarn_beta_fast, 0, HUGE_VAL, KF_CKPT | KF_LO_OPEN, NULL),
    REAL(RS ".beta_slow", model.cfg.yarn_beta_slow, 0, HUGE_VAL, KF_CKPT | KF_LO_OPEN, NULL),
    REAL(RS ".attention_factor", model.cfg.yarn_attention_factor, 0, HUGE_VAL, KF_CKPT | KF_NULL | KF_LO_OPEN,
         "mscale"),
    {"model.positions.repo_pdrop", KT_OBJ, 0, 0, 0, KF_NULL, NULL, "dynamic_pe_pdrop"},
    REAL("model.positions.repo_pdrop.init", model.positions.repo_pdrop_init, 0, 1, 0, "init_pdrop|p0"),
    SIZE("model.positions.repo_pdrop.anneal_steps", model.positions.repo_pdrop_steps, 1, BIG, KF_NULL,
         "dropout_anneal_step|steps"),
    {"model.lora", KT_OBJ, 0, 0, 0, KF_NULL, NULL, "peft|lora_config"},
    SIZE("model.lora.rank", model.cfg.lora_rank, 0, 65536, 0, "r"),
    REAL("model.lora.alpha", model.cfg.lora_alpha, 0, HUGE_VAL, KF_LO_OPEN, "lora_alpha"),
    LIST("model.lora.targets", model.lora.targets, 32, 0, "target_modules"),
    REAL("model.lora.dropout", model.cfg.lora_dropout, 0, 1, KF_HI_OPEN, "lora_dropout"),
    BOOL("model.lora.rslora", model.cfg.lora_rslora, 0, "use_rslora"),
    BOOL("model.lora.save_base", model.lora.save_base, 0, "keep_base|save_base_model"),
    SEC("data"),
    LIST("data.train", data.train, RC_PATH_LEN, 0, "train_files|files|train_data"),
    LIST("data.val", data.val, RC_PATH_LEN, 0, "val_files|valid|validation|eval"),
    WORD("data.format", data.format, "auto|bin|npy|u16|u32|jsonl", 0, "dtype"),
    STR("data.tokenizer", data.tokenizer, KF_NULL, "tokenizer_path"),
    SIZE("data.seq_len", data.seq_len, 2, BIG, 0, "block_size|context_length|max_seq_len|seq_length|T"),
    ENUM("data.order", data.order, "sequential|shuffle", 0, "shuffle"),
    {"data.synthetic", KT_RAW, O(data.synthetic), 0, 0, KF_NULL, NULL, "generator|synth"},
    BOOL("data.document_mask", data.document_mask, 0, "doc_mask|document_masking"),
    SIZE("data.eos_token_id", data.eos_token_id, 0, 0x7fffffff, KF_NULL, "eos_id|eos"),
    SEC("optim"),
    REAL("optim.lr", optim.cfg.lr, 0, HUGE_VAL, KF_LO_OPEN, "learning_rate"),
    REAL("optim.min_lr", optim.cfg.min_lr, 0, HUGE_VAL, 0, "min_learning_rate|final_lr"),
    ENUM("optim.schedule", optim.cfg.schedule, "constant|linear|cosine|wsd", 0, "lr_schedule|scheduler"),
    SIZE("optim.warmup_steps", optim.cfg.warmup_steps, 0, BIG, 0, "warmup"),
    SIZE("optim.decay_steps", optim.cfg.decay_steps, 0, BIG, KF_NULL, "cooldown_steps|decay"),
    REAL("optim.decay_fraction", optim.cfg.decay_fraction, 0, 1, 0, "cooldown_fraction|decay_frac"),
    ENUM("optim.decay_shape", optim.cfg.decay_shape, "linear|sqrt", 0, "cooldown_shape"),
    REAL("optim.beta1", optim.cfg.beta1, 0, 1, KF_HI_OPEN, "adam_beta1"),
    REAL("optim.beta2", optim.cfg.beta2, 0, 1, KF_HI_OPEN, "adam_beta2"),
    REAL("optim.eps", optim.cfg.eps, 0, HUGE_VAL, KF_LO_OPEN, "adam_eps|adam_epsilon|epsilon"),
    REAL("optim.weight_decay", optim.cfg.weight_decay, 0, HUGE_VAL, 0, "wd"),
    BOOL("optim.decay_embeddings", optim.cfg.decay_embeddings, 0, NULL),
    BOOL("optim.decay_norms", optim.cfg.decay_norms, 0, NULL),
    BOOL("optim.decay_biases", optim.cfg.decay_biases, 0, "decay_bias"),
    REAL("optim.grad_clip", optim.cfg.grad_clip, 0, HUGE_VAL, 0, "clip|max_grad_norm|gradient_clipping"),
    REAL("optim.z_loss", optim.z_loss, 0, HUGE_VAL, 0, "zloss|z_loss_weight"),
    WORD("optim.state_dtype", optim.state_dtype, "f32|bf16", 0, "moments_dtype|optimizer_dtype"),
    {"optim.lr_mult", KT_LRMULT, 0, 0, TENSOR_NAME_LEN, 0, NULL, "lr_multipliers|lr_scale"},
    LIST("optim.freeze", optim.freeze, TENSOR_NAME_LEN, KF_PATTERN, "frozen|freeze_patterns"),
    SEC("train"),
    SIZE("train.batch_size", train.batch_size, 1, BIG, 0, "batch|micro_batch_size|B"),
    SIZE("train.grad_accum", train.grad_accum, 1, BIG, 0, "gradient_accumulation_steps|accum"),
    SIZE("train.steps", train.steps, 0, BIG, 0, "max_steps|num_steps|total_steps|iters"),
    SIZE("train.log_every", train.log_every, 1, BIG, 0, "log_interval"),
    SIZE("train.eval_every", train.eval_every, 0, BIG, 0, "eval_interval"),
    SIZE("train.eval_batches", train.eval_batches, 1, BIG, 0, "eval_steps|eval_iters"),
    SIZE("train.log_positions", train.log_positions, 0, BIG, 0, "positions_every|log_repo_positions"),
    SIZE("train.save_every", train.save_every, 0, BIG, 0, "save_interval|checkpoint_every"),
    SIZE("train.keep_last", train.keep_last, 1, BIG, 0, "keep|save_total_limit"),
    WORD("train.save_dtype", train.save_dtype, "f32|bf16", 0, "dtype|torch_dtype"),
    WORD("train.save_model_type", train.save_model_type, "auto|repoc|released", 0, "hf_model_type"),
    BOOL("train.shard_optimizer", train.shard_optimizer, 0, "zero"),
    BOOL("train.recompute", train.recompute, 0, "activation_checkpointing|gradient_checkpointing"),
    WORD("train.compute_dtype", train.compute_dtype, "f32|bf16|auto", 0, "mixed_precision|autocast|amp"),
    WORD("train.f32_engine", train.f32_engine, "auto|openblas|onednn", 0, "blas|gemm_backend"),
    SIZE("train.head_chunk", train.head_chunk, 0, BIG, 0, "logits_chunk"),
    {"train.eval_tasks", KT_RAW, O(train.eval_tasks), 0, 0, KF_NULL, NULL, "tasks|retrieval_eval"},
    WORD("train.grad_wire_dtype", train.grad_wire_dtype, "f32|bf16", 0, "wire_dtype|allreduce_dtype|comm_dtype"),
    BOOL("train.overlap_grad_reduce", train.overlap_grad_reduce, 0, "overlap_comm|overlap_grad_sync"),
    {"train.outer", KT_OBJ, 0, 0, 0, KF_NULL, NULL, "diloco|outer_optimizer"},
    SIZE("train.outer.every", train.outer.every, 1, BIG, KF_NULL, "H|inner_steps|local_steps|sync_every"),
    REAL("train.outer.lr", train.outer.lr, 0, HUGE_VAL, KF_LO_OPEN, "outer_lr"),
    REAL("train.outer.momentum", train.outer.momentum, 0, 1, KF_HI_OPEN, "outer_momentum"),
    BOOL("train.outer.nesterov", train.outer.nesterov, 0, "outer_nesterov"),
};
#define N_KEYS (sizeof(RC_KEYS) / sizeof(RC_KEYS[0]))
_Static_assert(N_KEYS <= RC_KEYS_MAX, "raise RC_KEYS_MAX");
_Static_assert(RC_LIST_MAX <= OPTIM_MAX_PATTERNS, "lr_mult / freeze lists must fit OptimConfig");
_Static_assert(sizeof(BlockStyle) == sizeof(int) && sizeof(DataOrder) == sizeof(int) &&
                   sizeof(Schedule) == sizeof(int) && sizeof(DecayShape) == sizeof(int),
               "KT_ENUM fields are stored as int");
_Static_assert(BLOCK_OLMO2 == 0 && BLOCK_LLAMA == 1 && BLOCK_QWEN2 == 2 && BLOCK_QWEN3 == 3 && ORDER_SEQUENTIAL == 0 &&
                   ORDER_SHUFFLE == 1 && SCHED_CONSTANT == 0 && SCHED_LINEAR == 1 && SCHED_COSINE == 2 &&
                   SCHED_WSD == 3 && DECAY_LINEAR == 0 && DECAY_SQRT == 1,
               "enum order = `choices` order");
const size_t RC_N_KEYS = N_KEYS;

/* The model and optimizer defaults are model_config_default's and
   optim_config_default's (one source each), in the fields the keys point at;
   what is only the run's is set here. Run-level choices that differ: the
   LoRA alpha 32 (ModelConfig's is 0: no LoRA), n_kv_heads and decay_steps
   null, and warmup_steps 100 (OptimConfig's own default is 0, no warmup). */
void run_config_defaults(RunConfig* rc) {
    memset(rc, 0, sizeof(*rc));
    strcpy(rc->run.out_dir, "runs/default");
    rc->run.seed = 1;
    rc->run.threads = 0;
    strcpy(rc->run.resume, "auto");
    rc->run.resume_mode = RESUME_AUTO;
    rc->run.check_memory = true;
    rc->run.link_gbps = 0;

    RcModel* m = &rc->model;
    model_config_default(&m->cfg);
    m->cfg.KVH = RC_UNSET; /* = n_heads, as model_config_default's KVH = H */
    m->cfg.lora_alpha = 32.0;
    m->init_from[0] = 0;
    m->from_config[0] = 0;
    m->init_std = 0.02;
    strcpy(m->base_dtype, "f32");
    snprintf(m->positions.mode, RC_WORD_LEN, "%s", pos_mode_name(m->cfg.pos[0]));
    m->positions.repo_start_layer = RC_UNSET;
    m->positions.n_layers_list = 0;
    m->positions.repo_final_init_std = 0.02;
    m->positions.repo_gate_init_std = 0.02;
    m->positions.repo_content_init_std = 0.02;
    strcpy(m->positions.rope_type, "yarn");
    m->positions.repo_pdrop_init = 0;
    m->positions.repo_pdrop_steps = RC_UNSET;
    m->lora.targets.n = 0;
    m->lora.save_base = false;

    rc->data.train.n = 0;
    rc->data.val.n = 0;
    strcpy(rc->data.format, "auto");
    rc->data.seq_len = 256;
    rc->data.order = ORDER_SHUFFLE;
    rc->data.synthetic = NULL;
    rc->data.document_mask = false;
    rc->data.eos_token_id = RC_UNSET;

    RcOptim* o = &rc->optim;
    optim_config_default(&o->cfg);
    o->cfg.warmup_steps = 100;
    o->cfg.decay_steps = RC_UNSET;
    o->z_loss = 0.0;
    strcpy(o->state_dtype, "f32");
    o->lr_mult.n = 1;
    strcpy(o->lr_mult.v[0].pattern, "repo");
    o->lr_mult.v[0].mult = o->cfg.repo_lr_mult;
    o->freeze.n = 0;

    rc->train.batch_size = 8;
    rc->train.grad_accum = 1;
    rc->train.steps = 1000;
    rc->train.log_every = 10;
    rc->train.eval_every = 100;
    rc->train.eval_batches = 10;
    rc->train.log_positions = 0;
    rc->train.save_every = 500;
    rc->train.keep_last = 2;
    strcpy(rc->train.save_dtype, "f32");
    strcpy(rc->train.save_model_type, "auto");
    rc->train.recompute = false;
    strcpy(rc->train.compute_dtype, "f32");
    strcpy(rc->train.f32_engine, "auto");
    rc->train.head_chunk = 0;
    rc->train.shard_optimizer = true;
    strcpy(rc->train.grad_wire_dtype, "f32");
    rc->train.overlap_grad_reduce = true;
    rc->train.outer.every = RC_UNSET;
    rc->train.outer.lr = 0.7;
    rc->train.outer.momentum = 0.9;
    rc->train.outer.nesterov = true;
}

const RcKey* rc_find_key(const char* path) {
    for (size_t i = 0; i < N_KEYS; i++)
        if (!strcmp(RC_KEYS[i].path, path)) return &RC_KEYS[i];
    return NULL;
}

bool run_config_was_set(const RunConfig* rc, const char* path) {
    const RcKey* k = rc_find_key(path);
    CHECK(k, "run_config_was_set: '%s' is not a config key", path);
    return rc->set[k - RC_KEYS];
}

/* the nth word of "a|b|c" into out */
const char* rc_word(const char* list, int n, char* out, size_t len) {
    const char* p = list;
    while (n-- > 0) p = strchr(p, '|') + 1;
    const char* bar = strchr(p, '|');
    snprintf(out, len, "%.*s", (int)(bar ? (size_t)(bar - p) : strlen(p)), p);
    return out;
}

size_t rc_field_size(const RcKey* k) {
    switch (k->type) {
    case KT_OBJ: return 0;
    case KT_STR:
    case KT_WORD: return (size_t)k->hi;
    case KT_ENUM: return sizeof(int);
    case KT_BOOL: return sizeof(bool);
    case KT_SIZE: return sizeof(size_t);
    case KT_U64: return sizeof(uint64_t);
    case KT_REAL: return sizeof(double);
    case KT_LIST: return sizeof(RcList);
    default: break;
    }
    CHECK(0, "rc_field_size: %s has no fixed-size field", k->path);
    return 0;
}
