/* The BF16 product through oneDNN's matmul primitive (model/gemm_onednn.h). Each shape's primitive is created
   once, with its memory objects (data handles set at every call) and a user scratchpad shared by all of them:
   a call after a shape's first one allocates nothing. */
#include "model/gemm_onednn.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"

void bf16_from_f32(bf16* out, const float* in, size_t rows, size_t cols, size_t ld) {
    if (ld == cols) { /* one span: split it evenly */
        size_t n = rows * cols;
#pragma omp parallel for simd schedule(static) if (n >= 65536)
        for (size_t i = 0; i < n; i++) out[i] = bf16_round_nearest(in[i]);
        return;
    }
#pragma omp parallel for schedule(static) if (rows * cols >= 65536)
    for (size_t r = 0; r < rows; r++) {
        const float* x = in + r * ld;
        bf16* y = out + r * cols;
#pragma omp simd
        for (size_t c = 0; c < cols; c++) y[c] = bf16_round_nearest(x[c]);
    }
}

#ifdef REPOC_DNNL
#include <oneapi/dnnl/dnnl.h>

#define DNNL_CHECK(call) \
    do { \
        dnnl_status_t st_ = (call); \
        CHECK(st_ == dnnl_success, "oneDNN: %s failed (status %d)", #call, (int)st_); \
    } while (0)

typedef struct {
    bool ta, tb, bf16; /* bf16: BF16 operands, else FP32 */
    size_t M, N, K, lda, ldb, ldc;
    float alpha, beta;
} Shape;

typedef struct {
    Shape s;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c, pad; /* handles set per call */
    char impl[64];              /* the kernel oneDNN chose */
} Entry;

/* Shapes of one training step: about 10 per layer kind plus the head's; generation adds one per prompt
   length. When the cache is full the oldest entry is destroyed and its slot reused. */
#define CACHE_SLOTS 512
static struct {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    Entry e[CACHE_SLOTS];
    size_t n, next, created;
    void* pad; /* the shared scratchpad, pad_bytes long */
    size_t pad_bytes;
} G;

static void engine_init(void) {
    if (G.engine) return;
    DNNL_CHECK(dnnl_engine_create(&G.engine, dnnl_cpu, 0));
    DNNL_CHECK(dnnl_stream_create(&G.stream, G.engine, dnnl_stream_default_flags));
}

static const char* isa_name(dnnl_cpu_isa_t isa) {
    switch (isa) {
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx2: return "avx2";
    default: return "older than avx2";
    }
}

/* the CPU has BF16 dot products (AVX512-BF16; AMX-BF16 CPUs have them too) */
static bool isa_has_bf16(dnnl_cpu_isa_t isa) {
    return ((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core_bf16) == (unsigned)dnnl_cpu_isa_avx512_core_bf16;
}

bool gemm_bf16_available(char* why, size_t n) {
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if (isa_has_bf16(isa)) return true;
    const char* cap = getenv("DNNL_MAX_CPU_ISA");
    snprintf(
        why, n,
        "this CPU has no BF16 instructions (neither AVX512-BF16 nor AMX-BF16; oneDNN's best ISA here is %s%s%s%s), "
        "and oneDNN's emulation of them would be slower than the FP32 products",
        isa_name(isa), cap ? ", limited by DNNL_MAX_CPU_ISA=" : "", cap ? cap : "", cap ? " in the environment" : "");
    return false;
}

const char* onednn_name(void) {
    static char buf[96];
    const dnnl_version_t* v = dnnl_version();
    snprintf(buf, sizeof(buf), "oneDNN %d.%d.%d, ISA %s", v->major, v->minor, v->patch,
             isa_name(dnnl_get_effective_cpu_isa()));
    return buf;
}

bool onednn_available(void) { return true; }

static bool same_shape(const Shape* x, const Shape* y) {
    return x->ta == y->ta && x->tb == y->tb && x->bf16 == y->bf16 && x->M == y->M && x->N == y->N && x->K == y->K &&
           x->lda == y->lda && x->ldb == y->ldb && x->ldc == y->ldc && !memcmp(&x->alpha, &y->alpha, sizeof(float)) &&
           !memcmp(&x->beta, &y->beta, sizeof(float));
}

/* a 2-D memory descriptor of (rows, cols) whose element (i, j) sits at i * si + j * sj */
static dnnl_memory_desc_t md2(size_t rows, size_t cols, size_t si, size_t sj, dnnl_data_type_t dt) {
    dnnl_memory_desc_t md;
    dnnl_dims_t dims = {(dnnl_dim_t)rows, (dnnl_dim_t)cols}, strides = {(dnnl_dim_t)si, (dnnl_dim_t)sj};
    DNNL_CHECK(dnnl_memory_desc_init_by_strides(&md, 2, dims, dt, strides));
    return md;
}

static void entry_destroy(Entry* e) {
    dnnl_primitive_destroy(e->prim);
    dnnl_memory_destroy(e->a);
    dnnl_memory_destroy(e->b);
    dnnl_memory_destroy(e->c);
    dnnl_memory_destroy(e->pad);
    memset(e, 0, sizeof(*e));
}

static Entry* entry_create(const Shape* s) {
    engine_init();
    Entry* e = &G.e[G.next];
    if (G.n == CACHE_SLOTS) entry_destroy(e);
    else G.n++;
    G.next = (G.next + 1) % CACHE_SLOTS;
    e->s = *s;
    /* logical A (M,K), B (K,N), C (M,N); a transposed operand is the same matrix read with swapped strides */
    dnnl_data_type_t dt = s->bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t a = s->ta ? md2(s->M, s->K, 1, s->lda, dt) : md2(s->M, s->K, s->lda, 1, dt);
    dnnl_memory_desc_t b = s->tb ? md2(s->K, s->N, 1, s->ldb, dt) : md2(s->K, s->N, s->ldb, 1, dt);
    dnnl_memory_desc_t c = md2(s->M, s->N, s->ldc, 1, dnnl_f32);
    dnnl_matmul_desc_t desc;
    DNNL_CHECK(dnnl_matmul_desc_init(&desc, &a, &b, NULL, &c));
    dnnl_primitive_attr_t attr;
    DNNL_CHECK(dnnl_primitive_attr_create(&attr));
    DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    if (s->alpha != 1.0f) DNNL_CHECK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &s->alpha));
    dnnl_post_ops_t po = NULL;
    if (s->beta != 0.0f) { /* C = alpha A B + beta C */
        DNNL_CHECK(dnnl_post_ops_create(&po));
        DNNL_CHECK(dnnl_post_ops_append_sum(po, s->beta));
        DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
    }
    dnnl_primitive_desc_t pd;
    DNNL_CHECK(dnnl_primitive_desc_create(&pd, &desc, attr, G.engine, NULL));
    const char* impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    snprintf(e->impl, sizeof(e->impl), "%s", impl);
    const dnnl_memory_desc_t* pad = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t pad_bytes = dnnl_memory_desc_get_size(pad);
    if (pad_bytes > G.pad_bytes) { /* grown at creation only, never in a call */
        free(G.pad);
        G.pad = mallocCheck(pad_bytes);
        G.pad_bytes = pad_bytes;
    }
    DNNL_CHECK(dnnl_primitive_create(&e->prim, pd));
    DNNL_CHECK(dnnl_memory_create(&e->a, &a, G.engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&e->b, &b, G.engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&e->c, &c, G.engine, DNNL_MEMORY_NONE));
    DNNL_CHECK(dnnl_memory_create(&e->pad, pad, G.engine, DNNL_MEMORY_NONE));
    dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    G.created++;
    return e;
}

static Entry* entry_find(const Shape* s) {
    for (size_t i = 0; i < G.n; i++)
        if (same_shape(&G.e[i].s, s)) return &G.e[i];
    return entry_create(s);
}

/* C = alpha op(A) op(B) + beta C through the shape's primitive; A and B hold BF16 or FP32 as s says */
static void gemm_onednn(const Shape* s, const void* A, const void* B, float* C) {
    if (s->M == 0 || s->N == 0) return;
    if (s->K == 0) { /* an empty sum: C = beta C */
        for (size_t i = 0; i < s->M; i++)
            for (size_t j = 0; j < s->N; j++) C[i * s->ldc + j] = s->beta == 0.0f ? 0.0f : s->beta * C[i * s->ldc + j];
        return;
    }
    Entry* e = entry_find(s);
    DNNL_CHECK(dnnl_memory_set_data_handle(e->a, (void*)A));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->b, (void*)B));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->c, C));
    DNNL_CHECK(dnnl_memory_set_data_handle(e->pad, G.pad));
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, e->a},
                               {DNNL_ARG_WEIGHTS, e->b},
                               {DNNL_ARG_DST, e->c},
                               {DNNL_ARG_SCRATCHPAD, e->pad}};
    DNNL_CHECK(dnnl_primitive_execute(e->prim, G.stream, 4, args));
    DNNL_CHECK(dnnl_stream_wait(G.stream));
}

/* the primitive cache's key: g's layout, with the operands' type */
static Shape shape_of(const GemmShape* g, bool bf16) {
    return (Shape){g->ta, g->tb, bf16, g->M, g->N, g->K, g->lda, g->ldb, g->ldc, g->alpha, g->beta};
}

void gemm_bf16(const GemmShape* s, const bf16* A, const bf16* B, float* C) {
    Shape k = shape_of(s, true);
    gemm_onednn(&k, A, B, C);
}

void gemm_f32_onednn(const GemmShape* s, const float* A, const float* B, float* C) {
    Shape k = shape_of(s, false);
    gemm_onednn(&k, A, B, C);
}

void onednn_print(FILE* fp) {
    for (size_t i = 0; i < G.n; i++) {
        const Shape* s = &G.e[i].s;
        fprintf(fp, "  %s %zux%zux%zu%s%s alpha %g beta %g: %s\n", s->bf16 ? "bf16" : "f32", s->M, s->N, s->K,
                s->ta ? " A^T" : "", s->tb ? " B^T" : "", s->alpha, s->beta, G.e[i].impl);
    }
}

size_t onednn_created(void) { return G.created; }

#else /* built without oneDNN */

bool gemm_bf16_available(char* why, size_t n) {
    snprintf(why, n,
             "this build has no oneDNN, which the BF16 products need: run 'make deps' (Debian's libdnnl-dev) and "
             "rebuild");
    return false;
}
const char* onednn_name(void) { return "none (built without oneDNN)"; }
bool onednn_available(void) { return false; }
void gemm_f32_onednn(const GemmShape* s, const float* A, const float* B, float* C) {
    DIE("gemm_f32_onednn: this build has no oneDNN ('make deps', then rebuild)");
}
void gemm_bf16(const GemmShape* s, const bf16* A, const bf16* B, float* C) {
    DIE("gemm_bf16: this build has no oneDNN ('make deps', then rebuild)");
}
void onednn_print(FILE* fp) {}
size_t onednn_created(void) { return 0; }

#endif
