/* SwiGLU gate m = silu(g) ⊙ u, Gemma-3's GeGLU m = gelu_tanh(g) ⊙ u, and the residual add
   (docs/backward.md, "SwiGLU", "GeGLU", "Residual"). */
#ifndef REPOC_SWIGLU_H
#define REPOC_SWIGLU_H

#include <stddef.h>

#include "common/bf16.h"
#include "common/real.h"

/* out (rows,cols)   g, u (rows,cols), each with row stride ld >= cols: separate buffers (ld = cols), or
   side by side in one (the MLP's rows [g | u]: u = g + cols, ld = 2 cols). rows, cols = N, F for the MLP,
   N, d_p for the RePo module. out_b16: NULL, or (rows,cols) written with out's values rounded to BF16 in the
   same pass (the copy a BF16 product reads: model/products.h, products_hold). */
void swiglu_forward(real* out, const real* g, const real* u, size_t rows, size_t cols, size_t ld, bf16* out_b16);
/* dg, du (rows,cols) =, with row stride ld as g, u   dout (rows,cols)   g, u as forward saw them. In place
   when dg = g and du = u (the MLP: its gradient overwrites gu, which nothing reads after this). d_b16: NULL,
   or (rows, 2 cols) rows [dg | du] rounded to BF16 in the same pass. */
void swiglu_backward(real* dg, real* du, const real* dout, const real* g, const real* u, size_t rows, size_t cols,
                     size_t ld, bf16* d_b16);

/* The same with PyTorch's tanh GELU in place of silu (transformers' "gelu_pytorch_tanh"). */
void geglu_forward(real* out, const real* g, const real* u, size_t rows, size_t cols, size_t ld, bf16* out_b16);
void geglu_backward(real* dg, real* du, const real* dout, const real* g, const real* u, size_t rows, size_t cols,
                    size_t ld, bf16* d_b16);

/* out (n) = a + b; out may alias a. Its backward is the identity on both inputs: block_backward sums the
   branch's gradient into the residual stream's in place. */
void residual_forward(real* out, const real* a, const real* b, size_t n);

#endif
