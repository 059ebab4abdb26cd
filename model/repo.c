/* RePo position module forward and backward (the math: docs/design.md, "RePo position module"):
     dr = dz Wz ; dWz += dz^T r ; dgate = dr ⊙ content ⊙ silu'(gate) ; dcontent = dr ⊙ silu(gate)
     dWg += dgate^T h ; dWc += dcontent^T h ; dh += dgate Wg + dcontent Wc */
#include "model/repo.h"

#include "model/linear.h"
#include "model/swiglu.h"

void repo_forward(Bf16Products* bf, real* z, const RepoActs* s, const real* h, const RepoWeights* w, RepoDims n) {
    LinearPair gc = {w->Wg, w->Wc, NULL, NULL, true};
    linear_pair_forward(bf, s->gc, h, &gc, n.N, n.D, n.dp); /* gc (N,2dp) rows [gate | content] */
    swiglu_forward(s->r, s->gc, s->gc + n.dp, n.N, n.dp, 2 * n.dp);
    linear_forward(bf, z, s->r, w->Wz, n.N, n.dp, n.P);
}

void repo_backward(Bf16Products* bf, real* dh, const RepoGrads* dw, const real* dz, RepoActs* s, const real* h,
                   const RepoWeights* w, real* scratch, RepoDims n) {
    real* dr = scratch; /* (N,dp) */
    real* dgc = s->gc;  /* (N,2dp) rows [dgate | dcontent], in place of [gate | content] */
    /* z = r Wz^T */
    linear_backward(bf, dr, dw->dWz, dz, s->r, w->Wz, n.N, n.dp, n.P, false);
    /* r = silu(gate) ⊙ content */
    swiglu_backward(dgc, dgc + n.dp, dr, s->gc, s->gc + n.dp, n.N, n.dp, 2 * n.dp);
    /* gate, content = h Wg^T, h Wc^T */
    LinearPair gc = {w->Wg, w->Wc, dw->dWg, dw->dWc, true};
    linear_pair_backward(bf, dh, dgc, h, &gc, n.N, n.D, n.dp, true);
}

double repo_pdrop_at(double p0, size_t n, size_t step) {
    if (p0 <= 0 || n == 0 || step >= n) return 0;
    return p0 * (1 - (double)step / (double)n);
}
