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

/* A forward's sums over its valid rows (target != -1), with w_n = weights[n], or 1 for every row when
   weights is NULL. A head computed in chunks of rows adds the chunks' sums and divides once. */
typedef struct {
    double total;   /* Σ_valid w_n (ce_n + c lse_n²), the objective before the division */
    double z;       /* Σ_valid w_n c lse_n², total's z-loss share, summed apart (total has the same bits) */
    double weight;  /* Σ_valid w_n (= n_valid without weights) */
    size_t n_valid; /* the rows with a target */
} XentSums;

/* Returns the weighted mean loss over valid rows,
     loss = Σ_valid w_n (ce_n + c lse_n²) / Σ_valid w_n
   (0 rows → loss 0; weights NULL: the plain mean), and its sums into *sums when not NULL.
   losses (N) per-row cross-entropy, unweighted, 0 for ignored rows (may be NULL)
   lse (N) saved for backward   logits (N,V)   targets (N), -1 = ignored
   weights (N) > 0, or NULL */
double xent_forward(real* losses, real* lse, const real* logits, const int32_t* targets, const real* weights, size_t N,
                    size_t V, double z_loss, XentSums* sums);
/* The same rows, returning their sums instead of the mean */
XentSums xent_forward_sum(real* losses, real* lse, const real* logits, const int32_t* targets, const real* weights,
                          size_t N, size_t V, double z_loss);
/* The forward of a training step: xent_forward_sum's sums, losses and lse, and
   the logits (N,V) OVERWRITTEN with G = w_n ((1 + 2c lse_n) softmax_n - onehot(target_n)), 0 on ignored
   rows, so that dlogits = G · dloss / weight: the caller folds that one scalar into the GEMMs of
   the LM head's backward, and xent_backward's pass over the logits is not needed. */
XentSums xent_forward_grad(real* losses, real* lse, real* logits, const int32_t* targets, const real* weights, size_t N,
                           size_t V, double z_loss);
/* OVERWRITES logits (N,V) with dlogits = dloss · ∂loss/∂logits (it is not accumulated:
   the logits buffer has no other use after the loss). lse, targets, weights and
   weight_sum as forward saw and returned them. */
void xent_backward(real* logits, const real* lse, const int32_t* targets, const real* weights, size_t N, size_t V,
                   double z_loss, double weight_sum, double dloss);

#endif
