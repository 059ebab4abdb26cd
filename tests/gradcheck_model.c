/* Gradient-check problems for whole blocks and whole models (tests/gradcheck.h).
   Each builds a real Model (its arenas, views and tensor list) so the check
   covers exactly the code that trains. */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "model/model.h"
#include "tests/gradcheck.h"
#include "tests/testutil.h"

typedef struct {
    Model m;
    size_t layer; /* block problems: which layer; model problems: unused */
    real *x_in, *x_out, *proj, *dx_in;
    Batch batch; /* model problems: tokens, targets, and doc_ids (packed documents), target_weights
                                (per-row weights) or the LoRA dropout key where the problem has them */
} ModelCtx;

static void free_model_ctx(Problem* p) {
    ModelCtx* c = p->ctx;
    model_free(&c->m);
    free(c->x_in);
    free(c->x_out);
    free(c->proj);
    free(c->dx_in);
    batch_free(&c->batch);
    free(c);
}

/* Random weights at a scale where every path matters: matrices U(-0.4, 0.4),
   norm scales U(0.5, 1.5) (Gemma-3's 1 + w included), RePo weights large enough that z spans several units.
   Embedding rows are U(-1.5, 1.5), like the block checks' x_in: OLMo-2's first
   QK-norm sees them raw, and rows near zero make 1/rms so curved that the
   finite difference, not the gradient, would be the less accurate side. */
static void randomise_weights(Model* m, Rng* rng) {
    for (size_t i = 0; i < m->tensors.n; i++) {
        const TensorInfo* t = &m->tensors.t[i];
        double lo = t->is_norm ? 0.5 : (t->is_repo ? -0.8 : (t->kind == TK_EMBED ? -1.5 : -0.4));
        double hi = t->is_norm ? 1.5 : -lo;
        if (t->is_norm) { /* Gemma-3's norms scale by 1 + w: w in [-0.5, 0.5] gives the same scales */
            lo -= cfg_norm_offset(&m->cfg);
            hi -= cfg_norm_offset(&m->cfg);
        }
        if (t->kind == TK_EMBED) { /* Gemma-3 multiplies the rows by sqrt(D): the same inputs as the others */
            lo /= cfg_embed_scale(&m->cfg);
            hi /= cfg_embed_scale(&m->cfg);
        }
        for (size_t k = 0; k < t->numel; k++) m->params[t->offset + k] = lo + (hi - lo) * rng_uniform(rng);
    }
}

/* k's bias in a layer that neither rotates nor normalises k adds q·bk to every score of a query, which the
   softmax ignores: its gradient is exactly 0 (round-off), with no scale for the check to judge it by */
static bool zero_by_symmetry(const Model* m, const TensorInfo* t) {
    return t->kind == TK_BK && m->cfg.pos[t->layer] == POS_NOPE && !cfg_qk_norm(&m->cfg);
}

/* register the trainable tensors of layer (or of the model when layer < 0) as checked inputs */
static void add_params(Problem* p, Model* m, int layer) {
    for (size_t i = 0; i < m->tensors.n; i++) {
        const TensorInfo* t = &m->tensors.t[i];
        if ((layer >= 0 && t->layer != layer) || t->grad_offset == NO_GRAD || zero_by_symmetry(m, t)) continue;
        gc_add(p, t->name, m->params + t->offset, t->numel);
    }
}

/* copy the model's gradients of the registered tensors into the problem's dx */
static void collect_grads(Problem* p, Model* m, size_t first) {
    for (size_t k = first; k < p->n_tensors; k++) {
        long i = tensor_table_find(&m->tensors, p->tensor_name[k]);
        CHECK(i >= 0, "gradcheck: %s not in the tensor table", p->tensor_name[k]);
        memcpy(p->dx[k], m->grads + m->tensors.t[i].grad_offset, p->n[k] * sizeof(real));
    }
}

static BlockCtx ctx_of(Model* m) { return model_block_ctx(m, &(Batch){.B = m->B, .T = m->T}); }

/* ---- one block: L = Σ block(x_in) ⊙ proj ---- */
static double block_loss(Problem* p) {
    ModelCtx* c = p->ctx;
    BlockCtx ctx = ctx_of(&c->m);
    size_t l = c->layer;
    block_forward(c->x_out, &c->m.la[l], c->x_in, &c->m.w.layer[l], l, &ctx);
    return gc_project(c->x_out, c->proj, c->m.B * c->m.T * c->m.cfg.D);
}
static void block_grad(Problem* p) {
    ModelCtx* c = p->ctx;
    BlockCtx ctx = ctx_of(&c->m);
    size_t l = c->layer, N = c->m.B * c->m.T;
    model_zero_grad(&c->m);
    block_loss(p);
    memcpy(c->dx_in, c->proj, N * c->m.cfg.D * sizeof(real)); /* dL/dx_out, turned into dL/dx_in in place */
    block_backward(c->dx_in, &c->m.dw.layer[l], &c->m.la[l], c->x_in, &c->m.w.layer[l], l, &c->m.bs, &ctx);
    memcpy(p->dx[0], c->dx_in, N * c->m.cfg.D * sizeof(real));
    collect_grads(p, &c->m, 1);
}

/* Gemma-3's own keys on a small model: layers 0 and 2 slide (a window of `window` keys, their own RoPE base),
   1 is global with linear scaling; the attention scale is query_pre_attn_scalar `scalar`'s */
static void gemma3_small(ModelConfig* cfg, size_t window, double scalar) {
    cfg->sliding_window = window;
    cfg->sliding[0] = cfg->sliding[2] = true;
    cfg->rope_local_theta = 100;
    cfg->rope_linear_factor = 2;
    cfg->attn_scalar = scalar;
    cfg->tie_embeddings = true;
}

/* one problem per layer of a 3-layer model (rope, repo, nope); head_dim 0 = D/H; attn_bias: Qwen3's */
static size_t build_blocks(Problem* out, size_t max, Rng* rng, BlockStyle style, size_t head_dim, bool attn_bias) {
    ModelConfig cfg;
    model_config_default(&cfg);
    cfg.block = style;
    test_model_sizes(&cfg, 11, 16, 3, 4, 2, 24);
    cfg.head_dim = head_dim;
    cfg.attn_bias = attn_bias;
    cfg.norm_eps = 1e-5;
    cfg.pos[0] = POS_ROPE;
    cfg.pos[1] = POS_REPO;
    cfg.pos[2] = POS_NOPE;
    if (style == BLOCK_GEMMA3) gemma3_small(&cfg, 3, 10); /* sliding rope, global repo, sliding nope */
    if (style == BLOCK_MISTRAL) { /* every layer slides over 3 of T 5 keys, by the global table: no RePo */
        cfg.sliding_window = 3;
        for (size_t l = 0; l < 3; l++) cfg.sliding[l] = true;
        cfg.pos[1] = POS_ROPE;
    }
    size_t B = 2, T = 5, N = B * T;
    for (size_t l = 0; l < 3; l++) {
        Problem* p = &out[l];
        memset(p, 0, sizeof(*p));
        snprintf(p->name, sizeof(p->name), "block-%s, %s%s layer (D=16 H=4 KVH=2 hd=%zu F=24 B=2 T=5)",
                 block_style_name(style), cfg_sliding(&cfg, l) ? "sliding " : "", pos_mode_name(cfg.pos[l]),
                 cfg_hd(&cfg));
        ModelCtx* c = callocCheck(1, sizeof(ModelCtx));
        p->ctx = c;
        p->free_ctx = free_model_ctx;
        model_build(&c->m, &cfg, B, T, NULL, 0, false);
        randomise_weights(&c->m, rng);
        c->layer = l;
        c->x_in = gc_random(rng, N * cfg.D, -1.5, 1.5);
        c->x_out = gc_random(rng, N * cfg.D, 0, 0);
        c->dx_in = gc_random(rng, N * cfg.D, 0, 0);
        c->proj = gc_random(rng, N * cfg.D, -1, 1);
        gc_add(p, "x_in", c->x_in, N * cfg.D);
        add_params(p, &c->m, (int)l);
        p->loss = block_loss;
        p->grad = block_grad;
    }
    return 3;
}
size_t build_block_olmo2(Problem* out, size_t max, Rng* rng) {
    return build_blocks(out, max, rng, BLOCK_OLMO2, 0, false);
}
size_t build_block_llama(Problem* out, size_t max, Rng* rng) {
    return build_blocks(out, max, rng, BLOCK_LLAMA, 0, false);
}
size_t build_block_qwen2(Problem* out, size_t max, Rng* rng) {
    return build_blocks(out, max, rng, BLOCK_QWEN2, 0, false);
}
/* head_dim 6 with D 16 and 4 heads: q is 24 wide, o_proj [16, 24]; the q/k norms [6] serve every head */
size_t build_block_qwen3(Problem* out, size_t max, Rng* rng) {
    return build_blocks(out, max, rng, BLOCK_QWEN3, 6, true);
}
/* Gemma-3: head_dim 6 as Qwen3's, and its own keys (gemma3_small) */
size_t build_block_gemma3(Problem* out, size_t max, Rng* rng) {
    return build_blocks(out, max, rng, BLOCK_GEMMA3, 6, false);
}

/* Mistral: the Llama block with a window on every layer (rope, rope, nope) */
size_t build_block_mistral(Problem* out, size_t max, Rng* rng) {
    return build_blocks(out, max, rng, BLOCK_MISTRAL, 0, false);
}

/* ---- the whole model: L = its loss ---- */
static double model_loss(Problem* p) {
    ModelCtx* c = p->ctx;
    return model_forward(&c->m, &c->batch).loss;
}
static void model_grad(Problem* p) {
    ModelCtx* c = p->ctx;
    model_zero_grad(&c->m);
    model_forward_train(&c->m, &c->batch);
    model_backward(&c->m, &c->batch, 1.0);
    collect_grads(p, &c->m, 0);
}

/* doc_ids: NULL, or (B*T) document ids of packed rows (document masking); opts: NULL or ModelOpts */
static void setup_model(Problem* p, Rng* rng, const ModelConfig* cfg, const char* name, double z_loss,
                        const int32_t* doc_ids, const ModelOpts* opts) {
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    ModelCtx* c = callocCheck(1, sizeof(ModelCtx));
    p->ctx = c;
    p->free_ctx = free_model_ctx;
    size_t B = 2, T = 6, N = B * T;
    model_build_opts(&c->m, cfg, B, T, NULL, 0, opts, false);
    randomise_weights(&c->m, rng);
    c->m.opts.z_loss = z_loss; /* the problem's own coefficient, whatever opts say */
    batch_alloc(&c->batch, B, T, doc_ids != NULL, false);
    for (size_t n = 0; n < N; n++) {
        c->batch.tokens[n] = (int32_t)rng_below(rng, cfg->V);
        c->batch.targets[n] = n == 3 ? -1 : (int32_t)rng_below(rng, cfg->V);
    }
    if (doc_ids) memcpy(c->batch.doc_ids, doc_ids, N * sizeof(int32_t));
    add_params(p, &c->m, -1);
    p->loss = model_loss;
    p->grad = model_grad;
}

size_t build_model(Problem* out, size_t max, Rng* rng) {
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, 11, 16, 3, 4, 2, 24);
    cfg.norm_eps = 1e-5;
    cfg.pos[0] = POS_ROPE;
    cfg.pos[1] = POS_REPO;
    cfg.pos[2] = POS_NOPE;
    setup_model(&out[0], rng, &cfg, "model: OLMo-2, layers rope/repo/nope, GQA 4/2, untied, z-loss 1e-3", 1e-3, NULL,
                NULL);
    cfg.block = BLOCK_LLAMA;
    cfg.tie_embeddings = true;
    cfg.pos[0] = POS_REPO;
    cfg.pos[1] = POS_NOPE;
    cfg.pos[2] = POS_ROPE;
    cfg.yarn_factor = 2.0;
    cfg.yarn_orig_max = 4;
    setup_model(&out[1], rng, &cfg, "model: Llama, layers repo/nope/rope, GQA 4/2, tied, YaRN x2", 0, NULL, NULL);
    cfg.yarn_factor = 1.0;
    cfg.pos[0] = POS_ROPE;
    cfg.pos[1] = POS_REPO;
    cfg.pos[2] = POS_ROPE;
    cfg.llama3 = true;
    cfg.llama3_factor = 4;
    cfg.llama3_low_freq_factor = 1;
    cfg.llama3_high_freq_factor = 4;
    cfg.llama3_orig_max = 8; /* hd 4, theta 1e4: wavelengths 6.3 (blended) and 628 (divided) */
    setup_model(&out[2], rng, &cfg, "model: Llama, rope/repo/rope, GQA 4/2, tied, llama3 x4", 0, NULL, NULL);
    /* packed rows of B=2, T=6: documents of 2, 3, 1 and 1, 1, 4 tokens; rope positions restart per document */
    static const int32_t docs[12] = {0, 0, 1, 1, 1, 2, 5, 6, 7, 7, 7, 7};
    setup_model(&out[3], rng, &cfg, "model: Llama llama3, 3 documents per row, masked", 0, docs, NULL);
    cfg.block = BLOCK_OLMO2;
    cfg.llama3 = false;
    cfg.tie_embeddings = false;
    cfg.pos[0] = POS_ROPE;
    cfg.pos[1] = POS_REPO;
    cfg.pos[2] = POS_NOPE;
    setup_model(&out[4], rng, &cfg, "model: OLMo-2 rope/repo/nope, 3 documents per row, masked", 1e-3, docs, NULL);
    ModelOpts chunked = {.recompute = true, .head_chunk = 5}; /* 12 rows in chunks of 5, 5, 2; recomputed blocks */
    if (max <= 5) return 5;
    setup_model(&out[5], rng, &cfg, "model: OLMo-2, head chunks of 5 rows, recompute", 1e-3, NULL, &chunked);
    if (max <= 6) return 6;
    setup_model(&out[6], rng, &cfg, "model: OLMo-2, per-row target weights in [0.5, 2], z-loss 1e-3", 1e-3, NULL, NULL);
    ModelCtx* c = out[6].ctx;
    c->batch.target_weights = mallocCheck(12 * sizeof(real)); /* freed by batch_free */
    for (size_t n = 0; n < 12; n++) c->batch.target_weights[n] = (real)(0.5 + 1.5 * rng_uniform(rng));
    if (max <= 7) return 7;
    /* repo_pdrop: the repo layer rotates by 0.6 z + 0.4 t, t restarting per document */
    setup_model(&out[7], rng, &cfg, "model: OLMo-2 rope/repo/nope, repo_pdrop 0.4, masked", 0, docs, NULL);
    ((ModelCtx*)out[7].ctx)->batch.repo_pdrop = 0.4;
    return 8;
}

/* LoRA on a frozen base: only the adapters (and RePo) are trainable, and the
   check covers them; B starts random here (PEFT's B = 0 would hide A's gradient). */
size_t build_lora_model(Problem* out, size_t max, Rng* rng) {
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, 11, 16, 2, 4, 2, 24);
    cfg.norm_eps = 1e-5;
    cfg.pos[0] = POS_ROPE;
    cfg.pos[1] = POS_REPO;
    cfg.lora_rank = 3;
    cfg.lora_alpha = 6.0;
    cfg.lora_targets = (1u << LORA_N_TARGETS) - 1;
    setup_model(&out[0], rng, &cfg, "lora-model: OLMo-2, rank 3 on all seven projections, layers rope/repo", 0, NULL,
                NULL);
    cfg.block = BLOCK_LLAMA;
    cfg.lora_rank = 2;
    cfg.lora_alpha = 5.0;
    cfg.lora_targets = 1u << LORA_Q | 1u << LORA_V | 1u << LORA_DOWN;
    setup_model(&out[1], rng, &cfg, "lora-model: Llama, rank 2 on q_proj, v_proj, down_proj, layers rope/repo", 0, NULL,
                NULL);
    cfg.lora_dropout = 0.3; /* one fixed key: the masks of every layer and projection stay put */
    setup_model(&out[2], rng, &cfg, "lora-model: the same with LoRA dropout 0.3 (fixed masks)", 0, NULL, NULL);
    ModelCtx* c = out[2].ctx;
    c->batch.lora_dropout_on = true;
    c->batch.lora_dropout_key = 0x5eedull;
    return 3;
}

/* the family problems' decoder: V 11, D 16, 3 layers, 4 heads over 2 kv heads, F 24, eps 1e-5 */
static ModelConfig small_decoder(BlockStyle style) {
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, 11, 16, 3, 4, 2, 24);
    cfg.norm_eps = 1e-5;
    cfg.block = style;
    return cfg;
}

/* Qwen2 and Qwen3 decoders: biases, per-head QK-norm with head_dim != D/H, RePo on the attention input, and
   LoRA on a frozen Qwen3 base (its biases frozen with it). The pad row's masked gradient is not a derivative,
   so pad_token_id stays unset here (test_model checks it; the qwen3_pad fixture compares it with PyTorch). */
size_t build_qwen_model(Problem* out, size_t max, Rng* rng) {
    ModelConfig cfg = small_decoder(BLOCK_QWEN2);
    cfg.tie_embeddings = true;
    cfg.pos[0] = POS_ROPE;
    cfg.pos[1] = POS_REPO;
    cfg.pos[2] = POS_NOPE;
    setup_model(&out[0], rng, &cfg, "qwen-model: Qwen2, rope/repo/nope, GQA 4/2, tied", 0, NULL, NULL);
    cfg.block = BLOCK_QWEN3;
    cfg.tie_embeddings = false;
    cfg.head_dim = 6;
    cfg.attn_bias = true;
    cfg.pos[0] = POS_REPO;
    cfg.pos[2] = POS_ROPE;
    setup_model(&out[1], rng, &cfg, "qwen-model: Qwen3 hd 6, attention_bias, repo/repo/rope, z-loss", 1e-3, NULL, NULL);
    if (max <= 2) return 2;
    cfg.L = 2;
    cfg.pos[0] = POS_ROPE;
    cfg.lora_rank = 2;
    cfg.lora_alpha = 4.0;
    cfg.lora_targets = (1u << LORA_N_TARGETS) - 1;
    setup_model(&out[2], rng, &cfg, "qwen-model: Qwen3 LoRA rank 2 on all seven, rope/repo", 0, NULL, NULL);
    return 3;
}

/* Gemma-3 decoders: the sqrt(D)-scaled tied embedding, sliding and global layers (each with its RoPE table),
   RePo on the global layer, packed documents under the window, and LoRA on a frozen base. pad_token_id
   stays unset for the reason build_qwen_model gives (the gemma3_sw fixture compares it with PyTorch). */
size_t build_gemma3_model(Problem* out, size_t max, Rng* rng) {
    ModelConfig cfg = small_decoder(BLOCK_GEMMA3);
    cfg.head_dim = 6;
    /* window 4 of T 6, scale 3^-1/2 (hd 6): with a window of 3 and a scale of 10^-1/2 the q_proj and RePo
       gradients are so small against the loss that the finite difference's round-off (halved by twice the
       step) exceeds 1e-6 of them at one seed in four */
    gemma3_small(&cfg, 4, 3);
    cfg.pos[0] = POS_ROPE;
    cfg.pos[1] = POS_REPO;
    cfg.pos[2] = POS_ROPE;
    setup_model(&out[0], rng, &cfg, "gemma3-model: sliding rope, global repo, sliding rope, window 4, z-loss", 1e-3,
                NULL, NULL);
    if (max <= 1) return 1;
    static const int32_t docs[12] = {0, 0, 0, 0, 1, 1, 5, 6, 6, 6, 6, 6};
    setup_model(&out[1], rng, &cfg, "gemma3-model: documents of 4, 2 and 1, 5 under the window of 4", 0, docs, NULL);
    if (max <= 2) return 2;
    cfg.lora_rank = 2;
    cfg.lora_alpha = 4.0;
    cfg.lora_targets = (1u << LORA_N_TARGETS) - 1;
    setup_model(&out[2], rng, &cfg, "gemma3-model: LoRA rank 2 on all seven projections", 0, NULL, NULL);
    return 3;
}

/* Mistral decoders: every layer slides over 4 of T 6 keys (rope, nope, rope), untied head; then packed
   documents under the window */
size_t build_mistral_model(Problem* out, size_t max, Rng* rng) {
    ModelConfig cfg = small_decoder(BLOCK_MISTRAL);
    cfg.sliding_window = 4;
    for (size_t l = 0; l < 3; l++) cfg.sliding[l] = true;
    cfg.pos[0] = POS_ROPE;
    cfg.pos[1] = POS_NOPE;
    cfg.pos[2] = POS_ROPE;
    setup_model(&out[0], rng, &cfg, "mistral-model: window 4 on every layer, rope/nope/rope, z-loss", 1e-3, NULL, NULL);
    if (max <= 1) return 1;
    static const int32_t docs[12] = {0, 0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 2};
    setup_model(&out[1], rng, &cfg, "mistral-model: documents of 5 and 1, then 1 and 5, under the window of 4", 0, docs,
                NULL);
    return 2;
}
