/* Generation with a KV cache for every position mode: RePo's z[t] depends on
   token t alone, so a key can be rotated once, when its token arrives, and cached.
   Per layer the cache holds each token's key ALREADY ROTATED and its value:
     rope  at the integer position t,
     repo  at the token's own learned z[t] = f(h_t) (h = the block's raw input
           for OLMo-2, input_layernorm's output for Llama, as block_forward),
     nope  unrotated;
   YaRN acts through the model's RopeTable. A chunk of new tokens runs, per
   layer, block_qkv_forward and block_out_forward of model/block.h (the same
   code as training) and attends over the cache in between. Everything is
   allocated once by gen_build for a context of max_T tokens; prefill, step
   and sampling allocate nothing, except that after gen_allow_growth a call
   that needs more room doubles the cache (up to its limit), copying the
   cached rows: the same values, so the same outputs as a cache built at full
   size. A chunk of little work (a one-token step of
   a small model) runs with the thread count set to 1 and restored afterwards
   (common/threads.h).
   Sliding layers (Gemma-3) keep only the keys their windows can still read,
   in a ring, so their cache does not grow with the context.
   Documents: one cache holds one document, attended in full, as Hugging Face
   generation does. A model trained with document masking (the batch's doc_ids) starts
   the next document with gen_reset: positions restart at 0 and no earlier token
   is attended, which is exactly what the masked training saw (tests/test_doc_mask.c
   checks it token by token). Generation never masks inside the cache: an
   end-of-document token in a prompt does not split it. */
#ifndef REPOC_GENERATE_H
#define REPOC_GENERATE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/real.h"
#include "common/rng.h"
#include "model/block.h"
#include "model/model.h"

typedef struct {
    const Model* m;                    /* weights, config and RopeTable (not owned) */
    size_t max_T;                      /* cache capacity in tokens (allocated) */
    size_t limit_T;                    /* the most it may grow to (gen_allow_growth; else max_T) */
    size_t max_chunk;                  /* most tokens one gen_forward call takes */
    size_t len;                        /* tokens in the cache */
    size_t n_att_bufs;                 /* per-thread score rows of the cache attention */
    double serial_below;               /* chunks of fewer multiply-adds run on one thread (gen_build: 4e6; 0 = never) */
    const volatile sig_atomic_t* stop; /* non-zero: a signal asked to stop; or NULL (gen_stopping) */

    real* arena;         /* one allocation: cache + work space */
    size_t n_arena;      /* its reals */
    real* k[MAX_LAYERS]; /* (rows[l], KVH*hd) rotated keys: position j in row j % rows[l] */
    real* v[MAX_LAYERS]; /* (rows[l], KVH*hd) values */
    /* max_T, or for a sliding layer (Gemma-3) a ring of min(max_T, sliding_window + max_chunk - 1) rows: the window of
       every query of a chunk, with the chunk itself */
    size_t rows[MAX_LAYERS];
    real *k_chunk, *v_chunk; /* (NC, KVH*hd): a sliding layer's new keys and values, before their ring rows */
    real* z[MAX_LAYERS];     /* (max_T, KVH) learned positions; NULL for rope / nope layers */

    /* work space for a chunk of up to NC = max_chunk rows */
    real* x;   /* (NC,D) the residual stream, updated in place layer by layer */
    real* pos; /* (NC,KVH) integer positions of the chunk, for rope layers */
    /* the chunk's activations, shared by all layers (block.h): every rstd field is one (NC) buffer, Llama's h2 is h; k,
       v and z point into layer l's cache while layer l runs */
    LayerActs a;
    /* (NC) a first chunk's sliding-window starts (Gemma-3), or NULL; its own allocation, which a growing cache keeps */
    int32_t* win_start;
    real* scores;                 /* (n_att_bufs, max_T) */
    real *final_out, *final_rstd; /* (D) (1) */
    real* logits;                 /* (V) of the last row of the last chunk */
    real* work;                   /* (V) sampling: top-k selection, then probabilities */
} Generator;

/* Reals gen_build allocates for (cfg, max_T, max_chunk): to check memory before building. */
size_t gen_arena_reals(const ModelConfig* cfg, size_t max_T, size_t max_chunk);
/* Allocate the cache for max_T tokens and work space for chunks of max_chunk
   (<= max_T) tokens; the cache starts empty. m must outlive the generator. */
void gen_build(Generator* g, const Model* m, size_t max_T, size_t max_chunk);
/* Let the cache grow on demand, by doubling, to limit_T tokens (>= max_T). */
void gen_allow_growth(Generator* g, size_t limit_T);
void gen_free(Generator* g);
/* Empty the cache (keeps the allocation). */
void gen_reset(Generator* g);

/* Append tokens (n, 1 <= n <= max_chunk, len + n <= limit_T) at positions
   len .. len+n-1 and return the logits (V) that follow the last of them
   (valid until the next call). */
const real* gen_forward(Generator* g, const int32_t* tokens, size_t n);
/* True once *g->stop is set. From then on gen_forward skips the rest of its
   work (each layer, each (row, head) of the cache attention) and its logits and
   cache rows are garbage: the caller stops too, and gen_reset before reuse. */
bool gen_stopping(const Generator* g);
/* Append any number of tokens (n >= 1) in chunks of max_chunk; the logits after
   the last (after the chunk where gen_stopping turned true). */
const real* gen_prefill(Generator* g, const int32_t* tokens, size_t n);
/* The logits of n rows x (n,D) of the last chunk's final residual rows: g->x itself (after gen_forward of n
   tokens, each of its rows; the last one is what gen_forward returned) or rows gathered from it, as
   model_forward would give them.   logits (n,V)   normed (n,D)   rstd (n): work space of the caller */
void gen_rows_logits(Generator* g, real* logits, real* normed, real* rstd, const real* x, size_t n);
/* Keep the first n (<= len) cached tokens, as if the later ones had never been appended, so
   that several continuations can follow one prefix. False, and nothing changed, when a sliding
   layer's ring (Gemma-3) has already written over rows of the first n: only while len <= the
   rows of every layer. */
bool gen_rewind(Generator* g, size_t n);
/* Several sequences that share prefixes, in one chunk (multiple choice: a context and its choices, several
   items side by side). Row i of the chunk sits at cache position p = len + i; besides the rows seg .. p of its
   own segment (causal) it reads the cache positions pre_lo .. pre_hi-1 as the tokens before that segment:
   positions 0 .. P-1 (P = pre_hi - pre_lo), so the row's own position is P + p - seg. A row that starts a
   sequence has an empty prefix (pre_lo = pre_hi) and seg = p; pre_lo <= pre_hi <= seg <= p. */
typedef struct {
    size_t pre_lo, pre_hi, seg;
} GenBranch;
/* True when a tree of n rows fits after the len cached tokens: within limit_T, and for a sliding layer
   (Gemma-3) within its ring, so that no row a query reads has been written over. */
bool gen_tree_fits(const Generator* g, size_t n);
/* Run n rows (1 .. max_chunk; gen_tree_fits) laid out by tree[0..n) through every layer, their keys and values
   into cache positions len .. len+n-1, WITHOUT appending them (len is unchanged: the next call writes over
   them). Their final residual rows are in g->x (n,D): gen_rows_logits on any of them gives that row's logits,
   as model_forward would give them for the row's own sequence. */
void gen_forward_tree(Generator* g, const int32_t* tokens, size_t n, const GenBranch* tree);
/* One token: gen_forward of n = 1. */
const real* gen_step(Generator* g, int32_t token);

/* Index of the largest logit (the first one on a tie), as torch.argmax. */
int32_t gen_argmax(const real* logits, size_t V);
/* softmax(logits / temperature) up to its sum, the weights every sampler draws from:
   w[i] = exp((l_i - max_j l_j) / temperature) for every logit l_i >= thr, else 0
   (thr = -INFINITY keeps all). Dies naming the first logit that is not finite.
   Returns the sum of w.   w (V)   logits (V) */
double gen_softmax_weights(real* w, const real* logits, size_t V, double temperature, real thr);
/* temperature <= 0: argmax. Otherwise softmax(logits / temperature) over the
   top_k largest logits (top_k 0 or >= V: all; ties with the k-th are kept, as
   Hugging Face's top-k does), sampled with rng. */
int32_t gen_sample(Generator* g, const real* logits, double temperature, size_t top_k, Rng* rng);
/* Prefill prompt (n_prompt >= 1) after what the cache holds, then sample
   n_new tokens into out, feeding each back (the last is not fed). */
void gen_generate(Generator* g, const int32_t* prompt, size_t n_prompt, size_t n_new, double temperature, size_t top_k,
                  Rng* rng, int32_t* out);

#endif
