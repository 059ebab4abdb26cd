/* The buffers of a Batch (data/batch.h). */
#include "data/batch.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"

void batch_alloc(Batch* b, size_t B, size_t T, bool doc_ids, bool target_weights) {
    size_t N = mulCheck(B, T, "batch rows B*T");
    memset(b, 0, sizeof(*b));
    b->B = B;
    b->T = T;
    b->tokens = mallocCheck(N * sizeof(int32_t));
    b->targets = mallocCheck(N * sizeof(int32_t));
    if (doc_ids) b->doc_ids = mallocCheck(N * sizeof(int32_t));
    if (target_weights) b->target_weights = mallocCheck(N * sizeof(real));
}

void batch_free(Batch* b) {
    free(b->tokens);
    free(b->targets);
    free(b->doc_ids);
    free(b->target_weights);
    memset(b, 0, sizeof(*b));
}
