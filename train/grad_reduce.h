/* The step's gradients summed over the MPI ranks (synchronous data parallelism; DiLoCo sums its parameter
   change instead, train/outer.h): either the whole gradient arena after the backward, or each layer's
   gradients as soon as the backward has finished them, by common/dist.c's overlap thread, while the layers
   below run their backward (train.overlap_grad_reduce). Layer l's gradients are one run of the arena
   (model/tensors.c assigns them in table order); what no layer owns comes in two runs: after the last
   layer's, the final norm and an untied LM head, final before any layer's backward and posted first; before
   the first layer's, the input embedding (tied: the LM head too), final only at the end and posted last.
   Every rank posts the same ranges in the same order. */
#ifndef REPOC_GRAD_REDUCE_H
#define REPOC_GRAD_REDUCE_H

#include <stdbool.h>
#include <stddef.h>

#include "model/model.h"

typedef struct {
    bool on;      /* several ranks sum their gradients each step */
    bool bf16;    /* BF16 on the wire (train.grad_wire_dtype) */
    bool overlap; /* layer by layer, during the backward */
    size_t n_layers;
    size_t layer_lo[MAX_LAYERS], layer_hi[MAX_LAYERS];               /* layer l's gradients: [lo, hi) of the arena */
    size_t n_rest, rest_lo[MAX_LAYERS + 1], rest_hi[MAX_LAYERS + 1]; /* the runs no layer owns, before its end */
    size_t tail_lo, tail_hi; /* the run after the last layer's: the final norm, an untied LM head */
} GradReduce;

/* on: world > 1 and synchronous; overlap: as asked, if MPI gives the thread (dist_overlap_init) */
void grad_reduce_init(GradReduce* g, const Model* m, bool on, bool bf16, bool overlap);
/* before the step's last backward: each layer's gradients leave as the backward finishes them */
void grad_reduce_arm(GradReduce* g, Model* m);
/* after it: the sums over the ranks in m->grads (what was not posted yet, then the wait) */
void grad_reduce_finish(GradReduce* g, Model* m);

#endif
