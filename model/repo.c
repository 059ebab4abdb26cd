/* RePo position module forward and backward (DESIGN.md §3 "RePo module"):
     dr = dz Wz ; dWz += dz^T r ; dA = dr ⊙ C ⊙ silu'(A) ; dC = dr ⊙ silu(A)
     dWg += dA^T h ; dWc += dC^T h ; dh += dA Wg + dC Wc */
#include "model/repo.h"

#include <string.h>

#include "model/linear.h"
#include "model/swiglu.h"

void repo_forward(real* z, real* A, real* C, real* r, const real* h, const real* Wg, const real* Wc,
                  const real* Wz, size_t N, size_t D, size_t dp, size_t P) {
    linear_forward(A, h, Wg, N, D, dp);
    linear_forward(C, h, Wc, N, D, dp);
    swiglu_forward(r, A, C, N * dp);
    linear_forward(z, r, Wz, N, dp, P);
}

void repo_backward(real* dh, real* dWg, real* dWc, real* dWz, const real* dz,
                   const real* h, const real* Wg, const real* Wc, const real* Wz,
                   const real* A, const real* C, const real* r, real* scratch,
                   size_t N, size_t D, size_t dp, size_t P) {
    real* dr = scratch;
    real* dA = scratch + N * dp;
    real* dC = scratch + 2 * N * dp;
    memset(scratch, 0, 3 * N * dp * sizeof(real));
    linear_backward(dr, dWz, dz, r, Wz, N, dp, P);        /* z = r Wz^T */
    swiglu_backward(dA, dC, dr, A, C, N * dp);            /* r = silu(A) ⊙ C */
    linear_backward(dh, dWg, dA, h, Wg, N, D, dp);        /* A = h Wg^T */
    linear_backward(dh, dWc, dC, h, Wc, N, D, dp);        /* C = h Wc^T */
}
