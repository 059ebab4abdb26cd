/* Token embedding forward and backward (docs/backward.md, "Embedding"). */
#include "model/embedding.h"

#include <string.h>

void embedding_forward(real* out, const int32_t* tokens, const real* table, real scale, size_t N, size_t C) {
#pragma omp parallel for
    for (size_t n = 0; n < N; n++) {
        const real* row = table + (size_t)tokens[n] * C;
        if (scale == 1) memcpy(out + n * C, row, C * sizeof(real));
        else
            for (size_t c = 0; c < C; c++) out[n * C + c] = row[c] * scale;
    }
}

void embedding_backward(real* dtable, const real* dout, const int32_t* tokens, size_t N, size_t C) {
    embedding_backward_pad(dtable, dout, tokens, 1, N, C, -1);
}

void embedding_backward_pad(real* dtable, const real* dout, const int32_t* tokens, real scale, size_t N, size_t C,
                            long pad) {
    /* rows of the same token collide, so parallelise over columns: each thread owns a slice of C */
#pragma omp parallel for
    for (size_t c0 = 0; c0 < C; c0 += 64) {
        size_t c1 = c0 + 64 < C ? c0 + 64 : C;
        for (size_t n = 0; n < N; n++) {
            if (tokens[n] == pad) continue; /* padding_idx: that row's lookups carry no gradient */
            real* drow = dtable + (size_t)tokens[n] * C;
            const real* g = dout + n * C;
            if (scale == 1)
                for (size_t c = c0; c < c1; c++) drow[c] += g[c]; /* out[n] = table[tok[n]] */
            else
                for (size_t c = c0; c < c1; c++) drow[c] += scale * g[c]; /* out[n] = scale table[tok[n]] */
        }
    }
}
