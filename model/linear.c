/* Linear forward/backward through OpenBLAS (docs/design.md, "Linear", "Threads and BLAS"): never called
   inside an OpenMP parallel region; BLAS threads itself. */
#include "model/linear.h"

#include "data/mix.h"   /* mix64: the dropout mask's stateless hash */

void linear_forward(real* out, const real* inp, const real* weight, size_t N, size_t C, size_t OC) {
    /* out (N,OC) = inp (N,C) · weight^T (C,OC) */
    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)OC, (int)C,
               1, inp, (int)C, weight, (int)C, 0, out, (int)OC);
}

void linear_backward_scaled(real* dinp, real* dweight, const real* dout, const real* inp, const real* weight,
                            size_t N, size_t C, size_t OC, real alpha, bool add) {
    if (dinp) {      /* dinp (N,C) (+)= alpha dout (N,OC) · W (OC,C) */
        cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)C, (int)OC,
                   alpha, dout, (int)OC, weight, (int)C, add ? 1 : 0, dinp, (int)C);
    }
    if (dweight) {   /* dW (OC,C) += alpha dout^T (OC,N) · inp (N,C) */
        cblas_gemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)OC, (int)C, (int)N,
                   alpha, dout, (int)OC, inp, (int)C, 1, dweight, (int)C);
    }
}

void linear_backward(real* dinp, real* dweight, const real* dout, const real* inp, const real* weight,
                     size_t N, size_t C, size_t OC, bool add) {
    linear_backward_scaled(dinp, dweight, dout, inp, weight, N, C, OC, 1, add);
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

void lora_dropout_apply(real* out, const real* inp, bool add, const LoraDropout* d, size_t N, size_t C) {
    real keep = (real)(1.0 / (1.0 - d->p));
    size_t n = N * C;
    #pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        double u = (double)(mix64(d->key + i) >> 11) * 0x1.0p-53;
        real x = u >= d->p ? inp[i] * keep : 0;
        out[i] = add ? out[i] + x : x;
    }
}

void lora_forward(real* out, real* ax, const real* inp, const real* A, const real* B, real scale,
                  const LoraDropout* drop, size_t N, size_t C, size_t OC, size_t r) {
    if (drop) {   /* x = dropout(inp) */
        lora_dropout_apply(drop->xd, inp, false, drop, N, C);
        inp = drop->xd;
    }
    linear_forward(ax, inp, A, N, C, r);   /* ax (N,r) = x A^T */
    /* out (N,OC) += scale · ax (N,r) · B^T (r,OC) */
    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)OC, (int)r,
               scale, ax, (int)r, B, (int)r, 1, out, (int)OC);
}

void lora_backward(real* dinp, real* dA, real* dB, real* dax, const real* dout, const real* inp, const real* ax,
                   const real* A, const real* B, real scale, const LoraDropout* drop, size_t N, size_t C, size_t OC,
                   size_t r) {
    /* out = scale · ax B^T:  dB (OC,r) += scale · dout^T (OC,N) · ax (N,r) */
    if (dB) cblas_gemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)OC, (int)r, (int)N,
                       scale, dout, (int)OC, ax, (int)r, 1, dB, (int)r);
    if (!dinp && !dA) return;
    /* dax (N,r) = scale · dout (N,OC) · B (OC,r) */
    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)r, (int)OC,
               scale, dout, (int)OC, B, (int)r, 0, dax, (int)r);
    if (!drop) {   /* ax = inp A^T:  dinp += dax A,  dA += dax^T inp */
        linear_backward(dinp, dA, dax, inp, A, N, C, r, true);
        return;
    }
    if (dA) {      /* ax = x A^T, x = dropout(inp):  dA += dax^T x */
        lora_dropout_apply(drop->xd, inp, false, drop, N, C);
        linear_backward(NULL, dA, dax, drop->xd, A, N, C, r, true);
    }
    if (dinp) {    /* dx = dax A (into xd), then dinp += dx * mask / (1 - p) */
        cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)C, (int)r,
                   1, dax, (int)r, A, (int)C, 0, drop->xd, (int)C);
        lora_dropout_apply(dinp, drop->xd, true, drop, N, C);
    }
}
