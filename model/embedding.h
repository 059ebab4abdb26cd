/* Token embedding (docs/backward.md, "Embedding"). */
#ifndef REPOC_EMBEDDING_H
#define REPOC_EMBEDDING_H

#include <stddef.h>
#include <stdint.h>

#include "common/real.h"

/* out (N,C)   tokens (N)   table (V,C); tokens are checked by the caller (data/) */
void embedding_forward(real* out, const int32_t* tokens, const real* table, size_t N, size_t C);
/* dtable (V,C) += dout rows at their token ids   dout (N,C)   tokens (N) */
void embedding_backward(real* dtable, const real* dout, const int32_t* tokens, size_t N, size_t C);
/* the same, skipping the rows whose token is pad (torch's nn.Embedding padding_idx); pad < 0: none skipped */
void embedding_backward_pad(real* dtable, const real* dout, const int32_t* tokens, size_t N, size_t C, long pad);

#endif
