/* Token embedding (docs/backward.md, "Embedding"). */
#ifndef REPOC_EMBEDDING_H
#define REPOC_EMBEDDING_H

#include <stddef.h>
#include <stdint.h>

#include "common/real.h"

/* out (N,C) = scale table[tokens]   tokens (N)   table (V,C); tokens are checked by the caller (data/).
   scale is 1, or Gemma-3's sqrt(D) (cfg_embed_scale) */
void embedding_forward(real* out, const int32_t* tokens, const real* table, real scale, size_t N, size_t C);
/* dtable (V,C) += dout rows at their token ids   dout (N,C)   tokens (N) */
void embedding_backward(real* dtable, const real* dout, const int32_t* tokens, size_t N, size_t C);
/* dtable += scale dout rows, skipping the rows whose token is pad (torch's nn.Embedding padding_idx);
   pad < 0: none skipped */
void embedding_backward_pad(real* dtable, const real* dout, const int32_t* tokens, real scale, size_t N, size_t C,
                            long pad);

#endif
