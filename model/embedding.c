/* Token embedding forward and backward (docs/backward.md, "Embedding"). */
#include "model/embedding.h"

#include <string.h>

#define EMB_COLS 16 /* columns per task of the backward */

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
    /* rows of the same token collide, so a task owns a block of EMB_COLS columns (one 64-byte line of floats) of
       the rows whose token id is r mod R: R makes at least 64 tasks. Each element still sums its tokens in
       input order: the same bits for any thread count and any R. */
    size_t blocks = (C + EMB_COLS - 1) / EMB_COLS, R = blocks >= 64 ? 1 : (64 + blocks - 1) / blocks;
#pragma omp parallel for collapse(2) schedule(static)
    for (size_t k = 0; k < blocks; k++)
        for (size_t r = 0; r < R; r++) {
            size_t c0 = k * EMB_COLS, c1 = c0 + EMB_COLS < C ? c0 + EMB_COLS : C;
            for (size_t n = 0; n < N; n++) {
                if (tokens[n] == pad || (size_t)tokens[n] % R != r) continue; /* padding_idx: no gradient */
                real* drow = dtable + (size_t)tokens[n] * C;
                const real* g = dout + n * C;
                if (scale == 1)
                    for (size_t c = c0; c < c1; c++) drow[c] += g[c]; /* out[n] = table[tok[n]] */
                else
                    for (size_t c = c0; c < c1; c++) drow[c] += scale * g[c]; /* out[n] = scale table[tok[n]] */
            }
        }
}
