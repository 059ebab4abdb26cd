/* RePo position module forward and backward (the math: docs/positions.md, "RePo position module"):
     dr = dz Wz ; dWz += dz^T r ; dgate = dr ⊙ content ⊙ silu'(gate) ; dcontent = dr ⊙ silu(gate)
     dWg += dgate^T h ; dWc += dcontent^T h ; dh += dgate Wg + dcontent Wc
   and repo_pdrop's mix toward rope's positions, z' = (1 - p) z + p t:  dz = (1 - p) dz' */
#include "model/repo.h"

#include "model/linear.h"
#include "model/swiglu.h"

void repo_forward(Bf16Products* bf, real* z, const RepoActs* s, const real* h, const RepoWeights* w, RepoDims n) {
    LinearPair gc = {w->Wg, w->Wc, NULL, NULL, true, false};
    linear_pair_forward(bf, s->gc, h, &gc, n.N, n.D, n.dp); /* gc (N,2dp) rows [gate | content] */
    swiglu_forward(s->r, s->gc, s->gc + n.dp, n.N, n.dp, 2 * n.dp, NULL);
    linear_forward(bf, z, s->r, w->Wz, n.N, n.dp, n.P);
}

void repo_backward(Bf16Products* bf, real* dh, const RepoGrads* dw, const real* dz, RepoActs* s, const real* h,
                   const RepoWeights* w, real* scratch, RepoDims n) {
    real* dr = scratch; /* (N,dp) */
    real* dgc = s->gc;  /* (N,2dp) rows [dgate | dcontent], in place of [gate | content] */
    /* z = r Wz^T */
    linear_backward(bf, dr, dw->dWz, dz, s->r, w->Wz, n.N, n.dp, n.P, false);
    /* r = silu(gate) ⊙ content */
    swiglu_backward(dgc, dgc + n.dp, dr, s->gc, s->gc + n.dp, n.N, n.dp, 2 * n.dp, NULL);
    /* gate, content = h Wg^T, h Wc^T */
    LinearPair gc = {w->Wg, w->Wc, dw->dWg, dw->dWc, true, false};
    linear_pair_backward(bf, dh, dgc, h, &gc, n.N, n.D, n.dp, true);
}

void repo_pdrop_forward(real* z, const real* t, double p, size_t n) {
    real move = (real)p, keep = (real)(1 - p);
    for (size_t i = 0; i < n; i++) z[i] = keep * z[i] + move * t[i];
}

void repo_pdrop_backward(real* dz, double p, size_t n) {
    real keep = (real)(1 - p);
    for (size_t i = 0; i < n; i++) dz[i] *= keep;
}
