/* The token stream (docs/formats.md, "Token files"): expand the file patterns,
   map every file (data/token_files.c), concatenate them in byte-wise sorted
   path order, and cut batch rows out of the stream as a pure function of
   (order, seed, step, row); the formulas are in data/tokens.h. */
#include "data/tokens.h"

#include <glob.h> /* glob, globfree */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h> /* stat: the sizes of the expanded files */

#include "common/check.h" /* DIE, CHECK, mallocCheck, set_err */
#include "common/hash.h"  /* mix_triple: (seed, step, row) -> Rng seed */
#include "common/rng.h"   /* the shuffle's per-row generator */

#define SHUFFLE_DOMAIN 0x53485546464C45ull /* "SHUFFLE": keeps these streams apart from synthetic.c's */

/* ---- expanding the patterns ---- */

/* append a copy of path, doubling the array when full */
static void path_push(DataFiles* df, size_t* cap, const char* path) {
    if (df->n == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        char** grown = mallocCheck(*cap * sizeof *grown);
        if (df->n) memcpy(grown, df->paths, df->n * sizeof *grown);
        free(df->paths);
        df->paths = grown;
    }
    size_t len = strlen(path);
    df->paths[df->n] = mallocCheck(len + 1);
    memcpy(df->paths[df->n++], path, len + 1);
}

/* qsort comparator: byte-wise, so the stream order is the same under any locale */
static int cmp_path(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

/* append pattern's files; 0, or set_err's -1 naming the pattern */
static int expand_pattern(DataFiles* df, size_t* cap, const char* pattern, char* err, size_t err_len) {
    if (strpbrk(pattern, "*?[") == NULL) {
        path_push(df, cap, pattern);
        return 0;
    }
    glob_t g;
    int rc = glob(pattern, GLOB_ERR, NULL, &g);
    if (rc != 0) {
        globfree(&g);
        if (rc == GLOB_NOMATCH) return set_err(err, err_len, "token data pattern '%s' matches no file", pattern);
        return set_err(err, err_len, "token data pattern '%s': glob failed (%s)", pattern,
                       rc == GLOB_ABORTED ? "a directory could not be read" : "out of memory");
    }
    for (size_t i = 0; i < g.gl_pathc; i++) path_push(df, cap, g.gl_pathv[i]);
    globfree(&g);
    return 0;
}

int data_files_expand(DataFiles* df, const char* const* patterns, size_t n_patterns, char* err, size_t err_len) {
    memset(df, 0, sizeof *df);
    size_t cap = 0;
    int bad = 0;
    for (size_t i = 0; i < n_patterns; i++) {
        char e[512];
        if (expand_pattern(df, &cap, patterns[i], e, sizeof e) && !bad++) set_err(err, err_len, "%s", e);
    }
    /* byte-wise order (glob sorts by the locale's collation) and no file twice */
    if (df->n) qsort(df->paths, df->n, sizeof *df->paths, cmp_path);
    size_t kept = 0;
    for (size_t i = 0; i < df->n; i++) {
        if (kept > 0 && strcmp(df->paths[i], df->paths[kept - 1]) == 0) {
            free(df->paths[i]);
            continue;
        }
        df->paths[kept++] = df->paths[i];
        struct stat st;
        if (stat(df->paths[i], &st) == 0 && S_ISREG(st.st_mode)) df->bytes += (size_t)st.st_size;
    }
    df->n = kept;
    return bad ? -1 : 0;
}

void data_files_free(DataFiles* df) {
    for (size_t i = 0; i < df->n; i++) free(df->paths[i]);
    free(df->paths);
    memset(df, 0, sizeof *df);
}

void token_data_open(TokenData* td, const char* const* patterns, size_t n_patterns, const char* format,
                     size_t vocab_size) {
    memset(td, 0, sizeof *td);
    CHECK(n_patterns > 0, "token data: no files given");
    DataFiles df;
    char err[600];
    if (data_files_expand(&df, patterns, n_patterns, err, sizeof err)) DIE("%s", err);

    /* map and check each file; its tokens follow the previous file's in the stream */
    td->files = callocCheck(df.n, sizeof *td->files);
    td->vocab_size = vocab_size;
    for (size_t i = 0; i < df.n; i++) {
        token_file_open(&td->files[i], df.paths[i], format, vocab_size);
        td->files[i].start = td->n_tokens;
        CHECK(td->n_tokens <= SIZE_MAX - td->files[i].n_tokens, "token data: total overflows");
        td->n_tokens += td->files[i].n_tokens;
        td->n_files++;
    }
    data_files_free(&df);
}

void token_data_check_row(const TokenData* td, const char* key, const char* what, size_t T) {
    CHECK(td->n_tokens > T,
          "%s (%s): %zu tokens, fewer than data.seq_len + 1 = %zu that one row needs: give longer "
          "files or a smaller data.seq_len",
          key, what, td->n_tokens, T + 1);
}

void token_data_close(TokenData* td) {
    for (size_t i = 0; i < td->n_files; i++) token_file_close(&td->files[i]);
    free(td->files);
    memset(td, 0, sizeof *td);
}

/* e.g. "  data/train_000001.bin: bin, uint16, 100000000 tokens" per file, then the total */
void token_data_print(const TokenData* td, FILE* out) {
    for (size_t i = 0; i < td->n_files; i++) {
        const TokenFile* f = &td->files[i];
        fprintf(out, "  %s: %s, uint%zu, %zu tokens\n", f->path, f->format, 8 * f->token_bytes, f->n_tokens);
    }
    fprintf(out, "  %zu file%s, %zu tokens (%.1f M), all < vocab_size %zu\n", td->n_files, td->n_files == 1 ? "" : "s",
            td->n_tokens, td->n_tokens / 1e6, td->vocab_size);
}

/* the config spelling of data.order */
int data_order_parse(const char* name, DataOrder* order) {
    if (strcmp(name, "sequential") == 0) *order = ORDER_SEQUENTIAL;
    else if (strcmp(name, "shuffle") == 0) *order = ORDER_SHUFFLE;
    else return -1;
    return 0;
}

/* ---- reading the stream ---- */

/* index of the file holding stream position pos (< n_tokens): the last whose start <= pos */
static size_t file_of(const TokenData* td, size_t pos) {
    size_t lo = 0, hi = td->n_files;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (td->files[mid].start <= pos) lo = mid;
        else hi = mid;
    }
    return lo;
}

uint32_t token_data_at(const TokenData* td, size_t pos) {
    CHECK(pos < td->n_tokens, "token position %zu out of range (%zu tokens)", pos, td->n_tokens);
    const TokenFile* f = &td->files[file_of(td, pos)];
    return token_le(f->tokens + (pos - f->start) * f->token_bytes, f->token_bytes);
}

/* out[i] = stream[(pos + i) mod n_tokens] for i < count: file by file, round the circle */
static void stream_read(const TokenData* td, size_t pos, size_t count, int32_t* out) {
    size_t fi = file_of(td, pos);
    size_t local = pos - td->files[fi].start; /* token index inside file fi */
    while (count > 0) {                       /* copy the rest of this file, or what is still needed */
        const TokenFile* f = &td->files[fi];
        size_t take = f->n_tokens - local < count ? f->n_tokens - local : count;
        const uint8_t* p = f->tokens + local * f->token_bytes;
        for (size_t i = 0; i < take; i++) out[i] = (int32_t)token_le(p + i * f->token_bytes, f->token_bytes);
        out += take;
        count -= take;
        local = 0;                   /* the next file from its first token; */
        fi = (fi + 1) % td->n_files; /* after the last file comes the first again */
    }
}

size_t token_data_row_start(const TokenData* td, DataOrder order, uint64_t seed, size_t step, size_t rows_per_step,
                            size_t row, size_t T) {
    /* every row needs T+1 tokens: T inputs and one more target */
    size_t N = td->n_tokens;
    CHECK(T >= 1, "sequence length T must be at least 1");
    CHECK(N >= T + 1, "token data has %zu tokens, fewer than the T + 1 = %zu one row needs (T = %zu)", N, T + 1, T);
    CHECK(row < rows_per_step, "row %zu out of range: %zu rows per step", row, rows_per_step);
    if (order == ORDER_SEQUENTIAL) {
        /* ((s * R + r) * T) mod N without overflow: 128-bit intermediate */
        unsigned __int128 g = (unsigned __int128)step * rows_per_step + row;
        return (size_t)((g % N) * T % N); /* (g mod N) * T < 2^128 */
    }
    /* shuffle: a fresh generator per (seed, step, row), so no state is carried
       between steps and a row is the same whichever process asks for it */
    CHECK(order == ORDER_SHUFFLE, "unknown data order %d", (int)order);
    Rng rng;
    rng_seed(&rng, mix_triple(SHUFFLE_DOMAIN, seed, step, row));
    return (size_t)rng_below(&rng, N - T); /* [0, N - T - 1]: the window never wraps */
}

void token_data_rows(const TokenData* td, const RowRequest* rq, int32_t* tokens, int32_t* targets) {
    size_t T = rq->T, R = rq->rows_per_step;
    CHECK(rq->row0 <= R && rq->n <= R - rq->row0, "rows %zu..%zu out of range: %zu rows per step", rq->row0,
          rq->row0 + rq->n, R);
    for (size_t b = 0; b < rq->n; b++) { /* b is the local row, row0 + b the global one */
        size_t start = token_data_row_start(td, rq->order, rq->seed, rq->step, R, rq->row0 + b, T);
        token_data_window(td, start, T, tokens + b * T, targets + b * T);
    }
}

void token_data_window(const TokenData* td, size_t start, size_t T, int32_t* x, int32_t* y) {
    stream_read(td, start, T, x);          /* x[t] = stream[start + t] */
    memcpy(y, x + 1, (T - 1) * sizeof *y); /* y[t] = x[t + 1] */
    y[T - 1] = (int32_t)token_data_at(td, (start + T) % td->n_tokens);
}
