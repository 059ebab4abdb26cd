/* safetensors writing (docs/formats.md, "safetensors").
   The header is built by hand (exact integers, serde_json's string escapes),
   entries sorted by name after "__metadata__", padded with spaces to a
   multiple of 8 bytes as the reference implementation does. The data section
   is laid out like Python's safetensors.torch.save_file: by dtype (F64, F32,
   I32, BF16) and then by name, so every tensor starts at a multiple of its
   element size. Values are converted through a fixed staging buffer; the
   file is written to <path>.tmp.<pid>, fsync'ed and renamed into place. */
#include "common/safetensors.h"

#include <errno.h>
#include <fcntl.h> /* open */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* write, fsync, close, unlink, getpid */

#include "common/check.h" /* die_at, mallocCheck, mulCheck */
#include "common/textbuf.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors_write.c assumes a little-endian host (the file format is little-endian)"
#endif

/* Conversions go through one staging buffer of this size per st_write call,
   never a full-size copy of a tensor; each chunk is converted in parallel. */
#define ST_STAGE_BYTES ((size_t)1 << 20)
#define ST_PAR_MIN ((size_t)1 << 16)
#ifdef OMP
#define ST_PARALLEL_FOR _Pragma("omp parallel for schedule(static) if(count >= ST_PAR_MIN)")
#else
#define ST_PARALLEL_FOR
#endif

/* Append s as a JSON string: quote, backslash and control characters escaped
   (\b \f \n \r \t, others \u00XX, as serde_json); UTF-8 passes through. */
static void st_buf_json_string(TextBuf* b, const char* s) {
    textbuf_put(b, "\"", 1);
    for (const unsigned char* c = (const unsigned char*)s; *c; c++) {
        const char* esc = *c == '"'    ? "\\\""
                          : *c == '\\' ? "\\\\"
                          : *c == '\b' ? "\\b"
                          : *c == '\f' ? "\\f"
                          : *c == '\n' ? "\\n"
                          : *c == '\r' ? "\\r"
                          : *c == '\t' ? "\\t"
                                       : NULL;
        if (esc) textbuf_put(b, esc, 2);
        else if (*c < 0x20) textbuf_printf(b, "\\u%04x", *c);
        else textbuf_put(b, (const char*)c, 1);
    }
    textbuf_put(b, "\"", 1);
}

/* One tensor to write: its description, size and place in the data section. */
typedef struct {
    const StWriteTensor* t;
    const StFill* fill; /* NULL: the values are at t->data */
    size_t numel, bytes, begin;
} StPlan;

/* Data order rank, as the Rust Dtype enum order: F64 > F32 > I32 > BF16. */
static int st_rank(StDtype dt) { return dt == ST_F64 ? 4 : dt == ST_F32 ? 3 : dt == ST_I32 ? 2 : 1; }

/* qsort comparators over StPlan pointers: by name; by (rank desc, name) */
static int st_cmp_plan_name(const void* a, const void* b) {
    return strcmp((*(StPlan* const*)a)->t->name, (*(StPlan* const*)b)->t->name);
}
static int st_cmp_plan_data(const void* a, const void* b) {
    const StPlan *x = *(StPlan*const*)a, *y = *(StPlan*const*)b;
    int rx = st_rank(x->t->dtype), ry = st_rank(y->t->dtype);
    return rx != ry ? ry - rx : strcmp(x->t->name, y->t->name);
}
static int st_cmp_cstr(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

/* Die unless s is a non-NULL valid UTF-8 string; `what` names it. */
static void st_check_text(const char* path, const char* what, const char* s) {
    CHECK(s, "st_write '%s': %s is NULL", path, what);
    size_t n = strlen(s);
    CHECK(st_utf8_check((const uint8_t*)s, n) == n, "st_write '%s': %s '%s' is not valid UTF-8", path, what, s);
}

/* Validate the tensors and fill plan[i] (numel, bytes) for each. */
static void st_plan_tensors(const char* path, const StWriteTensor* ts, const StFill* fills, size_t n, StPlan* plan) {
    for (size_t i = 0; i < n; i++) {
        const StWriteTensor* t = &ts[i];
        const StFill* fill = fills && fills[i].fill ? &fills[i] : NULL;
        st_check_text(path, "a tensor name", t->name);
        CHECK(strcmp(t->name, "__metadata__") != 0, "st_write '%s': '__metadata__' is not a tensor name", path);
        CHECK(t->dtype == ST_F32 || t->dtype == ST_BF16 || t->dtype == ST_F64 || t->dtype == ST_I32,
              "st_write '%s': tensor '%s': dtype %s cannot be written (F32, BF16, F64 or I32)", path, t->name,
              st_dtype_name(t->dtype));
        CHECK(t->ndim <= ST_MAX_DIMS, "st_write '%s': tensor '%s' has %zu dimensions, at most %d", path, t->name,
              t->ndim, ST_MAX_DIMS);
        size_t numel = 1;
        for (size_t d = 0; d < t->ndim; d++) numel = mulCheck(numel, t->shape[d], "st_write: tensor numel");
        CHECK(numel == 0 || t->data || fill, "st_write '%s': tensor '%s' has %zu elements but no data", path, t->name,
              numel);
        CHECK(!fill || t->dtype != ST_I32, "st_write '%s': tensor '%s': fill gives reals, not I32", path, t->name);
        plan[i] = (StPlan){t, fill, numel, mulCheck(numel, st_dtype_size(t->dtype), "st_write: tensor bytes"), 0};
    }
}

/* Build the padded header text; by_name lists the tensors sorted by name. */
static TextBuf st_header(StPlan* const* by_name, size_t n, const char* const* keys, const char* const* values,
                         size_t n_meta) {
    TextBuf b = {.what = "safetensors header"};
    textbuf_put(&b, "{", 1);
    if (n_meta > 0) {
        textbuf_put(&b, "\"__metadata__\":{", 16);
        for (size_t i = 0; i < n_meta; i++) {
            if (i) textbuf_put(&b, ",", 1);
            st_buf_json_string(&b, keys[i]);
            textbuf_put(&b, ":", 1);
            st_buf_json_string(&b, values[i]);
        }
        textbuf_put(&b, "}", 1);
    }
    for (size_t i = 0; i < n; i++) {
        const StPlan* p = by_name[i];
        if (i || n_meta) textbuf_put(&b, ",", 1);
        st_buf_json_string(&b, p->t->name);
        textbuf_printf(&b, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_name(p->t->dtype));
        for (size_t d = 0; d < p->t->ndim; d++) textbuf_printf(&b, d ? ",%zu" : "%zu", p->t->shape[d]);
        textbuf_printf(&b, "],\"data_offsets\":[%zu,%zu]}", p->begin, p->begin + p->bytes);
    }
    textbuf_put(&b, "}", 1);
    while (b.len % 8 != 0) textbuf_put(&b, " ", 1);
    return b;
}

/* The output in progress, for cleaning up on error. */
typedef struct {
    const char* path;
    char* tmp;
    int fd;
} StWriter;

/* Remove the temporary file and die naming the path, the step and errno. */
static _Noreturn void st_write_die(StWriter* w, const char* what, int errnum) {
    if (w->fd >= 0) close(w->fd);
    unlink(w->tmp);
    die_at(__FILE__, __LINE__, "writing '%s' (temporary file '%s'): %s: %s", w->path, w->tmp, what, strerror(errnum));
}

/* write(2) all n bytes, retrying short writes and EINTR. */
static void st_write_all(StWriter* w, const void* buf, size_t n) {
    const char* p = buf;
    while (n > 0) {
        ssize_t k = write(w->fd, p, n < ((size_t)1 << 30) ? n : ((size_t)1 << 30));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) st_write_die(w, "write", k < 0 ? errno : EIO);
        p += k;
        n -= (size_t)k;
    }
}

/* Convert count reals to dtype dt (F32, BF16 or F64) into out. */
static void st_convert(uint8_t* out, const real* src, size_t count, StDtype dt) {
    ST_PARALLEL_FOR
    for (size_t i = 0; i < count; i++) {
        if (dt == ST_F32) {
            float v = (float)src[i];
            memcpy(out + 4 * i, &v, 4);
        } else if (dt == ST_F64) {
            double v = (double)src[i];
            memcpy(out + 8 * i, &v, 8);
        } else {
            uint16_t v = bf16_round_nearest((float)src[i]);
            memcpy(out + 2 * i, &v, 2);
        }
    }
}

/* Write one tensor's data: raw when the bytes already match the file
   (int32, or the dtype of `real`), else converted chunk by chunk. A double
   goes to bf16 through float, as torch's BFloat16(float(x)) does. A tensor
   given by fill is produced chunk by chunk into fill_stage (ST_STAGE_BYTES)
   first. */
static void st_write_data(StWriter* w, const StPlan* p, uint8_t* stage, real* fill_stage) {
    StDtype dt = p->t->dtype;
    int raw = dt == ST_I32 || (dt == ST_F32 && sizeof(real) == 4) || (dt == ST_F64 && sizeof(real) == 8);
    if (raw && !p->fill) {
        st_write_all(w, p->t->data, p->bytes);
        return;
    }
    size_t es = st_dtype_size(dt), chunk = ST_STAGE_BYTES / (es > sizeof(real) ? es : sizeof(real));
    for (size_t i = 0; i < p->numel; i += chunk) {
        size_t count = p->numel - i < chunk ? p->numel - i : chunk;
        const real* src = (const real*)p->t->data + i;
        if (p->fill) {
            p->fill->fill(p->fill->ctx, i, count, fill_stage);
            src = fill_stage;
        }
        if (raw) {
            st_write_all(w, src, count * es);
        } else {
            st_convert(stage, src, count, dt);
            st_write_all(w, stage, count * es);
        }
    }
}

/* fsync the directory holding path, so the rename itself is durable. */
static void st_sync_dir(const char* path) {
    const char* slash = strrchr(path, '/');
    size_t len = slash ? (slash == path ? 1 : (size_t)(slash - path)) : 1;
    char* dir = mallocCheck(len + 1);
    memcpy(dir, slash ? path : ".", len);
    dir[len] = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(fd >= 0, "wrote '%s' but cannot open its directory '%s' to fsync it: %s", path, dir, strerror(errno));
    /* some file systems do not support fsync on a directory (EINVAL): nothing more to do there */
    CHECK(fsync(fd) == 0 || errno == EINVAL, "wrote '%s' but fsync of directory '%s' failed: %s", path, dir,
          strerror(errno));
    close(fd);
    free(dir);
}

/* Validate all inputs (names, dtypes, sizes, duplicates) before creating any
   file, lay out the data, build the header, then write the temporary file and
   rename it. Any failure after the file exists removes it and dies. */
void st_write(const char* path, const StWriteTensor* tensors, size_t n, const char* const* meta_keys,
              const char* const* meta_values, size_t n_meta) {
    st_write_filled(path, tensors, NULL, n, meta_keys, meta_values, n_meta);
}

void st_write_filled(const char* path, const StWriteTensor* tensors, const StFill* fills, size_t n,
                     const char* const* meta_keys, const char* const* meta_values, size_t n_meta) {
    /* validate everything before creating any file */
    StPlan* plan = mallocCheck(n * sizeof(StPlan));
    StPlan** by_name = mallocCheck(n * sizeof(StPlan*));
    StPlan** by_data = mallocCheck(n * sizeof(StPlan*));
    st_plan_tensors(path, tensors, fills, n, plan);
    for (size_t i = 0; i < n; i++) by_name[i] = by_data[i] = &plan[i];
    qsort(by_name, n, sizeof(StPlan*), st_cmp_plan_name);
    for (size_t i = 1; i < n; i++)
        CHECK(strcmp(by_name[i - 1]->t->name, by_name[i]->t->name) != 0,
              "st_write '%s': duplicate tensor "
              "name '%s'",
              path, by_name[i]->t->name);
    const char** keys = mallocCheck(n_meta * sizeof(char*));
    for (size_t i = 0; i < n_meta; i++) {
        st_check_text(path, "a metadata key", meta_keys[i]);
        st_check_text(path, "a metadata value", meta_values[i]);
        keys[i] = meta_keys[i];
    }
    qsort(keys, n_meta, sizeof(char*), st_cmp_cstr);
    for (size_t i = 1; i < n_meta; i++)
        CHECK(strcmp(keys[i - 1], keys[i]) != 0, "st_write '%s': duplicate metadata key '%s'", path, keys[i]);
    free(keys);

    /* lay out the data section, then the header that describes it; each
       tensor's bytes are a multiple of its element size and the sizes only
       decrease along by_data, so every begin is aligned */
    qsort(by_data, n, sizeof(StPlan*), st_cmp_plan_data);
    size_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        by_data[i]->begin = offset;
        offset += by_data[i]->bytes;
        CHECK(offset >= by_data[i]->bytes, "st_write '%s': data section size overflows", path);
    }
    TextBuf hdr = st_header(by_name, n, meta_keys, meta_values, n_meta);
    CHECK(hdr.len <= ST_MAX_HEADER,
          "st_write '%s': header of %zu bytes exceeds the %d-byte limit readers "
          "accept",
          path, hdr.len, ST_MAX_HEADER);
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hdr.len >> (8 * i));

    /* the temporary file sits next to path, so rename() cannot cross file systems */
    StWriter w = {path, mallocCheck(strlen(path) + 32), -1};
    snprintf(w.tmp, strlen(path) + 32, "%s.tmp.%ld", path, (long)getpid());
    unlink(w.tmp); /* a leftover, or a link someone put there: removed, never written through */
    w.fd = open(w.tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (w.fd < 0) st_write_die(&w, "cannot create the temporary file", errno);
    uint8_t* stage = mallocCheck(ST_STAGE_BYTES);
    real* fill_stage = NULL;
    for (size_t i = 0; i < n && !fill_stage; i++)
        if (plan[i].fill) fill_stage = mallocCheck(ST_STAGE_BYTES);
    st_write_all(&w, len8, 8);
    st_write_all(&w, hdr.s, hdr.len);
    for (size_t i = 0; i < n; i++) st_write_data(&w, by_data[i], stage, fill_stage);
    if (fsync(w.fd) != 0) st_write_die(&w, "fsync", errno);
    int rc = close(w.fd);
    w.fd = -1;
    if (rc != 0) st_write_die(&w, "close", errno);
    if (rename(w.tmp, path) != 0) st_write_die(&w, "rename onto the final path", errno);
    st_sync_dir(path);
    free(stage);
    free(fill_stage);
    free(w.tmp);
    textbuf_free(&hdr);
    free(plan);
    free(by_name);
    free(by_data);
}
