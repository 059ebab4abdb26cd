/* One decoder block, as its family's BlockTraits (model/config.h) describe it: OLMo-2 ("norm after",
   QK-norm), Llama (pre-norm, GQA), Qwen2 (Llama with q, k, v biases), Qwen3 (Llama with per-head QK-norm) or
   Gemma-3 (Qwen3's attention, pre- and post-norms, GeGLU, sliding-window layers), with its layer's position
   mode (rope, repo or nope). The forward is two flat
   lists of op calls around the attention: block_qkv_forward (up to the rotated
   q, k and v) and block_out_forward (from the attention output to the block's
   output). Training (block_forward) and cached generation (model/generate.c)
   both call these two, so the architecture is written once. The backward runs
   the same list in reverse. */
#ifndef REPOC_BLOCK_H
#define REPOC_BLOCK_H

#include <stddef.h>

#include "common/arena.h"
#include "common/real.h"
#include "model/attention.h"
#include "model/config.h"
#include "model/products.h"
#include "model/repo.h"
#include "model/rope.h"
#include "model/tensors.h"

/* What one layer's forward keeps for backward (N = B*T rows). NULL = not used by the block's traits or the
   layer's position mode. */
typedef struct {
    real *h, *h_rstd;     /* (N,D) (N)  input_norm: input_layernorm(x) */
    real *q_pre, *q_rstd; /* (N,H*hd) (N)  h Wq^T before q_norm; per head: rstd (N,H) */
    real *k_pre, *k_rstd; /* (N,KVH*hd) (N)  per head: rstd (N,KVH) */
    real *q, *k, *v;      /* (N,H*hd) (N,KVH*hd) (N,KVH*hd)  q, k after norm and rotation */
    real* z;              /* (N,KVH)  RePo positions */
    RepoActs repo;        /* (N,D/8) each: the module's gate, content, r */
    real *att, *lse;      /* (N,H*hd) (N,H) */
    real* o;              /* (N,D)  att Wo^T */
    real* x_mid;          /* (N,D)  the residual stream after attention */
    real* attn_rstd;      /* (N)    post_attention_layernorm */
    real* h2;             /* (N,D)  ff_pre_norm: the MLP's input norm(x_mid) */
    real* ff_rstd;        /* (N)    pre_feedforward_layernorm (ff_pre_norm with post_norms) */
    /* (N,2F) each row [gate | up]: the two products side by side (block.c); block_backward overwrites them with their
       gradients [dgate | dup] */
    real* gu;
    real* m;                       /* (N,F)  silu(gate) ⊙ up (GLU_GELU_TANH: gelu_tanh(gate) ⊙ up) */
    real *d, *mlp_rstd;            /* (N,D) (N)  post_norms: m Wdown^T before post_feedforward_layernorm */
    real* lora_ax[LORA_N_TARGETS]; /* (N,r)  x A^T of each LoRA-adapted projection */
} LayerActs;

/* Backward work space shared by all layers (overwritten by each block_backward). */
typedef struct {
    real *dd, *do_;                 /* (N,D) */
    real *dmlp_in, *dh;             /* (N,D), with ff_pre_norm, input_norm (else the residual gradient takes them) */
    real* dm;                       /* (N,F); the gradient of gu goes into LayerActs.gu */
    real *datt, *dq, *dqn, *dq_pre; /* (N,H*hd); dq_pre with QK-norm only */
    real *dk, *dkn, *dk_pre, *dv;   /* (N,KVH*hd); dk_pre with QK-norm only */
    real* dz;                       /* (N,KVH) */
    real* norm_work;                /* (RMSNORM_CHUNKS, max(D, H*hd)): rmsnorm_backward */
    real* repo_scratch;             /* N*D/8: the RePo module's dr */
    real* lora_dax;                 /* (N,r) LoRA backward work space */
} BlockScratch;

/* Everything a block needs besides weights and activations. */
typedef struct {
    const ModelConfig* cfg;
    Bf16Products* prod; /* the context of every product (model/products.h): BF16 operands; NULL: FP32 */
    size_t B, T;
    const RopeTable* rope;       /* the rotation of every layer but the sliding ones */
    const RopeTable* rope_local; /* sliding layers with window_rope (rope_local_base_freq); no other reads it */
    const real* pos_seq;         /* (N,KVH) integer positions t, for rope layers */
    const real* force_pos;       /* (N,KVH) or NULL: a test hook replacing RePo's z (model_block_ctx: NULL) */
    const DocSpans* docs;        /* NULL, or document masking: attention stays within each document */
    const DocSpans* docs_local;  /* the sliding layers' starts (window_starts over docs); NULL without them */
    size_t layer;                /* the block being run (set per layer by the model): a LoRA dropout key */
    double lora_p;               /* LoRA dropout of this forward and its backward; 0: none (evaluation) */
    uint64_t lora_key;           /* its key for this micro-batch */
    real* lora_xd;               /* (N, max(D, H*hd, F)): its work space */
    real* attn_work;             /* AttnShape.work of every layer's attention (one call at a time), or NULL */
    double repo_p;               /* RePo layers rotate by z' = (1 - p) z + p pos_seq (a->z holds z'); 0: z itself */
} BlockCtx;

void layer_acts_layout(LayerActs* a, Cursor* cur, const ModelConfig* cfg, size_t l, size_t N);
void block_scratch_layout(BlockScratch* s, Cursor* cur, const ModelConfig* cfg, size_t N);

/* The half before attention, on N = B*T rows: a->h and h_rstd (input_norm), q_pre,
   k_pre and their rstd (qk_norm), a->q, a->k, a->v, RePo's a->z and a->repo, and
   q, k rotated in place by the layer's positions (ctx->pos_seq for rope,
   ctx->force_pos or a->z for repo). a->k, a->v and a->z may point into a KV cache.
   x_in (N,D)   w: layer l's weights */
void block_qkv_forward(LayerActs* a, const real* x_in, const LayerWeights* w, size_t l, const BlockCtx* ctx);
/* The half after attention, from a->att (N,H*hd): a->o, the residual stream
   a->x_mid, the norms and the SwiGLU MLP, into x_out (N,D). x_out may be x_in
   (in place): x_in is read only before x_out is first written. */
void block_out_forward(real* x_out, LayerActs* a, const real* x_in, const LayerWeights* w, const BlockCtx* ctx);
/* block_qkv_forward, causal attention over the N rows (within documents with ctx->docs), block_out_forward.
   x_out (N,D)   a: this layer's saved activations   x_in (N,D)   w: layer l's weights */
void block_forward(real* x_out, LayerActs* a, const real* x_in, const LayerWeights* w, size_t l, const BlockCtx* ctx);
/* dx (N,D): on entry the gradient of the block's output, on return that of its input (in place)
   dw: layer l's gradients (NULL fields skipped) +=   a, x_in, w as forward saw/saved them. It uses up a:
   a->gu holds its gradient afterwards, so each block_backward needs a block_forward before it. */
void block_backward(real* dx, LayerWeights* dw, LayerActs* a, const real* x_in, const LayerWeights* w, size_t l,
                    BlockScratch* s, const BlockCtx* ctx);

#endif
