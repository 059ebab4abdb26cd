/* Products through oneDNN's matmul primitive: C = alpha op(A) op(B) + beta C into an FP32 C, with BF16
   operands and FP32 accumulation (gemm_bf16: docs/cpus.md, "BF16 products"), or FP32 operands
   (gemm_f32_onednn: the FP32 engine where OpenBLAS has no kernel for the CPU, model/engine.h). Row-major, strided operands
   instead of transposes: A is (M,K) with row stride lda, or stored (K,M) when ta; B is (K,N) with row stride
   ldb, or stored (N,K) when tb (a weight in the Hugging Face [out, in] layout). One primitive per shape
   (M, N, K, strides, transposes, alpha, beta), created on its first use and kept; a step after the first
   creates none.

   oneDNN is optional at build time (the Makefile probes dnnl.h and defines REPOC_DNNL): without it
   onednn_available is false and nothing here may be called; on a CPU without BF16 instructions
   (AVX512-BF16 or AMX-BF16), gemm_bf16_available says why and gemm_bf16 may not be called. Not thread-safe:
   call from outside OpenMP parallel regions (oneDNN threads each product itself). */
#ifndef REPOC_GEMM_ONEDNN_H
#define REPOC_GEMM_ONEDNN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/bf16.h"

/* out (rows, cols; row stride cols) = bf16_round_nearest of in (rows, cols; row stride ld), in one OpenMP region */
void bf16_from_f32(bf16* out, const float* in, size_t rows, size_t cols, size_t ld);

/* True when BF16 products can run here; else false with the reason (what to install, or what the CPU
   lacks) in why (n bytes). */
bool gemm_bf16_available(char* why, size_t n);
/* One product's layout and scalars: C (M,N; row stride ldc) = alpha op(A) op(B) + beta C, A (M,K) with row
   stride lda or stored (K,M) when ta, B (K,N) with row stride ldb or stored (N,K) when tb */
typedef struct {
    bool ta, tb;
    size_t M, N, K, lda, ldb, ldc;
    float alpha, beta;
} GemmShape;

/* C = alpha op(A) op(B) + beta C as s lays them out; beta 0 writes C without reading it */
void gemm_bf16(const GemmShape* s, const bf16* A, const bf16* B, float* C);

/* True when this build has oneDNN (its FP32 products run on every x86-64 CPU) */
bool onednn_available(void);
/* "oneDNN 2.6.3, ISA avx512_core_bf16": the library and the best instruction set it may use here, or why none */
const char* onednn_name(void);
/* gemm_bf16 with FP32 operands: the same layout, FP32 throughout */
void gemm_f32_onednn(const GemmShape* s, const float* A, const float* B, float* C);

/* One line per cached primitive: its operands' type, its shape and the kernel oneDNN chose for it
   (e.g. "brg:avx512_core_bf16") */
void onednn_print(FILE* fp);
/* primitives created so far (a step after the first creates none) */
size_t onednn_created(void);

#endif
