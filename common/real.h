/* The training precision. `real` is float by default; `make PRECISION=64`
   (and the gradient checker, always) compiles the same sources with double.
   cblas_gemm names cblas_sgemm or cblas_dgemm to match; every matmul of the
   model goes through it (model/linear.c). */
#ifndef REPOC_REAL_H
#define REPOC_REAL_H

#include <cblas.h>

#ifdef REPOC_F64
typedef double real;
#define cblas_gemm cblas_dgemm
#define REAL_NAME "f64"
#else
typedef float real;
#define cblas_gemm cblas_sgemm
#define REAL_NAME "f32"
#endif

#endif
