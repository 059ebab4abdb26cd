/* Linear layer without bias, y = x W^T with W in the Hugging Face [out, in]
   layout (docs/design.md, "Linear"). Every matmul goes through one cblas_gemm call; the
   naive triple loop stays for tests (docs/contributing.md, "Ops"). */
#ifndef REPOC_LINEAR_H
#define REPOC_LINEAR_H

#include <stddef.h>

#include "common/real.h"

/* out (N,OC)   inp (N,C)   weight (OC,C) */
void linear_forward(real* out, const real* inp, const real* weight, size_t N, size_t C, size_t OC);
/* dinp (N,C) += dout W (skipped when NULL)   dweight (OC,C) += dout^T inp (skipped when NULL)
   dout (N,OC)   inp (N,C)   weight (OC,C) */
void linear_backward(real* dinp, real* dweight, const real* dout, const real* inp, const real* weight,
                     size_t N, size_t C, size_t OC);
/* the reference: same contract as linear_forward, plain loops */
void linear_forward_naive(real* out, const real* inp, const real* weight, size_t N, size_t C, size_t OC);

/* LoRA on a frozen linear: out (N,OC) += scale · (inp A^T) B^T, scale = alpha / r.
   ax (N,r) = inp A^T, saved for backward   inp (N,C)   A (r,C)   B (OC,r) */
void lora_forward(real* out, real* ax, const real* inp, const real* A, const real* B, real scale,
                  size_t N, size_t C, size_t OC, size_t r);
/* dinp (N,C) += scale · (dout B) A (skipped when NULL)   dA (r,C) += scale · (dout B)^T inp
   dB (OC,r) += scale · dout^T ax   (dA, dB skipped when NULL; a frozen adapter)
   dax (N,r): work space, overwritten   dout (N,OC)   inp, ax, A, B as forward saw/saved them */
void lora_backward(real* dinp, real* dA, real* dB, real* dax, const real* dout, const real* inp, const real* ax,
                   const real* A, const real* B, real scale, size_t N, size_t C, size_t OC, size_t r);

#endif
