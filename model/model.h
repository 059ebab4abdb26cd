/* The decoder (docs/design.md, "One training step", "Memory model"): one arena each for parameters, gradients and
   activations (plus one for backward work space), named views into them, and
   forward / backward / zero_grad. Everything is sized at build time for (B, T);
   nothing is allocated inside a step. The batch (tokens, targets, their weights, document ids, the LoRA
   dropout key) is an argument of forward and backward (data/batch.h), never a field of the model. */
#ifndef REPOC_MODEL_H
#define REPOC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/real.h"
#include "data/batch.h"
#include "model/block.h"
#include "model/config.h"
#include "model/products.h"
#include "model/rope.h"
#include "model/tensors.h"

/* How activations are kept; the results do not depend on them (tests/test_recompute.c).
   recompute: keep only each block's input res[l] and one layer's activations,
     shared by all layers; backward runs block l's forward again (same kernels,
     same order) just before block l's backward, so gradients are bit-identical.
   head_chunk: rows of logits held at once (0 = all B*T rows). With fewer than
     B*T, forward computes the LM head and the loss chunk by chunk and backward
     recomputes each chunk's logits; the full (B*T,V) logits never exist, so a
     forward without targets (which returns logits) needs head_chunk 0.
   compute_bf16: every product takes BF16 operands (model/products.h): the model keeps a BF16 mirror of
     its parameters and a work space for the activation operands.
   z_loss: the coefficient c of OLMo-2's z-loss, c lse² per target added to the objective (0 = off). */
typedef struct {
    bool recompute;
    size_t head_chunk;
    bool compute_bf16;
    double z_loss;
} ModelOpts;

/* compute_bf16's context of the products (docs/design.md, "Products and their precision"), apart from the
   Model, which points to it: the BF16 mirror is a cache of the parameters, brought up to date by any pass
   that reads it (generation's too, through a const Model), and every product writes the context's work
   space and counter. */
typedef struct {
    Bf16Products prod; /* regions: params -> params_bf16, widened -> the current layer's base_bf16 */
    bool fresh;        /* params_bf16 holds the current params (model_params_changed clears it) */
} ModelProducts;

typedef struct {
    ModelConfig cfg;
    TensorTable tensors;
    size_t B, T;
    ModelOpts opts;
    size_t head_rows; /* rows of the logits buffer: min(head_chunk, B*T), or B*T */

    real* params;        /* tensors.n_params */
    real* grads;         /* tensors.n_grads (frozen tensors have none) */
    ModelWeights w, dw;  /* named views (w's BF16 tensors are NULL: see layer_weights_widen) */
    uint16_t* base_bf16; /* tensors.n_bf16: frozen layer matrices in BF16 (cfg.base_bf16) */
    real* widened;       /* tensors.max_layer_bf16: the current layer's BF16 tensors as real */
    LayerWeights wl;     /* the current layer's view with widened tensors */

    /* opts.compute_bf16: the BF16 copies the products read (docs/design.md, "Products and their precision") */
    bf16* params_bf16;  /* bf16_round_nearest of params[mirror_from ..]: rewritten by AdamW's pass and when stale */
    size_t mirror_from; /* the input embedding's size when untied (no product reads it), else 0 */
    bf16* bf16_work;    /* 2 x products_work(): the activation operands, rounded per product */
    ModelProducts* products; /* the BF16 context; NULL without compute_bf16 (FP32 products) */

    real* acts; /* activation arena */
    size_t n_acts;
    real* res[MAX_LAYERS + 1]; /* (N,D) residual stream: res[0] embeddings, res[l+1] after layer l */
    LayerActs la[MAX_LAYERS];
    real *final_out, *final_rstd;  /* (N,D) (N) final norm */
    real *logits, *lse, *losses;   /* (head_rows,V) (N) (N); backward turns logits into dlogits */
    real* pos_seq;                 /* (N,KVH) integer positions t */
    double *rope_cos, *rope_sin;   /* (T,hd/2) the angles of positions 0 .. T-1 when a layer is rope, else NULL */
    double *local_cos, *local_sin; /* the same for rope_local, when a sliding layer is rope */

    real* scratch; /* backward work space */
    size_t n_scratch;
    BlockScratch bs;
    real* dres;   /* (N,D) the residual stream's gradient, summed into by each block_backward */
    real* dfinal; /* (N,D) the final norm's output gradient */

    RopeTable rope;
    RopeTable rope_local; /* Gemma-3's sliding layers: rope_local_base_freq, no scaling (unset without them) */

    real* lora_xd;      /* (N, max(D, H*hd, F)) the dropout's work space, when cfg.lora_dropout > 0 */
    real* attn_work;    /* attention's k and v in BF16 pairs, its dK and dV dense (AttnShape.work), when attention
                           takes BF16 operands */
    int32_t* doc_start; /* (N) the document starts of the last forward's doc_ids (attention.h) */
    DocSpans spans;     /* a view of it, passed to the blocks while masked */
    int32_t* win_start; /* (N) the sliding layers' starts (window_starts over the documents'), or NULL */
    DocSpans win_spans; /* a view of it */
    bool masked;        /* the last forward had doc_ids; pos_seq then holds t - start_t */

    /* what backward reads of the last forward, besides the activations */
    bool has_loss;         /* forward ran with targets, so backward may run */
    bool logits_hold_grad; /* model_forward_train left G (xent_forward_grad) in the logits buffer */
    double weight_sum;     /* its Loss.weight_sum, the loss's denominator */

    /* when set, model_backward calls it as soon as layer l's gradients are final, and with l = cfg.L once the
       final norm's and an untied LM head's are (before any layer's): the trainer starts summing them over the
       ranks while the layers below run their backward. The input embedding's are final when it returns. */
    void (*layer_grads_done)(void* ctx, size_t l);
    void* layer_grads_ctx;
} Model;

/* What a forward returns: the means over the batch's n_valid targets that are not -1, each weighted by w =
   the batch's target_weights (1 without them); all 0 without targets */
typedef struct {
    double loss;    /* the objective, cross-entropy + z-loss term: what backward differentiates */
    double z;       /* its z-loss term, Σ w c lse² / weight_sum (0 when z_loss is 0); loss - z = the cross-entropy */
    size_t n_valid; /* targets that are not -1 */
    double weight_sum; /* their summed weights (= n_valid without target_weights) */
} Loss;

/* How model_init_weights draws a fresh model: every tensor from its own stream seeded by (seed, its name),
   matrices N(0, std²) truncated at ±3σ, RePo map i (gate, content, final: Wg, Wc, Wz) N(0, repo_std[i]²)
   (0 = 0.02) */
typedef struct {
    uint64_t seed;
    double std;
    double repo_std[3];
} ModelInit;

/* Validate cfg, build the tensor list (frozen_patterns: fnmatch globs over HF
   names that get no gradient), allocate every arena for batches of (B, T) and
   zero them. Prints the sizes when verbose. */
void model_build(Model* m, const ModelConfig* cfg, size_t B, size_t T, const char* const* frozen_patterns,
                 size_t n_frozen, bool verbose);
/* The same with activation options (model_build: all activations kept, whole logits). */
void model_build_opts(Model* m, const ModelConfig* cfg, size_t B, size_t T, const char* const* frozen_patterns,
                      size_t n_frozen, const ModelOpts* opts, bool verbose);

/* The reals each arena of model_build_opts would hold, counted by the same
   layout functions, without allocating any of them (the memory plan). */
typedef struct {
    size_t params, grads, acts, scratch;
    size_t bf16, widened; /* a BF16 frozen base (2 bytes each) and its per-layer widening buffer (reals) */
    /* compute_bf16: the parameters' BF16 mirror and the products' work space (2 bytes each) */
    size_t params_bf16, bf16_work;
} ModelArenaSizes;
ModelArenaSizes model_arena_sizes(const ModelConfig* cfg, size_t B, size_t T, const char* const* frozen_patterns,
                                  size_t n_frozen, const ModelOpts* opts);
void model_free(Model* m);

/* Fill every weight: matrices N(0, init->std²) truncated at ±3σ, norms 1; RePo
   weights N(0, 0.02²) truncated at ±3σ (docs/positions.md, "RePo position module"),
   or N(0, init->repo_std[i]²) for map i (gate, content, final) when that is set;
   LoRA A uniform in ±1/sqrt(in) and LoRA B zero, as PEFT initialises them. Each tensor draws from
   its own stream seeded by (init->seed, name), so one tensor's values do not depend
   on which others exist. */
void model_init_weights(Model* m, const ModelInit* init);
void model_init_tensor(Model* m, size_t index, const ModelInit* init);

/* The forward of batch b (b->B, b->T: the model's B and T): tokens, doc_ids and the LoRA dropout flag and
   key as data/batch.h describes them. Returns the loss over b->targets weighted by b->target_weights,
   all 0 without targets (then m->logits holds the logits of every row). */
Loss model_forward(Model* m, const Batch* b);
/* model_forward for a training step that model_backward follows: the same loss, and when the logits
   buffer holds all rows (head_chunk 0) it is left holding the loss gradient rather than the logits
   (xent_forward_grad), which saves backward a pass over the B*T*V logits. */
Loss model_forward_train(Model* m, const Batch* b);
/* The head after the last block, on n rows: normed = final_norm(x) and
   logits = normed lm_head^T. Training and generation both call it.
   logits (n,V)   normed (n,D), rstd (n) saved for backward   x (n,D) */
void model_head_forward(real* logits, real* normed, real* rstd, const real* x, const Model* m, size_t n);
/* Accumulate dloss · ∂loss/∂params into the gradients (dloss = 1, or 1/grad_accum). b: the batch of the
   last forward, unchanged since (its tokens, targets, weights and dropout key are read again). */
void model_backward(Model* m, const Batch* b, double dloss);
void model_zero_grad(Model* m);

/* What m's blocks are run with for batch b: m's products (model_products), tables, positions, masks
   (documents, sliding windows) and b's LoRA dropout and repo_pdrop; no force_pos. forward and backward use
   it; the gradient checker runs single blocks with it, and tests/test_model.c sets force_pos in its copy. */
BlockCtx model_block_ctx(const Model* m, const Batch* b);

/* The parameters were written other than by AdamW's step with the mirror (a load, an init, a test): the
   BF16 mirror is rewritten before the next product. A no-op without compute_bf16. */
void model_params_changed(Model* m);
/* The trained parameters (those with a gradient) in the gradient arena's layout, TensorTable.n_grads reals:
   copied out of m's parameters into dst, or from src back into them (and model_params_changed) */
void model_trained_params_get(const Model* m, real* dst);
void model_trained_params_set(Model* m, const real* src);
/* The context of m's products: NULL (FP32) without compute_bf16, else m's BF16 context with the mirror
   brought up to date first. forward, backward and generation pass it to every op that runs a product. */
Bf16Products* model_products(const Model* m);

#endif
