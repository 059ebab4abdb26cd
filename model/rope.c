/* RoPE / YaRN forward and backward (docs/positions.md, "RoPE and YaRN"). Angles are formed as
   p * inv_freq in double, so p = 70,000 keeps ~1e-6 accuracy in float builds.
     y1 = m (x1 cos a - x2 sin a)        dx1 = m ( dy1 cos a + dy2 sin a)
     y2 = m (x2 cos a + x1 sin a)        dx2 = m (-dy1 sin a + dy2 cos a)
     da = dy2 y1 - dy1 y2                dp += Σ_i inv_freq[i] da_i  (over q and k) */
#include "model/rope.h"

#include <math.h>
#include <stdbool.h>

#include "common/check.h"
#include "common/mathf.h"

void rope_table_init(RopeTable* rt, size_t hd, double theta, double yarn_factor, double yarn_orig_max, double beta_fast,
                     double beta_slow, double attention_factor) {
    CHECK(hd % 2 == 0 && hd / 2 <= ROPE_MAX_HALF, "rope: head dim %zu must be even and at most %d", hd,
          2 * ROPE_MAX_HALF);
    rt->hd = hd;
    rt->mscale = 1.0;
    rt->cos_t = rt->sin_t = NULL;
    rt->n_cached = 0;
    size_t half = hd / 2;
    for (size_t i = 0; i < half; i++) rt->inv_freq[i] = pow(theta, -2.0 * (double)i / (double)hd);
    if (yarn_factor <= 1.0) return;
    /* corr_dim(r) = hd ln(L0 / (2π r)) / (2 ln θ): the dimension whose wavelength fits r times in L0 */
    double two_pi = 6.283185307179586;
    double lo = floor(hd * log(yarn_orig_max / (two_pi * beta_fast)) / (2.0 * log(theta)));
    double hi = ceil(hd * log(yarn_orig_max / (two_pi * beta_slow)) / (2.0 * log(theta)));
    if (lo < 0) lo = 0;
    if (hi > (double)hd - 1) hi = (double)hd - 1;
    if (lo == hi) hi += 0.001;
    for (size_t i = 0; i < half; i++) {
        double ramp = ((double)i - lo) / (hi - lo);
        ramp = ramp < 0 ? 0 : (ramp > 1 ? 1 : ramp);
        double extra = 1.0 - ramp; /* 1: keep the original frequency (extrapolate), 0: interpolate by s */
        rt->inv_freq[i] = rt->inv_freq[i] / yarn_factor * (1.0 - extra) + rt->inv_freq[i] * extra;
    }
    rt->mscale = attention_factor > 0 ? attention_factor : 0.1 * log(yarn_factor) + 1.0;
}

void rope_table_linear(RopeTable* rt, double factor) {
    for (size_t i = 0; i < rt->hd / 2; i++) rt->inv_freq[i] /= factor;
}

void rope_table_llama3(RopeTable* rt, double factor, double low_freq_factor, double high_freq_factor, double orig_max) {
    double two_pi = 6.283185307179586;
    double low_wavelen = orig_max / low_freq_factor, high_wavelen = orig_max / high_freq_factor;
    for (size_t i = 0; i < rt->hd / 2; i++) {
        double f = rt->inv_freq[i], w = two_pi / f;
        if (w < high_wavelen) continue;                    /* high frequency: unchanged */
        if (w > low_wavelen) rt->inv_freq[i] = f / factor; /* low frequency: interpolated by s */
        else {                                             /* blend between the two */
            double a = (orig_max / w - low_freq_factor) / (high_freq_factor - low_freq_factor);
            rt->inv_freq[i] = (1.0 - a) * f / factor + a * f;
        }
    }
}

/* rotate the nh heads of one token row x (nh*hd) that share position p */
static void rotate_heads(real* x, size_t nh, const double* cs, const double* sn, size_t hd) {
    size_t half = hd / 2;
    for (size_t h = 0; h < nh; h++) {
        real* x1 = x + h * hd;
        real* x2 = x1 + half;
        for (size_t i = 0; i < half; i++) {
            double a = x1[i], b = x2[i];
            x1[i] = (real)(a * cs[i] - b * sn[i]);
            x2[i] = (real)(b * cs[i] + a * sn[i]);
        }
    }
}

/* cs = m cos(p inv_freq), sn = m sin(p inv_freq): sincos_fast, vectorised over the pairs, and libm
   for an angle beyond its range (or NaN) */
static void angles(double* cs, double* sn, double p, const RopeTable* rt) {
    size_t half = rt->hd / 2;
    double m = rt->mscale;
    for (size_t i = 0; i < half; i++) {
        double s, c;
        sincos_fast(p * rt->inv_freq[i], &s, &c);
        cs[i] = m * c;
        sn[i] = m * s;
    }
    for (size_t i = 0; i < half; i++) {
        double a = p * rt->inv_freq[i];
        if (!(fabs(a) < SINCOS_FAST_MAX)) {
            cs[i] = m * cos(a);
            sn[i] = m * sin(a);
        }
    }
}

void rope_cache_fill(RopeTable* rt, double* cos_t, double* sin_t, size_t n) {
    size_t half = rt->hd / 2;
    for (size_t t = 0; t < n; t++) angles(cos_t + t * half, sin_t + t * half, (double)t, rt);
    rt->cos_t = cos_t;
    rt->sin_t = sin_t;
    rt->n_cached = n;
}

/* the angles of position p: the cached row when p is an integer below n_cached, else computed into cs, sn */
static void angles_at(const double** cs, const double** sn, double* cbuf, double* sbuf, double p, const RopeTable* rt) {
    if (rt->cos_t && p >= 0 && p < (double)rt->n_cached && p == (double)(size_t)p) {
        size_t row = (size_t)p * (rt->hd / 2);
        *cs = rt->cos_t + row;
        *sn = rt->sin_t + row;
        return;
    }
    angles(cbuf, sbuf, p, rt);
    *cs = cbuf;
    *sn = sbuf;
}

void rope_forward(real* q, real* k, const real* pos, const RopeTable* rt, RopeShape s) {
    size_t N = s.N, H = s.H, KVH = s.KVH, P = s.P, hd = rt->hd, qh = H / P, kh = KVH / P;
#pragma omp parallel for collapse(2)
    for (size_t n = 0; n < N; n++) {
        for (size_t g = 0; g < P; g++) {
            double cbuf[ROPE_MAX_HALF], sbuf[ROPE_MAX_HALF];
            const double *cs, *sn;
            angles_at(&cs, &sn, cbuf, sbuf, (double)pos[n * P + g], rt);
            rotate_heads(q + n * H * hd + g * qh * hd, qh, cs, sn, hd);
            rotate_heads(k + n * KVH * hd + g * kh * hd, kh, cs, sn, hd);
        }
    }
}

/* backward through the rotation of nh heads; returns Σ_i inv_freq[i] da_i for those heads when want_dp */
static double unrotate_heads(real* dx, const real* dy, const real* y, size_t nh, const double* cs, const double* sn,
                             const RopeTable* rt, bool want_dp) {
    size_t hd = rt->hd, half = hd / 2;
    double dp = 0.0;
    for (size_t h = 0; h < nh; h++) {
        const real* dy1 = dy + h * hd;
        const real* dy2 = dy1 + half;
        const real* y1 = y + h * hd;
        const real* y2 = y1 + half;
        real* dx1 = dx + h * hd;
        real* dx2 = dx1 + half;
        for (size_t i = 0; i < half; i++) {
            dx1[i] = (real)(dy1[i] * cs[i] + dy2[i] * sn[i]);
            dx2[i] = (real)(-dy1[i] * sn[i] + dy2[i] * cs[i]);
        }
        if (!want_dp) continue;
#pragma omp simd reduction(+ : dp)
        for (size_t i = 0; i < half; i++) dp += rt->inv_freq[i] * ((double)dy2[i] * y1[i] - (double)dy1[i] * y2[i]);
    }
    return dp;
}

void rope_backward(real* dq_in, real* dk_in, real* dpos, const real* dq, const real* dk, const real* q, const real* k,
                   const real* pos, const RopeTable* rt, RopeShape s) {
    size_t N = s.N, H = s.H, KVH = s.KVH, P = s.P, hd = rt->hd, qh = H / P, kh = KVH / P;
#pragma omp parallel for collapse(2)
    for (size_t n = 0; n < N; n++) {
        for (size_t g = 0; g < P; g++) {
            double cbuf[ROPE_MAX_HALF], sbuf[ROPE_MAX_HALF];
            const double *cs, *sn;
            angles_at(&cs, &sn, cbuf, sbuf, (double)pos[n * P + g], rt);
            size_t qo = n * H * hd + g * qh * hd, ko = n * KVH * hd + g * kh * hd;
            double dp = unrotate_heads(dq_in + qo, dq + qo, q + qo, qh, cs, sn, rt, dpos != NULL);
            dp += unrotate_heads(dk_in + ko, dk + ko, k + ko, kh, cs, sn, rt, dpos != NULL);
            if (dpos) dpos[n * P + g] = (real)dp;
        }
    }
}
