/* Multiple choice scored again and again (the trainer's evaluation at every train.eval_every): a file's
   first n items read, checked and encoded once (mc_encode, build/eval's encoding) and kept as token ids;
   each mc_set_run scores them with mc_score_items, build/eval's scoring, reading, encoding and allocating
   nothing. mc_run_file scores a file as it reads it, a block of records at a time through the same sets. */
#ifndef REPOC_MC_SET_H
#define REPOC_MC_SET_H

#include <signal.h>

#include "eval/mc.h"

typedef struct {
    size_t ctx_at, ctx_len;  /* its context_enc: tokens[ctx_at, ctx_at + ctx_len) */
    size_t first, n_choices; /* its choices: choice[first, first + n_choices) */
    size_t label;
} McSetItem;

typedef struct {
    size_t at, len; /* its continuation: tokens[at, at + len) */
    double chars;   /* its length in code points */
} McSetChoice;

typedef struct {
    char name[128];      /* the file's base name without .jsonl */
    int32_t* tokens;     /* (n_tokens) every item's context_enc, then its continuations, back to back */
    McSetItem* item;     /* (n) */
    McSetChoice* choice; /* (n_choices) */
    size_t n, n_tokens, n_choices, cap_tokens, cap_items, cap_choices;
} McSet;

/* The first n items of file (mc_check_file's count) encoded with s's tokenizer, delimiter and window; dies
   naming file and line as mc_encode does */
void mc_set_load(McSet* set, McScorer* s, const char* file, const McFields* f, size_t n);
/* Add record r (of file:line) to set, encoded with s (mc_encode) */
void mc_set_add(McSet* set, McScorer* s, const McRecord* r, const char* file, size_t line);
/* Empty the set, keeping its buffers */
void mc_set_clear(McSet* set);
/* Score items i0 .. i0+n-1 of set into out[0..n): ll, greedy, chars and ctx_tokens. Consecutive items run
   together, as many as fit one forward of the generator (eval/mc_score.c) */
void mc_score_items(McItem* out, McScorer* s, const McSet* set, size_t i0, size_t n);
/* Score every item of set into r (no per-item records); false, with r incomplete, once *stop is set
   (checked before each item; s->g.stop cuts a long context short) */
bool mc_set_run(McResult* r, McScorer* s, const McSet* set, const volatile sig_atomic_t* stop);
/* The bytes the set holds */
size_t mc_set_bytes(const McSet* set);
void mc_set_free(McSet* set);

/* Score the first n items of file (mc_check_file's count). keep_items: per-item records into r->items.
   progress: a line with items/s and ETA, rewritten in place (a terminal). */
void mc_run_file(McResult* r, McScorer* s, const char* file, const McFields* f, size_t n, bool keep_items,
                 bool progress);

#endif
