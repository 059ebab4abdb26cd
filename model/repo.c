/* RePo position module forward and backward (the math: docs/design.md, "RePo position module"):
     dr = dz Wz ; dWz += dz^T r ; dgate = dr ⊙ content ⊙ silu'(gate) ; dcontent = dr ⊙ silu(gate)
     dWg += dgate^T h ; dWc += dcontent^T h ; dh += dgate Wg + dcontent Wc */
#include "model/repo.h"

#include "model/linear.h"
#include "model/swiglu.h"

void repo_forward(real* z, const RepoActs* s, const real* h, const RepoWeights* w, RepoDims n) {
    linear_forward(s->gate, h, w->Wg, n.N, n.D, n.dp);
    linear_forward(s->content, h, w->Wc, n.N, n.D, n.dp);
    swiglu_forward(s->r, s->gate, s->content, n.N, n.dp, n.dp);
    linear_forward(z, s->r, w->Wz, n.N, n.dp, n.P);
}

void repo_backward(real* dh, const RepoGrads* dw, const real* dz, const RepoActs* s, const real* h,
                   const RepoWeights* w, real* scratch, RepoDims n) {
    size_t rows = n.N * n.dp;
    real* dr = scratch;
    real* dgate = scratch + rows;
    real* dcontent = scratch + 2 * rows;
    linear_backward(dr, dw->dWz, dz, s->r, w->Wz, n.N, n.dp, n.P, false);           /* z = r Wz^T */
    swiglu_backward(dgate, dcontent, dr, s->gate, s->content, n.N, n.dp, n.dp);  /* r = silu(gate) ⊙ content */
    linear_backward(dh, dw->dWg, dgate, h, w->Wg, n.N, n.D, n.dp, true);            /* gate = h Wg^T */
    linear_backward(dh, dw->dWc, dcontent, h, w->Wc, n.N, n.D, n.dp, true);         /* content = h Wc^T */
}
