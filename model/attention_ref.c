/* The plain O(T²) reference of causal GQA attention (model/attention_ref.h), forward and backward in
   double, one query row at a time: the formulas the tiled kernel of model/attention.c computes
   (docs/backward.md, "Attention"), with nothing tiled, blocked or vectorised. */
#include "model/attention_ref.h"

#include <math.h>
#include <stdlib.h>

#include "common/check.h"

void attention_reference(double* out, double* lse, double* dq, double* dk, double* dv, const real* q, const real* k,
                         const real* v, const real* dout, const AttnShape* s) {
    size_t B = s->B, T = s->T, H = s->H, KVH = s->KVH, hd = s->hd;
    double scale = s->scale;
    const int32_t* start = s->docs ? s->docs->start : NULL;
    size_t qs = H * hd, ks = KVH * hd;
    double* p = mallocCheck(T * sizeof(double));
    for (size_t i = 0; i < B * T * qs; i++) dq[i] = 0;
    for (size_t i = 0; i < B * T * ks; i++) dk[i] = dv[i] = 0;
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                size_t g = h / (H / KVH), j0 = start ? (size_t)start[b * T + t] : 0;
                const real* qt = q + (b * T + t) * qs + h * hd;
                const real* dot = dout + (b * T + t) * qs + h * hd;
                double mx = -INFINITY, sum = 0;
                for (size_t j = j0; j <= t; j++) {
                    const real* kj = k + (b * T + j) * ks + g * hd;
                    double s = 0;
                    for (size_t d = 0; d < hd; d++) s += (double)qt[d] * kj[d];
                    p[j] = s * scale;
                    mx = fmax(mx, p[j]);
                }
                for (size_t j = j0; j <= t; j++) sum += p[j] = exp(p[j] - mx);
                double* o = out + (b * T + t) * qs + h * hd;
                for (size_t d = 0; d < hd; d++) o[d] = 0;
                for (size_t j = j0; j <= t; j++) {
                    p[j] /= sum;
                    for (size_t d = 0; d < hd; d++) o[d] += p[j] * v[(b * T + j) * ks + g * hd + d];
                }
                lse[(b * T + t) * H + h] = mx + log(sum);
                double delta = 0; /* dO · O */
                for (size_t d = 0; d < hd; d++) delta += dot[d] * o[d];
                for (size_t j = j0; j <= t; j++) {
                    const real* kj = k + (b * T + j) * ks + g * hd;
                    const real* vj = v + (b * T + j) * ks + g * hd;
                    double dp = 0;
                    for (size_t d = 0; d < hd; d++) dp += (double)dot[d] * vj[d];
                    double ds = p[j] * (dp - delta) * scale;
                    for (size_t d = 0; d < hd; d++) {
                        dq[(b * T + t) * qs + h * hd + d] += ds * kj[d];
                        dk[(b * T + j) * ks + g * hd + d] += ds * qt[d];
                        dv[(b * T + j) * ks + g * hd + d] += p[j] * dot[d];
                    }
                }
            }
    free(p);
}
