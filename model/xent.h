/* Softmax cross-entropy over the vocabulary, averaged over valid targets
   (target -1 is ignored), with OLMo-2's optional z-loss c·mean(lse²)
   (docs/backward.md, "Cross-entropy with z-loss and weights"). Fused: forward keeps one lse per row, and backward turns
   the logits buffer itself into dlogits, so B*T*V probabilities are never
   stored twice. */
#ifndef REPOC_XENT_H
#define REPOC_XENT_H

#include <stddef.h>
#include <stdint.h>

#include "common/real.h"

/* Returns the weighted mean loss over valid rows,
     loss = Σ_valid w_n (ce_n + c lse_n²) / Σ_valid w_n,
   with w_n = weights[n], or 1 for every row when weights is NULL (then the
   plain mean). Writes the count of valid rows into *n_valid and Σ_valid w_n
   into *weight_sum (0 rows → loss 0).
   losses (N) per-row cross-entropy, unweighted, 0 for ignored rows (may be NULL)
   lse (N) saved for backward   logits (N,V)   targets (N), -1 = ignored
   weights (N) > 0, or NULL */
double xent_forward(real* losses, real* lse, const real* logits, const int32_t* targets, const real* weights, size_t N,
                    size_t V, double z_loss, size_t* n_valid, double* weight_sum);
/* The same rows, returning the weighted sum Σ_valid w_n (ce_n + c lse_n²)
   instead of the mean: a head computed in chunks of rows adds the chunks' sums
   (and their n_valid and weight_sum) and divides once. *z_sum (when not NULL)
   gets the z-loss share of that sum, Σ_valid w_n c lse_n², accumulated apart so
   that the returned sum is the same bits with or without it. */
double xent_forward_sum(real* losses, real* lse, const real* logits, const int32_t* targets, const real* weights,
                        size_t N, size_t V, double z_loss, size_t* n_valid, double* weight_sum, double* z_sum);
/* The forward of a training step: xent_forward_sum's sum, n_valid, weight_sum, losses and lse, and
   the logits (N,V) OVERWRITTEN with G = w_n ((1 + 2c lse_n) softmax_n - onehot(target_n)), 0 on ignored
   rows, so that dlogits = G · dloss / weight_sum: the caller folds that one scalar into the GEMMs of
   the LM head's backward, and xent_backward's pass over the logits is not needed. z_sum as in
   xent_forward_sum. */
double xent_forward_grad(real* losses, real* lse, real* logits, const int32_t* targets, const real* weights, size_t N,
                         size_t V, double z_loss, size_t* n_valid, double* weight_sum, double* z_sum);
/* OVERWRITES logits (N,V) with dlogits = dloss · ∂loss/∂logits (it is not accumulated:
   the logits buffer has no other use after the loss). lse, targets, weights and
   weight_sum as forward saw and returned them. */
void xent_backward(real* logits, const real* lse, const int32_t* targets, const real* weights, size_t N, size_t V,
                   double z_loss, double weight_sum, double dloss);

#endif
