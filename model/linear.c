/* Linear forward/backward through OpenBLAS (docs/backward.md, "Linear", "Threads and BLAS"). A product is
   either one BLAS call that threads itself, or, for a small weight, split by rows among the threads of one
   OpenMP region, each calling BLAS (single-threaded there) on its own rows. */
#include "model/linear.h"

#include <string.h>

#include "common/threads.h"
#include "model/products.h"

/* On short products one single-threaded call per thread on its own rows runs faster than one call that
   OpenBLAS threads itself (docs/cpus.md, "Decisions on the Intel Xeon", for this and the constants
   below). Each thread packs the whole weight itself, so only weights up to SPLIT_W reals are split, and only
   when every thread gets SPLIT_ROWS rows or more. */
#define SPLIT_W ((size_t)1 << 20)
#define SPLIT_ROWS 256
/* the backward's two products (dinp and dweight) at once, on two halves of the threads, up to this weight: faster
   than the two threaded calls one after the other below it, slower above */
#define SPLIT_BACKWARD_W ((size_t)1 << 16)

/* the threads to split rows among for an (N rows) x (weight of w reals) product; 1: one BLAS call */
static size_t row_split(const Bf16Products* bf, size_t N, size_t w, size_t max_w) {
    if (products_onednn(bf)) return 1; /* oneDNN threads each product itself */
    size_t nt = threads_blas_split();
    return nt > 1 && w <= max_w && N / nt >= SPLIT_ROWS ? nt : 1;
}

/* rows [*r0, *r1) of N for thread t of nt: equal parts, boundaries on multiples of 16 */
static void part_rows(size_t N, size_t t, size_t nt, size_t* r0, size_t* r1) {
    *r0 = N * t / nt / 16 * 16;
    *r1 = t + 1 == nt ? N : N * (t + 1) / nt / 16 * 16;
}

/* The beta for a product that writes (not adds into) c (rows, cols; row stride ld) in one BLAS call. When
   OpenBLAS threads the call itself, its beta = 0 clears c in each thread's strip of columns with stores that
   first read every line; a memset in one OpenMP region and beta = 1 is faster. Run in one thread, OpenBLAS
   clears a contiguous c with memset itself, and below CLEAR_MIN reals the clearing is too short to pay for
   the extra parallel region: beta stays 0 there. */
#define CLEAR_MIN ((size_t)1 << 18)
static real write_beta(const Bf16Products* bf, real* c, size_t rows, size_t cols, size_t ld) {
    size_t nt = threads_blas_split();
    if (nt == 1 || products_onednn(bf) || rows * cols < CLEAR_MIN) return 0;
    size_t n = ld == cols ? 1 : rows, len = ld == cols ? rows * cols : cols; /* n spans of len reals */
#pragma omp parallel num_threads(nt)
    {
        size_t t = threads_id(), m = threads_team();
        if (n == 1) { /* one contiguous span: split it */
            size_t e0 = len * t / m, e1 = len * (t + 1) / m;
            memset(c + e0, 0, (e1 - e0) * sizeof(real));
        } else {
            for (size_t r = n * t / m; r < n * (t + 1) / m; r++) memset(c + r * ld, 0, len * sizeof(real));
        }
    }
    return 1;
}

/* the operands of the products below: an activation x (row stride ld, stored transposed when t), a weight w */

/* out (N,OC), row stride ldo, = inp (N,C) · weight^T (C,OC) + beta out */
static void gemm_forward(Bf16Products* bf, real* out, size_t ldo, const real* inp, const real* weight, size_t N,
                         size_t C, size_t OC, real beta, bool inp_kept) {
    product(bf, N, OC, C, 1, op_act_kept(inp, C, false, inp_kept), op_weight(weight, C, true), beta, out, ldo);
}

/* dinp (N,C) = alpha dout (N,OC; row stride dout.ld) · W (OC,C) + beta dinp */
static void gemm_dinp(Bf16Products* bf, real* dinp, LinearDout dout, const real* weight, size_t N, size_t C, size_t OC,
                      real beta) {
    product(bf, N, C, OC, dout.alpha, op_act_kept(dout.p, dout.ld, false, dout.kept), op_weight(weight, C, false), beta,
            dinp, C);
}

/* rows [o0, o1) of dW (OC,C) += alpha dout^T (OC,N; dout's row stride dout.ld) · inp (N,C); dout.kept: gemm_dinp
   has just rounded the same dout (or its pass wrote the copy); in.kept: the caller's previous weight gradient read
   the same inp (each BF16 copy is then read again when the work space still holds it) */
static void gemm_dweight(Bf16Products* bf, real* dweight, LinearDout dout, LinearInp in, size_t N, size_t C, size_t o0,
                         size_t o1) {
    product(bf, o1 - o0, C, N, dout.alpha, op_act_kept(dout.p + o0, dout.ld, true, dout.kept),
            op_act_kept(in.p, C, false, in.kept), 1, dweight + o0 * C, C);
}

/* linear_forward_ld; inp_kept: the previous product read the same, unchanged inp (linear_forward_kept) */
static void forward_ld(Bf16Products* bf, real* out, size_t ldo, const real* inp, const real* weight, size_t N, size_t C,
                       size_t OC, bool inp_kept) {
    size_t nt = row_split(bf, N, C * OC, SPLIT_W);
    if (nt == 1) {
        gemm_forward(bf, out, ldo, inp, weight, N, C, OC, write_beta(bf, out, N, OC, ldo), inp_kept);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        size_t r0, r1;
        part_rows(N, threads_id(), threads_team(), &r0, &r1);
        gemm_forward(bf, out + r0 * ldo, ldo, inp + r0 * C, weight, r1 - r0, C, OC, 0, false);
    }
}

void linear_forward_ld(Bf16Products* bf, real* out, size_t ldo, const real* inp, const real* weight, size_t N, size_t C,
                       size_t OC) {
    forward_ld(bf, out, ldo, inp, weight, N, C, OC, false);
}

void linear_forward(Bf16Products* bf, real* out, const real* inp, const real* weight, size_t N, size_t C, size_t OC) {
    forward_ld(bf, out, OC, inp, weight, N, C, OC, false);
}

void linear_forward_kept(Bf16Products* bf, real* out, LinearInp inp, const real* weight, size_t N, size_t C,
                         size_t OC) {
    forward_ld(bf, out, OC, inp.p, weight, N, C, OC, inp.kept);
}

/* The BF16 backward of a linear whose output gradient dout (N,OC) is larger than the work space (the LM head's
   N x V logits), by blocks of its columns: each block dout[:, o0:o1] is rounded once and read by both products,
       dinp (=|+=) alpha sum over blocks dout[:, o0:o1] W[o0:o1, :]      dW[o0:o1, :] += alpha dout[:, o0:o1]^T inp
   so every row of dW is written once with the whole sum over N (chunks of dout's rows would add into all of dW
   per chunk), and inp is rounded once, at the first block. Needs inp and a block of 16 columns in the work
   space; false (nothing done) otherwise. */
static bool backward_by_columns(Bf16Products* bf, real* dinp, real* dweight, LinearDout dout, LinearInp in,
                                const real* weight, size_t N, size_t C, size_t OC, bool add) {
    if (!bf || N * OC <= bf->act_cap || N * C > bf->act_cap || bf->act_cap / N < 16) return false;
    size_t cols = bf->act_cap / N / 16 * 16;
    for (size_t o0 = 0; o0 < OC; o0 += cols) {
        size_t o1 = OC - o0 < cols ? OC : o0 + cols;
        LinearDout block = {dout.p + o0, dout.ld, dout.alpha, false};
        if (dinp) gemm_dinp(bf, dinp, block, weight + o0 * C, N, C, o1 - o0, add || o0 ? 1 : 0);
        block.kept = dinp != NULL; /* the copy gemm_dinp just made */
        if (dweight)
            gemm_dweight(bf, dweight + o0 * C, block, (LinearInp){in.p, o0 ? true : in.kept}, N, C, 0, o1 - o0);
    }
    return true;
}

/* linear_backward_ld on an input as linear_backward_kept reads it */
static void backward_ld(Bf16Products* bf, real* dinp, real* dweight, LinearDout dout, LinearInp in, const real* weight,
                        size_t N, size_t C, size_t OC, bool add) {
    if (backward_by_columns(bf, dinp, dweight, dout, in, weight, N, C, OC, add)) return;
    size_t nt = dinp && dweight ? row_split(bf, N, C * OC, SPLIT_BACKWARD_W) : 1;
    if (nt == 1) {
        if (dinp) gemm_dinp(bf, dinp, dout, weight, N, C, OC, add ? 1 : write_beta(bf, dinp, N, C, C));
        dout.kept |= dinp != NULL; /* the copy gemm_dinp just made */
        if (dweight) gemm_dweight(bf, dweight, dout, in, N, C, 0, OC);
        return;
    }
    /* threads [0, nx) split the rows of dinp, threads [nx, n) those of dweight (a team of one does both) */
#pragma omp parallel num_threads(nt)
    {
        size_t t = threads_id(), n = threads_team(), nx = n / 2, r0, r1;
        if (t < nx || n == 1) {
            part_rows(N, t, n == 1 ? 1 : nx, &r0, &r1);
            LinearDout rows = {dout.p + r0 * dout.ld, dout.ld, dout.alpha, false};
            gemm_dinp(bf, dinp + r0 * C, rows, weight, r1 - r0, C, OC, add ? 1 : 0);
        }
        if (t >= nx) {
            part_rows(OC, t - nx, n - nx, &r0, &r1);
            gemm_dweight(bf, dweight, (LinearDout){dout.p, dout.ld, dout.alpha, false}, (LinearInp){in.p, false}, N, C,
                         r0, r1);
        }
    }
}

void linear_backward_ld(Bf16Products* bf, real* dinp, real* dweight, LinearDout dout, const real* inp,
                        const real* weight, size_t N, size_t C, size_t OC, bool add) {
    backward_ld(bf, dinp, dweight, dout, (LinearInp){inp, false}, weight, N, C, OC, add);
}

void linear_backward(Bf16Products* bf, real* dinp, real* dweight, const real* dout, const real* inp, const real* weight,
                     size_t N, size_t C, size_t OC, bool add) {
    backward_ld(bf, dinp, dweight, (LinearDout){dout, OC, 1, false}, (LinearInp){inp, false}, weight, N, C, OC, add);
}

void linear_backward_kept(Bf16Products* bf, real* dinp, real* dweight, const real* dout, LinearInp inp,
                          const real* weight, size_t N, size_t C, size_t OC, bool add) {
    backward_ld(bf, dinp, dweight, (LinearDout){dout, OC, 1, false}, inp, weight, N, C, OC, add);
}

/* Two weights lie back to back when the second starts where the first ends: then [W1; W2] is one (2 OC, C)
   matrix and the pair is one product of twice the width (docs/backward.md, "Linear") */
static bool back_to_back(const real* W1, const real* W2, size_t C, size_t OC) { return W2 == W1 + OC * C; }

void linear_pair_forward(Bf16Products* bf, real* out, const real* inp, const LinearPair* w, size_t N, size_t C,
                         size_t OC) {
    if (w->join && back_to_back(w->W1, w->W2, C, OC)) {
        linear_forward(bf, out, inp, w->W1, N, C, 2 * OC);
        return;
    }
    linear_forward_ld(bf, out, 2 * OC, inp, w->W1, N, C, OC);
    linear_forward_ld(bf, out + OC, 2 * OC, inp, w->W2, N, C, OC);
}

void linear_pair_backward(Bf16Products* bf, real* dinp, const real* dout, const real* inp, const LinearPair* w,
                          size_t N, size_t C, size_t OC, bool add) {
    real *dW1 = w->dW1, *dW2 = w->dW2;
    if (w->join && back_to_back(w->W1, w->W2, C, OC) && (dW1 ? dW2 && back_to_back(dW1, dW2, C, OC) : !dW2)) {
        backward_ld(bf, dinp, dW1, (LinearDout){dout, 2 * OC, 1, w->dout_kept}, (LinearInp){inp, false}, w->W1, N, C,
                    2 * OC, add);
        return;
    }
    linear_backward_ld(bf, dinp, dW1, (LinearDout){dout, 2 * OC, 1, false}, inp, w->W1, N, C, OC, add);
    linear_backward_ld(bf, dinp, dW2, (LinearDout){dout + OC, 2 * OC, 1, false}, inp, w->W2, N, C, OC, true);
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
