/* The bias of a linear projection, y = x W^T + b (docs/backward.md, "Bias"): Qwen2's q, k, v and Qwen3's
   q, k, v, o with attention_bias. model/linear.c stays bias-free; block.c adds these after the product. */
#ifndef REPOC_BIAS_H
#define REPOC_BIAS_H

#include <stddef.h>

#include "common/real.h"

/* out (N,C) += bias (C) on every row */
void bias_forward(real* out, const real* bias, size_t N, size_t C);
/* dbias (C) += Σ_n dout[n]: the column sums of dout (N,C) */
void bias_backward(real* dbias, const real* dout, size_t N, size_t C);

#endif
