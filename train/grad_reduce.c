/* Gradients summed over the ranks, at the end of the backward or overlapped with it (train/grad_reduce.h) */
#include "train/grad_reduce.h"

#include <string.h>

#include "common/check.h"
#include "common/dist.h"

void grad_reduce_init(GradReduce* g, const Model* m, bool on, bool bf16, bool overlap) {
    memset(g, 0, sizeof(*g));
    g->on = on;
    g->bf16 = bf16;
    g->overlap = on && overlap && dist_overlap_init();
    const TensorTable* tt = &m->tensors;
    size_t at = 0; /* the arena up to here is some layer's or a rest run's */
    for (size_t l = 0; l < m->cfg.L; l++) {
        size_t lo = tt->n_grads, hi = 0, n = 0;
        for (size_t k = tt->layer_range[l].first; k < tt->layer_range[l].end; k++) {
            const TensorInfo* t = &tt->t[k];
            if (t->grad_offset == NO_GRAD) continue;
            lo = t->grad_offset < lo ? t->grad_offset : lo;
            hi = t->grad_offset + t->numel > hi ? t->grad_offset + t->numel : hi;
            n += t->numel;
        }
        if (!n) lo = hi = at; /* a frozen layer: nothing to sum */
        CHECK(hi - lo == n && lo >= at, "layer %zu's gradients are not one run after the previous layer's", l);
        if (lo > at) g->rest_lo[g->n_rest] = at, g->rest_hi[g->n_rest++] = lo;
        g->layer_lo[l] = lo;
        g->layer_hi[l] = hi;
        at = hi;
    }
    g->tail_lo = at;
    g->tail_hi = tt->n_grads;
    for (size_t k = 0; k < tt->n; k++) { /* what the tail holds must be final when model_backward says so */
        const TensorInfo* t = &tt->t[k];
        CHECK(t->grad_offset == NO_GRAD || t->grad_offset < at || t->kind == TK_FINAL_NORM || t->kind == TK_LM_HEAD,
              "%s's gradient is after the last layer's but is not the final norm's or the LM head's", t->name);
    }
    g->n_layers = m->cfg.L;
}

static void layer_done(void* ctx, size_t l) {
    const GradReduce* g = ctx;
    if (l == g->n_layers) dist_overlap_post(g->tail_lo, g->tail_hi);
    else dist_overlap_post(g->layer_lo[l], g->layer_hi[l]);
}

void grad_reduce_arm(GradReduce* g, Model* m) {
    if (!g->overlap) return;
    dist_overlap_begin(m->grads, g->bf16);
    m->layer_grads_done = layer_done;
    m->layer_grads_ctx = g;
}

void grad_reduce_finish(GradReduce* g, Model* m) {
    if (!g->on) return;
    if (!g->overlap) {
        dist_allreduce_sum(m->grads, m->tensors.n_grads, g->bf16); /* one ring: the fewest messages */
        return;
    }
    CHECK(m->layer_grads_done == layer_done, "grad_reduce_finish: the backward was not armed");
    m->layer_grads_done = NULL;
    for (size_t k = 0; k < g->n_rest; k++) dist_overlap_post(g->rest_lo[k], g->rest_hi[k]);
    dist_overlap_wait();
}
