/* safetensors reading (docs/formats.md, "safetensors"): the header parser and validator, mmap
   open/close and lookup by name. The parser never exits: every error is a
   message naming the file and the tensor or byte offset, returned to the
   caller (the malformed-file tests and the fuzzer, tests/fuzz/
   fuzz_safetensors.c, rely on this). Validation is complete before any
   tensor byte is read; the checks follow the reference implementation
   (huggingface/safetensors) but also allow gaps between tensors.
   Conversions: common/safetensors_convert.c; writing: safetensors_write.c. */
#include "common/safetensors.h"

#include <errno.h>
#include <fcntl.h>    /* open */
#include <inttypes.h> /* PRIu64 */
#include <math.h>     /* floor */
#include <stdarg.h>   /* st_fail's va_list */
#include <stdio.h>    /* vsnprintf */
#include <stdlib.h>   /* qsort, bsearch */
#include <string.h>
#include <sys/mman.h> /* mmap, munmap */
#include <sys/stat.h> /* fstat */
#include <unistd.h>   /* close */

#include <cjson/cJSON.h> /* the header JSON */

#include "common/check.h"  /* DIE, CHECK, mallocCheck, callocCheck */
#include "common/mapped.h" /* mapped_add: a SIGBUS while reading a mapping names the file */
#include "common/utf8.h"   /* utf8_decode */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host (the file format is little-endian)"
#endif

/* cJSON keeps every number as a double, and a double at or above 2^53 may be
   a rounded integer (2^53 + 1 parses as 2^53): such counts are rejected. */
#define ST_MAX_EXACT 9007199254740992.0

/* indexed by StDtype */
static const char* const DTYPE_NAMES[] = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL"};
static const size_t DTYPE_SIZES[] = {8, 4, 2, 2, 8, 4, 2, 1, 1, 1};
#define ST_N_DTYPES (sizeof(DTYPE_SIZES) / sizeof(DTYPE_SIZES[0]))

/* bytes per element, 0 for a value outside the enum */
size_t st_dtype_size(StDtype dt) { return (size_t)dt < ST_N_DTYPES ? DTYPE_SIZES[dt] : 0; }

const char* st_dtype_name(StDtype dt) { return (size_t)dt < ST_N_DTYPES ? DTYPE_NAMES[dt] : "?"; }

/* the header is JSON text, so UTF-8: the first byte where utf8_decode fails */
size_t st_utf8_check(const uint8_t* s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = utf8_decode(s + i, n - i, &cp);
        if (!len) return i;
        i += len;
    }
    return n;
}

/* A JSON number that is an exact non-negative integer below 2^53 and within
   size_t; cJSON stores every number as a double, so 1.5, -1 and 1e300 all
   arrive here and are rejected. Returns 1 and sets *out when valid. */
static int st_json_count(const cJSON* v, size_t* out) {
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= 0.0 && d < ST_MAX_EXACT) || d != floor(d) || d > (double)SIZE_MAX) return 0;
    *out = (size_t)d;
    return 1;
}

/* dtype name -> enum; returns 0 when unknown */
static int st_dtype_parse(const char* s, StDtype* dt) {
    for (size_t i = 0; i < ST_N_DTYPES; i++) {
        if (strcmp(s, DTYPE_NAMES[i]) == 0) {
            *dt = (StDtype)i;
            return 1;
        }
    }
    return 0;
}

/* Context shared by the checks of one header: the label, where the data
   section starts in the file, and the error buffer. */
typedef struct {
    const char* label;
    size_t data_start; /* 8 + header length */
    size_t data_size;
    char* err;
    size_t err_len;
} StCtx;

/* Parse "shape" of tensor t: at most ST_MAX_DIMS exact counts; sets numel. */
static int st_parse_shape(const StCtx* c, StTensor* t, const cJSON* shape) {
    if (!cJSON_IsArray(shape))
        return set_err(c->err, c->err_len, "%s: tensor '%s': \"shape\" is not an array", c->label, t->name);
    int nd = cJSON_GetArraySize(shape);
    if (nd > ST_MAX_DIMS)
        return set_err(c->err, c->err_len, "%s: tensor '%s': shape has %d dimensions, at most %d are supported",
                       c->label, t->name, nd, ST_MAX_DIMS);
    t->ndim = 0;
    t->numel = 1;
    const cJSON* d;
    cJSON_ArrayForEach(d, shape) {
        size_t v;
        if (!cJSON_IsNumber(d))
            return set_err(c->err, c->err_len, "%s: tensor '%s': shape entry %zu is not a number", c->label, t->name,
                           t->ndim);
        if (!st_json_count(d, &v))
            return set_err(c->err, c->err_len,
                           "%s: tensor '%s': shape entry %zu = %.17g is not a non-negative "
                           "integer below 2^53",
                           c->label, t->name, t->ndim, d->valuedouble);
        t->shape[t->ndim++] = v;
        if (v != 0 && t->numel > SIZE_MAX / v)
            return set_err(c->err, c->err_len, "%s: tensor '%s': shape product overflows size_t at dimension %zu",
                           c->label, t->name, t->ndim - 1);
        t->numel *= v;
    }
    return 0;
}

/* Parse "data_offsets" and check it against the data section and the size
   implied by dtype and shape (which are parsed first). Offsets are relative
   to the data section; messages also give file offsets (data_start + x).
   numel x element size is checked for overflow before it is compared. */
static int st_parse_offsets(const StCtx* c, StTensor* t, const cJSON* offs) {
    size_t b, e;
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || !st_json_count(offs->child, &b) ||
        !st_json_count(offs->child->next, &e))
        return set_err(c->err, c->err_len,
                       "%s: tensor '%s': \"data_offsets\" is not [begin, end] with "
                       "non-negative integers below 2^53",
                       c->label, t->name);
    if (b > e)
        return set_err(c->err, c->err_len, "%s: tensor '%s': data_offsets [%zu, %zu] has begin > end", c->label,
                       t->name, b, e);
    if (e > c->data_size)
        return set_err(c->err, c->err_len,
                       "%s: tensor '%s': data_offsets [%zu, %zu] end past the data section "
                       "(%zu bytes, which ends at byte %zu of the file)",
                       c->label, t->name, b, e, c->data_size, c->data_start + c->data_size);
    size_t es = st_dtype_size(t->dtype);
    if (t->numel > SIZE_MAX / es)
        return set_err(c->err, c->err_len, "%s: tensor '%s': %zu elements x %zu bytes overflows size_t", c->label,
                       t->name, t->numel, es);
    if (t->numel * es != e - b)
        return set_err(c->err, c->err_len,
                       "%s: tensor '%s': shape and dtype give %zu x %zu = %zu bytes but "
                       "data_offsets [%zu, %zu] hold %zu (size does not match)",
                       c->label, t->name, t->numel, es, t->numel * es, b, e, e - b);
    t->begin = b;
    t->end = e;
    return 0;
}

/* Parse one tensor entry: an object with exactly dtype, shape, data_offsets
   (each once; cJSON keeps duplicate keys, so they are counted here). */
static int st_parse_entry(const StCtx* c, StTensor* t, const cJSON* entry) {
    if (!cJSON_IsObject(entry))
        return set_err(c->err, c->err_len, "%s: tensor '%s': entry is not an object", c->label, t->name);
    const cJSON *dtype = NULL, *shape = NULL, *offs = NULL, *k;
    cJSON_ArrayForEach(k, entry) {
        const cJSON** slot = strcmp(k->string, "dtype") == 0          ? &dtype
                             : strcmp(k->string, "shape") == 0        ? &shape
                             : strcmp(k->string, "data_offsets") == 0 ? &offs
                                                                      : NULL;
        if (!slot)
            return set_err(c->err, c->err_len,
                           "%s: tensor '%s': unknown key '%s' (expected dtype, shape, "
                           "data_offsets)",
                           c->label, t->name, k->string);
        if (*slot)
            return set_err(c->err, c->err_len, "%s: tensor '%s': duplicate key '%s'", c->label, t->name, k->string);
        *slot = k;
    }
    const char* missing = !dtype ? "dtype" : !shape ? "shape" : !offs ? "data_offsets" : NULL;
    if (missing) return set_err(c->err, c->err_len, "%s: tensor '%s': missing \"%s\"", c->label, t->name, missing);
    if (!cJSON_IsString(dtype))
        return set_err(c->err, c->err_len, "%s: tensor '%s': \"dtype\" is not a string", c->label, t->name);
    if (!st_dtype_parse(dtype->valuestring, &t->dtype))
        return set_err(c->err, c->err_len,
                       "%s: tensor '%s': unknown dtype '%s' (known: F64 F32 F16 BF16 I64 "
                       "I32 I16 I8 U8 BOOL)",
                       c->label, t->name, dtype->valuestring);
    if (st_parse_shape(c, t, shape)) return 1;
    return st_parse_offsets(c, t, offs);
}

/* Parse "__metadata__": an object of string -> string, copied into
   f->meta_keys / meta_values in file order (duplicates checked later). */
static int st_parse_meta(const StCtx* c, StFile* f, const cJSON* meta) {
    if (!cJSON_IsObject(meta)) return set_err(c->err, c->err_len, "%s: \"__metadata__\" is not an object", c->label);
    size_t n = (size_t)cJSON_GetArraySize(meta);
    f->meta_keys = callocCheck(n, sizeof(char*));
    f->meta_values = callocCheck(n, sizeof(char*));
    const cJSON* kv;
    cJSON_ArrayForEach(kv, meta) {
        if (!cJSON_IsString(kv))
            return set_err(c->err, c->err_len, "%s: \"__metadata__\" key '%s': value is not a string", c->label,
                           kv->string);
        f->meta_keys[f->n_meta] = strdup(kv->string);
        f->meta_values[f->n_meta] = strdup(kv->valuestring);
        CHECK(f->meta_keys[f->n_meta] && f->meta_values[f->n_meta], "out of memory copying metadata");
        f->n_meta++;
    }
    return 0;
}

/* qsort comparators: strings, tensors by name, tensors by (begin, end) */
static int st_cmp_str(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }
static int st_cmp_name(const void* a, const void* b) {
    return strcmp(((const StTensor*)a)->name, ((const StTensor*)b)->name);
}
static int st_cmp_begin(const void* a, const void* b) {
    const StTensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* Whole-table checks after every entry parsed: duplicate names and metadata
   keys, overlapping tensors. Leaves the tensors sorted by name. */
static int st_check_table(const StCtx* c, StFile* f) {
    if (f->n_meta > 1) {
        char** keys = mallocCheck(f->n_meta * sizeof(char*));
        memcpy(keys, f->meta_keys, f->n_meta * sizeof(char*));
        qsort(keys, f->n_meta, sizeof(char*), st_cmp_str);
        const char* dup = NULL;
        for (size_t i = 1; i < f->n_meta && !dup; i++)
            if (strcmp(keys[i - 1], keys[i]) == 0) dup = keys[i];
        int rc = dup ? set_err(c->err, c->err_len, "%s: \"__metadata__\": duplicate key '%s'", c->label, dup) : 0;
        free(keys);
        if (rc) return rc;
    }
    qsort(f->tensors, f->n_tensors, sizeof(StTensor), st_cmp_name);
    for (size_t i = 1; i < f->n_tensors; i++) {
        if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0)
            return set_err(c->err, c->err_len, "%s: duplicate tensor name '%s'", c->label, f->tensors[i].name);
    }
    /* Sorted by begin, each non-empty tensor must start at or after the end
       of the previous non-empty one (if it ends later than that one starts,
       they share bytes). Zero-length tensors own no bytes and cannot overlap. */
    qsort(f->tensors, f->n_tensors, sizeof(StTensor), st_cmp_begin);
    const StTensor* prev = NULL;
    for (size_t i = 0; i < f->n_tensors; i++) {
        const StTensor* t = &f->tensors[i];
        if (t->begin == t->end) continue;
        if (prev && t->begin < prev->end)
            return set_err(c->err, c->err_len,
                           "%s: tensors '%s' data_offsets [%zu, %zu] and '%s' [%zu, %zu] "
                           "overlap (file bytes %zu to %zu)",
                           c->label, prev->name, prev->begin, prev->end, t->name, t->begin, t->end,
                           c->data_start + t->begin, c->data_start + (t->end < prev->end ? t->end : prev->end));
        prev = t;
    }
    qsort(f->tensors, f->n_tensors, sizeof(StTensor), st_cmp_name);
    return 0;
}

/* Free what the parser filled (tensors, metadata) and zero those fields. */
static void st_free_table(StFile* f) {
    for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    for (size_t i = 0; i < f->n_meta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_values[i]);
    }
    free(f->tensors);
    free(f->meta_keys);
    free(f->meta_values);
    f->tensors = NULL;
    f->meta_keys = f->meta_values = NULL;
    f->n_tensors = f->n_meta = 0;
}

/* Check the raw header bytes: UTF-8 without NUL (a raw NUL is never valid
   JSON, and cJSON's strings are NUL-terminated). Then parse them with cJSON
   from a NUL-terminated copy of n + 1 bytes, so no read can go past n; with
   require_null_terminated cJSON accepts only whitespace (the writer's space
   padding) after the value. Returns the root object, or NULL with err set. */
static cJSON* st_parse_json(const StCtx* c, const char* json, size_t n) {
    if (n == 0) {
        set_err(c->err, c->err_len, "%s: header length is 0 (bytes 0-7); expected a JSON object", c->label);
        return NULL;
    }
    const char* nul = memchr(json, '\0', n);
    if (nul) {
        set_err(c->err, c->err_len, "%s: header contains a NUL byte at file offset %zu", c->label,
                (size_t)(nul - json) + 8);
        return NULL;
    }
    size_t bad = st_utf8_check((const uint8_t*)json, n);
    if (bad < n) {
        set_err(c->err, c->err_len, "%s: header is not valid UTF-8 at file offset %zu (byte 0x%02x)", c->label, bad + 8,
                (unsigned)(uint8_t)json[bad]);
        return NULL;
    }
    char* copy = mallocCheck(n + 1);
    memcpy(copy, json, n);
    copy[n] = '\0';
    const char* end = NULL;
    cJSON* root = cJSON_ParseWithLengthOpts(copy, n + 1, &end, 1);
    if (!root) {
        size_t at = end ? (size_t)(end - copy) : 0;
        set_err(c->err, c->err_len, "%s: header is invalid JSON near file offset %zu (header byte %zu of %zu)",
                c->label, at + 8, at, n);
    } else if (!cJSON_IsObject(root)) {
        set_err(c->err, c->err_len, "%s: header (file bytes 8 to %zu) is valid JSON but not a JSON object", c->label,
                n + 8);
        cJSON_Delete(root);
        root = NULL;
    }
    free(copy);
    return root;
}

/* Validate every entry in file order (the first bad one is reported), then
   the table as a whole. On error everything allocated here is freed. */
int st_parse_header(StFile* f, const char* json, size_t n, size_t data_size, const char* label, char* err,
                    size_t err_len) {
    f->tensors = NULL;
    f->meta_keys = f->meta_values = NULL;
    f->n_tensors = f->n_meta = 0;
    f->data_size = data_size;
    StCtx c = {label, n > SIZE_MAX - 8 ? SIZE_MAX : n + 8, data_size, err, err_len};
    cJSON* root = st_parse_json(&c, json, n);
    if (!root) return 1;
    /* one slot per top-level key; __metadata__ leaves one unused */
    size_t n_entries = (size_t)cJSON_GetArraySize(root);
    f->tensors = callocCheck(n_entries, sizeof(StTensor));
    int rc = 0;
    int seen_meta = 0;
    const cJSON* e;
    /* the names are copied out: the cJSON tree is freed before returning */
    cJSON_ArrayForEach(e, root) {
        if (strcmp(e->string, "__metadata__") == 0) {
            rc = seen_meta ? set_err(err, err_len, "%s: duplicate \"__metadata__\"", label) : st_parse_meta(&c, f, e);
            seen_meta = 1;
        } else {
            StTensor* t = &f->tensors[f->n_tensors++];
            t->name = strdup(e->string);
            CHECK(t->name, "out of memory copying a tensor name");
            rc = st_parse_entry(&c, t, e);
        }
        if (rc) break;
    }
    cJSON_Delete(root);
    if (!rc) rc = st_check_table(&c, f);
    if (rc) st_free_table(f);
    return rc;
}

/* The file around the header: [u64 n little-endian][n bytes of JSON][data]. */
int st_parse_bytes(StFile* f, const uint8_t* buf, size_t size, const char* label, char* err, size_t err_len) {
    f->data = NULL;
    f->data_size = 0;
    f->tensors = NULL;
    f->meta_keys = f->meta_values = NULL;
    f->n_tensors = f->n_meta = 0;
    if (size == 0)
        return set_err(err, err_len,
                       "%s: empty file (0 bytes); a safetensors file starts with an 8-byte header "
                       "length",
                       label);
    if (size < 8)
        return set_err(err, err_len, "%s: file is %zu bytes, shorter than the 8-byte header length", label, size);
    uint64_t n = 0; /* little-endian u64, byte by byte */
    for (int i = 7; i >= 0; i--) n = (n << 8) | buf[i];
    /* the limit first: it also keeps n + 8 from overflowing */
    if (n > ST_MAX_HEADER)
        return set_err(err, err_len,
                       "%s: header length %" PRIu64 " (file bytes 0-7) exceeds the limit of %d "
                       "bytes (the file is %zu bytes)",
                       label, n, ST_MAX_HEADER, size);
    if (n > size - 8)
        return set_err(err, err_len,
                       "%s: header length %" PRIu64 " (file bytes 0-7) runs past the end of the "
                       "file (%zu bytes, so at most %zu)",
                       label, n, size, size - 8);
    int rc = st_parse_header(f, (const char*)buf + 8, (size_t)n, size - 8 - (size_t)n, label, err, err_len);
    if (rc == 0) f->data = buf + 8 + (size_t)n;
    return rc;
}

/* open + fstat + mmap (read-only, private), registered with common/mapped.h
   (a file truncated while mapped ends with its name and the byte offset, not
   a bare SIGBUS), then st_parse_bytes on the mapping. The descriptor is
   closed at once (the mapping outlives it); on any error the mapping is
   undone, so nothing is left open. */
int st_open(StFile* f, const char* path, char* err, size_t err_len) {
    memset(f, 0, sizeof(*f));
    f->fd = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block before the check below */
    if (fd < 0) return set_err(err, err_len, "%s: cannot open for reading: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int rc = set_err(err, err_len, "%s: fstat failed: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return set_err(err, err_len, "%s: not a regular file%s", path, S_ISDIR(sb.st_mode) ? " (a directory)" : "");
    }
    size_t size = (size_t)sb.st_size;
    void* map = NULL; /* mmap of 0 bytes fails: an empty file is reported by st_parse_bytes */
    if (size > 0) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int rc = set_err(err, err_len, "%s: mmap of %zu bytes failed: %s", path, size, strerror(errno));
            close(fd);
            return rc;
        }
    }
    close(fd); /* the mapping stays valid without the descriptor */
    char* name = strdup(path);
    CHECK(name, "out of memory copying a path");
    if (map) mapped_add(map, size, name); /* the file shrinking under us: SIGBUS names it and the offset */
    int rc = st_parse_bytes(f, map, size, path, err, err_len);
    if (rc) {
        if (map) {
            mapped_remove(map);
            munmap(map, size);
        }
        free(name);
        memset(f, 0, sizeof(*f));
        f->fd = -1;
        return rc;
    }
    f->path = name;
    f->map = map;
    f->file_size = size;
    return 0;
}

/* st_open, or print the message as "error (file:line): ..." and exit 1. */
void st_open_or_die(StFile* f, const char* path) {
    char err[ST_ERR_LEN];
    if (st_open(f, path, err, sizeof(err)) != 0) DIE("%s", err);
}

/* Unmap, free the table and the path; f is left zeroed (safe to close twice,
   and on a zero-initialised StFile). No descriptor is held: st_open closed it. */
void st_close(StFile* f) {
    st_free_table(f);
    if (f->map) {
        mapped_remove(f->map);
        munmap((void*)f->map, f->file_size);
    }
    free(f->path);
    memset(f, 0, sizeof(*f));
    f->fd = -1;
}

/* Binary search: the tensors are sorted by name. */
const StTensor* st_find(const StFile* f, const char* name) {
    StTensor key = {.name = (char*)name}; /* st_cmp_name reads only the name */
    return bsearch(&key, f->tensors, f->n_tensors, sizeof(StTensor), st_cmp_name);
}

/* Linear search: metadata is a handful of pairs. */
const char* st_meta(const StFile* f, const char* key) {
    for (size_t i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_values[i];
    return NULL;
}
