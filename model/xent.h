/* Softmax cross-entropy over the vocabulary, averaged over valid targets
   (target -1 is ignored), with OLMo-2's optional z-loss c·mean(lse²)
   (DESIGN.md §3). Fused: forward keeps one lse per row, and backward turns
   the logits buffer itself into dlogits, so B*T*V probabilities are never
   stored twice. */
#ifndef REPOC_XENT_H
#define REPOC_XENT_H

#include <stddef.h>
#include <stdint.h>

#include "common/real.h"

/* Returns the mean loss (cross-entropy + z-loss) over valid rows, and writes
   their count into *n_valid (0 rows → loss 0).
   losses (N) per-row cross-entropy, 0 for ignored rows (may be NULL)
   lse (N) saved for backward   logits (N,V)   targets (N), -1 = ignored */
double xent_forward(real* losses, real* lse, const real* logits, const int32_t* targets,
                    size_t N, size_t V, double z_loss, size_t* n_valid);
/* OVERWRITES logits (N,V) with dlogits = dloss · ∂loss/∂logits (it is not accumulated:
   the logits buffer has no other use after the loss). lse, targets as forward saw them. */
void xent_backward(real* logits, const real* lse, const int32_t* targets, size_t N, size_t V,
                   double z_loss, size_t n_valid, double dloss);

#endif
