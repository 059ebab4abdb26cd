/* Decoder build, forward, backward (docs/design.md: the step, the backward passes, the memory). */
#include "model/model.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/check.h"
#include "common/rng.h"
#include "model/embedding.h"
#include "model/linear.h"
#include "model/rmsnorm.h"
#include "model/xent.h"

/* every activation view of the model, in one list (counting when cur->base is NULL) */
static void acts_layout(Model* m, Cursor* cur) {
    const ModelConfig* c = &m->cfg;
    size_t N = m->B * m->T;
    for (size_t l = 0; l <= c->L; l++) m->res[l] = cursor_take(cur, N * c->D);
    if (m->opts.recompute) { /* one set for all layers, laid out for a RePo layer when there is one */
        size_t widest = 0;
        for (size_t l = 0; l < c->L; l++)
            if (c->pos[l] == POS_REPO) widest = l;
        layer_acts_layout(&m->la[0], cur, c, widest, N);
        for (size_t l = 1; l < c->L; l++) m->la[l] = m->la[0];
    } else {
        for (size_t l = 0; l < c->L; l++) layer_acts_layout(&m->la[l], cur, c, l, N);
    }
    m->final_out = cursor_take(cur, N * c->D);
    m->final_rstd = cursor_take(cur, N);
    m->logits = cursor_take(cur, m->head_rows * c->V);
    m->lse = cursor_take(cur, N);
    m->losses = cursor_take(cur, N);
    m->pos_seq = cursor_take(cur, N * c->KVH);
    bool any_rope = false, local_rope = false; /* a rope layer of each table */
    for (size_t l = 0; l < c->L; l++) {
        bool rope = c->pos[l] == POS_ROPE;
        any_rope |= rope && !cfg_local_rope(c, l);
        local_rope |= rope && cfg_local_rope(c, l);
    }
    size_t n_angles = m->T * (cfg_hd(c) / 2) * (sizeof(double) / sizeof(real));
    if (any_rope) { /* the angles of positions 0 .. T-1 (rope_cache_fill), in double */
        m->rope_cos = (double*)cursor_take(cur, n_angles);
        m->rope_sin = (double*)cursor_take(cur, n_angles);
    }
    if (local_rope) {
        m->local_cos = (double*)cursor_take(cur, n_angles);
        m->local_sin = (double*)cursor_take(cur, n_angles);
    }
    if (c->lora_rank && c->lora_dropout > 0) { /* the widest projection input: D, H*hd (o_proj) or F */
        size_t widest = c->D > c->F ? c->D : c->F, qd = c->H * cfg_hd(c);
        m->lora_xd = cursor_take(cur, N * (qd > widest ? qd : widest));
    }
    if (m->opts.compute_bf16 && attention_bf16_pays()) /* k and v rounded into pairs once per call, dK and dV dense */
        m->attn_work =
            cursor_take(cur, attention_work_size(&(AttnShape){.B = m->B, .T = m->T, .KVH = c->KVH, .hd = cfg_hd(c)}));
}

static void scratch_layout(Model* m, Cursor* cur) {
    size_t N = m->B * m->T;
    block_scratch_layout(&m->bs, cur, &m->cfg, N);
    m->dres = cursor_take(cur, N * m->cfg.D);
    m->dfinal = cursor_take(cur, N * m->cfg.D);
}

/* cfg, sizes, options and the tensor table: everything the layouts read */
static void model_shape(Model* m, const ModelConfig* cfg, size_t B, size_t T, const char* const* frozen_patterns,
                        size_t n_frozen, const ModelOpts* opts) {
    memset(m, 0, sizeof(*m));
    model_config_validate(cfg);
    m->cfg = *cfg;
    m->B = B;
    m->T = T;
    if (opts) m->opts = *opts;
    size_t N = mulCheck(B, T, "batch rows B*T");
    CHECK(B > 0 && T > 0, "model: batch %zu x %zu must be non-empty", B, T);
    CHECK(N <= 0x7fffffff && mulCheck(N, cfg->V, "logits B*T*V") <= ((size_t)1 << 40),
          "model: batch B*T = %zu is too large", N);
    m->head_rows = m->opts.head_chunk && m->opts.head_chunk < N ? m->opts.head_chunk : N;
    tensor_table_build(&m->tensors, &m->cfg, frozen_patterns, n_frozen);
}

/* The first parameter the BF16 mirror covers: after the input embedding, which no product reads (a lookup),
   unless the LM head is tied to it */
static size_t mirror_from(const Model* m) {
    const TensorInfo* e = &m->tensors.t[0]; /* model.embed_tokens.weight, at offset 0 */
    return m->cfg.tie_embeddings || e->bf16 || e->offset != 0 ? 0 : e->numel;
}

/* Elements of each of the two BF16 work spaces: the widest activation operand of a layer's products (the
   MLP's gate and up side by side: 2F) on all N rows, at least 256 (a generator's chunks of a prompt run
   on a model built for one row), or 256 rows of the logits, which the head's backward takes in chunks of
   that many rows */
static size_t products_work(const Model* m) {
    const ModelConfig* c = &m->cfg;
    size_t N = m->B * m->T, w = c->D, head = 256 * c->V;
    size_t widths[] = {c->H * cfg_hd(c), c->KVH * cfg_hd(c), 2 * c->F, 2 * cfg_dp(c), c->lora_rank};
    for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) w = widths[i] > w ? widths[i] : w;
    size_t rows = N > 256 ? N : 256;
    return mulCheck(rows, w, "BF16 work space") > head ? rows * w : head;
}

ModelArenaSizes model_arena_sizes(const ModelConfig* cfg, size_t B, size_t T, const char* const* frozen_patterns,
                                  size_t n_frozen, const ModelOpts* opts) {
    Model* m = mallocCheck(sizeof(Model)); /* the struct only: views stay NULL while counting */
    model_shape(m, cfg, B, T, frozen_patterns, n_frozen, opts);
    ModelArenaSizes s = {.params = m->tensors.n_params,
                         .grads = m->tensors.n_grads,
                         .bf16 = m->tensors.n_bf16,
                         .widened = m->tensors.max_layer_bf16};
    if (m->opts.compute_bf16) {
        s.params_bf16 = m->tensors.n_params - mirror_from(m);
        s.bf16_work = 2 * products_work(m);
    }
    Cursor cur = {NULL, 0};
    acts_layout(m, &cur);
    s.acts = cur.used;
    cur = (Cursor){NULL, 0};
    scratch_layout(m, &cur);
    s.scratch = cur.used;
    tensor_table_free(&m->tensors);
    free(m);
    return s;
}

void model_build(Model* m, const ModelConfig* cfg, size_t B, size_t T, const char* const* frozen_patterns,
                 size_t n_frozen, bool verbose) {
    model_build_opts(m, cfg, B, T, frozen_patterns, n_frozen, NULL, verbose);
}

/* The rotation tables of cfg: global (rope_theta with YaRN, llama3 or linear scaling) and, with sliding layers,
   local (Gemma-3's: rope_local_base_freq, unscaled) */
static void rope_tables(RopeTable* global, RopeTable* local, const ModelConfig* c) {
    rope_table_init(global, cfg_hd(c), c->rope_theta, c->yarn_factor, c->yarn_orig_max, c->yarn_beta_fast,
                    c->yarn_beta_slow, c->yarn_attention_factor);
    if (c->llama3)
        rope_table_llama3(global, c->llama3_factor, c->llama3_low_freq_factor, c->llama3_high_freq_factor,
                          c->llama3_orig_max);
    if (c->rope_linear_factor > 1) rope_table_linear(global, c->rope_linear_factor);
    if (c->sliding_window) rope_table_init(local, cfg_hd(c), c->rope_local_theta, 1, 1, 32, 1, 0); /* unscaled */
}

/* compute_bf16: the parameters' BF16 mirror, the activation operands' work space and the context the
   products get (model_products) */
static void build_products(Model* m) {
    char why[512];
    CHECK(products_bf16_available(why, sizeof(why)), "train.compute_dtype \"bf16\": %s", why);
    size_t work = products_work(m), from = mirror_from(m), n = m->tensors.n_params - from;
    m->mirror_from = from;
    m->params_bf16 = arenaAllocNamed(mulCheck(n, sizeof(bf16), "BF16 mirror"), "BF16 mirror");
    m->bf16_work = arenaAllocNamed(mulCheck(2 * work, sizeof(bf16), "BF16 work space"), "BF16 work space");
    m->products = mallocCheck(sizeof(ModelProducts));
    *m->products = (ModelProducts){.prod = {.region = {{m->params + from, n, m->params_bf16}},
                                            .act = {m->bf16_work, m->bf16_work + work},
                                            .act_cap = work}};
}

/* the config and every arena's size, on stdout */
static void print_sizes(const Model* m) {
    model_config_print(&m->cfg, stdout);
    double mb = 1.0 / 1048576.0 * sizeof(real);
    if (m->tensors.n_bf16)
        printf("  frozen base in BF16: %zu parameters (%.1f MiB), widened per layer (%.1f MiB)\n", m->tensors.n_bf16,
               m->tensors.n_bf16 * 2.0 / 1048576.0, m->tensors.max_layer_bf16 * mb);
    if (m->opts.compute_bf16)
        printf("  BF16 products (%s): parameter mirror %.1f MiB%s, activation work space %.1f MiB\n", onednn_name(),
               (m->tensors.n_params - m->mirror_from) * 2.0 / 1048576.0,
               m->mirror_from ? " (all but the input embedding)" : "", m->products->prod.act_cap * 4.0 / 1048576.0);
    printf("  parameters %zu (%.1f MiB)  trainable %zu  activations %zu (%.1f MiB, B=%zu T=%zu%s, logits "
           "%zu rows)  scratch %.1f MiB  precision %s\n",
           m->tensors.n_params, m->tensors.n_params * mb, m->tensors.n_grads, m->n_acts, m->n_acts * mb, m->B, m->T,
           m->opts.recompute ? ", recompute" : "", m->head_rows, m->n_scratch * mb, REAL_NAME);
}

void model_build_opts(Model* m, const ModelConfig* cfg, size_t B, size_t T, const char* const* frozen_patterns,
                      size_t n_frozen, const ModelOpts* opts, bool verbose) {
    model_shape(m, cfg, B, T, frozen_patterns, n_frozen, opts);
    size_t N = B * T;
    const ModelConfig* c = &m->cfg;
    m->params = arenaAllocNamed(mulCheck(m->tensors.n_params, sizeof(real), "parameter arena"), "parameter arena");
    m->grads = arenaAllocNamed(mulCheck(m->tensors.n_grads, sizeof(real), "gradient arena"), "gradient arena");
    m->base_bf16 = arenaAllocNamed(mulCheck(m->tensors.n_bf16, sizeof(uint16_t), "BF16 base arena"), "BF16 base arena");
    m->widened = arenaAllocNamed(mulCheck(m->tensors.max_layer_bf16, sizeof(real), "BF16 widening buffer"),
                                 "BF16 widening buffer");
    weights_view(&m->w, &m->tensors, c, m->params, false);
    weights_view(&m->dw, &m->tensors, c, m->grads, true);
    if (m->opts.compute_bf16) build_products(m);

    Cursor cur = {NULL, 0};
    acts_layout(m, &cur);
    m->n_acts = cur.used;
    m->acts = arenaAllocNamed(mulCheck(m->n_acts, sizeof(real), "activation arena"), "activation arena");
    cur = (Cursor){m->acts, 0};
    acts_layout(m, &cur);
    CHECK(cur.used == m->n_acts, "activation layout disagrees with its count");

    cur = (Cursor){NULL, 0};
    scratch_layout(m, &cur);
    m->n_scratch = cur.used;
    m->scratch =
        arenaAllocNamed(mulCheck(m->n_scratch, sizeof(real), "backward scratch arena"), "backward scratch arena");
    cur = (Cursor){m->scratch, 0};
    scratch_layout(m, &cur);

    m->doc_start = mallocCheck(N * sizeof(int32_t));
    m->spans = (DocSpans){m->doc_start};
    if (c->sliding_window) { /* one document per row until a batch brings doc_ids */
        m->win_start = mallocCheck(N * sizeof(int32_t));
        m->win_spans = (DocSpans){m->win_start};
        window_starts(m->win_start, NULL, B, T, c->sliding_window);
    }
    for (size_t n = 0; n < N; n++)
        for (size_t g = 0; g < c->KVH; g++) m->pos_seq[n * c->KVH + g] = (real)(n % T);
    rope_tables(&m->rope, &m->rope_local, c);
    if (m->rope_cos) rope_cache_fill(&m->rope, m->rope_cos, m->rope_sin, T);
    if (m->local_cos) rope_cache_fill(&m->rope_local, m->local_cos, m->local_sin, T);
    if (verbose) print_sizes(m);
}

void model_free(Model* m) {
    free(m->params);
    free(m->base_bf16);
    free(m->widened);
    free(m->params_bf16);
    free(m->bf16_work);
    free(m->products);
    free(m->grads);
    free(m->acts);
    free(m->scratch);
    free(m->doc_start);
    free(m->win_start);
    tensor_table_free(&m->tensors);
    memset(m, 0, sizeof(*m));
}

/* FNV-1a of the name, mixed with the seed: a stream per tensor */
static uint64_t tensor_seed(uint64_t seed, const char* name) {
    uint64_t h = 1469598103934665603ull;
    for (const char* p = name; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return h ^ (seed * 0x9E3779B97F4A7C15ull);
}

_Static_assert(TK_REPO_CONTENT == TK_REPO_GATE + 1 && TK_REPO_FINAL == TK_REPO_GATE + 2, "ModelInit.repo_std's order");

void model_init_tensor(Model* m, size_t index, const ModelInit* init) {
    const TensorInfo* t = &m->tensors.t[index];
    CHECK(!t->bf16, "%s: a BF16 base (model.base_dtype \"bf16\") is loaded from model.init_from, not initialised",
          t->name);
    real* p = m->params + t->offset;
    if (t->is_norm) { /* the identity: w = 1, or Gemma-3's 1 + w with w = 0 */
        real one = (real)(1 - cfg_norm_offset(&m->cfg));
        for (size_t i = 0; i < t->numel; i++) p[i] = one;
        return;
    }
    if (t->is_bias) { /* transformers' _init_weights zeroes a Linear's bias */
        memset(p, 0, t->numel * sizeof(real));
        return;
    }
    Rng rng;
    rng_seed(&rng, tensor_seed(init->seed, t->name));
    if (t->kind == TK_LORA_B) { /* PEFT: B = 0, so the adapted model starts as the base model */
        memset(p, 0, t->numel * sizeof(real));
        return;
    }
    if (t->kind == TK_LORA_A) { /* PEFT: kaiming_uniform_(a=sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)) */
        double bound = 1.0 / sqrt((double)t->shape[1]);
        for (size_t i = 0; i < t->numel; i++) p[i] = (real)(bound * (2.0 * rng_uniform(&rng) - 1.0));
        return;
    }
    double s = t->is_repo ? 0.02 : init->std; /* RePo's maps start small: z near 0, close to NoPE */
    if (t->is_repo) {
        double set = init->repo_std[t->kind - TK_REPO_GATE]; /* gate, content, final in TensorKind's order */
        if (set > 0) s = set;
    }
    for (size_t i = 0; i < t->numel; i++) p[i] = (real)rng_trunc_normal(&rng, s, 3.0 * s);
    if (t->kind == TK_EMBED && m->cfg.pad_id >= 0) /* nn.Embedding(padding_idx) starts that row at zero */
        memset(p + (size_t)m->cfg.pad_id * m->cfg.D, 0, m->cfg.D * sizeof(real));
}

void model_init_weights(Model* m, const ModelInit* init) {
    for (size_t i = 0; i < m->tensors.n; i++) model_init_tensor(m, i, init);
    model_params_changed(m);
}

void model_params_changed(Model* m) {
    if (m->products) m->products->fresh = false;
}

void model_trained_params_get(const Model* m, real* dst) {
    const TensorTable* tt = &m->tensors;
    for (size_t k = 0; k < tt->n; k++) {
        const TensorInfo* t = &tt->t[k];
        if (t->grad_offset != NO_GRAD) memcpy(dst + t->grad_offset, m->params + t->offset, t->numel * sizeof(real));
    }
}

void model_trained_params_set(Model* m, const real* src) {
    const TensorTable* tt = &m->tensors;
    for (size_t k = 0; k < tt->n; k++) {
        const TensorInfo* t = &tt->t[k];
        if (t->grad_offset != NO_GRAD) memcpy(m->params + t->offset, src + t->grad_offset, t->numel * sizeof(real));
    }
    model_params_changed(m);
}

Bf16Products* model_products(const Model* m) {
    ModelProducts* p = m->products;
    if (!p) return NULL;
    if (!p->fresh) { /* (the double build refuses compute_bf16 at model_build) */
#ifndef REPOC_F64
        size_t n = m->tensors.n_params - m->mirror_from;
        bf16_from_f32(m->params_bf16, m->params + m->mirror_from, 1, n, n);
#endif
        p->fresh = true;
    }
    return &p->prod;
}

/* layer l's weights, its BF16 base tensors widened into m->widened (whose BF16 copies, for the products, are
   the layer's part of base_bf16) */
static const LayerWeights* layer_weights(Model* m, size_t l) {
    if (!m->tensors.n_bf16) return &m->w.layer[l];
    layer_weights_widen(&m->wl, &m->w.layer[l], &m->tensors, m->base_bf16, m->widened, (int)l);
    if (m->products)
        m->products->prod.region[1] = (Bf16Region){m->widened, m->tensors.layer_range[l].n_bf16,
                                                   m->base_bf16 + m->tensors.layer_range[l].bf16_start};
    return &m->wl;
}

BlockCtx model_block_ctx(const Model* m, const Batch* b) {
    return (BlockCtx){.cfg = &m->cfg,
                      .prod = model_products(m),
                      .B = m->B,
                      .T = m->T,
                      .rope = &m->rope,
                      .rope_local = &m->rope_local,
                      .pos_seq = m->pos_seq,
                      .docs = m->masked ? &m->spans : NULL,
                      .docs_local = m->win_start ? &m->win_spans : NULL,
                      .layer = 0,
                      .lora_p = b->lora_dropout_on ? m->cfg.lora_dropout : 0,
                      .lora_key = b->lora_dropout_key,
                      .lora_xd = m->lora_xd,
                      .attn_work = m->attn_work,
                      .repo_p = b->repo_pdrop};
}

/* Document masking for this forward: spans from doc_ids and rope positions t - start_t; back to one
   document per row (positions t) when doc_ids is NULL. Positions are rewritten only when the mode changes or
   the ids are given. */
static void set_documents(Model* m, const int32_t* doc_ids) {
    size_t N = m->B * m->T, KVH = m->cfg.KVH;
    if (!doc_ids && !m->masked) return;
    m->masked = doc_ids != NULL;
    if (m->masked) doc_starts_from_ids(m->doc_start, doc_ids, m->B, m->T);
    if (m->win_start) window_starts(m->win_start, m->masked ? m->doc_start : NULL, m->B, m->T, m->cfg.sliding_window);
    for (size_t n = 0; n < N; n++) {
        size_t t = n % m->T;
        real p = (real)(m->masked ? t - (size_t)m->doc_start[n] : t);
        for (size_t g = 0; g < KVH; g++) m->pos_seq[n * KVH + g] = p;
    }
}

void model_head_forward(real* logits, real* normed, real* rstd, const real* x, const Model* m, size_t n) {
    const ModelConfig* c = &m->cfg;
    rmsnorm_forward(normed, rstd, x, (NormGain){m->w.final_norm, (real)cfg_norm_offset(c)}, n, c->D, c->norm_eps);
    linear_forward(model_products(m), logits, normed, m->w.lm_head, n, c->D, c->V);
}

/* model_forward; train: model_forward_train (G in the logits buffer when it holds every row) */
static Loss forward(Model* m, const Batch* b, bool train) {
    const ModelConfig* c = &m->cfg;
    size_t N = m->B * m->T, D = c->D, V = c->V;
    CHECK(b->B == m->B && b->T == m->T,
          "model_forward: a batch of %zu x %zu tokens, but the model was built for "
          "%zu x %zu",
          b->B, b->T, m->B, m->T);
    const int32_t *tokens = b->tokens, *targets = b->targets;
    for (size_t n = 0; n < N; n++) {
        CHECK(tokens[n] >= 0 && (size_t)tokens[n] < V,
              "token %" PRId32 " at row %zu is outside the vocabulary [0, %zu)", tokens[n], n, V);
        CHECK(!targets || (targets[n] >= -1 && targets[n] < (int64_t)V),
              "target %" PRId32 " at row %zu is outside [-1, %zu)", targets ? targets[n] : 0, n, V);
    }
    set_documents(m, b->doc_ids);
    BlockCtx ctx = model_block_ctx(m, b);

    embedding_forward(m->res[0], tokens, m->w.embed, (real)cfg_embed_scale(c), N, D);
    for (size_t l = 0; l < c->L; l++) block_forward(m->res[l + 1], &m->la[l], m->res[l], layer_weights(m, l), l, &ctx);

    m->has_loss = targets != NULL;
    m->logits_hold_grad = train && targets && m->head_rows == N;
    m->weight_sum = 0;
    if (!targets) {
        CHECK(m->head_rows == N,
              "model_forward without targets returns logits of all %zu rows, but the model "
              "was built to hold %zu rows at a time (head_chunk)",
              N, m->head_rows);
        model_head_forward(m->logits, m->final_out, m->final_rstd, m->res[c->L], m, N);
        return (Loss){0};
    }
    /* the head and the loss on chunks of head_rows rows; every row's sums are the same either way */
    XentSums sum = {0};
    for (size_t r0 = 0; r0 < N; r0 += m->head_rows) {
        size_t n = N - r0 < m->head_rows ? N - r0 : m->head_rows;
        model_head_forward(m->logits, m->final_out + r0 * D, m->final_rstd + r0, m->res[c->L] + r0 * D, m, n);
        const real* wr = b->target_weights ? b->target_weights + r0 : NULL;
        XentSums s =
            m->logits_hold_grad
                ? xent_forward_grad(m->losses + r0, m->lse + r0, m->logits, targets + r0, wr, n, V, m->opts.z_loss)
                : xent_forward_sum(m->losses + r0, m->lse + r0, m->logits, targets + r0, wr, n, V, m->opts.z_loss);
        sum.total += s.total;
        sum.z += s.z;
        sum.weight += s.weight;
        sum.n_valid += s.n_valid;
    }
    m->weight_sum = sum.weight;
    bool any = sum.n_valid > 0;
    return (Loss){.loss = any ? sum.total / sum.weight : 0.0,
                  .z = any ? sum.z / sum.weight : 0.0,
                  .n_valid = sum.n_valid,
                  .weight_sum = sum.weight};
}

Loss model_forward(Model* m, const Batch* b) { return forward(m, b, false); }

Loss model_forward_train(Model* m, const Batch* b) { return forward(m, b, true); }

void model_backward(Model* m, const Batch* b, double dloss) {
    CHECK(m->has_loss, "model_backward: the last forward had no targets (or backward already ran)");
    CHECK(b->B == m->B && b->T == m->T && b->targets && (b->doc_ids != NULL) == m->masked,
          "model_backward: the batch is not the one of the last forward");
    const ModelConfig* c = &m->cfg;
    size_t N = m->B * m->T, D = c->D, V = c->V;
    BlockCtx ctx = model_block_ctx(m, b);
    Bf16Products* bf = ctx.prod;

    real* dx = m->dres; /* gradient of the residual stream, summed into by each block in turn */
    real* dfinal = m->dfinal;
    if (m->logits_hold_grad) { /* dlogits = G dloss / weight_sum: the scalar goes into the GEMMs */
        real alpha = (real)(m->weight_sum > 0 ? dloss / m->weight_sum : 0.0);
        linear_backward_ld(bf, dfinal, m->dw.lm_head, (LinearDout){m->logits, V, alpha, false}, m->final_out,
                           m->w.lm_head, N, D, V, false);
    } else {
        for (size_t r0 = 0; r0 < N; r0 += m->head_rows) { /* the chunks of forward */
            size_t n = N - r0 < m->head_rows ? N - r0 : m->head_rows;
            const real* normed = m->final_out + r0 * D;
            if (m->head_rows < N) linear_forward(bf, m->logits, normed, m->w.lm_head, n, D, V); /* its logits again */
            xent_backward(m->logits, m->lse + r0, b->targets + r0, b->target_weights ? b->target_weights + r0 : NULL, n,
                          V, m->opts.z_loss, m->weight_sum, dloss); /* logits → dlogits */
            linear_backward(bf, dfinal + r0 * D, m->dw.lm_head, m->logits, normed, m->w.lm_head, n, D, V, false);
        }
    }
    rmsnorm_backward(dx, m->dw.final_norm, dfinal, m->res[c->L], (NormGain){m->w.final_norm, (real)cfg_norm_offset(c)},
                     m->final_rstd, m->bs.norm_work, N, D, false);
    if (m->layer_grads_done) m->layer_grads_done(m->layer_grads_ctx, c->L); /* the final norm's, the LM head's */
    for (size_t l = c->L; l-- > 0;) {
        /* recompute: layer l's activations again (the last layer's are still there), its output into a
           scratch buffer that block_backward overwrites */
        const LayerWeights* w = layer_weights(m, l); /* a BF16 base is widened once for both */
        if (m->opts.recompute && l + 1 < c->L) block_forward(m->bs.dd, &m->la[l], m->res[l], w, l, &ctx);
        block_backward(dx, &m->dw.layer[l], &m->la[l], m->res[l], w, l, &m->bs, &ctx);
        if (m->layer_grads_done) m->layer_grads_done(m->layer_grads_ctx, l);
    }
    if (m->dw.embed) embedding_backward_pad(m->dw.embed, dx, b->tokens, (real)cfg_embed_scale(c), N, D, c->pad_id);
    m->has_loss = false; /* the logits buffer now holds dlogits (or G) */
    m->logits_hold_grad = false;
}

void model_zero_grad(Model* m) { memset(m->grads, 0, m->tensors.n_grads * sizeof(real)); }
