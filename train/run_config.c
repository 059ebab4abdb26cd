/* The training job's configuration (see run_config.h): the schema
   table (every key once) and the defaults, loading (file, --set overrides,
   checks between keys), printing and JSON output. Applying one JSON value to
   one key, with its messages, is in run_config_parse.c; the bridges to
   ModelConfig and OptimConfig in run_config_model.c. */
#include "train/run_config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"           /* CHECK, mallocCheck */
#include "common/fileio.h"          /* file_read_all_or_null */
#include "train/run_config_schema.h"

#define O(f) offsetof(RunConfig, f)
#define SEC(p)                  { p, KT_OBJ, 0, 0, 0, 0, NULL, NULL }
#define STR(p, f, fl, al)       { p, KT_STR, O(f), 0, RC_PATH_LEN, fl, NULL, al }
#define WORD(p, f, ch, fl, al)  { p, KT_WORD, O(f), 0, RC_WORD_LEN, fl, ch, al }
#define ENUM(p, f, ch, fl, al)  { p, KT_ENUM, O(f), 0, 0, fl, ch, al }
#define BOOL(p, f, fl, al)      { p, KT_BOOL, O(f), 0, 0, fl, NULL, al }
#define SIZE(p, f, lo, hi, fl, al) { p, KT_SIZE, O(f), lo, hi, fl, NULL, al }
#define REAL(p, f, lo, hi, fl, al) { p, KT_REAL, O(f), lo, hi, fl, NULL, al }
#define LIST(p, f, cap, fl, al) { p, KT_LIST, O(f), 0, cap, fl, NULL, al }
#define RS "model.positions.rope_scaling"

/* Every key, once: path, field, range (or capacity), flags, choices, aliases.
   A section's own keys follow it, before its subsections (run_config_print
   relies on it). */
const RcKey RC_KEYS[] = {
    SEC("run"),
    STR("run.out_dir", run.out_dir, KF_NONEMPTY, "output_dir|out|dir"),
    { "run.seed", KT_U64, O(run.seed), 0, BIG, 0, NULL, "random_seed" },
    SIZE("run.threads", run.threads, 0, 4096, 0, "num_threads|n_threads"),
    STR("run.resume", run.resume, KF_NONEMPTY, "resume_from"),
    BOOL("run.overwrite", run.overwrite, 0, NULL),
    BOOL("run.check_memory", run.check_memory, 0, "memory_check"),
    SEC("model"),
    STR("model.init_from", model.init_from, KF_NULL, "checkpoint|init|model_path|from"),
    STR("model.from_config", model.from_config, KF_NULL, "config|config_json|architecture_config"),
    ENUM("model.arch", model.arch, "olmo2|llama", KF_CKPT, "architecture|architectures"),
    SIZE("model.vocab_size", model.vocab_size, 1, 2147483647.0, KF_CKPT, "vocab|n_vocab"),
    SIZE("model.d_model", model.d_model, 1, BIG, KF_CKPT, "hidden_size|dim|n_embd"),
    SIZE("model.n_layers", model.n_layers, 1, MAX_LAYERS, KF_CKPT, "num_hidden_layers|n_layer|layers"),
    SIZE("model.n_heads", model.n_heads, 1, BIG, KF_CKPT, "num_attention_heads|n_head|heads"),
    SIZE("model.n_kv_heads", model.n_kv_heads, 1, BIG, KF_CKPT | KF_NULL, "num_key_value_heads|n_kv_head|kv_heads"),
    SIZE("model.d_ff", model.d_ff, 1, BIG, KF_CKPT, "intermediate_size|ffn_dim|hidden_dim"),
    REAL("model.rope_theta", model.rope_theta, 1, HUGE_VAL, KF_CKPT | KF_LO_OPEN, "theta|rope_base"),
    REAL("model.norm_eps", model.norm_eps, 0, 1, KF_CKPT | KF_LO_OPEN | KF_HI_OPEN, "rms_norm_eps|eps"),
    BOOL("model.tie_embeddings", model.tie_embeddings, KF_CKPT, "tie_word_embeddings|tied"),
    REAL("model.init_std", model.init_std, 0, HUGE_VAL, KF_LO_OPEN, "initializer_range|std"),
    WORD("model.base_dtype", model.base_dtype, "f32|bf16", 0, "frozen_dtype"),
    SEC("model.positions"),
    WORD("model.positions.mode", model.positions.mode, "rope|repo|nope|r2n1|n2r1", KF_CKPT, "dynamic_pe_mode|plan"),
    SIZE("model.positions.repo_start_layer", model.positions.repo_start_layer, 0, MAX_LAYERS, KF_CKPT | KF_NULL,
         "dynamic_pe_start_layer|start_layer"),
    { "model.positions.layers", KT_LAYERS, 0, 0, 0, KF_CKPT | KF_NULL, "rope|repo|nope", "dynamic_pe_layer_ids" },
    REAL("model.positions.repo_final_init_std", model.positions.repo_final_init_std, 0, HUGE_VAL, KF_LO_OPEN,
         "repo_init_std|final_map_std"),
    { RS, KT_OBJ, O(model.positions.rope_scaling), 0, sizeof(RcRopeScaling), KF_CKPT | KF_NULL, NULL, "yarn" },
    WORD(RS ".rope_type", model.positions.rope_scaling.rope_type, "yarn", KF_CKPT, "type"),
    REAL(RS ".factor", model.positions.rope_scaling.factor, 1, HUGE_VAL, KF_CKPT, "scale"),
    REAL(RS ".original_max_position_embeddings", model.positions.rope_scaling.original_max_position_embeddings,
         1, HUGE_VAL, KF_CKPT, "max_position_embeddings|original_max"),
    REAL(RS ".beta_fast", model.positions.rope_scaling.beta_fast, 0, HUGE_VAL, KF_CKPT | KF_LO_OPEN, NULL),
    REAL(RS ".beta_slow", model.positions.rope_scaling.beta_slow, 0, HUGE_VAL, KF_CKPT | KF_LO_OPEN, NULL),
    REAL(RS ".attention_factor", model.positions.rope_scaling.attention_factor, 0, HUGE_VAL,
         KF_CKPT | KF_NULL | KF_LO_OPEN, "mscale"),
    { "model.lora", KT_OBJ, O(model.lora), 0, sizeof(RcLora), KF_NULL, NULL, "peft|lora_config" },
    SIZE("model.lora.rank", model.lora.rank, 0, 65536, 0, "r"),
    REAL("model.lora.alpha", model.lora.alpha, 0, HUGE_VAL, KF_LO_OPEN, "lora_alpha"),
    LIST("model.lora.targets", model.lora.targets, 32, 0, "target_modules"),
    REAL("model.lora.dropout", model.lora.dropout, 0, 1, KF_HI_OPEN, "lora_dropout"),
    BOOL("model.lora.rslora", model.lora.rslora, 0, "use_rslora"),
    BOOL("model.lora.save_base", model.lora.save_base, 0, "keep_base|save_base_model"),
    SEC("data"),
    LIST("data.train", data.train, RC_PATH_LEN, 0, "train_files|files|train_data"),
    LIST("data.val", data.val, RC_PATH_LEN, 0, "val_files|valid|validation|eval"),
    WORD("data.format", data.format, "auto|bin|npy|u16|u32|jsonl", 0, "dtype"),
    STR("data.tokenizer", data.tokenizer, KF_NULL, "tokenizer_path"),
    SIZE("data.seq_len", data.seq_len, 2, BIG, 0, "block_size|context_length|max_seq_len|seq_length|T"),
    ENUM("data.order", data.order, "sequential|shuffle", 0, "shuffle"),
    { "data.synthetic", KT_RAW, O(data.synthetic), 0, 0, KF_NULL, NULL, "generator|synth" },
    BOOL("data.document_mask", data.document_mask, 0, "doc_mask|document_masking"),
    SIZE("data.eos_token_id", data.eos_token_id, 0, 0x7fffffff, KF_NULL, "eos_id|eos"),
    SEC("optim"),
    REAL("optim.lr", optim.lr, 0, HUGE_VAL, KF_LO_OPEN, "learning_rate"),
    REAL("optim.min_lr", optim.min_lr, 0, HUGE_VAL, 0, "min_learning_rate|final_lr"),
    ENUM("optim.schedule", optim.schedule, "constant|linear|cosine|wsd", 0, "lr_schedule|scheduler"),
    SIZE("optim.warmup_steps", optim.warmup_steps, 0, BIG, 0, "warmup"),
    SIZE("optim.decay_steps", optim.decay_steps, 0, BIG, KF_NULL, "cooldown_steps|decay"),
    REAL("optim.decay_fraction", optim.decay_fraction, 0, 1, 0, "cooldown_fraction|decay_frac"),
    ENUM("optim.decay_shape", optim.decay_shape, "linear|sqrt", 0, "cooldown_shape"),
    REAL("optim.beta1", optim.beta1, 0, 1, KF_HI_OPEN, "adam_beta1"),
    REAL("optim.beta2", optim.beta2, 0, 1, KF_HI_OPEN, "adam_beta2"),
    REAL("optim.eps", optim.eps, 0, HUGE_VAL, KF_LO_OPEN, "adam_eps|adam_epsilon|epsilon"),
    REAL("optim.weight_decay", optim.weight_decay, 0, HUGE_VAL, 0, "wd"),
    BOOL("optim.decay_embeddings", optim.decay_embeddings, 0, NULL),
    BOOL("optim.decay_norms", optim.decay_norms, 0, NULL),
    REAL("optim.grad_clip", optim.grad_clip, 0, HUGE_VAL, 0, "clip|max_grad_norm|gradient_clipping"),
    REAL("optim.z_loss", optim.z_loss, 0, HUGE_VAL, 0, "zloss|z_loss_weight"),
    WORD("optim.state_dtype", optim.state_dtype, "f32|bf16", 0, "moments_dtype|optimizer_dtype"),
    { "optim.lr_mult", KT_LRMULT, 0, 0, TENSOR_NAME_LEN, 0, NULL, "lr_multipliers|lr_scale" },
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
    BOOL("train.shard_optimizer", train.shard_optimizer, 0, "zero"),
    BOOL("train.recompute", train.recompute, 0, "activation_checkpointing|gradient_checkpointing"),
    SIZE("train.head_chunk", train.head_chunk, 0, BIG, 0, "logits_chunk"),
    { "train.eval_tasks", KT_RAW, O(train.eval_tasks), 0, 0, KF_NULL, NULL, "tasks|retrieval_eval" },
};
#define N_KEYS (sizeof(RC_KEYS) / sizeof(RC_KEYS[0]))
_Static_assert(N_KEYS <= RC_KEYS_MAX, "raise RC_KEYS_MAX");
_Static_assert(RC_LIST_MAX <= OPTIM_MAX_PATTERNS, "lr_mult / freeze lists must fit OptimConfig");
_Static_assert(sizeof(BlockStyle) == sizeof(int) && sizeof(DataOrder) == sizeof(int) &&
               sizeof(Schedule) == sizeof(int) && sizeof(DecayShape) == sizeof(int), "KT_ENUM fields are stored as int");
_Static_assert(BLOCK_OLMO2 == 0 && BLOCK_LLAMA == 1 && ORDER_SEQUENTIAL == 0 && ORDER_SHUFFLE == 1 &&
               SCHED_CONSTANT == 0 && SCHED_LINEAR == 1 && SCHED_COSINE == 2 && SCHED_WSD == 3 &&
               DECAY_LINEAR == 0 && DECAY_SQRT == 1, "enum order = `choices` order");
const size_t RC_N_KEYS = N_KEYS;

/* The model and optimizer defaults are model_config_default's and
   optim_config_default's (one source each); what is only the run's is set
   here. One run-level choice differs: warmup_steps 100 (OptimConfig's own
   default is 0, no warmup). */
void run_config_defaults(RunConfig* rc) {
    memset(rc, 0, sizeof(*rc));
    ModelConfig m;
    model_config_default(&m);
    OptimConfig o;
    optim_config_default(&o);

    strcpy(rc->run.out_dir, "runs/default");
    rc->run.seed = 1;
    rc->run.threads = 0;
    strcpy(rc->run.resume, "auto");
    rc->run.resume_mode = RESUME_AUTO;

    rc->model.init_from[0] = 0;
    rc->model.from_config[0] = 0;
    rc->model.arch = m.block;
    rc->model.vocab_size = m.V;
    rc->model.d_model = m.D;
    rc->model.n_layers = m.L;
    rc->model.n_heads = m.H;
    rc->model.n_kv_heads = RC_UNSET;                /* = n_heads, as m.KVH = m.H */
    rc->model.d_ff = m.F;
    rc->model.rope_theta = m.rope_theta;
    rc->model.norm_eps = m.norm_eps;
    rc->model.tie_embeddings = m.tie_embeddings;
    rc->model.init_std = 0.02;
    snprintf(rc->model.positions.mode, RC_WORD_LEN, "%s", pos_mode_name(m.pos[0]));
    rc->model.positions.repo_start_layer = RC_UNSET;
    rc->model.positions.n_layers_list = 0;
    rc->model.positions.repo_final_init_std = 0.02;
    RcRopeScaling* rs = &rc->model.positions.rope_scaling;
    strcpy(rs->rope_type, "yarn");
    rs->factor = m.yarn_factor;
    rs->original_max_position_embeddings = m.yarn_orig_max;
    rs->beta_fast = m.yarn_beta_fast;
    rs->beta_slow = m.yarn_beta_slow;
    rs->attention_factor = m.yarn_attention_factor;

    strcpy(rc->model.base_dtype, "f32");
    rc->model.lora.rank = 0;
    rc->model.lora.alpha = 32.0;
    rc->model.lora.targets.n = 0;
    rc->model.lora.dropout = 0.0;
    rc->model.lora.rslora = false;
    rc->model.lora.save_base = false;

    rc->data.train.n = 0;
    rc->data.val.n = 0;
    strcpy(rc->data.format, "auto");
    rc->data.seq_len = 256;
    rc->data.order = ORDER_SHUFFLE;
    rc->data.synthetic = NULL;
    rc->data.document_mask = false;
    rc->data.eos_token_id = RC_UNSET;

    rc->optim.lr = o.lr;
    rc->optim.min_lr = o.min_lr;
    rc->optim.schedule = o.schedule;
    rc->optim.warmup_steps = 100;
    rc->optim.decay_steps = RC_UNSET;
    rc->optim.decay_fraction = 0.2;
    rc->optim.decay_shape = DECAY_LINEAR;
    rc->optim.beta1 = o.beta1;
    rc->optim.beta2 = o.beta2;
    rc->optim.eps = o.eps;
    rc->optim.weight_decay = o.weight_decay;
    rc->optim.decay_embeddings = o.decay_embeddings;
    rc->optim.decay_norms = o.decay_norms;
    rc->optim.grad_clip = o.grad_clip;
    rc->optim.z_loss = 0.0;
    rc->optim.lr_mult.n = 1;
    strcpy(rc->optim.lr_mult.v[0].pattern, "repo");
    rc->optim.lr_mult.v[0].mult = o.repo_lr_mult;
    rc->optim.freeze.n = 0;

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
    strcpy(rc->optim.state_dtype, "f32");
    rc->run.check_memory = true;
    rc->train.recompute = false;
    rc->train.head_chunk = 0;
    rc->train.shard_optimizer = true;
}

void run_config_free(RunConfig* rc) {
    cJSON_Delete(rc->data.synthetic);
    cJSON_Delete(rc->data.train_sources);
    cJSON_Delete(rc->data.val_sources);
    cJSON_Delete(rc->train.eval_tasks);
    rc->train.eval_tasks = NULL;
    rc->data.synthetic = rc->data.train_sources = rc->data.val_sources = NULL;
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

/* ---- loading ---- */
static int load_file(RcCtx* c, const char* path) {
    size_t n;
    char* text = file_read_all_or_null(path, &n);
    if (!text) return rc_fail(c, NULL, "cannot read the config file: %s", strerror(errno));
    const char* end = NULL;
    cJSON* root = strlen(text) == n ? cJSON_ParseWithOpts(text, &end, 1) : NULL;   /* a NUL byte stops it */
    int r;
    if (!root) {   /* "file:line:column: ..." where cJSON stopped, with the text before it on its line */
        size_t off = end ? (size_t)(end - text) : strlen(text), line = 1, start = 0;
        for (size_t i = 0; i < off; i++)
            if (text[i] == '\n') line++, start = i + 1;
        size_t from = off - start > 24 ? off - 24 : start;
        while (from < off && (text[from] == ' ' || text[from] == '\t')) from++;
        c->src = NULL;
        r = rc_fail(c, NULL, "%s:%zu:%zu: JSON syntax error (byte %zu) after '%.*s'", path, line, off - start + 1, off,
                    (int)(off - from), text + from);
    } else if (!cJSON_IsObject(root)) {
        r = rc_fail(c, NULL, "expected a JSON object at the top level");
    } else {
        r = rc_apply_object(c, "", root);
    }
    cJSON_Delete(root);
    free(text);
    return r;
}

bool run_config_sizes_from_file(const RunConfig* rc) { return rc->model.init_from[0] || rc->model.from_config[0]; }

/* model.from_config names the whole architecture: neither a checkpoint to load nor typed sizes go with it */
static int check_from_config(RcCtx* c) {
    const RcModel* m = &c->rc->model;
    if (m->init_from[0])
        return rc_fail(c, "model.from_config", "given together with model.init_from: from_config starts a fresh model "
                       "of a config.json's architecture, init_from continues a checkpoint's weights; use one");
    static const char* sizes[] = {"model.arch", "model.vocab_size", "model.d_model", "model.n_layers",
                                  "model.n_heads", "model.n_kv_heads", "model.d_ff", "model.tie_embeddings"};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        if (run_config_was_set(c->rc, sizes[i]))
            return rc_fail(c, sizes[i], "given together with model.from_config '%s', which sets the architecture: "
                           "remove %s, or drop model.from_config to give every size", m->from_config, sizes[i]);
    return 0;
}

/* Checks between keys, after the file and the overrides. Derives resume_mode
   and, for a fresh model, n_kv_heads = n_heads when it was null. */
static int validate(RcCtx* c) {
    RunConfig* rc = c->rc;
    RcModel* m = &rc->model;
    const RcPositions* p = &m->positions;
    const char* resume = rc->run.resume;
    rc->run.resume_mode = !strcmp(resume, "auto") ? RESUME_AUTO : !strcmp(resume, "never") ? RESUME_NEVER : RESUME_PATH;

    /* max_position_embeddings = factor x original_max is written to config.json as an integer, which
       a reader holds exactly only up to 2^53 */
    const RcRopeScaling* ys = &p->rope_scaling;
    if (ys->factor > 1 && ys->factor * ys->original_max_position_embeddings > 9007199254740992.0)
        return rc_fail(c, RS ".factor", "%g x original_max_position_embeddings %g = %g positions exceeds 2^53, the "
                       "largest max_position_embeddings a checkpoint's config.json holds exactly", ys->factor,
                       ys->original_max_position_embeddings, ys->factor * ys->original_max_position_embeddings);
    const RcLora* lo = &m->lora;
    for (size_t i = 0; i < lo->targets.n; i++) {
        LoraTarget t;
        if (!lora_target_parse(lo->targets.v[i], &t))
            return rc_fail(c, "model.lora.targets", "'%s' matches no projection; the valid names are q_proj, k_proj, "
                           "v_proj, o_proj, gate_proj, up_proj, down_proj", lo->targets.v[i]);
    }

    if (!strcmp(m->base_dtype, "bf16") && !m->init_from[0])
        return rc_fail(c, "model.base_dtype", "\"bf16\" keeps a frozen base loaded from model.init_from; give one "
                       "(a fresh model has nothing frozen to keep)");
    if (lo->save_base && !lo->rank)
        return rc_fail(c, "model.lora.save_base", "keeps a copy of a LoRA run's base in each checkpoint, but "
                       "model.lora.rank is 0 (no LoRA: every checkpoint holds the whole model); remove the key");
    if (!strcmp(m->base_dtype, "bf16") && !lo->rank && !c->rc->optim.freeze.n)
        return rc_fail(c, "model.base_dtype", "\"bf16\" keeps the frozen layer matrices in BF16, but this run "
                       "freezes none: model.lora.rank is 0 (no LoRA) and optim.freeze is empty; set model.lora.rank, "
                       "or remove the key (a model without LoRA trains in F32)");
    if (m->from_config[0] && check_from_config(c)) return -1;
    if (!run_config_sizes_from_file(rc)) {   /* else from config.json (run_config_apply_checkpoint) */
        if (m->n_kv_heads == RC_UNSET) m->n_kv_heads = m->n_heads;
        if (m->d_model % m->n_heads)
            return rc_fail(c, "model.n_heads", "%zu does not divide model.d_model %zu", m->n_heads, m->d_model);
        if (m->d_model / m->n_heads % 2)
            return rc_fail(c, "model.d_model", "head dim d_model / n_heads = %zu must be even (rotary pairs)",
                           m->d_model / m->n_heads);
        if (m->n_heads % m->n_kv_heads)
            return rc_fail(c, "model.n_kv_heads", "%zu does not divide model.n_heads %zu", m->n_kv_heads, m->n_heads);
        if (run_config_check_layers(rc, m->n_layers, c->err, c->len)) return -1;
        ModelConfig mc;
        run_config_model(rc, &mc);
        if (cfg_has_repo(&mc) && m->d_model % 8)
            return rc_fail(c, "model.d_model", "%zu must be divisible by 8 for RePo layers (d_p = d_model / 8)",
                           m->d_model);
    }
    if (p->repo_start_layer != RC_UNSET && strcmp(p->mode, "repo") && !p->n_layers_list)
        return rc_fail(c, "model.positions.repo_start_layer", "given, but model.positions.mode is \"%s\", not \"repo\"",
                       p->mode);
    if (p->rope_scaling.beta_fast <= p->rope_scaling.beta_slow)
        return rc_fail(c, RS ".beta_fast", "%g must exceed beta_slow %g", p->rope_scaling.beta_fast,
                       p->rope_scaling.beta_slow);

    if (rc->optim.min_lr > rc->optim.lr)
        return rc_fail(c, "optim.min_lr", "%g exceeds optim.lr %g", rc->optim.min_lr, rc->optim.lr);
    if (rc->optim.decay_steps != RC_UNSET && rc->optim.warmup_steps + rc->optim.decay_steps > rc->train.steps)
        return rc_fail(c, "optim.decay_steps", "%zu plus optim.warmup_steps %zu exceeds train.steps %zu",
                       rc->optim.decay_steps, rc->optim.warmup_steps, rc->train.steps);
    if (rc->optim.decay_steps != RC_UNSET && rc->optim.schedule != SCHED_WSD)
        return rc_fail(c, "optim.decay_steps", "given, but optim.schedule is not \"wsd\"");
    if (rc->optim.warmup_steps > rc->train.steps)
        return rc_fail(c, "optim.warmup_steps", "%zu exceeds train.steps %zu", rc->optim.warmup_steps, rc->train.steps);

    /* products of sizes, before they can wrap around: rows per optimizer step, tokens per micro-batch */
    const RcTrain* t = &rc->train;
    if (t->grad_accum > BIG / t->batch_size)
        return rc_fail(c, "train.grad_accum", "%zu x train.batch_size %zu rows per step is more than 2^53: "
                       "lower train.grad_accum or train.batch_size", t->grad_accum, t->batch_size);
    if (rc->data.seq_len > 0x7fffffff / t->batch_size)
        return rc_fail(c, "train.batch_size", "%zu x data.seq_len %zu tokens per micro-batch is more than 2^31 - 1: "
                       "lower train.batch_size or data.seq_len (train.grad_accum adds rows without memory)",
                       t->batch_size, rc->data.seq_len);

    if (rc->train.eval_tasks) {   /* checked here, so that the message names the config file */
        EvalPlan plan;
        SyntheticConfig syn;
        char e[400];
        if (run_config_eval_tasks(rc, &plan, &syn, e, sizeof(e))) return rc_fail_keyed(c, e);
        if (!rc->train.eval_every)
            return rc_fail(c, "train.eval_tasks", "given, but train.eval_every is 0: the tasks run at evaluations");
    }
    const RcData* d = &rc->data;
    bool train = d->train.n || d->train_sources, val = d->val.n || d->val_sources;
    if (train && d->synthetic) return rc_fail(c, "data.synthetic", "given together with data.train: use one");
    if (!train && !d->synthetic)
        return rc_fail(c, "data.train", "no training data: give files or globs, or a data.synthetic generator");
    if (!val && !d->synthetic && rc->train.eval_every)
        return rc_fail(c, "data.val", "empty while train.eval_every is %zu: give files or globs, or set "
                       "train.eval_every to 0", rc->train.eval_every);
    if (d->document_mask && d->eos_token_id == RC_UNSET && !run_config_sizes_from_file(rc) && strcmp(d->format, "jsonl"))
        return rc_fail(c, "data.eos_token_id", "is required with data.document_mask: the token that ends each "
                       "document (model.init_from's checkpoint supplies it when its config.json has eos_token_id)");
    return 0;
}

/* Defaults that do not fit a short run adapt to it, with a note; a value given explicitly is never changed
   (validate then refuses a contradiction): no validation data turns evaluation off, and the 100-step
   warmup shrinks to a tenth of a run shorter than 1000 steps. */
static void adapt_defaults(RunConfig* rc) {
    size_t n = 0;
    rc->notes[0] = 0;
    if (!rc->data.val.n && !rc->data.val_sources && !rc->data.synthetic && rc->train.eval_every && !run_config_was_set(rc, "train.eval_every")) {
        rc->train.eval_every = 0;
        n += (size_t)snprintf(rc->notes + n, sizeof(rc->notes) - n, "note: no data.val given: evaluation is off "
                              "(give data.val files to evaluate every train.eval_every steps)\n");
    }
    size_t warm = rc->train.steps / 10;
    if (!run_config_was_set(rc, "optim.warmup_steps") && rc->optim.warmup_steps > warm &&
        rc->train.steps < 10 * rc->optim.warmup_steps && n < sizeof(rc->notes)) {
        snprintf(rc->notes + n, sizeof(rc->notes) - n, "note: optim.warmup_steps %zu (the default) is more than a "
                 "tenth of train.steps %zu: warming up for %zu steps\n", rc->optim.warmup_steps, rc->train.steps, warm);
        rc->optim.warmup_steps = warm;
    }
}

int run_config_load(RunConfig* rc, const char* path, const char* const* overrides, size_t n_overrides,
                    char* err, size_t err_len) {
    run_config_defaults(rc);
    RcCtx c = { rc, path, err, err_len, false, NULL };
    if (err && err_len) err[0] = 0;
    if (path) {
        if (strlen(path) >= sizeof(rc->source)) return rc_fail(&c, NULL, "config path too long");
        strcpy(rc->source, path);
        if (load_file(&c, path)) return -1;
    }
    char arg[RC_PATH_LEN + 16];
    for (size_t i = 0; i < n_overrides; i++) {
        snprintf(arg, sizeof(arg), "--set %s", overrides[i]);
        c.src = arg;
        if (rc_apply_override(&c, overrides[i])) return -1;
    }
    c.src = path;
    adapt_defaults(rc);
    c.by_key = true;
    return validate(&c);
}

/* ---- output: the print and the JSON share value_json ---- */

/* left out: with init_from or from_config, a key the config.json provides that was not set */
static bool from_checkpoint(const RunConfig* rc, const RcKey* k) {
    return run_config_sizes_from_file(rc) && (k->flags & KF_CKPT) && !rc->set[k - RC_KEYS];
}

/* the shortest text that reads back as the same double */
static cJSON* number_json(double x) {
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof(buf), "%.*g", digits, x);
        if (strtod(buf, NULL) == x) break;
    }
    return cJSON_CreateRaw(buf);
}

/* one key's value (a section: an empty object) */
static cJSON* value_json(const RunConfig* rc, const RcKey* k) {
    const void* f = (const char*)rc + k->off;
    char buf[32];
    cJSON* v;
    switch (k->type) {
    case KT_OBJ: return cJSON_CreateObject();
    case KT_STR: return (k->flags & KF_NULL) && !*(const char*)f ? cJSON_CreateNull() : cJSON_CreateString(f);
    case KT_WORD: return cJSON_CreateString(f);
    case KT_ENUM: return cJSON_CreateString(rc_word(k->choices, *(const int*)f, buf, sizeof(buf)));
    case KT_BOOL: return cJSON_CreateBool(*(const bool*)f);
    case KT_SIZE:
        if ((k->flags & KF_NULL) && *(const size_t*)f == RC_UNSET) return cJSON_CreateNull();
        snprintf(buf, sizeof(buf), "%zu", *(const size_t*)f);
        return cJSON_CreateRaw(buf);
    case KT_U64:
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)*(const uint64_t*)f);
        return cJSON_CreateRaw(buf);
    case KT_REAL:
        return (k->flags & KF_NULL) && *(const double*)f == 0 ? cJSON_CreateNull() : number_json(*(const double*)f);
    case KT_LIST:
        if (f == &rc->data.train && rc->data.train_sources) return cJSON_Duplicate(rc->data.train_sources, 1);
        if (f == &rc->data.val && rc->data.val_sources) return cJSON_Duplicate(rc->data.val_sources, 1);
        v = cJSON_CreateArray();
        for (size_t i = 0; i < ((const RcList*)f)->n; i++)
            cJSON_AddItemToArray(v, cJSON_CreateString(((const RcList*)f)->v[i]));
        return v;
    case KT_LAYERS:
        if (!rc->model.positions.n_layers_list) return cJSON_CreateNull();
        v = cJSON_CreateArray();
        for (size_t i = 0; i < rc->model.positions.n_layers_list; i++)
            cJSON_AddItemToArray(v, cJSON_CreateString(pos_mode_name(rc->model.positions.layers[i])));
        return v;
    case KT_LRMULT:
        v = cJSON_CreateObject();
        for (size_t i = 0; i < rc->optim.lr_mult.n; i++)
            cJSON_AddItemToObject(v, rc->optim.lr_mult.v[i].pattern, number_json(rc->optim.lr_mult.v[i].mult));
        return v;
    case KT_RAW:
        return *(cJSON* const*)f ? cJSON_Duplicate(*(cJSON* const*)f, 1) : cJSON_CreateNull();
    }
    return NULL;
}

void run_config_print(const RunConfig* rc, FILE* fp) {
    const char* section = "";
    for (size_t i = 0; i < N_KEYS; i++) {   /* one line per section: its own keys follow it in the table */
        const RcKey* k = &RC_KEYS[i];
        if (k->type == KT_OBJ) {
            fprintf(fp, "%s%s:", i ? "\n" : "", k->path);
            section = k->path;
            continue;
        }
        const char* dot = strrchr(k->path, '.');
        CHECK(dot && (size_t)(dot - k->path) == strlen(section) && !strncmp(k->path, section, strlen(section)),
              "schema order: %s is not a key of section %s", k->path, section);
        if (from_checkpoint(rc, k)) {
            fprintf(fp, " %s=(%s)", dot + 1, rc->model.init_from[0] ? "init_from" : "from_config");
            continue;
        }
        cJSON* v = value_json(rc, k);
        char* text = cJSON_PrintUnformatted(v);
        CHECK(v && text, "out of memory printing %s", k->path);
        fprintf(fp, " %s=%s", dot + 1, text);
        cJSON_free(text);
        cJSON_Delete(v);
    }
    fprintf(fp, "\n%s", rc->notes);
}

char* run_config_to_json(const RunConfig* rc) {
    cJSON* root = cJSON_CreateObject();
    cJSON* node[RC_KEYS_MAX] = { 0 };
    char parent_path[RC_PATH_LEN];
    for (size_t i = 0; i < N_KEYS; i++) {
        const RcKey* k = &RC_KEYS[i];
        const char* dot = strrchr(k->path, '.');
        cJSON* parent = root;
        if (dot) {
            snprintf(parent_path, sizeof(parent_path), "%.*s", (int)(dot - k->path), k->path);
            parent = node[rc_find_key(parent_path) - RC_KEYS];
        }
        if (!parent || from_checkpoint(rc, k)) continue;
        node[i] = value_json(rc, k);
        CHECK(node[i], "out of memory writing %s", k->path);
        cJSON_AddItemToObject(parent, dot ? dot + 1 : k->path, node[i]);
    }
    char* text = cJSON_Print(root);
    CHECK(text, "out of memory writing the config as JSON");
    size_t n = strlen(text);
    char* out = mallocCheck(n + 2);
    memcpy(out, text, n);
    strcpy(out + n, "\n");
    cJSON_free(text);
    cJSON_Delete(root);
    return out;
}
