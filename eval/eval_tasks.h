/* What build/eval measures (docs/eval.md): perplexity on token files through
   the full-sequence forward, and exact-match accuracy of greedy answers to the
   synthetic retrieval items (data/synthetic.h) through the KV cache
   (model/generate.h), with two reference levels per family: uniform guessing
   and a key-blind reader. */
#ifndef REPOC_EVAL_TASKS_H
#define REPOC_EVAL_TASKS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/synthetic.h"
#include "data/tokens.h"
#include "eval/mc.h" /* McPlan: train.eval_tasks' multiple-choice files */
#include "model/generate.h"
#include "model/model.h"

typedef struct {
    size_t tokens;  /* targets scored: windows * T */
    size_t windows; /* non-overlapping windows of T+1 tokens (neighbours share one token) */
    double nll;     /* mean token negative log-likelihood (nats) */
    double ppl;     /* exp(nll) */
} PplResult;

/* Windows w = 0, 1, ... of the stream, tokens [w T, w T + T] (inputs the first
   T, targets the last T), T = m->T, through model_forward with B = 1; at most
   max_windows (0 = all (n_tokens - 1) / T). Dies when the stream is shorter
   than T + 1 tokens. */
void eval_perplexity(PplResult* r, Model* m, const TokenData* td, size_t max_windows);

typedef struct {
    SynFamily family;
    size_t length;     /* the model's input window: prompt + answer - 1 tokens (= T of a training row) */
    size_t prompt_len; /* length + 1 - answer_len */
    size_t answer_len;
    size_t items, correct; /* exact matches of the whole greedy answer */
    size_t tokens_correct; /* answer tokens equal to the expected one at their place, over all items */
    double chance;         /* 1 / alphabet^answer_len: guessing the symbols uniformly */
    double key_blind;      /* mean over the items of the key-blind reader's success probability */
    double seconds;
    bool stopped; /* g->stop was set: the counts cover the items before it, the rest is not scored */
} TaskResult;

/* The prompt length for an input window of `length` tokens; dies naming the
   family when the window is shorter than the family's items need. */
size_t eval_prompt_len(const SyntheticConfig* syn, SynFamily f, size_t length);

/* Items 0 .. items-1 of (seed, family) with prompts of eval_prompt_len tokens
   (depth in [0,1] pins the asked needle, < 0 draws it): prefill the prompt into
   the cache, then answer_len greedy tokens, each fed back. g must hold length
   tokens. Pure function of its arguments and the weights. Returns early with
   r->stopped when gen_stopping(g) turns true (within about a millisecond of
   work, even inside one long prefill). item_correct (items), when not NULL:
   1 where item i's answer was exact, else 0. */
void eval_task(TaskResult* r, Generator* g, const SyntheticConfig* syn, SynFamily f, size_t length, size_t items,
               uint64_t seed, double depth, uint8_t* item_correct);

double eval_chance(const SyntheticConfig* syn, SynFamily f);
/* The key-blind reader knows the layout and how many values the answer has, but
   not the key: it copies an ordered choice of that many distinct needles (for
   the table: one row's cell in the asked column) uniformly at random. Its
   exact-match probability on this item, counted from the prompt. */
double eval_key_blind(const SyntheticConfig* syn, SynFamily f, const int32_t* prompt, size_t prompt_len,
                      const int32_t* answer);

/* Which items to score: families x lengths, `items` each, from `seed`.
   build/eval fills it from --tasks/--lengths/--items/--seed, the trainer from
   train.eval_tasks ({"families": [...], "lengths": [...], "items": N, "seed": S}). */
#define EVAL_MAX_LENGTHS 32
#define EVAL_MAX_TASKS (SYN_N_FAMILIES * EVAL_MAX_LENGTHS)
#define EVAL_PREFILL_CHUNK 1024 /* prompt tokens per forward call: bounds the work space */
typedef struct {
    bool family_on[SYN_N_FAMILIES];
    size_t lengths[EVAL_MAX_LENGTHS]; /* input windows in tokens */
    size_t n_lengths;
    size_t items;
    uint64_t seed;
    McPlan mc; /* train.eval_tasks' multiple-choice files (the "mc" keys); build/eval keeps its own */
} EvalPlan;

/* train.eval_tasks as JSON: families (names, or "all"; default the ones with
   weight > 0 in syn, none when mc is given), lengths (tokens; default
   [default_len]), items (default 50), seed (default 1), and multiple choice:
   mc (files), mc_fields, mc_delimiter, mc_limit, mc_window (mc_plan_key).
   Unknown keys and families are errors naming "<key>.<field>". Returns 0, or
   non-zero with err set. */
int eval_plan_from_json(EvalPlan* p, const cJSON* obj, const char* key, const SyntheticConfig* syn, size_t default_len,
                        char* err, size_t err_len);
/* The longest length (the cache the generator needs) and the prefill chunk;
   dies naming the family and length when a length is too short for a family. */
size_t eval_plan_sizes(const EvalPlan* p, const SyntheticConfig* syn, size_t* chunk);
/* Whether the plan scores a retrieval family */
bool eval_plan_has_families(const EvalPlan* p);

#endif
