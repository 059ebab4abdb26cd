/* The RePo position module: per token,
     a = h Wg^T, c = h Wc^T (d_p = D/8), r = silu(a) ⊙ c, z = r Wz^T (P outputs),
   one real position per KV head (P = KVH), shared by that group's query heads
   (docs/positions.md, "RePo position module"). */
#ifndef REPOC_REPO_H
#define REPOC_REPO_H

#include <stddef.h>

#include "common/real.h"
#include "model/products.h"

/* The three maps: Wg, Wc (dp,D), Wz (P,dp). */
typedef struct {
    const real *Wg, *Wc, *Wz;
} RepoWeights;
/* Their gradients, same shapes, added into; a NULL field is skipped. */
typedef struct {
    real *dWg, *dWc, *dWz;
} RepoGrads;
/* What forward keeps for backward: gc (N,2dp) rows [gate | content], gate = h Wg^T (before silu),
   content = h Wc^T; r (N,dp) = silu(gate) ⊙ content. */
typedef struct {
    real *gc, *r;
} RepoActs;
/* N rows, D model width, dp module width, P positions per row */
typedef struct {
    size_t N, D, dp, P;
} RepoDims;

/* z (N,P)   s: gc, r written   h (N,D); the products with context bf (NULL: FP32) */
void repo_forward(Bf16Products* bf, real* z, const RepoActs* s, const real* h, const RepoWeights* w, RepoDims n);
/* dh (N,D) +=   dw +=   dz (N,P)   s, h, w as forward saved/saw them; s->gc is overwritten by its
   gradient [dgate | dcontent] (as the MLP's gu: nothing reads it after this)   scratch: N*dp reals for dr */
void repo_backward(Bf16Products* bf, real* dh, const RepoGrads* dw, const real* dz, RepoActs* s, const real* h,
                   const RepoWeights* w, real* scratch, RepoDims n);

/* model.positions.repo_pdrop with probability-like weight p in (0, 1] (its schedule: repo_pdrop_at,
   optim/schedule.h): the positions a RePo layer rotates by move toward rope's integer ones,
   z' = keep z + p t with keep = 1 - p.   z (n) in place: z on entry, z' on return   t (n): pos_seq */
void repo_pdrop_forward(real* z, const real* t, double p, size_t n);
/* its backward: dz (n) in place, dz' on entry, dz = keep dz' on return */
void repo_pdrop_backward(real* dz, double p, size_t n);

#endif
