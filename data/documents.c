/* Document ids from end-of-document tokens (data/documents.h). */
#include "data/documents.h"

void doc_ids_from_eos(int32_t* ids, const int32_t* tokens, size_t n_rows, size_t T, int32_t eos) {
    for (size_t r = 0; r < n_rows; r++) {
        int32_t doc = 0;
        for (size_t t = 0; t < T; t++) {
            ids[r * T + t] = doc;
            doc += tokens[r * T + t] == eos; /* the next token starts a new document */
        }
    }
}
