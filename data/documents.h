/* Per-token document ids of packed rows, the data side of document masking
   (data.document_mask): ids (n_rows, T) int32, one per input token; a run of
   equal ids within a row is one document, and a Batch's doc_ids (data/batch.h) holds them as they
   are (attention stays within a run, rope positions restart at its first token).
   Token-file rows get them from an end-of-document token; any other source (a
   JSONL packer, from its record boundaries) fills the same array. */
#ifndef REPOC_DATA_DOCUMENTS_H
#define REPOC_DATA_DOCUMENTS_H

#include <stddef.h>
#include <stdint.h>

/* ids (n_rows,T): within each row, 0 up to and including the first token equal to eos, then 1 up to and
   including the next, ...: an end-of-document token belongs to the document it ends.
   tokens (n_rows,T)   eos: the end-of-document token id */
void doc_ids_from_eos(int32_t* ids, const int32_t* tokens, size_t n_rows, size_t T, int32_t eos);

#endif
