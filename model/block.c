/* Decoder block forward and backward (docs/design.md, "One training step"; docs/backward.md), written once for
   every model it runs: it reads the BlockTraits of model/config.h (which model has which: the table in
   model/config.c), never a model's name.
     h      = input_layernorm(x)                          with input_norm; else h = x
     q      = rope(q_norm(h Wq^T [+ bq])), k likewise     q_norm over the whole vector or per head (qk_norm);
     v      = h Wv^T [+ bv]                               biases: qkv_bias, or attention_bias (then bo too)
     x_mid  = x + [post_attention_layernorm](att Wo^T)    the norm with post_norms
     h2     = norm(x_mid)                                 with ff_pre_norm: post_attention_layernorm, or
                                                          pre_feedforward_layernorm when post_norms holds that one
     x_out  = x_mid + [post_feedforward_layernorm](down(act(h2 Wg^T) ⊙ h2 Wu^T))   act: silu or gelu_tanh (glu)
   every norm x r (w + norm_offset); scores scaled by cfg_attn_scale; a sliding layer sees its last
   sliding_window keys and, with window_rope, rotates by its own table.
   Positions: rope p = t; repo p = z from the module on h; nope: no rotation. */
#include "model/block.h"

#include <string.h>

#include "common/hash.h" /* mix_triple: the LoRA dropout key of a projection */
#include "model/attention.h"
#include "model/bias.h"
#include "model/linear.h"
#include "model/lora.h"
#include "model/repo.h"
#include "model/rmsnorm.h"
#include "model/swiglu.h"

void layer_acts_layout(LayerActs* a, Cursor* cur, const ModelConfig* c, size_t l, size_t N) {
    memset(a, 0, sizeof(*a));
    size_t D = c->D, q = c->H * cfg_hd(c), kv = c->KVH * cfg_hd(c), F = c->F;
    const BlockTraits* t = cfg_traits(c);
    if (t->input_norm) {
        a->h = cursor_take(cur, N * D);
        a->h_rstd = cursor_take(cur, N);
    }
    if (cfg_qk_norm(c)) { /* rstd per row of the norm: per token (whole vector) or per token and head */
        a->q_pre = cursor_take(cur, N * q);
        a->q_rstd = cursor_take(cur, N * cfg_qk_norm_heads(c, c->H));
        a->k_pre = cursor_take(cur, N * kv);
        a->k_rstd = cursor_take(cur, N * cfg_qk_norm_heads(c, c->KVH));
    }
    a->q = cursor_take(cur, N * q);
    a->k = cursor_take(cur, N * kv);
    a->v = cursor_take(cur, N * kv);
    if (c->pos[l] == POS_REPO) {
        a->z = cursor_take(cur, N * c->KVH);
        a->repo.gc = cursor_take(cur, N * 2 * cfg_dp(c));
        a->repo.r = cursor_take(cur, N * cfg_dp(c));
    }
    a->att = cursor_take(cur, N * q);
    a->lse = cursor_take(cur, N * c->H);
    a->o = cursor_take(cur, N * D);
    a->x_mid = cursor_take(cur, N * D);
    a->attn_rstd = cursor_take(cur, N);
    if (t->ff_pre_norm) a->h2 = cursor_take(cur, N * D);
    if (t->ff_pre_norm && t->post_norms) a->ff_rstd = cursor_take(cur, N);
    a->gu = cursor_take(cur, N * 2 * F);
    a->m = cursor_take(cur, N * F);
    if (cfg_post_norms(c)) {
        a->d = cursor_take(cur, N * D);
        a->mlp_rstd = cursor_take(cur, N);
    }
    for (int lt = 0; lt < LORA_N_TARGETS; lt++)
        if (cfg_lora_on(c, (LoraTarget)lt)) a->lora_ax[lt] = cursor_take(cur, N * c->lora_rank);
}

void block_scratch_layout(BlockScratch* s, Cursor* cur, const ModelConfig* c, size_t N) {
    size_t D = c->D, q = c->H * cfg_hd(c), kv = c->KVH * cfg_hd(c), F = c->F;
    const BlockTraits* t = cfg_traits(c);
    s->dd = cursor_take(cur, N * D);
    s->do_ = cursor_take(cur, N * D);
    /* without its norm a half's input is the stream itself, whose gradient takes these sums directly */
    if (t->ff_pre_norm) s->dmlp_in = cursor_take(cur, N * D);
    if (t->input_norm) s->dh = cursor_take(cur, N * D);
    s->dm = cursor_take(cur, N * F);
    s->datt = cursor_take(cur, N * q);
    s->dq = cursor_take(cur, N * q);
    s->dqn = cursor_take(cur, N * q);
    s->dk = cursor_take(cur, N * kv);
    s->dkn = cursor_take(cur, N * kv);
    if (cfg_qk_norm(c)) { /* through QK-norm */
        s->dq_pre = cursor_take(cur, N * q);
        s->dk_pre = cursor_take(cur, N * kv);
    }
    s->dv = cursor_take(cur, N * kv);
    s->dz = cursor_take(cur, N * c->KVH);
    s->norm_work = cursor_take(cur, RMSNORM_CHUNKS * (q > D ? q : D));
    s->repo_scratch = cursor_take(cur, N * (c->D / 8));
    if (c->lora_rank) s->lora_dax = cursor_take(cur, N * c->lora_rank);
}

/* One projection of the block: out (N,OC) = inp (N,C) W^T [+ b] [+ its LoRA term], where W, b and the adapter
   are those of target t in the layer's weights (proj_weight, proj_bias, lora_a[t], lora_b[t]) */
typedef struct {
    LoraTarget t;
    const real* inp;
    size_t N, C, OC;
} Proj;

/* projection t's base weight and bias (NULL: none) in w, the layer's weights or their gradients */
static real* proj_weight(const LayerWeights* w, LoraTarget t) {
    real* const W[LORA_N_TARGETS] = {w->wq, w->wk, w->wv, w->wo, w->gate, w->up, w->down};
    return W[t];
}
static real* proj_bias(const LayerWeights* w, LoraTarget t) {
    real* const b[LORA_N_TARGETS] = {w->bq, w->bk, w->bv, w->bo, NULL, NULL, NULL};
    return b[t];
}

/* The LoRA dropout of projection t in this forward: NULL without dropout, else *d keyed by (micro-batch
   key, layer, t) */
static const LoraDropout* proj_dropout(LoraDropout* d, LoraTarget t, const BlockCtx* ctx) {
    if (!(ctx->lora_p > 0)) return NULL;
    *d = (LoraDropout){ctx->lora_p, mix_triple(ctx->lora_key, ctx->layer, (uint64_t)t, 0), ctx->lora_xd};
    return d;
}

/* p's adapter on p->inp (N,C) -> (N,OC), with its dropout in *d when there is one */
static LoraOp adapter_op(const Proj* p, const LayerActs* a, const LayerWeights* w, const BlockCtx* ctx,
                         LoraDropout* d) {
    const ModelConfig* c = ctx->cfg;
    return (LoraOp){.inp = p->inp,
                    .ax = a->lora_ax[p->t],
                    .A = w->lora_a[p->t],
                    .B = w->lora_b[p->t],
                    .scale = (real)cfg_lora_scale(c),
                    .drop = proj_dropout(d, p->t, ctx),
                    .N = p->N,
                    .C = p->C,
                    .OC = p->OC,
                    .r = c->lora_rank};
}

/* out (N,OC; row stride ldo) += p's LoRA term (alpha/r) (x A^T) B^T when it is adapted (x = inp, or its
   dropout); nothing otherwise */
static void adapter_forward(real* out, size_t ldo, const Proj* p, LayerActs* a, const LayerWeights* w,
                            const BlockCtx* ctx) {
    LoraDropout d;
    if (!w->lora_a[p->t]) return;
    LoraOp op = adapter_op(p, a, w, ctx, &d);
    lora_forward(ctx->prod, out, ldo, &op);
}
/* its backward: dinp (N,C) +=   dA, dB += (NULL: frozen)   dout (N,OC) with row stride ldd */
static void adapter_backward(real* dinp, const real* dout, size_t ldd, const Proj* p, const LayerActs* a,
                             const LayerWeights* w, LayerWeights* dw, BlockScratch* s, const BlockCtx* ctx) {
    LoraDropout d;
    if (!w->lora_a[p->t]) return;
    LoraOp op = adapter_op(p, a, w, ctx, &d);
    lora_backward(ctx->prod, dinp, dw->lora_a[p->t], dw->lora_b[p->t], s->lora_dax, dout, ldd, &op);
}

/* k and v read the attention input h right after q (then k) read it, forward and backward, and nothing writes h in
   between: their BF16 products may read again the copy of h the one before made (linear_forward_kept), within
   one block_qkv_forward or qkv_backward, which clear the record first (products_forget) */
static bool proj_input_kept(const Proj* p) { return p->t == LORA_K || p->t == LORA_V; }

/* out (N,OC) = inp W^T + b plus the adapter's term; kept: inp's BF16 copy is in the work space (LinearInp) */
static void proj_forward_kept(real* out, const Proj* p, bool kept, LayerActs* a, const LayerWeights* w,
                              const BlockCtx* ctx) {
    const real* b = proj_bias(w, p->t);
    linear_forward_kept(ctx->prod, out, (LinearInp){p->inp, kept}, proj_weight(w, p->t), p->N, p->C, p->OC);
    if (b) bias_forward(out, b, p->N, p->OC);
    adapter_forward(out, p->OC, p, a, w, ctx);
}
static void proj_forward(real* out, const Proj* p, LayerActs* a, const LayerWeights* w, const BlockCtx* ctx) {
    proj_forward_kept(out, p, proj_input_kept(p), a, w, ctx);
}
/* dinp (N,C) = (or += when add)   dW, db, dA, dB += (NULL: frozen or no bias)   dout (N,OC) of proj_forward's out */
static void proj_backward(real* dinp, bool add, const real* dout, const Proj* p, const LayerActs* a,
                          const LayerWeights* w, LayerWeights* dw, BlockScratch* s, const BlockCtx* ctx) {
    real* db = proj_bias(dw, p->t);
    linear_backward_kept(ctx->prod, dinp, proj_weight(dw, p->t), dout, (LinearInp){p->inp, proj_input_kept(p)},
                         proj_weight(w, p->t), p->N, p->C, p->OC, add);
    if (db) bias_backward(db, dout, p->N, p->OC);
    adapter_backward(dinp, dout, p->OC, p, a, w, dw, s, ctx);
}

/* Whether gate and up may run as one product (linear_pair_forward's join): when neither has a LoRA adapter.
   An adapter's tensors sit between the two weights in an F32 model but not in a BF16 base, so with one the
   pair always runs as two products, and both kinds of model compute the same bits. */
static bool gate_up_join(const LayerWeights* w) { return !w->lora_a[LORA_GATE] && !w->lora_a[LORA_UP]; }

/* The MLP input's norm (ff_pre_norm), its weight (in w or dw) and rstd: pre_feedforward_layernorm when
   post_norms gives post_attention_layernorm to o, else post_attention_layernorm */
static real* ff_in_norm(const LayerWeights* w, const ModelConfig* c) {
    return cfg_post_norms(c) ? w->ff_norm : w->attn_norm;
}
static real* ff_in_rstd(const LayerActs* a, const ModelConfig* c) {
    return cfg_post_norms(c) ? a->ff_rstd : a->attn_rstd;
}

/* GeGLU or SwiGLU (BlockTraits.glu): m (N,F) from gu's rows [gate | up], and its backward into gu in place;
   with BF16 products each also writes the BF16 copy the next product reads (m for down_proj, [dgate | dup] for
   gate and up) into the work space in the same pass (products_hold). Returns whether it did. */
static bool glu_forward(real* m, const real* gu, const ModelConfig* c, size_t N, Bf16Products* bf) {
    size_t F = c->F;
    bf16* b16 = products_hold(bf, 0, m, N, F, F);
    if (cfg_traits(c)->glu == GLU_GELU_TANH) geglu_forward(m, gu, gu + F, N, F, 2 * F, b16);
    else swiglu_forward(m, gu, gu + F, N, F, 2 * F, b16);
    return b16 != NULL;
}
static bool glu_backward(real* gu, const real* dm, const ModelConfig* c, size_t N, Bf16Products* bf) {
    size_t F = c->F;
    bf16* b16 = products_hold(bf, 0, gu, N, 2 * F, 2 * F);
    if (cfg_traits(c)->glu == GLU_GELU_TANH) geglu_backward(gu, gu + F, dm, gu, gu + F, N, F, 2 * F, b16);
    else swiglu_backward(gu, gu + F, dm, gu, gu + F, N, F, 2 * F, b16);
    return b16 != NULL;
}

/* layer l's rotation table (a sliding layer's own with window_rope) and attention mask */
static const RopeTable* layer_rope(size_t l, const BlockCtx* ctx) {
    return cfg_local_rope(ctx->cfg, l) ? ctx->rope_local : ctx->rope;
}
static const DocSpans* layer_docs(size_t l, const BlockCtx* ctx) {
    return cfg_sliding(ctx->cfg, l) ? ctx->docs_local : ctx->docs;
}

/* layer l's attention: its mask, and BF16 operands with BF16 products where they pay (attention.h) */
static AttnShape attn_shape(size_t l, const BlockCtx* ctx) {
    const ModelConfig* c = ctx->cfg;
    return (AttnShape){ctx->B,
                       ctx->T,
                       c->H,
                       c->KVH,
                       cfg_hd(c),
                       (real)cfg_attn_scale(c),
                       layer_docs(l, ctx),
                       ctx->prod != NULL && attention_bf16_pays(),
                       false,
                       ctx->attn_work};
}

/* the positions a layer rotates by, or NULL for nope */
static const real* layer_positions(const LayerActs* a, size_t l, const BlockCtx* ctx) {
    switch (ctx->cfg->pos[l]) {
    case POS_ROPE: return ctx->pos_seq;
    case POS_REPO: return ctx->force_pos ? ctx->force_pos : a->z;
    default: return NULL;
    }
}

/* a norm's weight with c's offset */
static NormGain gain(const real* w, const ModelConfig* c) { return (NormGain){w, (real)cfg_norm_offset(c)}; }

static RepoWeights repo_weights(const LayerWeights* w) {
    return (RepoWeights){w->repo_gate, w->repo_content, w->repo_final};
}

void block_qkv_forward(LayerActs* a, const real* x_in, const LayerWeights* w, size_t l, const BlockCtx* ctx) {
    const ModelConfig* c = ctx->cfg;
    size_t N = ctx->B * ctx->T, D = c->D, qd = c->H * cfg_hd(c), kvd = c->KVH * cfg_hd(c);
    double eps = c->norm_eps;
    products_forget(ctx->prod); /* h is about to be written: no earlier copy of this buffer counts */

    /* attention input: input_layernorm(x), or the stream itself */
    const real* h = x_in;
    if (cfg_traits(c)->input_norm) {
        rmsnorm_forward(a->h, a->h_rstd, x_in, gain(w->in_norm, c), N, D, eps);
        h = a->h;
    }
    if (cfg_qk_norm(c)) { /* QK-norm on the rows of one token (the whole vector) or of one head ([hd]) */
        size_t qh = cfg_qk_norm_heads(c, c->H), kh = cfg_qk_norm_heads(c, c->KVH);
        proj_forward(a->q_pre, &(Proj){LORA_Q, h, N, D, qd}, a, w, ctx);
        rmsnorm_forward(a->q, a->q_rstd, a->q_pre, gain(w->q_norm, c), N * qh, qd / qh, eps);
        proj_forward(a->k_pre, &(Proj){LORA_K, h, N, D, kvd}, a, w, ctx);
        rmsnorm_forward(a->k, a->k_rstd, a->k_pre, gain(w->k_norm, c), N * kh, kvd / kh, eps);
    } else {
        proj_forward(a->q, &(Proj){LORA_Q, h, N, D, qd}, a, w, ctx);
        proj_forward(a->k, &(Proj){LORA_K, h, N, D, kvd}, a, w, ctx);
    }
    proj_forward(a->v, &(Proj){LORA_V, h, N, D, kvd}, a, w, ctx);
    if (c->pos[l] == POS_REPO) {
        RepoWeights rw = repo_weights(w);
        repo_forward(ctx->prod, a->z, &a->repo, h, &rw, (RepoDims){N, D, cfg_dp(c), c->KVH});
        if (ctx->repo_p > 0) repo_pdrop_forward(a->z, ctx->pos_seq, ctx->repo_p, N * c->KVH);
    }
    const real* pos = layer_positions(a, l, ctx);
    if (pos) rope_forward(a->q, a->k, pos, layer_rope(l, ctx), (RopeShape){N, c->H, c->KVH, c->KVH});
}

void block_out_forward(real* x_out, LayerActs* a, const real* x_in, const LayerWeights* w, const BlockCtx* ctx) {
    const ModelConfig* c = ctx->cfg;
    size_t N = ctx->B * ctx->T, D = c->D, F = c->F, qd = c->H * cfg_hd(c);
    bool post = cfg_post_norms(c);
    double eps = c->norm_eps;

    proj_forward(a->o, &(Proj){LORA_O, a->att, N, qd, D}, a, w, ctx);
    if (post) /* x_mid = x + norm(o) */
        rmsnorm_residual_forward(a->x_mid, a->attn_rstd, x_in, a->o, gain(w->attn_norm, c), N, D, eps);
    else /* x_mid = x + o */ residual_forward(a->x_mid, x_in, a->o, N * D);
    const real* mlp_in = a->x_mid;
    if (cfg_traits(c)->ff_pre_norm) { /* the MLP reads norm(x_mid) */
        rmsnorm_forward(a->h2, ff_in_rstd(a, c), a->x_mid, gain(ff_in_norm(w, c), c), N, D, eps);
        mlp_in = a->h2;
    }
    /* from here on x_in is not read, so x_out may be x_in */
    LinearPair gate_up = {w->gate, w->up, NULL, NULL, gate_up_join(w), false};
    linear_pair_forward(ctx->prod, a->gu, mlp_in, &gate_up, N, D, F); /* gu (N,2F) rows [gate | up] */
    adapter_forward(a->gu, 2 * F, &(Proj){LORA_GATE, mlp_in, N, D, F}, a, w, ctx);
    adapter_forward(a->gu + F, 2 * F, &(Proj){LORA_UP, mlp_in, N, D, F}, a, w, ctx);
    bool m_kept = glu_forward(a->m, a->gu, c, N, ctx->prod);
    if (post) { /* x_out = x_mid + norm(m Wdown^T) */
        proj_forward_kept(a->d, &(Proj){LORA_DOWN, a->m, N, F, D}, m_kept, a, w, ctx);
        rmsnorm_residual_forward(x_out, a->mlp_rstd, a->x_mid, a->d, gain(w->mlp_norm, c), N, D, eps);
    } else { /* x_out = x_mid + m Wdown^T */
        proj_forward_kept(x_out, &(Proj){LORA_DOWN, a->m, N, F, D}, m_kept, a, w, ctx);
        residual_forward(x_out, x_out, a->x_mid, N * D);
    }
}

void block_forward(real* x_out, LayerActs* a, const real* x_in, const LayerWeights* w, size_t l,
                   const BlockCtx* ctx_all) {
    BlockCtx at = *ctx_all; /* this layer's: its LoRA dropout keys */
    at.layer = l;
    const BlockCtx* ctx = &at;
    block_qkv_forward(a, x_in, w, l, ctx);
    AttnShape as = attn_shape(l, ctx);
    attention_forward(a->att, a->lse, a->q, a->k, a->v, &as);
    block_out_forward(x_out, a, x_in, w, ctx);
}

/* The MLP half, x_out = x_mid + [norm](m Wdown^T): dx holds dx_out on entry and dx_mid on return */
static void mlp_backward(real* dx, LayerWeights* dw, LayerActs* a, const LayerWeights* w, BlockScratch* s,
                         const BlockCtx* ctx) {
    const ModelConfig* c = ctx->cfg;
    size_t N = ctx->B * ctx->T, D = c->D, F = c->F;
    const real* dd = dx;
    if (cfg_post_norms(c)) {
        rmsnorm_backward(s->dd, dw->mlp_norm, dx, a->d, gain(w->mlp_norm, c), a->mlp_rstd, s->norm_work, N, D, false);
        dd = s->dd;
    }
    proj_backward(s->dm, false, dd, &(Proj){LORA_DOWN, a->m, N, F, D}, a, w, dw, s, ctx);
    real* dgu = a->gu; /* rows [dgate | dup], in place of [gate | up]: nothing reads those after this */
    bool dgu_kept = glu_backward(dgu, s->dm, c, N, ctx->prod);
    /* the MLP's input: norm(x_mid), whose gradient is written first and then read by the norm after dm has read
       dx (as dd); or x_mid itself, whose gradient dx takes the sums directly */
    bool ff_norm = cfg_traits(c)->ff_pre_norm;
    const real* mlp_in = ff_norm ? a->h2 : a->x_mid;
    real* dmlp_in = ff_norm ? s->dmlp_in : dx;
    LinearPair gate_up = {w->gate, w->up, dw->gate, dw->up, gate_up_join(w), dgu_kept};
    linear_pair_backward(ctx->prod, dmlp_in, dgu, mlp_in, &gate_up, N, D, F, !ff_norm);
    adapter_backward(dmlp_in, dgu, 2 * F, &(Proj){LORA_GATE, mlp_in, N, D, F}, a, w, dw, s, ctx);
    adapter_backward(dmlp_in, dgu + F, 2 * F, &(Proj){LORA_UP, mlp_in, N, D, F}, a, w, dw, s, ctx);
    if (ff_norm)
        rmsnorm_backward(dx, ff_in_norm(dw, c), s->dmlp_in, a->x_mid, gain(ff_in_norm(w, c), c), ff_in_rstd(a, c),
                         s->norm_work, N, D, true);
}

/* From the gradients s->dq, s->dk, s->dv of the rotated q, k and of v to the attention input h and the block's
   input: the rotation (and RePo's z), QK-norm, the three projections, RePo's module and input_layernorm; dx
   holds dx_mid on entry (already read) and dx_in on return */
static void qkv_backward(real* dx, LayerWeights* dw, LayerActs* a, const real* x_in, const LayerWeights* w, size_t l,
                         BlockScratch* s, const BlockCtx* ctx) {
    products_forget(ctx->prod); /* a copy of h from another layer (recompute reuses buffers) never counts */
    const ModelConfig* c = ctx->cfg;
    size_t N = ctx->B * ctx->T, D = c->D, qd = c->H * cfg_hd(c), kvd = c->KVH * cfg_hd(c);
    /* rotation: gradients of the un-rotated q, k (and of RePo's z) */
    const real* pos = layer_positions(a, l, ctx);
    real* dqn = s->dq;
    real* dkn = s->dk;
    bool learned = c->pos[l] == POS_REPO && !ctx->force_pos;
    if (pos) {
        rope_backward(s->dqn, s->dkn, learned ? s->dz : NULL, s->dq, s->dk, a->q, a->k, pos, layer_rope(l, ctx),
                      (RopeShape){N, c->H, c->KVH, c->KVH});
        dqn = s->dqn;
        dkn = s->dkn;
    }
    /* projections into the attention input h: input_layernorm(x), whose gradient is written first (after datt
       has read dx as do_); or x itself, whose gradient dx takes the sums directly */
    bool in_norm = cfg_traits(c)->input_norm;
    const real* h = in_norm ? a->h : x_in;
    real* dh = in_norm ? s->dh : dx;
    if (cfg_qk_norm(c)) { /* per token (the whole vector) or per head: the rows of the forward */
        size_t qh = cfg_qk_norm_heads(c, c->H), kh = cfg_qk_norm_heads(c, c->KVH);
        rmsnorm_backward(s->dq_pre, dw->q_norm, dqn, a->q_pre, gain(w->q_norm, c), a->q_rstd, s->norm_work, N * qh,
                         qd / qh, false);
        rmsnorm_backward(s->dk_pre, dw->k_norm, dkn, a->k_pre, gain(w->k_norm, c), a->k_rstd, s->norm_work, N * kh,
                         kvd / kh, false);
        dqn = s->dq_pre;
        dkn = s->dk_pre;
    }
    proj_backward(dh, !in_norm, dqn, &(Proj){LORA_Q, h, N, D, qd}, a, w, dw, s, ctx);
    proj_backward(dh, true, dkn, &(Proj){LORA_K, h, N, D, kvd}, a, w, dw, s, ctx);
    proj_backward(dh, true, s->dv, &(Proj){LORA_V, h, N, D, kvd}, a, w, dw, s, ctx);
    if (learned) {
        if (ctx->repo_p > 0) repo_pdrop_backward(s->dz, ctx->repo_p, N * c->KVH);
        RepoWeights rw = repo_weights(w);
        RepoGrads rg = {dw->repo_gate, dw->repo_content, dw->repo_final};
        repo_backward(ctx->prod, dh, &rg, s->dz, &a->repo, h, &rw, s->repo_scratch,
                      (RepoDims){N, D, cfg_dp(c), c->KVH});
    }
    if (in_norm)
        rmsnorm_backward(dx, dw->in_norm, s->dh, x_in, gain(w->in_norm, c), a->h_rstd, s->norm_work, N, D, true);
}

/* Every buffer of the backward is written first (add = false) and then summed into (add = true), so
   nothing is cleared before use. The residual stream's gradient dx is summed into in place: each skip path
   passes it through unchanged, and each branch adds its input gradient once its own norm has read dx. */
void block_backward(real* dx, LayerWeights* dw, LayerActs* a, const real* x_in, const LayerWeights* w, size_t l,
                    BlockScratch* s, const BlockCtx* ctx_all) {
    BlockCtx at = *ctx_all; /* this layer's: its LoRA dropout keys, as block_forward made them */
    at.layer = l;
    const BlockCtx* ctx = &at;
    const ModelConfig* c = ctx->cfg;
    size_t N = ctx->B * ctx->T, D = c->D, qd = c->H * cfg_hd(c);

    mlp_backward(dx, dw, a, w, s, ctx); /* dx: dx_out, then dx_mid */

    /* attention half: x_mid = x + [norm](att Wo^T); dx: dx_mid, then dx_in */
    const real* do_ = dx;
    if (cfg_post_norms(c)) {
        rmsnorm_backward(s->do_, dw->attn_norm, dx, a->o, gain(w->attn_norm, c), a->attn_rstd, s->norm_work, N, D,
                         false);
        do_ = s->do_;
    }
    proj_backward(s->datt, false, do_, &(Proj){LORA_O, a->att, N, qd, D}, a, w, dw, s, ctx);
    AttnShape as = attn_shape(l, ctx);
    attention_backward(s->dq, s->dk, s->dv, s->datt, a->att, a->lse, a->q, a->k, a->v, &as);
    qkv_backward(dx, dw, a, x_in, w, l, s, ctx);
}
