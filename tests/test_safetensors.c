/* Tests of common/safetensors.c and safetensors_write.c (docs/formats.md, "safetensors"):
   a file truncated while mapped (named with its byte offset, not a bare SIGBUS),
   bf16/f16 conversions, a write/read round trip of every writable dtype
   (scalar and zero-size tensors included) compared bit for bit, metadata,
   reading every integer dtype, and the malformed corpus in
   tests/corpus/safetensors/ (made by tools/make_safetensors_corpus.sh), each
   file of which must fail to open with the message given in CORPUS below.
   Run from the repository root; prints one OK / NOT OK line per case and
   exits non-zero on any failure. */
#include <dirent.h> /* the corpus directory and the temporary directory */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h> /* reads the raw header back to check its key order */

#include "common/check.h"
#include "tests/testutil.h"
#include "common/safetensors.h"

/* Bits of a float and back. */
static uint32_t f2u(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}
static float u2f(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* f32 -> bf16 against torch's round_to_nearest_even, worked out by hand */
static void test_bf16_rounding(void) {
    static const struct {
        uint32_t in;
        uint16_t out;
        const char* what;
    } cases[] = {
        {0x3F800000, 0x3F80, "1.0 exact"},
        {0x3F808000, 0x3F80, "tie, kept bit even: down"},
        {0x3F818000, 0x3F82, "tie, kept bit odd: up"},
        {0x3F808001, 0x3F81, "just above a tie: up"},
        {0x3F807FFF, 0x3F80, "just below a tie: down"},
        {0xBF808000, 0xBF80, "negative tie, even: toward zero"},
        {0xBF818000, 0xBF82, "negative tie, odd: away from zero"},
        {0x80000000, 0x8000, "-0.0"},
        {0x00000001, 0x0000, "smallest subnormal"},
        {0x00018000, 0x0002, "subnormal tie, odd: up"},
        {0x7F800000, 0x7F80, "+inf"},
        {0xFF800000, 0xFF80, "-inf"},
        {0x7F7FFFFF, 0x7F80, "max finite float overflows to +inf"},
        {0xFF7FFFFF, 0xFF80, "-max finite float overflows to -inf"},
        {0x7F7F7FFF, 0x7F7F, "largest that stays finite"},
        {0x7FC00000, 0x7FC0, "quiet NaN"},
        {0x7F800001, 0x7FC0, "signalling NaN stays NaN (not inf)"},
        {0xFFC00001, 0x7FC0, "negative NaN"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint16_t got = bf16_round_nearest(u2f(cases[i].in));
        report(got == cases[i].out, "bf16 round 0x%08x -> 0x%04x (expected 0x%04x): %s", cases[i].in, got, cases[i].out,
               cases[i].what);
    }
    report(f2u(bf16_to_f32(0xC020)) == 0xC0200000, "bf16 0xc020 -> f32 bits << 16 (-2.5)");
}

/* f16 -> f32: normals, subnormals, zeros, inf, NaN */
static void test_f16(void) {
    static const struct {
        uint16_t in;
        uint32_t out;
        const char* what;
    } cases[] = {
        {0x3C00, 0x3F800000, "1.0"},
        {0xC000, 0xC0000000, "-2.0"},
        {0x7BFF, 0x477FE000, "65504 (max)"},
        {0x0400, 0x38800000, "2^-14 (min normal)"},
        {0x0001, 0x33800000, "2^-24 (min subnormal)"},
        {0x03FF, 0x387FC000, "1023 x 2^-24 (max subnormal)"},
        {0x8001, 0xB3800000, "-2^-24"},
        {0x0000, 0x00000000, "+0"},
        {0x8000, 0x80000000, "-0"},
        {0x7C00, 0x7F800000, "+inf"},
        {0xFC00, 0xFF800000, "-inf"},
        {0x7E00, 0x7FC00000, "NaN"},
        {0x7C01, 0x7F802000, "NaN payload kept"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint32_t got = f2u(st_f16_to_f32(cases[i].in));
        report(got == cases[i].out, "f16 0x%04x -> 0x%08x (expected 0x%08x): %s", cases[i].in, got, cases[i].out,
               cases[i].what);
    }
}

/* Does a file name something in dir that still holds ".tmp."? (leftovers of st_write) */
static int has_tmp_file(const char* dir) {
    DIR* d = opendir(dir);
    if (!d) return 1;
    struct dirent* e;
    int found = 0;
    while ((e = readdir(d))) found |= strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return found;
}

/* Check the raw header of an open file: length a multiple of 8, keys in
   order (__metadata__ first, then names ascending), data packed from 0 to
   the end with every tensor aligned to its element size. */
static void check_layout(const StFile* f, const char* what) {
    size_t n = (size_t)(f->data - f->map) - 8;
    report(n % 8 == 0, "%s: header length %zu is a multiple of 8", what, n);
    cJSON* root = cJSON_ParseWithLength((const char*)f->map + 8, n);
    int ordered = root != NULL;
    const char* prev = NULL;
    for (const cJSON* e = root ? root->child : NULL; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) {
            ordered &= prev == NULL;
            continue;
        }
        ordered &= prev == NULL || strcmp(prev, e->string) < 0;
        prev = e->string;
    }
    cJSON_Delete(root);
    report(ordered, "%s: header entries are __metadata__ then names in ascending order", what);
    size_t total = 0;
    int aligned = 1;
    for (size_t i = 0; i < f->n_tensors; i++) {
        total += f->tensors[i].end - f->tensors[i].begin;
        aligned &= f->tensors[i].begin % st_dtype_size(f->tensors[i].dtype) == 0;
    }
    report(aligned && total == f->data_size, "%s: data packed (%zu of %zu bytes) and aligned", what, total,
           f->data_size);
}

/* Read a float tensor back and compare it bit for bit with want. */
static void check_real(const StFile* f, const char* name, StDtype dt, size_t ndim, const size_t* shape,
                       const real* want, size_t numel) {
    const StTensor* t = st_find(f, name);
    int ok = t && t->dtype == dt && t->ndim == ndim && t->numel == numel;
    for (size_t d = 0; ok && d < ndim; d++) ok = t->shape[d] == shape[d];
    real* got = mallocCheck(numel * sizeof(real));
    if (ok) st_read_real(f, t, got);
    if (ok && numel) ok = memcmp(got, want, numel * sizeof(real)) == 0;
    report(ok, "round trip '%s' (%s, %zu dims, %zu elements) bit-exact", name, st_dtype_name(dt), ndim, numel);
    free(got);
}

/* Write every writable dtype, read it back, compare. */
static void test_round_trip(const char* dir) {
    char path[512];
    snprintf(path, sizeof(path), "%s/round_trip.safetensors", dir);
    real f32[6] = {1.5f, -0.0f, 3.14159265f, 1e-40f, -65504.0f, 7.0f};
    real bf[4]; /* bf16-exact values survive the trip */
    const uint16_t bf_bits[4] = {0x3F80, 0xC020, 0x3E20, 0x0001};
    for (int i = 0; i < 4; i++) bf[i] = bf16_to_f32(bf_bits[i]);
    real odd[3] = {1.0f, 2.0f, -3.0f}; /* 6 bytes of BF16: the F32 tensors must still be aligned */
    real f64[3] = {0.1f, -1e30f, 123456.789f};
    int32_t ids[4] = {INT32_MIN, -1, 0, INT32_MAX};
    real scalar = 42.5f;
    size_t big_n = (size_t)1 << 17; /* past the OpenMP threshold */
    real* big = mallocCheck(big_n * sizeof(real));
    for (size_t i = 0; i < big_n; i++) big[i] = bf16_to_f32((uint16_t)(i * 7919u));
    for (size_t i = 0; i < big_n; i++)
        if (big[i] != big[i]) big[i] = 0; /* NaN bit patterns vary */
    /* given out of name order: the header must come out sorted; the data
       order is the writer's own (by dtype size, then name) */
    StWriteTensor ts[] = {
        {"z.f32", ST_F32, 2, {2, 3}, f32},  {"odd.bf16", ST_BF16, 1, {3}, odd},
        {"a.bf16", ST_BF16, 2, {2, 2}, bf}, {"m.f64", ST_F64, 1, {3}, f64},
        {"ids", ST_I32, 1, {4}, ids},       {"scalar", ST_F32, 0, {0}, &scalar},
        {"empty", ST_F32, 2, {0, 4}, NULL}, {"big.bf16", ST_BF16, 2, {256, 512}, big},
    };
    size_t nt = sizeof(ts) / sizeof(ts[0]);
    st_write(path, ts, nt, NULL, NULL, 0);
    /* the temporary <path>.tmp.<pid> must have been renamed away */
    report(!has_tmp_file(dir), "st_write left no temporary file in %s", dir);
    StFile f;
    char err[ST_ERR_LEN] = "";
    int rc = st_open(&f, path, err, sizeof(err));
    report(rc == 0, "reopen %s %s", path, err);
    if (rc) return;
    int sorted = f.n_tensors == nt;
    for (size_t i = 1; sorted && i < f.n_tensors; i++) sorted = strcmp(f.tensors[i - 1].name, f.tensors[i].name) < 0;
    report(sorted, "%zu tensors, sorted by name", f.n_tensors);
    check_real(&f, "z.f32", ST_F32, 2, (size_t[]){2, 3}, f32, 6);
    check_real(&f, "a.bf16", ST_BF16, 2, (size_t[]){2, 2}, bf, 4);
    check_real(&f, "odd.bf16", ST_BF16, 1, (size_t[]){3}, odd, 3);
    check_real(&f, "m.f64", ST_F64, 1, (size_t[]){3}, f64, 3);
    check_real(&f, "scalar", ST_F32, 0, NULL, &scalar, 1);
    check_real(&f, "empty", ST_F32, 2, (size_t[]){0, 4}, NULL, 0);
    check_real(&f, "big.bf16", ST_BF16, 2, (size_t[]){256, 512}, big, big_n);
    /* I32 goes through the integer path */
    const StTensor* t = st_find(&f, "ids");
    int32_t got_ids[4] = {0};
    if (t && t->dtype == ST_I32) st_read_i32(&f, t, got_ids);
    report(t && memcmp(got_ids, ids, sizeof(ids)) == 0, "round trip 'ids' (I32 incl. INT32_MIN/MAX) exact");
    report(st_find(&f, "nope") == NULL, "st_find of an absent name gives NULL");
    check_layout(&f, "round trip");
    st_close(&f);
    free(big);
}

/* BF16 rounding through st_write: the stored bits are the rounded ones. */
static void test_bf16_write(const char* dir) {
    char path[512];
    snprintf(path, sizeof(path), "%s/bf16_round.safetensors", dir);
    const uint32_t in[] = {0x3F808000, 0x3F818000, 0xBF818000, 0x7F7FFFFF, 0xFF800000, 0x7F800001, 0x00018000};
    const uint16_t want[] = {0x3F80, 0x3F82, 0xBF82, 0x7F80, 0xFF80, 0x7FC0, 0x0002};
    real x[7];
    for (int i = 0; i < 7; i++) x[i] = (real)u2f(in[i]);
    StWriteTensor t = {"r", ST_BF16, 1, {7}, x};
    st_write(path, &t, 1, NULL, NULL, 0);
    StFile f;
    st_open_or_die(&f, path);
    const StTensor* r = st_find(&f, "r");
    int ok = r && r->end - r->begin == 14 && memcmp(f.data + r->begin, want, 14) == 0;
    report(ok, "st_write BF16 stores round-to-nearest-even bits (ties, -0 side, overflow to inf, NaN)");
    st_close(&f);
}

/* __metadata__ round trip with characters that need escaping, and an overwrite. */
static void test_metadata(const char* dir) {
    char path[512];
    snprintf(path, sizeof(path), "%s/meta.safetensors", dir);
    const char* keys[] = {"format", "quote\"back\\slash", "unicode", "control"};
    const char* values[] = {"pt", "line\nbreak\ttab/", "h\xc3\xa9llo \xe2\x9c\x93", "\x01\x1f"};
    real w[2] = {1, 2};
    StWriteTensor t = {"w", ST_F32, 1, {2}, w};
    st_write(path, &t, 1, keys, values, 4);
    StFile f;
    st_open_or_die(&f, path);
    int ok = f.n_meta == 4;
    for (int i = 0; ok && i < 4; i++) ok = st_meta(&f, keys[i]) && strcmp(st_meta(&f, keys[i]), values[i]) == 0;
    report(ok, "metadata round trip (4 pairs incl. quote, backslash, newline, UTF-8, control chars)");
    report(st_meta(&f, "missing") == NULL, "st_meta of an absent key gives NULL");
    check_layout(&f, "metadata file");
    st_close(&f);
    st_write(path, &t, 0, NULL, NULL, 0); /* overwrite with an empty file */
    st_open_or_die(&f, path);
    report(f.n_tensors == 0 && f.n_meta == 0 && f.file_size == 16,
           "overwrite with no tensors: '{}' + padding, "
           "%zu bytes",
           f.file_size);
    st_close(&f);
}

/* Write a raw file: 8-byte length, header, data. */
static void write_raw(const char* path, const char* header, const void* data, size_t n) {
    FILE* fp = fopenCheck(path, "wb");
    uint64_t len = strlen(header);
    fwriteCheck(&len, 8, 1, fp, path);
    fwriteCheck(header, 1, len, fp, path);
    if (n) fwriteCheck(data, 1, n, fp, path);
    fcloseCheck(fp, path);
}

/* Read F16 and every integer dtype from a hand-made file whose data starts
   at an odd offset (so every load is unaligned), and the range errors. */
static void test_read_dtypes(const char* dir) {
    char path[512];
    snprintf(path, sizeof(path), "%s/dtypes.safetensors", dir);
    const char* h = "{\"h\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,6]},"
                    "\"l\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[6,22]},"
                    "\"s\":{\"dtype\":\"I16\",\"shape\":[2],\"data_offsets\":[22,26]},"
                    "\"c\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[26,28]},"
                    "\"u\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[28,30]},"
                    "\"b\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[30,32]},"
                    "\"L\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[32,48]},"
                    "\"B\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[48,49]}}";
    /* data: h F16 [0,6), l I64 [6,22), s I16 [22,26), c I8, u U8, b BOOL, L I64 (out of int32), B BOOL (2) */
    uint8_t d[49];
    const uint16_t hv[3] = {0x3C00, 0x0001, 0xFC00};
    const int64_t lv[2] = {INT32_MIN, INT32_MAX}, Lv[2] = {7, (int64_t)INT32_MAX + 1};
    const int16_t sv[2] = {-32768, 32767};
    memcpy(d, hv, 6);
    memcpy(d + 6, lv, 16);
    memcpy(d + 22, sv, 4);
    d[26] = 0x80;
    d[27] = 0x7F;
    d[28] = 0xFF;
    d[29] = 0;
    d[30] = 1;
    d[31] = 0;
    memcpy(d + 32, Lv, 16);
    d[48] = 2;
    char hdr[1024];
    snprintf(hdr, sizeof(hdr), "%s%s", h, strlen(h) % 2 ? "" : " "); /* odd length */
    write_raw(path, hdr, d, sizeof(d));
    StFile f;
    char err[ST_ERR_LEN] = "";
    int rc = st_open(&f, path, err, sizeof(err));
    report(rc == 0 && (size_t)(f.data - f.map) % 2 == 1, "hand-made file with data at odd offset opens %s", err);
    if (rc) return;
    real hr[3];
    st_read_real(&f, st_find(&f, "h"), hr);
    report(hr[0] == 1 && hr[1] == (real)0x1p-24 && isinf(hr[2]) && hr[2] < 0, "F16 read: 1, 2^-24, -inf");
    static const struct {
        const char* name;
        int32_t a, b;
    } ints[] = {{"l", INT32_MIN, INT32_MAX}, {"s", -32768, 32767}, {"c", -128, 127}, {"u", 255, 0}, {"b", 1, 0}};
    for (int i = 0; i < 5; i++) {
        const StTensor* t = st_find(&f, ints[i].name);
        int32_t v[2] = {0, 0};
        st_read_i32(&f, t, v);
        report(v[0] == ints[i].a && v[1] == ints[i].b, "%s read as int32: %d %d (expected %d %d)",
               st_dtype_name(t->dtype), v[0], v[1], ints[i].a, ints[i].b);
    }
    /* the range errors come back as messages from the checked reader */
    int32_t v[2];
    err[0] = '\0';
    rc = st_read_i32_checked(&f, st_find(&f, "L"), v, err, sizeof(err));
    report(rc && strstr(err, "'L'") && strstr(err, "element 1") && strstr(err, "2147483648"),
           "I64 outside int32 is an error: %s", err);
    rc = st_read_i32_checked(&f, st_find(&f, "B"), v, err, sizeof(err));
    report(rc && strstr(err, "'B'") && strstr(err, "outside"), "BOOL byte 2 is an error: %s", err);
    rc = st_read_i32_checked(&f, st_find(&f, "h"), v, err, sizeof(err));
    report(rc && strstr(err, "integer dtype"), "int read of an F16 tensor is an error: %s", err);
    st_close(&f);
}

/* The first bad element is reported even when the loop runs in parallel. */
static void test_i64_parallel(const char* dir) {
    char path[512];
    snprintf(path, sizeof(path), "%s/i64.safetensors", dir);
    size_t n = (size_t)1 << 17;
    int64_t* x = callocCheck(n, sizeof(int64_t));
    x[n - 5] = INT64_MIN;
    x[100000] = (int64_t)1 << 40;
    char h[128];
    snprintf(h, sizeof(h), "{\"x\":{\"dtype\":\"I64\",\"shape\":[%zu],\"data_offsets\":[0,%zu]}}", n, n * 8);
    write_raw(path, h, x, n * 8);
    StFile f;
    st_open_or_die(&f, path);
    int32_t* v = mallocCheck(n * sizeof(int32_t));
    char err[ST_ERR_LEN] = "";
    int rc = st_read_i32_checked(&f, st_find(&f, "x"), v, err, sizeof(err));
    report(rc && strstr(err, "element 100000 "), "large I64: first bad element named: %s", err);
    st_close(&f);
    free(v);
    free(x);
}

/* Each malformed file and a phrase its error message must contain (the
   message must also contain the file's path). A new file in the corpus
   directory needs an entry here, or the test fails. */
static const struct {
    const char* file;
    const char* phrase;
} CORPUS[] = {
    {"empty", "empty file"},
    {"truncated", "5 bytes, shorter than"},
    {"header_past_end", "runs past the end"},
    {"huge_header_length", "9223372036854775808"},
    {"empty_header", "header length is 0"},
    {"invalid_json", "invalid JSON"},
    {"header_not_object", "not a JSON object"},
    {"trailing_garbage", "invalid JSON"},
    {"nul_in_header", "NUL byte at file offset 9"},
    {"invalid_utf8", "UTF-8 at file offset 10"},
    {"entry_not_object", "'x': entry is not an object"},
    {"unknown_dtype", "unknown dtype 'F33'"},
    {"dtype_not_string", "\"dtype\" is not a string"},
    {"missing_dtype", "missing \"dtype\""},
    {"missing_data_offsets", "missing \"data_offsets\""},
    {"unknown_key", "unknown key 'foo'"},
    {"duplicate_key_in_entry", "duplicate key 'dtype'"},
    {"shape_not_array", "\"shape\" is not an array"},
    {"shape_non_number", "shape entry 0 is not a number"},
    {"shape_negative", "shape entry 0 = -1"},
    {"shape_fractional", "shape entry 0 = 1.5"},
    {"shape_huge", "below 2^53"},
    {"shape_too_many_dims", "9 dimensions"},
    {"shape_product_overflow", "shape product overflows"},
    {"size_overflow", "x 4 bytes overflows"},
    {"size_mismatch", "size does not match"},
    {"offsets_wrong_length", "\"data_offsets\" is not [begin, end]"},
    {"offsets_negative", "\"data_offsets\" is not [begin, end]"},
    {"offsets_fractional", "\"data_offsets\" is not [begin, end]"},
    {"offsets_out_of_range", "[0, 16] end past the data section (8 bytes"},
    {"offsets_begin_after_end", "[8, 4] has begin > end"},
    {"offsets_overlap", "'a' data_offsets [0, 8] and 'b'"},
    {"duplicate_name", "duplicate tensor name 'x'"},
    {"metadata_non_string", "key 'step': value is not a string"},
    {"metadata_not_object", "\"__metadata__\" is not an object"},
    {"metadata_duplicate_key", "duplicate key 'a'"},
    {"metadata_twice", "duplicate \"__metadata__\""},
};
#define N_CORPUS (sizeof(CORPUS) / sizeof(CORPUS[0]))

/* Is name (a directory entry) listed in CORPUS? */
static int corpus_listed(const char* name) {
    for (size_t i = 0; i < N_CORPUS; i++) {
        size_t k = strlen(CORPUS[i].file);
        if (strncmp(name, CORPUS[i].file, k) == 0 && strcmp(name + k, ".safetensors") == 0) return 1;
    }
    return 0;
}

/* Every corpus file fails with its message; no file lacks an entry; the valid seeds open. */
static void test_corpus(const char* root) {
    char path[1024], err[ST_ERR_LEN];
    for (size_t i = 0; i < N_CORPUS; i++) {
        snprintf(path, sizeof(path), "%s/safetensors/%s.safetensors", root, CORPUS[i].file);
        StFile f;
        err[0] = '\0';
        int rc = st_open(&f, path, err, sizeof(err));
        if (rc == 0) st_close(&f);
        int ok = rc != 0 && strstr(err, path) && strstr(err, CORPUS[i].phrase);
        report(ok, "corpus %-24s -> %s%s%s", CORPUS[i].file, rc ? err : "opened without error",
               ok ? "" : "\n         expected a message containing: ", ok ? "" : CORPUS[i].phrase);
    }
    const char* sub[2] = {"safetensors", "safetensors_valid"};
    for (int s = 0; s < 2; s++) {
        snprintf(path, sizeof(path), "%s/%s", root, sub[s]);
        DIR* d = opendir(path);
        report(d != NULL, "corpus directory %s exists (run from the repository root)", path);
        for (struct dirent* e; d && (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            if (s == 0 && !corpus_listed(e->d_name)) report(0, "corpus file %s has no expected message", e->d_name);
            if (s == 0) continue;
            char p[1300];
            snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
            StFile f;
            err[0] = '\0';
            int rc = st_open(&f, p, err, sizeof(err));
            report(rc == 0, "valid seed %s opens (%zu tensors) %s", e->d_name, rc ? 0 : f.n_tensors, err);
            if (rc == 0) st_close(&f);
        }
        if (d) closedir(d);
    }
}

/* A missing file and a directory: clear messages, nothing left open. */
static void test_missing(const char* dir) {
    char path[512], err[ST_ERR_LEN] = "";
    snprintf(path, sizeof(path), "%s/does_not_exist.safetensors", dir);
    StFile f;
    int rc = st_open(&f, path, err, sizeof(err));
    report(rc && strstr(err, path) && strstr(err, "No such file"), "missing file -> %s", err);
    err[0] = '\0';
    rc = st_open(&f, dir, err, sizeof(err));
    report(rc && strstr(err, dir) && strstr(err, "directory"), "a directory -> %s", err);
}

/* The child of test_truncated_while_mapped: open, truncate the file to its
   first page, then read the tensor whose later pages are gone. */
static void read_after_truncate(void* arg) {
    const char* path = arg;
    StFile f;
    st_open_or_die(&f, path);
    const StTensor* t = st_find(&f, "w");
    CHECK(t && truncate(path, 4096) == 0, "truncating '%s'", path);
    real* out = mallocCheck(4 * 4096 * sizeof(real));
    st_read_real(&f, t, out); /* SIGBUS past byte 4096 */
    printf("read %g past the end\n", (double)out[4 * 4096 - 1]);
    free(out);
    st_close(&f);
}

/* A safetensors file that shrinks while mapped (a checkpoint overwritten or
   truncated under a loading run): the SIGBUS handler of common/mapped.h names
   the file and the byte offset, exit 1, instead of a bare SIGBUS (exit 135). */
static void test_truncated_while_mapped(const char* dir) {
    char path[512];
    snprintf(path, sizeof(path), "%s/shrinks.safetensors", dir);
    real* w = callocCheck(4 * 4096, sizeof(real));
    StWriteTensor t = {"w", ST_F32, 2, {4, 4096}, w}; /* 64 KiB of data: many pages */
    st_write(path, &t, 1, NULL, NULL, 0);
    free(w);
    char out[8192], want[600];
    int st = capture_child(read_after_truncate, path, out, sizeof(out));
    snprintf(want, sizeof(want), "error: SIGBUS reading '%s' at byte offset ", path);
    const char* at = strstr(out, want);
    unsigned long long offset = at ? strtoull(at + strlen(want), NULL, 10) : 0;
    report(st == 1 && at && offset >= 4096 && offset < 16 * 4096 + 4096 && strstr(out, "the file shrank"),
           "a file truncated while mapped: exit %d, offset %llu: %s", st, offset, at ? at : out);
}

/* Remove the temporary directory and what the tests wrote into it. */
static void remove_dir(const char* dir) {
    DIR* d = opendir(dir);
    char p[1024];
    for (struct dirent* e; d && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

/* argv[1]: the corpus root (default tests/corpus, relative to the repository root). */
int main(int argc, char** argv) {
    const char* corpus = argc > 1 ? argv[1] : "tests/corpus";
    char dir[] = "/tmp/repoc_test_safetensors_XXXXXX";
    CHECK(mkdtemp(dir), "cannot create a temporary directory under /tmp");
    test_bf16_rounding();
    test_f16();
    test_round_trip(dir);
    test_bf16_write(dir);
    test_metadata(dir);
    test_read_dtypes(dir);
    test_i64_parallel(dir);
    test_missing(dir);
    test_truncated_while_mapped(dir);
    test_corpus(corpus);
    remove_dir(dir);
    printf("test_safetensors (%s): %d passed, %d failed\n", REAL_NAME, test_passes, test_failures);
    return test_failures ? 1 : 0;
}
