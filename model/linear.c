/* Linear forward/backward through OpenBLAS (docs/design.md, "Linear", "Threads and BLAS"): never called
   inside an OpenMP parallel region; BLAS threads itself. */
#include "model/linear.h"

void linear_forward(real* out, const real* inp, const real* weight, size_t N, size_t C, size_t OC) {
    /* out (N,OC) = inp (N,C) · weight^T (C,OC) */
    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)OC, (int)C,
               1, inp, (int)C, weight, (int)C, 0, out, (int)OC);
}

void linear_backward(real* dinp, real* dweight, const real* dout, const real* inp, const real* weight,
                     size_t N, size_t C, size_t OC) {
    if (dinp) {      /* dinp (N,C) += dout (N,OC) · W (OC,C) */
        cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)C, (int)OC,
                   1, dout, (int)OC, weight, (int)C, 1, dinp, (int)C);
    }
    if (dweight) {   /* dW (OC,C) += dout^T (OC,N) · inp (N,C) */
        cblas_gemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)OC, (int)C, (int)N,
                   1, dout, (int)OC, inp, (int)C, 1, dweight, (int)C);
    }
}

void linear_forward_naive(real* out, const real* inp, const real* weight, size_t N, size_t C, size_t OC) {
    for (size_t n = 0; n < N; n++) {
        for (size_t o = 0; o < OC; o++) {
            double acc = 0.0;
            for (size_t c = 0; c < C; c++) acc += (double)inp[n * C + c] * weight[o * C + c];
            out[n * OC + o] = (real)acc;
        }
    }
}

void lora_forward(real* out, real* ax, const real* inp, const real* A, const real* B, real scale,
                  size_t N, size_t C, size_t OC, size_t r) {
    linear_forward(ax, inp, A, N, C, r);   /* ax (N,r) = inp A^T */
    /* out (N,OC) += scale · ax (N,r) · B^T (r,OC) */
    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)OC, (int)r,
               scale, ax, (int)r, B, (int)r, 1, out, (int)OC);
}

void lora_backward(real* dinp, real* dA, real* dB, real* dax, const real* dout, const real* inp, const real* ax,
                   const real* A, const real* B, real scale, size_t N, size_t C, size_t OC, size_t r) {
    /* out = scale · ax B^T:  dB (OC,r) += scale · dout^T (OC,N) · ax (N,r) */
    if (dB) cblas_gemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)OC, (int)r, (int)N,
                       scale, dout, (int)OC, ax, (int)r, 1, dB, (int)r);
    if (!dinp && !dA) return;
    /* dax (N,r) = scale · dout (N,OC) · B (OC,r) */
    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)r, (int)OC,
               scale, dout, (int)OC, B, (int)r, 0, dax, (int)r);
    /* ax = inp A^T:  dinp += dax A,  dA += dax^T inp */
    linear_backward(dinp, dA, dax, inp, A, N, C, r);
}
