/* safetensors reading and writing (docs/formats.md, "safetensors").
   Reading maps the file with mmap and validates the whole header before any
   tensor data is touched: header length within the file, JSON well formed,
   dtype known, shape product x dtype size == end - begin without overflow,
   0 <= begin <= end <= data size, no two tensors overlapping. Errors never
   exit inside the parser: st_parse_header / st_open return non-zero and write
   a message naming the file and the tensor or byte offset into err, so the
   fuzzer and the malformed-file tests can call them; callers that want to
   stop use the *_or_die wrappers. Writing is atomic: a temporary file in the
   same directory, fsync, rename. */
#ifndef REPOC_SAFETENSORS_H
#define REPOC_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "common/bf16.h"
#include "common/real.h"

/* A tensor's dtype, as the header's "dtype" names it (F64, F32, F16, BF16, I64, ..., BOOL) */
typedef enum { ST_F64, ST_F32, ST_F16, ST_BF16, ST_I64, ST_I32, ST_I16, ST_I8, ST_U8, ST_BOOL } StDtype;

#define ST_MAX_DIMS 8
#define ST_ERR_LEN 512
#define ST_MAX_HEADER 100000000 /* header length limit, as the reference implementation */

typedef struct {
    char* name; /* owned by the StFile */
    StDtype dtype;
    size_t ndim;
    size_t shape[ST_MAX_DIMS];
    size_t numel;      /* product of shape (1 for a scalar) */
    size_t begin, end; /* byte offsets relative to the start of the data section */
} StTensor;

typedef struct {
    char* path;
    int fd;             /* -1: st_open closes the descriptor once the file is mapped */
    const uint8_t* map; /* whole file, read-only (NULL after st_parse_bytes) */
    size_t file_size;
    const uint8_t* data; /* map + 8 + header length */
    size_t data_size;
    StTensor* tensors; /* sorted by name */
    size_t n_tensors;
    char** meta_keys; /* __metadata__ string pairs */
    char** meta_values;
    size_t n_meta;
} StFile;

size_t st_dtype_size(StDtype dt);
const char* st_dtype_name(StDtype dt);

/* Parse and validate a header (the n JSON bytes after the 8-byte length) for a
   data section of data_size bytes. `label` names the file in messages.
   Fills f->tensors, f->meta_*. Returns 0, or non-zero with err set. */
int st_parse_header(StFile* f, const char* json, size_t n, size_t data_size, const char* label, char* err,
                    size_t err_len);
/* Parse a whole file image the way st_open does: the 8-byte length (at most
   ST_MAX_HEADER and within size), the header, and the data section after it
   (f->data points into buf). Sets no path or map. Returns 0, or non-zero with err set. */
int st_parse_bytes(StFile* f, const uint8_t* buf, size_t size, const char* label, char* err, size_t err_len);
/* Open, mmap and validate a file. Returns 0, or non-zero with err set (and nothing left open). */
int st_open(StFile* f, const char* path, char* err, size_t err_len);
void st_open_or_die(StFile* f, const char* path);
void st_close(StFile* f);

const StTensor* st_find(const StFile* f, const char* name); /* NULL if absent */
const char* st_meta(const StFile* f, const char* key);      /* NULL if absent */

/* Convert a floating-point tensor (F64, F32, F16, BF16) into dst (numel reals). */
void st_read_real(const StFile* f, const StTensor* t, real* dst);
/* The same for elements first .. first+count-1 of the tensor (flat index) only. */
void st_read_real_range(const StFile* f, const StTensor* t, size_t first, size_t count, real* dst);
/* Convert an integer tensor (I64, I32, I16, I8, U8, BOOL) into dst (numel int32s);
   a value outside int32 (or a BOOL byte other than 0 and 1) is an error naming the tensor. */
void st_read_i32(const StFile* f, const StTensor* t, int32_t* dst);
/* The same, returning non-zero with err set instead of exiting (BOOL must be 0 or 1). */
int st_read_i32_checked(const StFile* f, const StTensor* t, int32_t* dst, char* err, size_t err_len);

/* Writing: describe each tensor, then write them all at once. */
typedef struct {
    const char* name;
    StDtype dtype; /* ST_F32, ST_BF16 (round to nearest even), ST_F64 or ST_I32 */
    size_t ndim;
    size_t shape[ST_MAX_DIMS];
    const void* data; /* real* for float dtypes, int32_t* for ST_I32 */
} StWriteTensor;

/* Write path atomically (path.tmp.<pid>, fsync, rename, fsync of the directory).
   meta: n_meta key/value string pairs for __metadata__. Dies with a message on any I/O error,
   removing the temporary file. */
void st_write(const char* path, const StWriteTensor* tensors, size_t n, const char* const* meta_keys,
              const char* const* meta_values, size_t n_meta);

/* Values produced on demand instead of read from StWriteTensor.data (float
   dtypes): the writer calls fill(ctx, first, count, out) for consecutive
   ranges of the tensor, in order, each to put those elements into out (count
   reals). For values that are not in this process's memory as one array,
   e.g. optimizer state gathered from several ranks piece by piece. */
typedef struct {
    void (*fill)(void* ctx, size_t first, size_t count, real* out);
    void* ctx;
} StFill;
/* st_write where tensor i with fills[i].fill set takes its values from it
   (its data may be NULL); fills may be NULL (= st_write). */
void st_write_filled(const char* path, const StWriteTensor* tensors, const StFill* fills, size_t n,
                     const char* const* meta_keys, const char* const* meta_values, size_t n_meta);

/* The names hf/ reads BF16 tensors by: common/bf16.h's rounding to nearest even and widening */
static inline uint16_t st_f32_to_bf16(float x) { return bf16_round_nearest(x); }
static inline float st_bf16_to_f32(uint16_t b) { return bf16_to_f32(b); }
float st_f16_to_f32(uint16_t h);

/* Offset of the first byte of s[0..n) that does not start a valid UTF-8
   sequence (overlong forms and surrogates rejected), or n when all is valid. */
size_t st_utf8_check(const uint8_t* s, size_t n);

#endif
