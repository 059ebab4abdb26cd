/* safetensors element conversions (docs/formats.md, "safetensors"): bf16 and f16 to f32, f32
   to bf16 (round to nearest even, as torch), and st_read_real / st_read_i32,
   which convert a validated tensor from the mapped file into the caller's
   buffer. They read the mapping directly, so loading a large BF16 checkpoint
   keeps only the destination buffer resident (plus the page cache). Loads go
   through memcpy: tensor data may sit at any byte offset of the file. */
#include "common/safetensors.h"

#include <inttypes.h> /* PRId64 */
#include <stdio.h>    /* snprintf */
#include <string.h>   /* memcpy */

#include "common/check.h" /* CHECK, DIE */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors_convert.c assumes a little-endian host (the file format is little-endian)"
#endif

/* Conversion loops over at least ST_PAR_MIN elements run on all OpenMP
   threads (page faults of the mapping are then taken in parallel too);
   without -DOMP the pragma disappears and the loops run serially. */
#define ST_PAR_MIN ((size_t)1 << 16)
#ifdef OMP
#define ST_PARALLEL_FOR _Pragma("omp parallel for schedule(static) if(numel >= ST_PAR_MIN)")
#else
#define ST_PARALLEL_FOR
#endif

/* IEEE half (1 sign, 5 exponent with bias 15, 10 mantissa bits) to float;
   every half is exactly representable as a float. */
float st_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1F, m = h & 0x3FF, u;
    if (e == 0) { /* zero or subnormal: m x 2^-24, exact in float */
        float x = (float)m * 0x1p-24f;
        memcpy(&u, &x, 4);
        u |= sign;
    } else if (e == 31) { /* inf (m == 0) or NaN, payload kept */
        u = sign | 0x7F800000u | (m << 13);
    } else { /* normal: rebias the exponent 15 -> 127 */
        u = sign | ((e + 112) << 23) | (m << 13);
    }
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* Name a file in messages: its path, or a placeholder for in-memory parses
   (st_parse_bytes, used by the fuzzer, sets no path). */
static const char* st_label(const StFile* f) { return f->path ? f->path : "(in-memory safetensors)"; }

/* Is dt one of the floating-point dtypes st_read_real accepts? */
static int st_is_float(StDtype dt) { return dt == ST_F64 || dt == ST_F32 || dt == ST_F16 || dt == ST_BF16; }

/* Load one element of a float dtype from possibly unaligned little-endian
   bytes. F64 narrows to float when real is float (round to nearest). */
static inline real st_load_real(const uint8_t* p, StDtype dt) {
    switch (dt) {
    case ST_F64: {
        double v;
        memcpy(&v, p, 8);
        return (real)v;
    }
    case ST_F32: {
        float v;
        memcpy(&v, p, 4);
        return (real)v;
    }
    case ST_F16: {
        uint16_t v;
        memcpy(&v, p, 2);
        return (real)st_f16_to_f32(v);
    }
    default: {
        uint16_t v;
        memcpy(&v, p, 2);
        return (real)bf16_to_f32(v);
    }
    }
}

void st_read_real(const StFile* f, const StTensor* t, real* dst) { st_read_real_range(f, t, 0, t->numel, dst); }

void st_read_real_range(const StFile* f, const StTensor* t, size_t first, size_t count, real* dst) {
    StDtype dt = t->dtype;
    CHECK(st_is_float(dt), "%s: tensor '%s' has dtype %s; expected a floating-point dtype (F64, F32, F16, BF16)",
          st_label(f), t->name, st_dtype_name(dt));
    /* the parser guarantees this for its own tensors; it catches a tensor passed with the wrong file */
    CHECK(t->end <= f->data_size, "%s: tensor '%s' is not from this file", st_label(f), t->name);
    CHECK(first <= t->numel && count <= t->numel - first,
          "%s: tensor '%s' has %zu elements, asked for %zu from "
          "element %zu",
          st_label(f), t->name, t->numel, count, first);
    size_t numel = count, es = st_dtype_size(dt);
    const uint8_t* src = f->data + t->begin + first * es;
    /* the switch inside st_load_real is loop-invariant; the compiler unswitches it */
    ST_PARALLEL_FOR
    for (size_t i = 0; i < numel; i++) dst[i] = st_load_real(src + i * es, dt);
}

/* Load one element of an integer dtype as int64 (BOOL and U8 as their byte value). */
static inline int64_t st_load_int(const uint8_t* p, StDtype dt) {
    switch (dt) {
    case ST_I64: {
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    case ST_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case ST_I16: {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case ST_I8: return (int8_t)p[0];
    default: return p[0];
    }
}

int st_read_i32_checked(const StFile* f, const StTensor* t, int32_t* dst, char* err, size_t err_len) {
    StDtype dt = t->dtype;
    if (st_is_float(dt)) {
        snprintf(err, err_len, "%s: tensor '%s' has dtype %s; expected an integer dtype", st_label(f), t->name,
                 st_dtype_name(dt));
        return 1;
    }
    if (t->end > f->data_size) {
        snprintf(err, err_len, "%s: tensor '%s' is not from this file", st_label(f), t->name);
        return 1;
    }
    const uint8_t* src = f->data + t->begin;
    size_t numel = t->numel, es = st_dtype_size(dt), bad = numel;
    /* only I64 can leave int32; a BOOL byte must be 0 or 1 */
    int64_t hi = dt == ST_BOOL ? 1 : INT32_MAX, lo = dt == ST_BOOL ? 0 : INT32_MIN;
    ST_PARALLEL_FOR
    for (size_t i = 0; i < numel; i++) {
        int64_t v = st_load_int(src + i * es, dt);
        dst[i] = (int32_t)(v < lo ? lo : v > hi ? hi : v);
        if (v < lo || v > hi) {
            /* keep the smallest bad index, whichever thread sees it first */
#ifdef OMP
#pragma omp critical(st_read_i32_bad)
#endif
            if (i < bad) bad = i;
        }
    }
    if (bad == numel) return 0;
    snprintf(err, err_len,
             "%s: tensor '%s' (%s) element %zu = %" PRId64 " is outside [%" PRId64 ", %" PRId64
             "] (byte %zu of the data section)",
             st_label(f), t->name, st_dtype_name(dt), bad, st_load_int(src + bad * es, dt), lo, hi,
             t->begin + bad * es);
    return 1;
}

void st_read_i32(const StFile* f, const StTensor* t, int32_t* dst) {
    char err[ST_ERR_LEN];
    if (st_read_i32_checked(f, t, dst, err, sizeof(err)) != 0) DIE("%s", err);
}
