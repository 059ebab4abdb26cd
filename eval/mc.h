/* Multiple-choice log-likelihood scoring as lm-evaluation-harness does it (docs/eval.md,
   "Multiple choice"). A JSON Lines file holds one item per line: a context, its choices and the
   index of the right one (field names mapped by McFields). For choice c the continuation is
   delimiter + c (the harness's target_delimiter, " " by default); then, as the harness's
   _encode_pair:
     - trailing whitespace of the context (Python's str.isspace) moves to the front of the continuation;
     - whole = BOS + encode(context + continuation), context_enc = BOS + encode(context), BOS being
       the tokenizer's post-processor prefix (none when it adds none);
     - continuation tokens = whole[len(context_enc):];
   the model reads (context_enc + continuation)[-(W+1):][:-1] (W the window), and the choice's
   log-likelihood is the sum of the log-probabilities of its continuation tokens; is_greedy when each
   of them is its row's argmax. acc: the argmax of the log-likelihoods is the label; acc_norm: the
   argmax of log-likelihood / (the choice's length in Unicode code points); both first on a tie.
   Prefix sharing: an item's context runs once, its cache is rewound (gen_rewind) for each choice
   that keeps the whole context in the window. */
#ifndef REPOC_MC_H
#define REPOC_MC_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/stats.h"
#include "model/generate.h"
#include "tokenizer/tokenizer.h"

#define MC_MAX_CHOICES 64
#define MC_FIELD_LEN 128
#define MC_MAX_FILES 32
#define MC_DEFAULT_WINDOW 2048 /* lm-evaluation-harness's max_length when the config names none */

/* Where a record keeps its parts: a field name or a dotted path into nested objects
   ("question.stem"); choices either one list of strings or fields joined by '+' ("sol1+sol2"). */
typedef struct {
    char context[MC_FIELD_LEN], choices[MC_FIELD_LEN], label[MC_FIELD_LEN], id[MC_FIELD_LEN];
} McFields;

/* The defaults context, choices, label, id, then spec "context=ctx,choices=endings,label=label" over
   them. Returns 0, or 1 with err naming the bad part. */
int mc_fields_parse(McFields* f, const char* spec, char* err, size_t err_len);

/* What to score and how, as build/eval's --mc options or the "mc" keys of train.eval_tasks */
typedef struct {
    const char* files[MC_MAX_FILES]; /* into the JSON or argv they came from */
    size_t n_files;
    const char* fields;    /* a --mc-fields spec; NULL: the defaults */
    const char* delimiter; /* before every choice; NULL: " " */
    size_t limit;          /* the first N items of each file; 0: every item */
    size_t window;         /* the model's window in tokens; 0: mc_window's default */
} McPlan;

/* Key k ("mc", "mc_fields", "mc_delimiter", "mc_limit", "mc_window") of an object named key into p: 0, or
   1 with err naming "<key>.<k>" (a bad value, two files of one name). -1 when k is none of them. */
int mc_plan_key(McPlan* p, const cJSON* v, const char* key, char* err, size_t err_len);
/* The window of W tokens: window, else max_position_embeddings, else MC_DEFAULT_WINDOW */
size_t mc_window(size_t window, size_t max_position_embeddings);

/* One record: pointers into its cJSON object */
typedef struct {
    const char* context;
    const char* choice[MC_MAX_CHOICES];
    size_t n_choices;
    size_t label;
    const cJSON* id; /* NULL when the record has none */
} McRecord;

/* Read record o of file:line; dies naming file, line and field: a missing or empty context, no
   choices or more than MC_MAX_CHOICES, a choice that is not a string or is empty, a label that is
   not an integer (or a string of digits) in [0, choices). */
void mc_record(McRecord* r, const cJSON* o, const McFields* f, const char* file, size_t line);

/* The choice the harness picks: the argmax over i < n of ll[i] (acc), or of ll[i] / chars[i] (acc_norm,
   chars = the choice's length in Unicode code points), the first on a tie (numpy's argmax) */
size_t mc_pick(const double* ll, const double* chars, size_t n, bool norm);

/* Bytes of s (n) without its trailing whitespace, as Python's str.rstrip() */
size_t mc_rstrip_len(const char* s, size_t n);
/* Unicode code points of s (n), as Python's len of the decoded string (an invalid byte counts one) */
size_t mc_code_points(const char* s, size_t n);

/* The model side: a generator for windows of W tokens and its buffers, allocated once */
typedef struct {
    Generator g;
    TokEncoder enc;
    const Tokenizer* tok;
    const char* delimiter; /* before every choice */
    size_t W, chunk, V;
    real *logits, *normed, *rstd; /* (chunk,V) (chunk,D) (chunk) */
    real* first;                  /* (V) the logits after the context: every choice's first token */
    int32_t* ctx;                 /* (W+1 ...) the context's tokens, grown as needed */
    int32_t* cont[MC_MAX_CHOICES];
    size_t n_ctx, n_cont[MC_MAX_CHOICES], cap_ctx, cap_cont[MC_MAX_CHOICES];
    char* text; /* context + continuation bytes, grown as needed */
    size_t cap_text;
    size_t shared, unshared; /* choices that reused the context's cache, choices that ran their own */
    bool no_sharing;         /* run the context again for every choice (to measure what sharing saves) */
} McScorer;

void mc_scorer_init(McScorer* s, const Model* m, const Tokenizer* tok, size_t W, const char* delimiter);
void mc_scorer_free(McScorer* s);
/* The reals mc_scorer_init allocates for cfg at a window of W tokens: its generator and buffers */
size_t mc_scorer_reals(const ModelConfig* cfg, size_t W);

/* *buf holds at least n elements of size sz (grown by doubling, never shrunk: no allocation once the sizes
   are seen) */
void mc_reserve(void** buf, size_t* cap, size_t n, size_t sz);

/* One item's scores */
typedef struct {
    double ll[MC_MAX_CHOICES];
    bool greedy[MC_MAX_CHOICES];
    double chars[MC_MAX_CHOICES];
    size_t ctx_tokens; /* len(context_enc) */
} McItem;

/* Score record r (of file:line, for messages): mc_encode, then mc_score_encoded */
void mc_score(McItem* it, McScorer* s, const McRecord* r, const char* file, size_t line);
/* Record r's context_enc into s->ctx (s->n_ctx) and each choice's continuation tokens into s->cont[k]
   (s->n_cont[k]); dies naming file:line when a continuation has no tokens of its own or is longer than
   the window */
void mc_encode(McScorer* s, const McRecord* r, const char* file, size_t line);
/* it->ll, it->greedy and it->ctx_tokens of an encoded item: context_enc ctx (n_ctx) and the continuations
   cont[k] (n_cont[k]) of its n choices; the choices' lengths (it->chars) are the caller's */
void mc_score_encoded(McItem* it, McScorer* s, const int32_t* ctx, size_t n_ctx, const int32_t* const* cont,
                      const size_t* n_cont, size_t n);

/* A file's results; items (a cJSON list, the per-item records of the JSON output) when asked for */
typedef struct {
    char name[128]; /* the file's base name without .jsonl */
    size_t n, n_acc, n_acc_norm;
    double acc, acc_norm, acc_stderr, acc_norm_stderr;
    Interval acc_ci, acc_norm_ci;
    double seconds;
    cJSON* items;
} McResult;

/* The name of file (its base name without .jsonl) into name */
void mc_name(char* name, size_t len, const char* file);
/* Called with each record and its line number */
typedef void (*McRecordFn)(void* arg, const McRecord* r, size_t line);
/* Read file's records in order, each checked (dies naming file, line and field), handing each to fn (when
   not NULL); stop after `first` records (0: read to the end). Returns the records read. */
size_t mc_read_file(const char* file, const McFields* f, size_t first, McRecordFn fn, void* arg);
/* Check every line of file and count its items; limit > 0: at most that many are counted */
size_t mc_check_file(const char* file, const McFields* f, size_t limit);
/* r counts an item: *acc and *acc_norm (either may be NULL) say whether each picked the label */
void mc_tally(McResult* r, const McItem* it, size_t n_choices, size_t label, bool* acc, bool* acc_norm);
/* r's n, seconds (since t0), acc, acc_norm, their stderr and Wilson intervals from its counts */
void mc_result_close(McResult* r, size_t n, double t0);
/* Score the first n items of file (mc_check_file's count). keep_items: per-item records into r->items.
   progress: a line with items/s and ETA, rewritten in place (a terminal). */
void mc_run_file(McResult* r, McScorer* s, const char* file, const McFields* f, size_t n, bool keep_items,
                 bool progress);

#endif
