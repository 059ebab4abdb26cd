/* The parameter list and its views (docs/design.md, "Memory model"; the names: docs/formats.md, "Hugging Face checkpoint directory"). */
#include "model/tensors.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/bf16.h"

/* where a per-layer tensor kind exists */
typedef enum {
    IN_ALL,
    IN_INPUT_NORM,
    IN_ATTN_NORM,
    IN_POST_NORMS,
    IN_FF_OWN_NORM,
    IN_QK_NORM,
    IN_QKV_BIAS,
    IN_O_BIAS,
    IN_REPO
} KindWhere;

/* one row per per-layer tensor kind: its HF suffix and where it exists; a bias follows its weight */
typedef struct {
    TensorKind kind;
    const char* suffix;
    KindWhere where;
} LayerKindInfo;

static const LayerKindInfo LAYER_KINDS[] = {
    {TK_WQ, "self_attn.q_proj.weight", IN_ALL},
    {TK_BQ, "self_attn.q_proj.bias", IN_QKV_BIAS},
    {TK_WK, "self_attn.k_proj.weight", IN_ALL},
    {TK_BK, "self_attn.k_proj.bias", IN_QKV_BIAS},
    {TK_WV, "self_attn.v_proj.weight", IN_ALL},
    {TK_BV, "self_attn.v_proj.bias", IN_QKV_BIAS},
    {TK_WO, "self_attn.o_proj.weight", IN_ALL},
    {TK_BO, "self_attn.o_proj.bias", IN_O_BIAS},
    {TK_Q_NORM, "self_attn.q_norm.weight", IN_QK_NORM},
    {TK_K_NORM, "self_attn.k_norm.weight", IN_QK_NORM},
    {TK_REPO_GATE, "self_attn.gate_map.weight", IN_REPO},
    {TK_REPO_CONTENT, "self_attn.content_map.weight", IN_REPO},
    {TK_REPO_FINAL, "self_attn.final_map.weight", IN_REPO},
    {TK_IN_NORM, "input_layernorm.weight", IN_INPUT_NORM},
    {TK_ATTN_NORM, "post_attention_layernorm.weight", IN_ATTN_NORM},
    {TK_FF_NORM, "pre_feedforward_layernorm.weight", IN_FF_OWN_NORM},
    {TK_MLP_NORM, "post_feedforward_layernorm.weight", IN_POST_NORMS},
    {TK_GATE, "mlp.gate_proj.weight", IN_ALL},
    {TK_UP, "mlp.up_proj.weight", IN_ALL},
    {TK_DOWN, "mlp.down_proj.weight", IN_ALL},
};

/* post_attention_layernorm normalises o (post_norms) or the MLP's input (ff_pre_norm); with both, the MLP's
   input has its own pre_feedforward_layernorm */
static bool kind_exists(KindWhere where, const ModelConfig* c, size_t l) {
    const BlockTraits* t = cfg_traits(c);
    switch (where) {
    case IN_INPUT_NORM: return t->input_norm;
    case IN_ATTN_NORM: return t->post_norms || t->ff_pre_norm;
    case IN_POST_NORMS: return t->post_norms;
    case IN_FF_OWN_NORM: return t->post_norms && t->ff_pre_norm;
    case IN_QK_NORM: return cfg_qk_norm(c);
    case IN_QKV_BIAS: return cfg_qkv_bias(c);
    case IN_O_BIAS: return cfg_o_bias(c);
    case IN_REPO: return c->pos[l] == POS_REPO;
    default: return true;
    }
}
#define N_LAYER_KINDS (sizeof(LAYER_KINDS) / sizeof(LAYER_KINDS[0]))

TensorKind lora_target_kind(LoraTarget t) {
    static const TensorKind K[LORA_N_TARGETS] = {TK_WQ, TK_WK, TK_WV, TK_WO, TK_GATE, TK_UP, TK_DOWN};
    return K[t];
}

/* the shape of a tensor kind under cfg: [out, in] or [n]; lt: the adapted projection of a LoRA kind */
static size_t kind_shape(TensorKind k, LoraTarget lt, const ModelConfig* c, size_t shape[2]) {
    size_t hd = cfg_hd(c), q = c->H * hd, kv = c->KVH * hd;
    size_t w[2];
    switch (k) {
    case TK_LORA_A:
        kind_shape(lora_target_kind(lt), lt, c, w);
        shape[0] = c->lora_rank;
        shape[1] = w[1];
        return 2;
    case TK_LORA_B:
        kind_shape(lora_target_kind(lt), lt, c, w);
        shape[0] = w[0];
        shape[1] = c->lora_rank;
        return 2;
    case TK_EMBED:
    case TK_LM_HEAD:
        shape[0] = c->V;
        shape[1] = c->D;
        return 2;
    case TK_WQ:
        shape[0] = q;
        shape[1] = c->D;
        return 2;
    case TK_WK:
    case TK_WV:
        shape[0] = kv;
        shape[1] = c->D;
        return 2;
    case TK_WO:
        shape[0] = c->D;
        shape[1] = q;
        return 2;
    case TK_Q_NORM: shape[0] = q / cfg_qk_norm_heads(c, c->H); return 1; /* per head: [hd] */
    case TK_K_NORM: shape[0] = kv / cfg_qk_norm_heads(c, c->KVH); return 1;
    case TK_BQ: shape[0] = q; return 1;
    case TK_BK:
    case TK_BV: shape[0] = kv; return 1;
    case TK_BO: shape[0] = c->D; return 1;
    case TK_REPO_GATE:
    case TK_REPO_CONTENT:
        shape[0] = cfg_dp(c);
        shape[1] = c->D;
        return 2;
    case TK_REPO_FINAL:
        shape[0] = c->KVH;
        shape[1] = cfg_dp(c);
        return 2;
    case TK_GATE:
    case TK_UP:
        shape[0] = c->F;
        shape[1] = c->D;
        return 2;
    case TK_DOWN:
        shape[0] = c->D;
        shape[1] = c->F;
        return 2;
    case TK_FINAL_NORM:
    case TK_IN_NORM:
    case TK_ATTN_NORM:
    case TK_FF_NORM:
    case TK_MLP_NORM: shape[0] = c->D; return 1;
    default: DIE("unknown tensor kind %d", (int)k);
    }
}

static void add_tensor(TensorTable* tt, size_t* cap, TensorKind kind, LoraTarget lt, int layer, const char* name,
                       const ModelConfig* c, const char* const* frozen, size_t n_frozen) {
    if (tt->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        TensorInfo* grown = mallocCheck(*cap * sizeof(TensorInfo));
        if (tt->n) memcpy(grown, tt->t, tt->n * sizeof(TensorInfo));
        free(tt->t);
        tt->t = grown;
    }
    TensorInfo* t = &tt->t[tt->n++];
    memset(t, 0, sizeof(*t));
    t->kind = kind;
    t->layer = layer;
    CHECK(strlen(name) < TENSOR_NAME_LEN, "tensor name too long: %s", name);
    strcpy(t->name, name);
    t->ndim = kind_shape(kind, lt, c, t->shape);
    t->numel = t->ndim == 2 ? mulCheck(t->shape[0], t->shape[1], name) : t->shape[0];
    t->is_lora = kind == TK_LORA_A || kind == TK_LORA_B;
    t->lora_target = lt;
    t->is_repo = kind == TK_REPO_GATE || kind == TK_REPO_CONTENT || kind == TK_REPO_FINAL;
    bool is_frozen = c->lora_rank && !t->is_lora && !t->is_repo; /* LoRA trains adapters (and RePo) only */
    for (size_t i = 0; i < n_frozen; i++) is_frozen |= fnmatch(frozen[i], name, 0) == 0;
    /* a frozen adapter stays F32: it is initialised and lives in the adapter file, not the base */
    t->bf16 = c->base_bf16 && is_frozen && t->ndim == 2 && layer >= 0 && !t->is_lora;
    t->offset = t->bf16 ? tt->n_bf16 : tt->n_params;
    *(t->bf16 ? &tt->n_bf16 : &tt->n_params) += t->numel;
    t->grad_offset = is_frozen ? NO_GRAD : tt->n_grads;
    if (!is_frozen) tt->n_grads += t->numel;
    t->is_norm = kind == TK_FINAL_NORM || kind == TK_Q_NORM || kind == TK_K_NORM || kind == TK_IN_NORM ||
                 kind == TK_ATTN_NORM || kind == TK_FF_NORM || kind == TK_MLP_NORM;
    t->is_bias = kind == TK_BQ || kind == TK_BK || kind == TK_BV || kind == TK_BO;
    t->is_embedding = kind == TK_EMBED; /* the input embedding only: an untied lm_head is a Linear weight */
}

void tensor_table_build(TensorTable* tt, const ModelConfig* c, const char* const* frozen, size_t n_frozen) {
    memset(tt, 0, sizeof(*tt));
    size_t cap = 0;
    char name[TENSOR_NAME_LEN];
    add_tensor(tt, &cap, TK_EMBED, 0, -1, "model.embed_tokens.weight", c, frozen, n_frozen);
    for (size_t l = 0; l < c->L; l++) {
        for (size_t i = 0; i < N_LAYER_KINDS; i++) {
            const LayerKindInfo* k = &LAYER_KINDS[i];
            if (!kind_exists(k->where, c, l)) continue;
            snprintf(name, sizeof(name), "model.layers.%zu.%s", l, k->suffix);
            add_tensor(tt, &cap, k->kind, 0, (int)l, name, c, frozen, n_frozen);
            for (int lt = 0; lt < LORA_N_TARGETS; lt++) {
                if (lora_target_kind((LoraTarget)lt) != k->kind || !cfg_lora_on(c, (LoraTarget)lt)) continue;
                size_t stem = strlen(name) - strlen("weight"); /* "...q_proj." */
                snprintf(name + stem, sizeof(name) - stem, "lora_A.weight");
                add_tensor(tt, &cap, TK_LORA_A, (LoraTarget)lt, (int)l, name, c, frozen, n_frozen);
                snprintf(name + stem, sizeof(name) - stem, "lora_B.weight");
                add_tensor(tt, &cap, TK_LORA_B, (LoraTarget)lt, (int)l, name, c, frozen, n_frozen);
            }
        }
    }
    for (size_t i = 1; i < tt->n; i++) { /* t[0] is embed_tokens, then layer 0's tensors, layer 1's, ... */
        int l = tt->t[i].layer, prev = tt->t[i - 1].layer;
        CHECK(l == prev || l == prev + 1, "tensor table: %s out of layer order", tt->t[i].name);
        if (l != prev) tt->layer_range[l].first = i;
        tt->layer_range[l].end = i + 1;
    }
    for (size_t l = 0; l < c->L; l++) { /* each layer's BF16 run; the widening buffer fits the largest */
        size_t start = 0, n = 0;
        for (size_t i = tt->layer_range[l].first; i < tt->layer_range[l].end; i++) {
            const TensorInfo* t = &tt->t[i];
            if (!t->bf16) continue;
            if (!n) start = t->offset;
            CHECK(t->offset == start + n, "tensor table: %s is not next in its layer's BF16 run", t->name);
            n += t->numel;
        }
        tt->layer_range[l].bf16_start = start;
        tt->layer_range[l].n_bf16 = n;
        if (n > tt->max_layer_bf16) tt->max_layer_bf16 = n;
    }
    add_tensor(tt, &cap, TK_FINAL_NORM, 0, -1, "model.norm.weight", c, frozen, n_frozen);
    if (!c->tie_embeddings) add_tensor(tt, &cap, TK_LM_HEAD, 0, -1, "lm_head.weight", c, frozen, n_frozen);
}

void tensor_table_free(TensorTable* tt) {
    free(tt->t);
    memset(tt, 0, sizeof(*tt));
}

long tensor_table_find(const TensorTable* tt, const char* name) {
    for (size_t i = 0; i < tt->n; i++)
        if (!strcmp(tt->t[i].name, name)) return (long)i;
    return -1;
}

/* the field of a layer view that holds tensor kind k */
static real** layer_field(LayerWeights* lw, TensorKind k) {
    switch (k) {
    case TK_WQ: return &lw->wq;
    case TK_WK: return &lw->wk;
    case TK_WV: return &lw->wv;
    case TK_WO: return &lw->wo;
    case TK_BQ: return &lw->bq;
    case TK_BK: return &lw->bk;
    case TK_BV: return &lw->bv;
    case TK_BO: return &lw->bo;
    case TK_Q_NORM: return &lw->q_norm;
    case TK_K_NORM: return &lw->k_norm;
    case TK_REPO_GATE: return &lw->repo_gate;
    case TK_REPO_CONTENT: return &lw->repo_content;
    case TK_REPO_FINAL: return &lw->repo_final;
    case TK_IN_NORM: return &lw->in_norm;
    case TK_ATTN_NORM: return &lw->attn_norm;
    case TK_FF_NORM: return &lw->ff_norm;
    case TK_MLP_NORM: return &lw->mlp_norm;
    case TK_GATE: return &lw->gate;
    case TK_UP: return &lw->up;
    case TK_DOWN: return &lw->down;
    default: DIE("tensor kind %d is not a layer tensor", (int)k);
    }
}

void weights_view(ModelWeights* w, const TensorTable* tt, const ModelConfig* c, real* base, bool use_grad) {
    memset(w, 0, sizeof(*w));
    for (size_t i = 0; i < tt->n; i++) {
        const TensorInfo* t = &tt->t[i];
        size_t off = use_grad ? t->grad_offset : t->bf16 ? NO_GRAD : t->offset;
        real* p = off == NO_GRAD ? NULL : base + off;
        if (t->kind == TK_EMBED) w->embed = p;
        else if (t->kind == TK_FINAL_NORM) w->final_norm = p;
        else if (t->kind == TK_LM_HEAD) w->lm_head = p;
        else if (t->kind == TK_LORA_A) w->layer[t->layer].lora_a[t->lora_target] = p;
        else if (t->kind == TK_LORA_B) w->layer[t->layer].lora_b[t->lora_target] = p;
        else *layer_field(&w->layer[t->layer], t->kind) = p;
    }
    if (c->tie_embeddings) w->lm_head = w->embed; /* the head's gradient adds into dE */
}

void layer_weights_widen(LayerWeights* out, const LayerWeights* w, const TensorTable* tt, const uint16_t* bf16,
                         real* buf, int layer) {
    *out = *w;
    size_t first = tt->layer_range[layer].first, end = tt->layer_range[layer].end;
    size_t start = tt->layer_range[layer].bf16_start, n = tt->layer_range[layer].n_bf16;
    const uint16_t* src = bf16 + start;
#pragma omp parallel for
    for (size_t k = 0; k < n; k++) buf[k] = (real)bf16_to_f32(src[k]);
    for (size_t i = first; i < end; i++)
        if (tt->t[i].bf16) *layer_field(out, tt->t[i].kind) = buf + (tt->t[i].offset - start);
}
