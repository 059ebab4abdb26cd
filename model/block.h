/* One decoder block, OLMo-2 ("norm after", QK-norm) or Llama (pre-norm, GQA),
   with its layer's position mode (DESIGN.md §1–2). The forward is a flat list of
   op calls; the backward runs the same list in reverse. */
#ifndef REPOC_BLOCK_H
#define REPOC_BLOCK_H

#include <stddef.h>

#include "common/arena.h"
#include "common/real.h"
#include "model/config.h"
#include "model/rope.h"
#include "model/tensors.h"

/* What one layer's forward keeps for backward (N = B*T rows). NULL = not used
   by this block style or position mode. */
typedef struct {
    real *h, *h_rstd;            /* (N,D) (N)  Llama: input_layernorm(x) */
    real *q_pre, *q_rstd;        /* (N,H*hd) (N)  OLMo-2: x Wq^T before q_norm */
    real *k_pre, *k_rstd;        /* (N,KVH*hd) (N) */
    real *q, *k, *v;             /* (N,H*hd) (N,KVH*hd) (N,KVH*hd)  q, k after norm and rotation */
    real *z;                     /* (N,KVH)  RePo positions */
    real *repo_A, *repo_C, *repo_r;  /* (N,D/8) */
    real *att, *lse;             /* (N,H*hd) (N,H) */
    real *o;                     /* (N,D)  att Wo^T */
    real *x_mid;                 /* (N,D)  the residual stream after attention */
    real *attn_rstd;             /* (N)    post_attention_layernorm */
    real *h2;                    /* (N,D)  Llama: post_attention_layernorm(x_mid) */
    real *g, *u, *m;             /* (N,F)  gate, up, silu(gate) ⊙ up */
    real *d, *mlp_rstd;          /* (N,D) (N)  OLMo-2: m Wdown^T before post_feedforward_layernorm */
} LayerActs;

/* Backward work space shared by all layers (overwritten by each block_backward). */
typedef struct {
    real *dx_mid, *dd, *dmlp_in, *do_, *dh;   /* (N,D) */
    real *dm, *dg, *du;                       /* (N,F) */
    real *datt, *dq, *dqn, *dq_pre;           /* (N,H*hd) */
    real *dk, *dkn, *dk_pre, *dv;             /* (N,KVH*hd) */
    real *dz;                                 /* (N,KVH) */
    real *repo_scratch;                       /* 3*N*D/8 */
} BlockScratch;

/* Everything a block needs besides weights and activations. */
typedef struct {
    const ModelConfig* cfg;
    size_t B, T;
    const RopeTable* rope;
    const real* pos_seq;         /* (N,KVH) integer positions t, for rope layers */
    const real* force_pos;       /* (N,KVH) or NULL: a test hook replacing RePo's z */
} BlockCtx;

void layer_acts_layout(LayerActs* a, Cursor* cur, const ModelConfig* cfg, size_t l, size_t N);
void block_scratch_layout(BlockScratch* s, Cursor* cur, const ModelConfig* cfg, size_t N);

/* x_out (N,D)   a: this layer's saved activations   x_in (N,D)   w: layer l's weights */
void block_forward(real* x_out, LayerActs* a, const real* x_in, const LayerWeights* w, size_t l, const BlockCtx* ctx);
/* dx_in (N,D) +=   dw: layer l's gradients (NULL fields skipped) +=   dx_out (N,D)
   a, x_in, w as forward saw/saved them */
void block_backward(real* dx_in, LayerWeights* dw, const real* dx_out, const LayerActs* a, const real* x_in,
                    const LayerWeights* w, size_t l, BlockScratch* s, const BlockCtx* ctx);

#endif
