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
   Prefix sharing: an item's context runs once and every choice reads it; batching: the choices of an item,
   and several items, run in one forward (eval/mc_score.c). */
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
#define MC_HEAD_ROWS_MAX 128   /* rows per head product of the scorer: (128, V) logits */
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

/* A row of a tree (eval/mc_score.c) that predicts a continuation token: row `row` predicts token `target` of
   choice `choice` of the group's item `item` (choice MC_EVERY_CHOICE: the context's last row, the first token
   of each choice) */
#define MC_EVERY_CHOICE (-1)
typedef struct {
    uint32_t row, item;
    int choice;
    int32_t target;
} McRow;

/* A row of logits as the log-probabilities read it: log p(v) = row[v] - mx - lse; best is its argmax */
typedef struct {
    int32_t best;
    double mx, lse;
} McRowStats;

/* An encoded item as the scorer reads it: context_enc and each choice's continuation tokens */
typedef struct {
    const int32_t* ctx;
    size_t n_ctx, n;
    const int32_t* cont[MC_MAX_CHOICES];
    size_t n_cont[MC_MAX_CHOICES];
} McItemView;

#define MC_GROUP_ITEMS 64 /* the most items one tree holds */

/* The model side: a generator for windows of W tokens and its buffers, allocated once */
typedef struct {
    Generator g;
    TokEncoder enc;
    const Tokenizer* tok;
    const char* delimiter; /* before every choice */
    size_t W, chunk, head_rows, V;
    real *logits, *normed, *rstd; /* (head_rows,V) (head_rows,D) (head_rows) */
    real* gathered;               /* (head_rows,D) the tree's rows that predict a token, for the head */
    real* first;                  /* (V) the logits after the context: every choice's first token */
    GenBranch* tree;              /* (chunk) the group's layout (gen_forward_tree) */
    int32_t* tree_tokens;         /* (chunk) its tokens */
    McRow* score_rows;            /* (chunk) its rows that predict a token */
    size_t n_score;
    McRowStats stats[MC_HEAD_ROWS_MAX]; /* of the rows of one head product */
    McItemView views[MC_GROUP_ITEMS];   /* the group's items */
    int32_t* ctx;                       /* (W+1 ...) the context's tokens, grown as needed */
    int32_t* cont[MC_MAX_CHOICES];
    size_t n_ctx, n_cont[MC_MAX_CHOICES], cap_ctx, cap_cont[MC_MAX_CHOICES];
    char* text; /* context + continuation bytes, grown as needed */
    size_t cap_text;
    size_t shared, unshared; /* choices that reused the context's forward, contexts run */
    size_t trees;            /* forwards of a group of items (the rest ran alone) */
    bool no_sharing;         /* run the context again for every choice (to measure what sharing saves) */
    bool no_batching;        /* every item alone, its choices one after another (to measure what batching saves) */
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

/* Record r's context_enc into s->ctx (s->n_ctx) and each choice's continuation tokens into s->cont[k]
   (s->n_cont[k]); dies naming file:line when a continuation has no tokens of its own or is longer than
   the window */
void mc_encode(McScorer* s, const McRecord* r, const char* file, size_t line);

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
#endif
