/* Token data (docs/formats.md, "Token files"): llm.c shards, NumPy .npy and raw
   .u16/.u32 files, memory-mapped, concatenated into one logical stream, every
   token checked against vocab_size at open. A batch row is a pure function of
   (data, order, seed, step, row): no cursor, so a resumed run or any process of
   a data-parallel job makes exactly the same rows. Formats: data/README.md. */
#ifndef REPOC_DATA_TOKENS_H
#define REPOC_DATA_TOKENS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "data/rows.h"

/* one mapped file; its tokens are stream positions [start, start + n_tokens) */
typedef struct {
    char* path;
    const char* format; /* "bin" (llm.c shard), "npy", "u16" or "u32" */
    const uint8_t* map; /* the whole file, mmap'd read-only */
    size_t map_bytes;
    const uint8_t* tokens; /* first token (inside map); little-endian, maybe unaligned */
    size_t token_bytes;    /* 2 or 4 */
    size_t data_offset;    /* byte offset of the first token in the file */
    size_t n_tokens;
    size_t
        tokenizer_vocab; /* llm.c shard header[3]: the vocab of the tokenizer that wrote it (build/tokenize); 0 = unknown */
    size_t start;        /* stream position of this file's first token */
} TokenFile;

typedef struct TokenData {
    TokenFile* files; /* in stream order: the byte-wise sorted, de-duplicated expansion */
    size_t n_files;
    size_t n_tokens; /* total over all files */
    size_t vocab_size;
} TokenData;

/* The files a list of patterns names: each pattern with a glob metacharacter
   (* ? [) expanded by glob(3) and required to match at least one file; a plain
   path kept as is (a missing file is then reported by open(2) with its
   reason); the union sorted byte-wise (strcmp: the same order under any
   locale, where glob(3) sorts by the locale's collation), duplicates dropped.
   bytes: the sum of the sizes of those that are regular files (the memory
   plan's data row). */
typedef struct {
    char** paths; /* (n), owned */
    size_t n;
    size_t bytes;
} DataFiles;

/* Expand patterns into df. Returns 0, or -1 with err naming the first pattern
   that matched nothing or could not be read (the others are still expanded).
   Release with data_files_free. */
int data_files_expand(DataFiles* df, const char* const* patterns, size_t n_patterns, char* err, size_t err_len);
void data_files_free(DataFiles* df);

/* Expand the patterns (data_files_expand), map every file and check
   every token id < vocab_size. format: "auto" (per file: llm.c magic, NumPy
   magic, else the extension .u16/.u32; .bin must carry the llm.c magic), or
   "bin", "npy", "u16", "u32" for every file. Dies naming the file (and byte
   offset) on: a missing file, a pattern matching nothing, bad magic or
   version, a truncated file or one with trailing bytes, an .npy that is not a
   1-D little-endian uint16/uint32 C-order array, a file without tokens, and
   the first token >= vocab_size. The token check runs an OpenMP loop: a
   process fork()ed from one that already ran OpenMP must exec before calling
   this (libgomp's threads do not survive fork). */
void token_data_open(TokenData* td, const char* const* patterns, size_t n_patterns, const char* format,
                     size_t vocab_size);
void token_data_close(TokenData* td);

/* Dies unless td holds the seq_len + 1 = T + 1 tokens that one row needs. key: "data.train" or
   "data.val"; what names the data in the message (the file list, or a mixture source) */
void token_data_check_row(const TokenData* td, const char* key, const char* what, size_t T);

/* Map and check one file (token_data_open's per-file step); start is left 0 */
void token_file_open(TokenFile* f, const char* path, const char* format, size_t vocab_size);
void token_file_close(TokenFile* f);

/* One line per file and a total, for the start-up log */
void token_data_print(const TokenData* td, FILE* out);

/* Little-endian uint16/uint32 at any alignment (an .npy header may leave the
   data at an odd offset); compilers turn this into one load on x86 */
static inline uint32_t token_le(const uint8_t* p, size_t nbytes) {
    uint32_t v = 0;
    for (size_t i = 0; i < nbytes; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

/* Token at stream position pos (< n_tokens) */
uint32_t token_data_at(const TokenData* td, size_t pos);

/* "sequential" | "shuffle" -> order; returns 0, or -1 for an unknown name */
int data_order_parse(const char* name, DataOrder* order);

/* Fill the rows rq asks (data/rows.h): rows row0 .. row0+n-1 of step `step`, out of rows_per_step
   global rows per optimizer step (batch_size x grad_accum x world_size). Row r of
   step s reads the T+1 tokens x[0..T] of the stream starting at position
   start(s, r), with N = n_tokens:
     sequential: start = ((s * rows_per_step + r) * T) mod N, and token i of
                 the row is stream[(start + i) mod N]: the stream is a circle,
                 consecutive rows overlap by one token (the last target is the
                 next row's first input), one pass over the data is N / T rows;
     shuffle:    start = rng_below(rng, N - T), rng = Rng seeded with
                 mix_triple(SHUFFLE_DOMAIN, seed, s, r) (common/hash.h); the
                 window never wraps.
   tokens[b*T + t] = x[t], targets[b*T + t] = x[t+1] for b < n, t < T.
   Any split of a step's rows into calls gives the same rows. Dies if
   N < T + 1 (naming T) or row0 + n > rows_per_step. */
void token_data_rows(const TokenData* td, const RowRequest* rq, int32_t* tokens, int32_t* targets);

/* One row from stream position start: x[t] = stream[(start + t) mod N] for
   t < T into tokens, x[t + 1] into targets */
void token_data_window(const TokenData* td, size_t start, size_t T, int32_t* tokens, int32_t* targets);

/* The stream position where row r of step s starts (the formula above) */
size_t token_data_row_start(const TokenData* td, DataOrder order, uint64_t seed, size_t step, size_t rows_per_step,
                            size_t row, size_t T);

#endif
