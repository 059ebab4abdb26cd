/* The RePo position module (DESIGN.md §2, §3): per token,
     A = h Wg^T, C = h Wc^T (d_p = D/8), r = silu(A) ⊙ C, z = r Wz^T (P outputs),
   one real position per KV head (P = KVH), shared by that group's query heads. */
#ifndef REPOC_REPO_H
#define REPOC_REPO_H

#include <stddef.h>

#include "common/real.h"

/* z (N,P)   A, C, r (N,dp) saved for backward   h (N,D)   Wg, Wc (dp,D)   Wz (P,dp) */
void repo_forward(real* z, real* A, real* C, real* r, const real* h, const real* Wg, const real* Wc,
                  const real* Wz, size_t N, size_t D, size_t dp, size_t P);
/* dh (N,D) +=   dWg, dWc (dp,D) +=   dWz (P,dp) += (each skipped when NULL)   dz (N,P)
   h, Wg, Wc, Wz, A, C, r as forward saw/saved them
   scratch: 3*N*dp reals for dr, dA, dC (overwritten) */
void repo_backward(real* dh, real* dWg, real* dWc, real* dWz, const real* dz,
                   const real* h, const real* Wg, const real* Wc, const real* Wz,
                   const real* A, const real* C, const real* r, real* scratch,
                   size_t N, size_t D, size_t dp, size_t P);

#endif
