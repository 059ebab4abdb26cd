/* From the run config to the model's and the optimizer's configs, the one
   place where a key whose run-config form differs from its ModelConfig or
   OptimConfig field is converted (position plans, YaRN's context, LoRA
   targets and base dtype, n_kv_heads and decay_steps null, lr_mult "repo",
   state_dtype): a fresh model's ModelConfig, the checks and overrides applied
   to a checkpoint's config for init_from, the layer-count checks, and the
   OptimConfig. */
#include "train/run_config.h"

#include <string.h>

#include "common/check.h"
#include "data/source.h"  /* synthetic_from_json: the eval tasks' generator settings */
#include "hf/hf_config.h" /* hf_carried_eos */
#include "hf/hf_loaders.h"
#include "train/run_config_parse.h"

#define RS_ORIG_MAX "model.positions.rope_scaling.original_max_position_embeddings"

int run_config_check_layers(const RunConfig* rc, size_t n_layers, char* err, size_t err_len) {
    RcCtx c = {NULL, rc->source[0] ? rc->source : NULL, err, err_len, true, rc};
    const RcPositions* p = &rc->model.positions;
    if (n_layers > MAX_LAYERS) return rc_fail(&c, "model.n_layers", "%zu exceeds the limit %d", n_layers, MAX_LAYERS);
    if (p->n_layers_list && p->n_layers_list != n_layers)
        return rc_fail(&c, "model.positions.layers", "has %zu entries, but the model has %zu layers", p->n_layers_list,
                       n_layers);
    if (p->repo_start_layer != RC_UNSET && p->repo_start_layer > n_layers)
        return rc_fail(&c, "model.positions.repo_start_layer", "%zu exceeds the model's %zu layers",
                       p->repo_start_layer, n_layers);
    return 0;
}

/* c->pos for c->L layers: the explicit list, else the plan (checked by run_config_check_layers) */
static void set_positions(const RunConfig* rc, ModelConfig* c) {
    const RcPositions* p = &rc->model.positions;
    if (p->n_layers_list) memcpy(c->pos, rc->model.cfg.pos, p->n_layers_list * sizeof(PosMode));
    else CHECK(model_config_plan_positions(c, p->mode, p->repo_start_layer), "unknown position plan '%s'", p->mode);
}

/* YaRN from the run config. The model's context (config.json's max_position_embeddings) becomes
   original x factor, from which transformers recomputes the factor. Unless the run config names the
   original context, a checkpoint's is its YaRN original (a checkpoint this run saved, on resume) or else
   its max_position_embeddings. */
static void set_yarn(const RunConfig* rc, ModelConfig* c, bool from_checkpoint) {
    const ModelConfig* s = &rc->model.cfg;
    double ckpt_orig = c->yarn_factor > 1 ? c->yarn_orig_max : (double)c->max_position_embeddings;
    c->yarn_factor = s->yarn_factor;
    c->yarn_orig_max = s->yarn_orig_max;
    if (from_checkpoint && !run_config_was_set(rc, RS_ORIG_MAX)) c->yarn_orig_max = ckpt_orig;
    c->yarn_beta_fast = s->yarn_beta_fast;
    c->yarn_beta_slow = s->yarn_beta_slow;
    c->yarn_attention_factor = s->yarn_attention_factor;
    if (c->yarn_factor > 1) c->max_position_embeddings = (size_t)(c->yarn_orig_max * c->yarn_factor);
}

/* model.lora into c (targets checked by run_config_load); a checkpoint's config never carries it */
static void set_lora(const RunConfig* rc, ModelConfig* c) {
    const ModelConfig* s = &rc->model.cfg;
    const RcList* targets = &rc->model.lora.targets;
    c->lora_rank = s->lora_rank;
    c->base_bf16 = !strcmp(rc->model.base_dtype, "bf16");
    c->lora_alpha = s->lora_alpha;
    c->lora_dropout = s->lora_dropout;
    c->lora_rslora = s->lora_rslora;
    c->lora_targets = targets->n ? 0 : (1u << LORA_N_TARGETS) - 1;
    for (size_t i = 0; i < targets->n; i++) {
        LoraTarget t;
        CHECK(lora_target_parse(targets->v[i], &t), "model.lora.targets: unknown projection '%s'", targets->v[i]);
        c->lora_targets |= 1u << t;
    }
}

void run_config_model(const RunConfig* rc, ModelConfig* c) {
    *c = rc->model.cfg;
    if (c->KVH == RC_UNSET) c->KVH = c->H;
    /* the context the model is trained for (config.json's max_position_embeddings) */
    c->max_position_embeddings = rc->data.seq_len;
    set_yarn(rc, c, false);
    set_positions(rc, c);
    set_lora(rc, c);
}

/* "rope, repo, repo": the layers' position modes, for messages */
static void describe_positions(const ModelConfig* c, char* out, size_t n) {
    size_t used = 0;
    out[0] = 0;
    for (size_t l = 0; l < c->L && used < n; l++)
        used += (size_t)snprintf(out + used, n - used, "%s%s", l ? ", " : "", pos_mode_name(c->pos[l]));
}

/* The sizes the config gives (vocab, width, layers, heads, d_ff, arch, tied embeddings) against the
   checkpoint's c: a disagreement is refused naming the key, both values, where c came from and the fix */
static int check_sizes(const RunConfig* rc, const ModelConfig* c, RcCtx* x, const char* from, const char* fix) {
    const ModelConfig* m = &rc->model.cfg;
    /* n_kv_heads given as null means "= n_heads": the file's n_heads if set, else the checkpoint's */
    size_t heads = run_config_was_set(rc, "model.n_heads") ? m->H : c->H;
    size_t kvh = m->KVH != RC_UNSET ? m->KVH : heads;
    const struct {
        const char* key;
        size_t want, have;
    } sizes[] = {
        {"model.vocab_size", m->V, c->V},   {"model.d_model", m->D, c->D},
        {"model.n_layers", m->L, c->L},     {"model.n_heads", m->H, c->H},
        {"model.n_kv_heads", kvh, c->KVH},  {"model.d_ff", m->F, c->F},
        {"model.arch", m->block, c->block}, {"model.tie_embeddings", m->tie_embeddings, c->tie_embeddings},
    };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        if (!run_config_was_set(rc, sizes[i].key) || sizes[i].want == sizes[i].have) continue;
        const char* key = sizes[i].key;
        char want[32], have[32];
        if (!strcmp(key, "model.arch")) {
            snprintf(want, sizeof(want), "%s", block_style_name(m->block));
            snprintf(have, sizeof(have), "%s", block_style_name(c->block));
        } else if (!strcmp(key, "model.tie_embeddings")) {
            snprintf(want, sizeof(want), "%s", m->tie_embeddings ? "true" : "false");
            snprintf(have, sizeof(have), "%s", c->tie_embeddings ? "true" : "false");
        } else {
            snprintf(want, sizeof(want), "%zu", sizes[i].want);
            snprintf(have, sizeof(have), "%zu", sizes[i].have);
        }
        return rc_fail(x, key, "%s disagrees with %s in %s; %s", want, have, from, fix);
    }
    return 0;
}

int run_config_apply_checkpoint(const RunConfig* rc, ModelConfig* c, const char* ckpt_dir, bool resuming, char* err,
                                size_t err_len) {
    RcCtx x = {NULL, rc->source[0] ? rc->source : NULL, err, err_len, true, rc};
    const ModelConfig* m = &rc->model.cfg;
    /* where c came from, and what to do about a disagreement */
    char from[4200];
    const char* fix =
        resuming
            ? "a resumed run keeps the model it was trained with: remove the key, or start a new run "
              "(another run.out_dir, or run.resume \"never\")"
            : "remove the key to take the checkpoint's value, or point model.init_from at a checkpoint that has it";
    snprintf(from, sizeof(from), "%s/config.json (%s)", ckpt_dir,
             resuming ? "the checkpoint this run resumes" : "model.init_from");
    if (check_sizes(rc, c, &x, from, fix)) return -1;
    set_lora(rc, c);
    if (run_config_was_set(rc, "model.rope_theta")) c->rope_theta = m->rope_theta;
    if (run_config_was_set(rc, "model.norm_eps")) c->norm_eps = m->norm_eps;
    if (run_config_was_set(rc, "model.positions.rope_scaling")) set_yarn(rc, c, true);
    if (run_config_was_set(rc, "model.positions.mode") || run_config_was_set(rc, "model.positions.layers")) {
        if (run_config_check_layers(rc, c->L, err, err_len)) return -1;
        ModelConfig was = *c;
        set_positions(rc, c);
        /* the optimizer state and RePo weights of a checkpoint belong to its positions */
        if (resuming && memcmp(was.pos, c->pos, c->L * sizeof(PosMode))) {
            char have[512], want[512];
            describe_positions(&was, have, sizeof(have));
            describe_positions(c, want, sizeof(want));
            return rc_fail(&x,
                           run_config_was_set(rc, "model.positions.layers") ? "model.positions.layers"
                                                                            : "model.positions.mode",
                           "gives the layers %s, but %s has %s; a resumed run keeps its positions: remove the key, "
                           "or start a new run (another run.out_dir, or run.resume \"never\") with "
                           "model.init_from \"%s\" to continue this checkpoint with other positions",
                           want, from, have, ckpt_dir);
        }
    }
    return 0;
}

int run_config_save_names(const RunConfig* rc, ModelConfig* c, char* err, size_t err_len) {
    const char* want = rc->train.save_model_type;
    if (!strcmp(want, "auto")) return 0; /* the source's names; a fresh model's are repoc's */
    c->hf_released_names = !strcmp(want, "released");
    char why[256];
    RcCtx x = {NULL, rc->source[0] ? rc->source : NULL, err, err_len, true, rc};
    if (c->hf_released_names && hf_release_mode(c) != POS_ROPE && !hf_released_loader_reads(c, why, sizeof why))
        return rc_fail(&x, "train.save_model_type",
                       "\"released\": no released loader reads this model: %s; remove the key (the checkpoints "
                       "then get model_type %s%s, which repoc reads and stock transformers refuses)",
                       why, HF_REPOC_TYPE_PREFIX, block_style_name(c->block));
    return 0;
}

void run_config_optim(const RunConfig* rc, OptimConfig* oc) {
    const RcOptim* o = &rc->optim;
    *oc = o->cfg;
    if (oc->decay_steps == RC_UNSET) oc->decay_steps = 0;
    oc->total_steps = rc->train.steps;
    oc->state_bf16 = !strcmp(o->state_dtype, "bf16");
    oc->seed = rc->run.seed;
    for (size_t i = 0; i < o->lr_mult.n; i++) {
        if (!strcmp(o->lr_mult.v[i].pattern, "repo")) oc->repo_lr_mult = o->lr_mult.v[i].mult;
        else optim_config_add_lr_mult(oc, o->lr_mult.v[i].pattern, o->lr_mult.v[i].mult);
    }
    for (size_t i = 0; i < o->freeze.n; i++) optim_config_add_freeze(oc, o->freeze.v[i]);
}

int run_config_eval_tasks(const RunConfig* rc, EvalPlan* plan, SyntheticConfig* syn, char* err, size_t err_len) {
    cJSON* empty = cJSON_CreateObject();
    int r = synthetic_from_json(syn, rc->data.synthetic ? rc->data.synthetic : empty, err, err_len);
    cJSON_Delete(empty);
    if (r) return r;
    return eval_plan_from_json(plan, rc->train.eval_tasks, "train.eval_tasks", syn, rc->data.seq_len, err, err_len);
}

int run_config_eos(const RunConfig* rc, const ModelConfig* c, int32_t* eos, char* err, size_t err_len) {
    RcCtx x = {NULL, rc->source[0] ? rc->source : NULL, err, err_len, true, rc};
    *eos = -1;
    if (!rc->data.document_mask || !strcmp(rc->data.format, "jsonl")) return 0; /* jsonl: the packer's ids */
    double id = -1;
    if (rc->data.eos_token_id != RC_UNSET) id = (double)rc->data.eos_token_id;
    else id = hf_carried_eos(c); /* the checkpoint's eos_token_id: a number, or a list (its first entry) */
    if (id < 0)
        return rc_fail(&x, "data.eos_token_id",
                       "is required with data.document_mask: the token that ends each "
                       "document (model.init_from's checkpoint supplies it when its config.json has eos_token_id)");
    if (id >= (double)c->V)
        return rc_fail(&x, "data.eos_token_id", "%.0f is outside the vocabulary [0, %zu)", id, c->V);
    *eos = (int32_t)id;
    return 0;
}
