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

#endif
