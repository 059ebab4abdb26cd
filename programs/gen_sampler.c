/* The token sampler of build/generate (gen_sampler.h). Top-p (nucleus) on top of the top-k softmax:
   probabilities over the top-k logits, sorted, the shortest prefix whose sum reaches top_p, sampled. */
#include "programs/gen_sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

typedef struct {
    real p;
    int32_t id;
} Cand;

static int cand_desc(const void* a, const void* b) {
    real x = ((const Cand*)a)->p, y = ((const Cand*)b)->p;
    if (x != y) return x < y ? 1 : -1;
    return ((const Cand*)a)->id - ((const Cand*)b)->id; /* the smaller id first on a tie */
}

/* w and cand hold V entries */
static int32_t sample_top_p(const real* logits, size_t V, double temperature, size_t top_k, double top_p, real* w,
                            Cand* cand, Rng* rng) {
    gen_softmax_weights(w, logits, V, temperature, -INFINITY);
    for (size_t i = 0; i < V; i++) cand[i] = (Cand){w[i], (int32_t)i};
    qsort(cand, V, sizeof(Cand), cand_desc);
    size_t k = top_k > 0 && top_k < V ? top_k : V;
    while (k < V && cand[k].p == cand[k - 1].p) k++; /* ties with the k-th are kept, as gen_sample does */
    double sum = 0, kept = 0;
    for (size_t i = 0; i < k; i++) sum += cand[i].p;
    size_t n = 0;
    while (n < k && kept < top_p * sum) kept += cand[n++].p;
    double u = rng_uniform(rng) * kept, acc = 0;
    for (size_t i = 0; i < n; i++) {
        acc += cand[i].p;
        if (u < acc) return cand[i].id;
    }
    return cand[n - 1].id;
}

void gen_sampler_init(GenSampler* s, size_t V, double temperature, size_t top_k, double top_p, uint64_t seed) {
    *s = (GenSampler){.V = V, .top_k = top_k, .temperature = temperature, .top_p = top_p};
    if (top_p < 1 && temperature > 0) {
        s->cand = mallocCheck(V * sizeof(Cand));
        s->w = mallocCheck(V * sizeof(real));
    }
    rng_seed(&s->rng, seed);
}

void gen_sampler_free(GenSampler* s) {
    free(s->cand);
    free(s->w);
    memset(s, 0, sizeof(*s));
}

int32_t gen_sampler_next(GenSampler* s, Generator* g, const real* logits) {
    if (s->cand) return sample_top_p(logits, s->V, s->temperature, s->top_k, s->top_p, s->w, s->cand, &s->rng);
    return gen_sample(g, logits, s->temperature, s->top_k, &s->rng);
}

size_t gen_token_text(const Tokenizer* t, int32_t id, uint8_t** out, size_t* len, size_t* cap) {
    size_t before = *len;
    if (tok_decode_from(t, &id, 1, false, out, len, cap) == 1) return *len - before;
    char s[32];
    int n = snprintf(s, sizeof(s), "<id %d>", (int)id);
    if (*len + (size_t)n + 1 > *cap) {
        *cap = 2 * (*len + (size_t)n + 1);
        uint8_t* g = mallocCheck(*cap);
        if (*len) memcpy(g, *out, *len);
        free(*out);
        *out = g;
    }
    memcpy(*out + *len, s, (size_t)n);
    *len += (size_t)n;
    return (size_t)n;
}
