/* From the run config to the model's and the optimizer's configs: a fresh
   model's ModelConfig (sizes, DESIGN.md §2 position plans, YaRN), the checks
   and overrides applied to a checkpoint's config for init_from (DESIGN.md §5),
   the layer-count checks, and the OptimConfig. */
#include "train/run_config.h"

#include <string.h>

#include "common/check.h"
#include "train/run_config_schema.h"

#define RS_ORIG_MAX "model.positions.rope_scaling.original_max_position_embeddings"

int run_config_check_layers(const RunConfig* rc, size_t n_layers, char* err, size_t err_len) {
    RcCtx c = { (RunConfig*)rc, rc->source[0] ? rc->source : NULL, err, err_len };
    const RcPositions* p = &rc->model.positions;
    if (n_layers > MAX_LAYERS) return rc_fail(&c, "model.n_layers", "%zu exceeds the limit %d", n_layers, MAX_LAYERS);
    if (p->n_layers_list && p->n_layers_list != n_layers)
        return rc_fail(&c, "model.positions.layers", "has %zu entries, but the model has %zu layers",
                       p->n_layers_list, n_layers);
    if (p->repo_start_layer != RC_UNSET && p->repo_start_layer > n_layers)
        return rc_fail(&c, "model.positions.repo_start_layer", "%zu exceeds the model's %zu layers",
                       p->repo_start_layer, n_layers);
    return 0;
}

/* c->pos for c->L layers: the explicit list, else the plan (checked by run_config_check_layers) */
static void set_positions(const RunConfig* rc, ModelConfig* c) {
    const RcPositions* p = &rc->model.positions;
    if (p->n_layers_list) memcpy(c->pos, p->layers, p->n_layers_list * sizeof(PosMode));
    else CHECK(model_config_plan_positions(c, p->mode, p->repo_start_layer), "unknown position plan '%s'", p->mode);
}

/* YaRN from the run config. The model's context (config.json's max_position_embeddings) becomes
   original x factor, from which transformers recomputes the factor. Unless the run config names the
   original context, a checkpoint's is its YaRN original (a checkpoint this run saved, on resume) or else
   its max_position_embeddings. */
static void set_yarn(const RunConfig* rc, ModelConfig* c, bool from_checkpoint) {
    const RcRopeScaling* s = &rc->model.positions.rope_scaling;
    double ckpt_orig = c->yarn_factor > 1 ? c->yarn_orig_max : (double)c->max_position_embeddings;
    c->yarn_factor = s->factor;
    c->yarn_orig_max = s->original_max_position_embeddings;
    if (from_checkpoint && !run_config_was_set(rc, RS_ORIG_MAX)) c->yarn_orig_max = ckpt_orig;
    c->yarn_beta_fast = s->beta_fast;
    c->yarn_beta_slow = s->beta_slow;
    c->yarn_attention_factor = s->attention_factor;
    if (c->yarn_factor > 1) c->max_position_embeddings = (size_t)(c->yarn_orig_max * c->yarn_factor);
}

void run_config_model(const RunConfig* rc, ModelConfig* c) {
    const RcModel* m = &rc->model;
    model_config_default(c);
    c->block = m->arch;
    c->V = m->vocab_size;
    c->D = m->d_model;
    c->L = m->n_layers;
    c->H = m->n_heads;
    c->KVH = m->n_kv_heads == RC_UNSET ? m->n_heads : m->n_kv_heads;
    c->F = m->d_ff;
    c->norm_eps = m->norm_eps;
    c->rope_theta = m->rope_theta;
    c->tie_embeddings = m->tie_embeddings;
    /* the context the model is trained for (config.json's max_position_embeddings) */
    c->max_position_embeddings = rc->data.seq_len;
    set_yarn(rc, c, false);
    set_positions(rc, c);
}

int run_config_apply_checkpoint(const RunConfig* rc, ModelConfig* c, char* err, size_t err_len) {
    RcCtx x = { (RunConfig*)rc, rc->source[0] ? rc->source : NULL, err, err_len };
    const RcModel* m = &rc->model;
    /* n_kv_heads given as null means "= n_heads": the file's n_heads if set, else the checkpoint's */
    size_t heads = run_config_was_set(rc, "model.n_heads") ? m->n_heads : c->H;
    size_t kvh = m->n_kv_heads != RC_UNSET ? m->n_kv_heads : heads;
    const struct { const char* key; size_t want, have; } sizes[] = {
        { "model.vocab_size", m->vocab_size, c->V }, { "model.d_model", m->d_model, c->D },
        { "model.n_layers", m->n_layers, c->L },     { "model.n_heads", m->n_heads, c->H },
        { "model.n_kv_heads", kvh, c->KVH },         { "model.d_ff", m->d_ff, c->F },
        { "model.arch", m->arch, c->block },         { "model.tie_embeddings", m->tie_embeddings, c->tie_embeddings },
    };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        if (!run_config_was_set(rc, sizes[i].key) || sizes[i].want == sizes[i].have) continue;
        const char* key = sizes[i].key;
        if (!strcmp(key, "model.arch"))
            return rc_fail(&x, key, "%s disagrees with %s in %s/config.json", block_style_name(m->arch),
                           block_style_name(c->block), m->init_from);
        if (!strcmp(key, "model.tie_embeddings"))
            return rc_fail(&x, key, "%s disagrees with %s in %s/config.json", m->tie_embeddings ? "true" : "false",
                           c->tie_embeddings ? "true" : "false", m->init_from);
        return rc_fail(&x, key, "%zu disagrees with %zu in %s/config.json", sizes[i].want, sizes[i].have,
                       m->init_from);
    }
    if (run_config_was_set(rc, "model.rope_theta")) c->rope_theta = m->rope_theta;
    if (run_config_was_set(rc, "model.norm_eps")) c->norm_eps = m->norm_eps;
    if (run_config_was_set(rc, "model.positions.rope_scaling")) set_yarn(rc, c, true);
    if (run_config_was_set(rc, "model.positions.mode") || run_config_was_set(rc, "model.positions.layers")) {
        if (run_config_check_layers(rc, c->L, err, err_len)) return -1;
        set_positions(rc, c);
    }
    return 0;
}

void run_config_optim(const RunConfig* rc, OptimConfig* oc) {
    const RcOptim* o = &rc->optim;
    optim_config_default(oc);
    oc->lr = o->lr;
    oc->min_lr = o->min_lr;
    oc->schedule = o->schedule;
    oc->warmup_steps = o->warmup_steps;
    oc->total_steps = rc->train.steps;
    oc->beta1 = o->beta1;
    oc->beta2 = o->beta2;
    oc->eps = o->eps;
    oc->weight_decay = o->weight_decay;
    oc->decay_embeddings = o->decay_embeddings;
    oc->decay_norms = o->decay_norms;
    oc->grad_clip = o->grad_clip;
    for (size_t i = 0; i < o->lr_mult.n; i++) {
        if (!strcmp(o->lr_mult.v[i].pattern, "repo")) oc->repo_lr_mult = o->lr_mult.v[i].mult;
        else optim_config_add_lr_mult(oc, o->lr_mult.v[i].pattern, o->lr_mult.v[i].mult);
    }
    for (size_t i = 0; i < o->freeze.n; i++) optim_config_add_freeze(oc, o->freeze.v[i]);
}
