/* The DiLoCo outer loop (train.outer; Douillard et al. 2023, "DiLoCo: Distributed Low-Communication Training
   of Language Models", arXiv 2311.08105, Algorithm 1). Every rank trains its own copy of the parameters on
   its own rows of each step with its own (unsharded) AdamW, the inner optimizer, and no communication. After
   every H inner steps (0-based step s with (s + 1) % H == 0) the ranks average the change of their parameters
   since the last outer step, the outer gradient

     Δ = θ_kept − mean over ranks r of θ_r

   (summed on the wire in train.grad_wire_dtype, then divided by the ranks), and take one step of SGD with
   Nesterov momentum on the kept copy, as torch.optim.SGD (dampening 0, no weight decay):

     b      = μ b + Δ                       (b starts at 0, so the first b is Δ as in torch)
     θ_kept = θ_kept − lr (Δ + μ b)         (nesterov; without it θ_kept − lr b)

   and every rank continues from θ_kept. H = 1, lr = 1, μ = 0 is synchronous averaging of the parameters.
   The paper's defaults are lr 0.7, μ 0.9, Nesterov, and AdamW inside.

   State: the kept copy and the momentum (the same on every rank), n trainable elements each in the layout of
   the gradient arena; each rank's parameters and AdamW moments. train/outer_io.c writes it into a checkpoint
   as outer.safetensors and reads it back, so a run resumed at any step continues bit for bit. */
#ifndef REPOC_OUTER_H
#define REPOC_OUTER_H

#include <stdbool.h>
#include <stddef.h>

#include "model/model.h"
#include "optim/adamw.h"
#include "train/run_config.h"

typedef struct {
    bool on;         /* train.outer.every given */
    size_t every;    /* H */
    double lr;       /* the outer learning rate */
    double momentum; /* μ */
    bool nesterov;
    bool wire_bf16; /* Δ travels as bf16 (train.grad_wire_dtype) */
    size_t n;       /* trainable elements: TensorTable.n_grads */
    real* kept;     /* (n) the parameters at the last outer step, gradient-arena layout */
    real* mom;      /* (n) the momentum b */
} Outer;

/* From the config: off unless train.outer.every is given; on, kept = the model's trainable parameters (call after
   the weights are final on every rank) and the momentum zero. */
void outer_init(Outer* o, const RunConfig* rc, const Model* m);
void outer_free(Outer* o);
/* whether 0-based step `step` ends with an outer step */
bool outer_due(const Outer* o, size_t step);
/* The outer step on every rank (collective): Δ in the gradient arena (which must hold no gradient: it is
   left zeroed), averaged over the ranks, the update of kept and the momentum, the parameters set to kept. */
void outer_step(Outer* o, Model* m);
/* The update itself on n elements: b = μ b + Δ; kept -= lr (Δ + μ b) (nesterov) or lr b. */
void outer_apply(real* kept, real* mom, const real* delta, size_t n, double lr, double momentum, bool nesterov);

/* train/outer_io.c. Rank 0: write dir/outer.safetensors (kept, momentum, and every other rank's parameters
   and AdamW moments, which they send as asked); the other ranks call outer_serve_save meanwhile. */
void outer_save(const Outer* o, const char* dir, const Model* m, const AdamW* opt);
void outer_serve_save(const Outer* o, const Model* m, const AdamW* opt);
/* Every rank: read dir/outer.safetensors back (this rank's own parameters and moments, unless rank 0, whose
   are the checkpoint's model and optimizer files); dies naming the file when it was written by another number
   of ranks or does not match the model. A checkpoint without the file (one of synchronous training) starts
   the outer loop from its weights, with a note. */
void outer_load(Outer* o, const char* dir, Model* m, AdamW* opt);

#endif
