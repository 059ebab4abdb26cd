/* LoRA forward and backward, and PEFT's dropout on the adapter's input (the math: model/lora.h):
     ax = x A^T;  out += scale ax B^T
     dB += scale dout^T ax;  dax = scale dout B;  dA += dax^T x;  dinp += (dax A) * mask / (1 - p) */
#include "model/lora.h"

#include "common/hash.h" /* mix64: the dropout mask's stateless hash */
#include "model/linear.h"
#include "model/products.h"

void lora_dropout_apply(real* out, const real* inp, bool add, const LoraDropout* d, size_t N, size_t C) {
    real rescale = (real)(1.0 / (1.0 - d->p)); /* 1 / the probability of keeping */
    size_t n = N * C;
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        double u = (double)(mix64(d->key + i) >> 11) * 0x1.0p-53;
        real x = u >= d->p ? inp[i] * rescale : 0;
        out[i] = add ? out[i] + x : x;
    }
}

void lora_forward(Bf16Products* bf, real* out, size_t ldo, const LoraOp* op) {
    size_t N = op->N, C = op->C, OC = op->OC, r = op->r;
    const real* inp = op->inp;
    if (op->drop) { /* x = dropout(inp) */
        lora_dropout_apply(op->drop->xd, inp, false, op->drop, N, C);
        inp = op->drop->xd;
    }
    linear_forward(bf, op->ax, inp, op->A, N, C, r); /* ax (N,r) = x A^T */
    /* out (N,OC) += scale · ax (N,r) · B^T (r,OC) */
    product(bf, N, OC, r, op->scale, op_act(op->ax, r, false), op_weight(op->B, r, true), 1, out, ldo);
}

void lora_backward(Bf16Products* bf, real* dinp, real* dA, real* dB, real* dax, const real* dout, size_t ldd,
                   const LoraOp* op) {
    size_t N = op->N, C = op->C, OC = op->OC, r = op->r;
    const real *inp = op->inp, *A = op->A;
    const LoraDropout* drop = op->drop;
    /* out = scale · ax B^T:  dB (OC,r) += scale · dout^T (OC,N) · ax (N,r) */
    if (dB) product(bf, OC, r, N, op->scale, op_act(dout, ldd, true), op_act(op->ax, r, false), 1, dB, r);
    if (!dinp && !dA) return;
    /* dax (N,r) = scale · dout (N,OC) · B (OC,r) */
    product(bf, N, r, OC, op->scale, op_act(dout, ldd, false), op_weight(op->B, r, false), 0, dax, r);
    if (!drop) { /* ax = inp A^T:  dinp += dax A,  dA += dax^T inp */
        linear_backward(bf, dinp, dA, dax, inp, A, N, C, r, true);
        return;
    }
    if (dA) { /* ax = x A^T, x = dropout(inp):  dA += dax^T x */
        lora_dropout_apply(drop->xd, inp, false, drop, N, C);
        linear_backward(bf, NULL, dA, dax, drop->xd, A, N, C, r, true);
    }
    if (dinp) { /* dx = dax A (into xd), then dinp += dx * mask / (1 - p) */
        product(bf, N, C, r, 1, op_act(dax, r, false), op_weight(A, C, false), 0, drop->xd, C);
        lora_dropout_apply(dinp, drop->xd, true, drop, N, C);
    }
}
