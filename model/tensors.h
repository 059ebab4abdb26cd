/* The parameter list, written once (docs/design.md, "Memory model"): every tensor's Hugging Face
   name, shape, offset in the parameter arena and offset in the gradient arena
   (frozen tensors have none), plus the named per-layer views built from it. */
#ifndef REPOC_TENSORS_H
#define REPOC_TENSORS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/real.h"
#include "model/config.h"

/* What a tensor of the table is: its shape and initialisation follow from it (model/tensors.c) */
typedef enum {
    /* global */
    TK_EMBED,
    TK_FINAL_NORM,
    TK_LM_HEAD,
    /* attention */
    TK_WQ,
    TK_WK,
    TK_WV,
    TK_WO,
    TK_Q_NORM,
    TK_K_NORM,
    /* RePo module */
    TK_REPO_GATE,
    TK_REPO_CONTENT,
    TK_REPO_FINAL,
    /* block norms */
    TK_IN_NORM,
    TK_ATTN_NORM,
    TK_MLP_NORM,
    /* MLP */
    TK_GATE,
    TK_UP,
    TK_DOWN,
    /* attention biases (Qwen2: q, k, v; Qwen3 with attention_bias: q, k, v, o) */
    TK_BQ,
    TK_BK,
    TK_BV,
    TK_BO,
    /* Gemma-3's pre_feedforward_layernorm */
    TK_FF_NORM,
    /* LoRA adapter of one projection */
    TK_LORA_A,
    TK_LORA_B,
    TK_COUNT
} TensorKind;

#define TENSOR_NAME_LEN 96
#define NO_GRAD ((size_t)-1)

typedef struct {
    TensorKind kind;
    int layer;                  /* -1 for global tensors */
    char name[TENSOR_NAME_LEN]; /* Hugging Face name */
    size_t ndim;
    size_t shape[2]; /* [out, in] for matrices */
    size_t numel;
    size_t offset;                       /* into the parameter arena */
    size_t grad_offset;                  /* into the gradient arena, NO_GRAD when frozen */
    bool is_norm, is_embedding, is_repo; /* for optimizer groups; is_embedding: embed_tokens only */
    bool is_bias;                        /* TK_BQ .. TK_BO: not decayed unless optim.decay_biases */
    bool is_lora;                        /* TK_LORA_A / TK_LORA_B: A [r, in], B [out, r] */
    /* a frozen layer matrix kept in BF16 (cfg->base_bf16): offset is into the BF16 arena, and the layer views hold NULL
       until layer_weights_widen */
    bool bf16;
    LoraTarget lora_target; /* the projection a LoRA tensor adapts */
} TensorInfo;

typedef struct {
    TensorInfo* t;
    size_t n;
    size_t n_params;       /* total reals of the parameter arena */
    size_t n_grads;        /* total reals of the gradient arena */
    size_t n_bf16;         /* total elements of the BF16 arena */
    size_t max_layer_bf16; /* the most BF16 elements of one layer: the widening buffer */
    /* per layer: its tensors t[first..end) and its BF16 tensors, one run bf16[bf16_start, bf16_start + n_bf16) of
       the BF16 arena in table order */
    struct {
        size_t first, end, bf16_start, n_bf16;
    } layer_range[MAX_LAYERS];
} TensorTable;

/* Per-layer views; a pointer is NULL when the layer has no such tensor (or, for
   gradients, when it is frozen). */
typedef struct {
    real *wq, *wk, *wv, *wo;        /* [H*hd,D] [KVH*hd,D] [KVH*hd,D] [D,H*hd] */
    real *bq, *bk, *bv, *bo;        /* [H*hd] [KVH*hd] [KVH*hd] [D], Qwen biases (NULL: none) */
    real *q_norm, *k_norm;          /* [H*hd] [KVH*hd] OLMo-2; [hd] [hd] Qwen3 (shared by the heads) */
    real *repo_gate, *repo_content; /* [D/8, D], RePo layers */
    real* repo_final;               /* [KVH, D/8] */
    real* in_norm;                  /* [D] Llama input_layernorm */
    real* attn_norm;                /* [D] post_attention_layernorm: on o (OLMo-2, Gemma-3), else the MLP's input */
    real* ff_norm;                  /* [D] Gemma-3 pre_feedforward_layernorm: the MLP's input */
    real* mlp_norm;                 /* [D] OLMo-2, Gemma-3 post_feedforward_layernorm */
    real *gate, *up, *down;         /* [F,D] [F,D] [D,F] */
    real* lora_a[LORA_N_TARGETS];   /* [r, in] of each adapted projection, by LoraTarget */
    real* lora_b[LORA_N_TARGETS];   /* [out, r] */
} LayerWeights;

typedef struct {
    real* embed;      /* [V,D] */
    real* final_norm; /* [D] */
    real* lm_head;    /* [V,D]; == embed when tied */
    LayerWeights layer[MAX_LAYERS];
} ModelWeights;

/* Build the list for cfg. frozen_patterns: n glob patterns (fnmatch) over the
   Hugging Face names; matching tensors get no gradient. With LoRA (cfg->lora_rank
   > 0) each adapted projection W is followed by W's "lora_A.weight" and
   "lora_B.weight" (W's name with ".weight" replaced), and every tensor but
   those and the RePo module's is frozen. */
void tensor_table_build(TensorTable* tt, const ModelConfig* cfg, const char* const* frozen_patterns, size_t n_frozen);
void tensor_table_free(TensorTable* tt);
/* the tensor kind a LoRA target adapts (TK_WQ, ..., TK_DOWN) */
TensorKind lora_target_kind(LoraTarget t);
/* index of the tensor with this name, or -1 */
long tensor_table_find(const TensorTable* tt, const char* name);

/* Named views into an arena: params (use_grad false) or grads (use_grad true). */
void weights_view(ModelWeights* w, const TensorTable* tt, const ModelConfig* cfg, real* base, bool use_grad);

/* A copy of layer l's view with its BF16 tensors widened to real into buf (tt->max_layer_bf16): the layer's
   run of the BF16 arena in one parallel loop, then its tensors' views into buf. */
void layer_weights_widen(LayerWeights* out, const LayerWeights* w, const TensorTable* tt, const uint16_t* bf16,
                         real* buf, int layer);

#endif
