/* The token sampler of build/generate: greedy when the temperature is 0; otherwise softmax(logits / T)
   restricted to the top-k logits (model/generate.h's gen_sample) and then, when top_p < 1, to the smallest set
   of most likely tokens whose probability reaches top-p. Reproducible from the seed. And the printing of a new
   token's text as it is drawn. */
#ifndef REPOC_PROGRAMS_GEN_SAMPLER_H
#define REPOC_PROGRAMS_GEN_SAMPLER_H

#include <stdint.h>
#include <stdio.h>

#include "common/rng.h"
#include "model/generate.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    size_t V, top_k;
    double temperature, top_p;
    Rng rng;
    void* cand; /* (V) sorting space of top-p, NULL when top-p is off */
    real* w;    /* (V) its weights */
} GenSampler;

void gen_sampler_init(GenSampler* s, size_t V, double temperature, size_t top_k, double top_p, uint64_t seed);
void gen_sampler_free(GenSampler* s);
/* the next token after logits (V) */
int32_t gen_sampler_next(GenSampler* s, Generator* g, const real* logits);

/* a new token's text through the decoder (it follows the prompt: not the start of the text) appended to *out
   (realloc'd; *len, *cap), or "<id N>" for an id of the model's padded vocab that the tokenizer lacks; returns
   the bytes appended */
size_t gen_token_text(const Tokenizer* t, int32_t id, uint8_t** out, size_t* len, size_t* cap);

#endif
