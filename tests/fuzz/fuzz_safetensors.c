/* libFuzzer harness for the safetensors reader (common/safetensors.c).
   Each input is a whole file image, parsed exactly as st_open parses its
   mapping (st_parse_bytes: the 8-byte length, the header, the data bounds).
   A rejected input must come with a non-empty message naming the file; an
   accepted one must satisfy every invariant the loaders rely on, and every
   tensor in it is converted (reads stay inside the input: ASan checks that).
   Build and run: make fuzz [FUZZ_SECONDS=600]. Compiles with or without
   -DREPOC_F64. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/safetensors.h"

#define FUZZ_LABEL "fuzz.safetensors"
#define FUZZ_MAX_READ ((size_t)1 << 20) /* elements converted per tensor */

/* Stop the run: libFuzzer reports the input that got here. */
#define FUZZ_ASSERT(c) \
    do { \
        if (!(c)) __builtin_trap(); \
    } while (0)

/* Check what st_parse_bytes promises about an accepted file. */
static void check_invariants(const StFile* f, const uint8_t* data, size_t size) {
    FUZZ_ASSERT(f->data >= data + 8 && f->data + f->data_size == data + size);
    for (size_t i = 0; i < f->n_tensors; i++) {
        const StTensor* t = &f->tensors[i];
        FUZZ_ASSERT(t->begin <= t->end && t->end <= f->data_size);
        FUZZ_ASSERT(t->ndim <= ST_MAX_DIMS);
        size_t numel = 1;
        for (size_t d = 0; d < t->ndim; d++) numel *= t->shape[d];
        FUZZ_ASSERT(numel == t->numel && numel * st_dtype_size(t->dtype) == t->end - t->begin);
        FUZZ_ASSERT(i == 0 || strcmp(f->tensors[i - 1].name, t->name) < 0);
        FUZZ_ASSERT(st_find(f, t->name) == t);
    }
    for (size_t i = 0; i < f->n_meta; i++) FUZZ_ASSERT(st_meta(f, f->meta_keys[i]) != NULL);
}

/* Convert every tensor that is not too large to real or int32. */
static void read_all(const StFile* f) {
    char err[ST_ERR_LEN];
    for (size_t i = 0; i < f->n_tensors; i++) {
        const StTensor* t = &f->tensors[i];
        if (t->numel > FUZZ_MAX_READ) continue;
        StDtype dt = t->dtype;
        if (dt == ST_F64 || dt == ST_F32 || dt == ST_F16 || dt == ST_BF16) {
            real* dst = malloc((t->numel ? t->numel : 1) * sizeof(real));
            FUZZ_ASSERT(dst);
            st_read_real(f, t, dst);
            free(dst);
        } else {
            int32_t* dst = malloc((t->numel ? t->numel : 1) * sizeof(int32_t));
            FUZZ_ASSERT(dst);
            err[0] = '\0';
            /* out-of-range values are an error message, never an exit */
            if (st_read_i32_checked(f, t, dst, err, sizeof(err)) != 0)
                FUZZ_ASSERT(strncmp(err, "(in-memory safetensors): ", 25) == 0);
            free(dst);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

/* One input: parse; on error check the message, else the invariants and reads. */
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    StFile f;
    memset(&f, 0, sizeof(f));
    f.fd = -1;
    char err[ST_ERR_LEN];
    memset(err, 0, sizeof(err));
    if (st_parse_bytes(&f, data, size, FUZZ_LABEL, err, sizeof(err)) != 0) {
        FUZZ_ASSERT(strncmp(err, FUZZ_LABEL ": ", strlen(FUZZ_LABEL) + 2) == 0);
        FUZZ_ASSERT(memchr(err, '\0', sizeof(err)) != NULL);
        FUZZ_ASSERT(f.tensors == NULL && f.n_tensors == 0 && f.meta_keys == NULL && f.n_meta == 0);
        return 0;
    }
    check_invariants(&f, data, size);
    read_all(&f);
    st_close(&f); /* map is NULL: frees the table only */
    return 0;
}
