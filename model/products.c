/* product(): FP32 through OpenBLAS or oneDNN, or BF16 through gemm_bf16 (model/products.h). */
#include "model/products.h"

#include "model/amx.h"

#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/cpu.h"

static F32Engine f32_engine; /* F32_OPENBLAS until products_set_f32_engine */

const char* f32_engine_name(F32Engine e) { return e == F32_ONEDNN ? "onednn" : "openblas"; }

bool f32_engine_parse(const char* name, F32Engine* e) {
    if (!strcmp(name, "openblas")) *e = F32_OPENBLAS;
    else if (!strcmp(name, "onednn")) *e = F32_ONEDNN;
    else return false;
    return true;
}

void products_set_f32_engine(F32Engine e) {
#ifdef REPOC_F64
    e = F32_OPENBLAS; /* the double build's products are OpenBLAS's dgemm */
#endif
    CHECK(e == F32_OPENBLAS || onednn_available(), "FP32 products through oneDNN: %s", onednn_name());
    f32_engine = e;
}

F32Engine products_f32_engine(void) { return f32_engine; }

bool products_onednn(const Bf16Products* bf) { return bf || f32_engine == F32_ONEDNN; }

bool products_bf16_available(char* why, size_t n) {
#ifdef REPOC_F64
    snprintf(why, n, "BF16 products are for the float build; this one computes in double (PRECISION=64)");
    return false;
#else
    return gemm_bf16_available(why, n);
#endif
}

const char* products_name(bool bf16) {
    static char buf[160];
    if (bf16)
        snprintf(buf, sizeof(buf), "bf16 operands, FP32 accumulation: %s; attention's: %s", onednn_name(),
                 attention_bf16_kernel());
    else if (f32_engine == F32_ONEDNN) snprintf(buf, sizeof(buf), "%s: %s", REAL_NAME, onednn_name());
    else snprintf(buf, sizeof(buf), "%s: OpenBLAS, core %s", REAL_NAME, cpu_blas_core());
    return buf;
}

void products_forget(Bf16Products* bf) {
    if (bf) memset(bf->held, 0, sizeof(bf->held));
}

bf16* products_hold(Bf16Products* bf, int slot, const real* x, size_t rows, size_t cols, size_t ld) {
    if (!bf || rows * cols > bf->act_cap) return NULL;
    bf->held[slot].p = x;
    bf->held[slot].rows = rows;
    bf->held[slot].cols = cols;
    bf->held[slot].ld = ld;
    return bf->act[slot];
}

static void product_f32(size_t M, size_t N, size_t K, real alpha, Operand A, Operand B, real beta, real* C,
                        size_t ldc) {
#ifndef REPOC_F64
    if (f32_engine == F32_ONEDNN) {
        gemm_f32_onednn(&(GemmShape){A.t, B.t, M, N, K, A.ld, B.ld, ldc, alpha, beta}, A.p, B.p, C);
        return;
    }
#endif
    cblas_gemm(CblasRowMajor, A.t ? CblasTrans : CblasNoTrans, B.t ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K,
               alpha, A.p, (int)A.ld, B.p, (int)B.ld, beta, C, (int)ldc);
}

#ifndef REPOC_F64
/* the BF16 copy of weight w, or NULL when no region holds it */
static const bf16* weight_copy(const Bf16Products* p, const real* w) {
    for (size_t i = 0; i < PRODUCTS_REGIONS; i++) {
        const Bf16Region* r = &p->region[i];
        if (r->f32 && w >= r->f32 && w < r->f32 + r->n) return r->b16 + (w - r->f32);
    }
    return NULL;
}

/* An operand of the BF16 product: a weight's copy (its own stride), or an activation rounded into the work
   space `slot` (rows x cols read with stride x.ld, written with stride cols) */
static const bf16* operand(Bf16Products* p, Operand x, size_t rows, size_t cols, int slot, size_t* ld_out) {
    if (x.kind == OPERAND_WEIGHT) {
        const bf16* w = weight_copy(p, x.p);
        if (w) {
            *ld_out = x.ld;
            return w;
        }
        p->weight_rounded++;
    }
    *ld_out = cols;
    if (x.kind == OPERAND_ACT_KEPT && p->held[slot].p == x.p && p->held[slot].rows == rows &&
        p->held[slot].cols == cols && p->held[slot].ld == x.ld)
        return p->act[slot]; /* rounded whole here by an earlier product or written by its pass, unchanged since */
    CHECK(rows * cols <= p->act_cap, "product: a %zu x %zu operand exceeds the BF16 work space of %zu elements", rows,
          cols, p->act_cap);
    bf16* copy = products_hold(p, slot, x.p, rows, cols, x.ld); /* the slot, recorded as holding x */
    bf16_from_f32(copy, x.p, rows, cols, x.ld);
    return copy;
}

/* One chunk: the stored shapes of A ((M,K), or (K,M) when A.t) and B ((K,N), or (N,K) when B.t) */
static void chunk_bf16(Bf16Products* p, size_t M, size_t N, size_t K, float alpha, Operand A, Operand B, float beta,
                       real* C, size_t ldc) {
    size_t la, lb;
    const bf16* a = operand(p, A, A.t ? K : M, A.t ? M : K, 0, &la);
    const bf16* b = operand(p, B, B.t ? N : K, B.t ? K : N, 1, &lb);
    gemm_bf16(&(GemmShape){A.t, B.t, M, N, K, la, lb, ldc, alpha, beta}, a, b, C);
}

/* x with its storage moved on by off reals */
static Operand operand_at(Operand x, size_t off) {
    x.p += off;
    return x;
}

/* Activations larger than the work space are taken in chunks of rows: of M when A's rows are C's (A not
   transposed), else of K, the rows both operands share, with beta 1 after the first chunk */
static void product_bf16(Bf16Products* p, size_t M, size_t N, size_t K, real alpha, Operand A, Operand B, real beta,
                         real* C, size_t ldc) {
    size_t need_a = A.kind != OPERAND_WEIGHT ? M * K : 0, need_b = B.kind != OPERAND_WEIGHT ? K * N : 0;
    if (need_a <= p->act_cap && need_b <= p->act_cap) {
        chunk_bf16(p, M, N, K, (float)alpha, A, B, (float)beta, C, ldc);
        return;
    }
    if (!A.t && need_b <= p->act_cap) { /* rows of A and C: each chunk (m, K), m a multiple of 16 when it can be */
        size_t rows = p->act_cap / K >= 16 ? p->act_cap / K / 16 * 16 : p->act_cap / K;
        CHECK(rows > 0, "product: a row of %zu exceeds the BF16 work space", K);
        for (size_t m0 = 0; m0 < M; m0 += rows) {
            size_t m = M - m0 < rows ? M - m0 : rows;
            chunk_bf16(p, m, N, K, (float)alpha, operand_at(A, m0 * A.ld), B, (float)beta, C + m0 * ldc, ldc);
        }
        return;
    }
    CHECK(!(B.kind != OPERAND_WEIGHT && B.t), "product: a transposed activation B larger than the BF16 work space");
    size_t width = (A.kind != OPERAND_WEIGHT ? M : 0) > (B.kind != OPERAND_WEIGHT ? N : 0) ? M : N; /* the wider row */
    size_t rows = p->act_cap / width >= 16 ? p->act_cap / width / 16 * 16 : p->act_cap / width;
    CHECK(rows > 0, "product: a row of %zu exceeds the BF16 work space", width);
    for (size_t k0 = 0; k0 < K; k0 += rows) { /* rows of K: A (K,M) when A.t, else columns; B (K,N) or (N,K) */
        size_t k = K - k0 < rows ? K - k0 : rows;
        Operand a = operand_at(A, A.t ? k0 * A.ld : k0), b = operand_at(B, B.t ? k0 : k0 * B.ld);
        chunk_bf16(p, M, N, k, (float)alpha, a, b, k0 ? 1.0f : (float)beta, C, ldc);
    }
}
#endif

void product(Bf16Products* bf, size_t M, size_t N, size_t K, real alpha, Operand A, Operand B, real beta, real* C,
             size_t ldc) {
#ifndef REPOC_F64
    if (bf) {
        product_bf16(bf, M, N, K, alpha, A, B, beta, C, ldc);
        return;
    }
#endif
    product_f32(M, N, K, alpha, A, B, beta, C, ldc);
}
