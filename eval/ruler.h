/* RULER's synthetic long-context tasks (Hsieh et al. 2024), generated here
   from their definitions: the thirteen-task suite minus the two QA tasks,
   which need downloaded data sets. Each item is a prompt built to a target
   length in a given tokenizer's tokens (the task template, its answer prefix
   appended, no chat template), the references it should produce, and the
   score of a greedy continuation of tokens_to_generate tokens: RULER's
   string_match_all, the fraction of references found in the prediction as
   case-insensitive substrings. docs/ruler.md says what each task holds, what
   replaced RULER's downloads, and how an item is sized.

   Files: eval/ruler_text.c (the word list, the essay, sentences, random
   needles), eval/ruler_tasks.c (the eleven generators), eval/ruler.c (task
   names, sizing to the tokenizer, length checks), eval/ruler_eval.c (scoring,
   generation, JSON, prompt files).

   Items are pure functions of (task, length, seed, id): the same arguments
   give the same bytes on every machine. What does not depend on the length
   (keys, values, needle order, depths, variable names, the common words) is
   drawn first, so a length sweep asks the same questions in longer haystacks.

   The numbers are RULER-generated, not RULER's published items: RULER_NOTE. */
#ifndef REPOC_RULER_H
#define REPOC_RULER_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/generate.h"
#include "tokenizer/tokenizer.h"

#define RULER_NOTE "RULER-generated; not the published items, so not comparable number for number with published scores"

/* Debian's files that replace RULER's downloads (docs/ruler.md, "Sources") */
#define RULER_WORDS_PATH "/usr/share/dict/american-english"
#define RULER_WORDS_PACKAGE "wamerican"
#define RULER_ESSAY_PATH "/usr/share/gocode/src/github.com/klauspost/compress/testdata/Mark.Twain-Tom.Sawyer.txt"
#define RULER_ESSAY_PACKAGE "golang-github-klauspost-compress-dev"

/* RULER's tasks, in its order (docs/ruler.md): needle in a haystack (single, multi-key, multi-value,
   multi-query), variable tracking, common and frequent words extraction */
typedef enum {
    RULER_NIAH_SINGLE_1,
    RULER_NIAH_SINGLE_2,
    RULER_NIAH_SINGLE_3,
    RULER_NIAH_MULTIKEY_1,
    RULER_NIAH_MULTIKEY_2,
    RULER_NIAH_MULTIKEY_3,
    RULER_NIAH_MULTIVALUE,
    RULER_NIAH_MULTIQUERY,
    RULER_VT,
    RULER_CWE,
    RULER_FWE,
    RULER_N_TASKS
} RulerTask;

const char* ruler_task_name(RulerTask t);
int ruler_task_parse(const char* name); /* the task, or -1 */
const char* ruler_task_list(void);      /* "niah_single_1, ..., fwe" for messages */
size_t ruler_tokens_to_generate(RulerTask t);
/* A comma-separated list of task names, or "all", into on[]. Returns 0, or 1 with err naming the
   first unknown name and the known ones (the caller reports it as a usage error). */
int ruler_parse_tasks(const char* list, bool on[RULER_N_TASKS], char* err, size_t err_len);

/* The word list and the essay, read once. words: the lowercase ASCII words of 4 to 10 letters of
   the word list, in file order. essay: the essay's words, single-space separated, its Project
   Gutenberg header and footer lines removed. */
typedef struct {
    char* word_buf;     /* the words, NUL-separated */
    const char** words; /* (n_words) */
    size_t n_words;
    char* essay;         /* the words of the essay joined by single spaces, NUL-terminated */
    size_t essay_len;    /* bytes, without the NUL */
    size_t* essay_words; /* (n_essay_words) byte offset of each word in essay */
    size_t n_essay_words;
} RulerSources;

/* NULL for either path: the Debian default. Dies naming the missing file and the package
   that ships it ("apt-get install wamerican", or make deps). */
void ruler_sources_load(RulerSources* s, const char* words_path, const char* essay_path);
void ruler_sources_free(RulerSources* s);

#define RULER_MAX_REFS 10
#define RULER_REF_LEN 64
#define RULER_MAX_NEEDLES 8
#define RULER_NEEDLE_LEN 160

/* One generated item. The prompt is text: template with the context, then the answer prefix;
   tokens: the tokenizer's prefix (a BOS, when its post-processor adds one) then the text's ids. */
typedef struct {
    RulerTask task;
    size_t length; /* target: prompt tokens + tokens_to_generate <= length */
    size_t id;
    uint64_t seed;
    char* text; /* NUL-terminated (malloc'd) */
    size_t text_len;
    int32_t* tokens; /* (n_tokens) malloc'd */
    size_t n_tokens;
    size_t haystack;     /* haystack units: noise sentences, essay words, distractor needles, cwe words, fwe words */
    size_t haystack_icl; /* vt: noise sentences of its one-shot example; else 0 */
    size_t n_refs;
    char refs[RULER_MAX_REFS][RULER_REF_LEN];
    /* the needles (niah: key-value sentences; vt: the chain's lines, first to last) and the
       fraction of the haystack placed before each: index / units for noise and needle haystacks,
       the essay depth (a multiple of 1/39, as RULER's 40 depths) for the essay */
    size_t n_needles;
    char needles[RULER_MAX_NEEDLES][RULER_NEEDLE_LEN];
    double depth[RULER_MAX_NEEDLES];
} RulerItem;

/* Item id of (task, length, seed): the largest haystack whose prompt, with tokens_to_generate
   tokens after it, fits in length tokens of enc's tokenizer (docs/ruler.md, "Sizing"). Dies when
   even the smallest haystack does not fit, naming opt ("--lengths"), the length and the task. */
void ruler_item_build(RulerItem* it, const RulerSources* s, TokEncoder* enc, RulerTask t, size_t length, uint64_t seed,
                      size_t id, const char* opt);
/* The item `it` is (task, length, seed, id, vt's example) with exactly `haystack` units instead,
   tokens included: for tests (haystack + 1 units must not fit). out: zeroed or an earlier item. */
void ruler_item_with_haystack(RulerItem* out, const RulerSources* s, TokEncoder* enc, const RulerItem* it,
                              size_t haystack);
void ruler_item_free(RulerItem* it);

/* The longest length a model can address: factor x original length with YaRN, else
   max_position_embeddings (0 there: no limit known, SIZE_MAX). */
size_t ruler_max_length(const ModelConfig* cfg);
/* Before any work: every length at most max_len and long enough for item 0 of every task
   that is on; dies naming opt, the length, the task and the limit. */
void ruler_check_lengths(const RulerSources* s, const Tokenizer* tok, const bool on[RULER_N_TASKS],
                         const size_t* lengths, size_t n_lengths, size_t max_len, uint64_t seed, const char* opt);

/* RULER's scores of one prediction, in [0, 1], after its postprocessing (whitespace stripped,
   control characters as newlines). all: the fraction of refs found in pred (string_match_all,
   every task here); part: 1 when any is (string_match_part, RULER's QA tasks only). A ref is
   found when it is a substring of pred, both lowercased as Python's str.lower lowercases. */
double ruler_score_all(const char* pred, const char* const* refs, size_t n_refs);
double ruler_score_part(const char* pred, const char* const* refs, size_t n_refs);

typedef struct {
    size_t id;
    size_t prompt_tokens;
    char* prediction; /* the decoded greedy continuation, up to tokens_to_generate tokens or the end of text */
    size_t n_refs;
    char refs[RULER_MAX_REFS][RULER_REF_LEN];
    double score; /* ruler_score_all */
} RulerItemResult;

typedef struct {
    RulerTask task;
    size_t length;
    size_t n; /* items scored */
    RulerItemResult* items;
    double score;        /* mean item score */
    double ci_lo, ci_hi; /* 95% percentile bootstrap of the mean over items */
    double seconds;
    bool stopped; /* gen_stopping turned true: n counts the items before it */
} RulerResult;

/* Items 0 .. items-1 of (task, length, seed): build, prefill into g (gen_reset first), then up
   to tokens_to_generate greedy tokens, each fed back, stopping after the tokenizer's end of
   text; decode and score. g must hold length tokens. dump_dir: when not NULL, each prompt is
   also written there (ruler_dump_prompt). */
void ruler_eval_task(RulerResult* r, Generator* g, const Tokenizer* tok, const RulerSources* s, RulerTask t,
                     size_t length, size_t items, uint64_t seed, const char* dump_dir);
void ruler_result_free(RulerResult* r);

/* root["ruler"][TASK][LENGTH] = {"n", "score", "ci": [lo, hi], "items": [{"id", "prompt_tokens",
   "prediction", "references", "score"}]}, and root["ruler_note"] = RULER_NOTE. */
void ruler_result_json(cJSON* root, const RulerResult* r);

/* prompt tokens per forward call in ruler_run's prefill (bounds the generator's work space) */
#define RULER_PREFILL_CHUNK 1024
/* build/eval --ruler: each task that is on at each length, `items` items, into res (tasks on x n_lengths, in
   task order then length order); before the run, one item per length is timed and the ETA printed. A
   generator holding the longest length is built and freed here. Returns the results' count. */
size_t ruler_run(RulerResult* res, const Model* m, const Tokenizer* tok, const RulerSources* s,
                 const bool on[RULER_N_TASKS], const size_t* lengths, size_t n_lengths, size_t items, uint64_t seed,
                 const char* dump_dir);
/* The results as a table: a row per task, a column per length */
void ruler_print_table(const RulerResult* res, size_t n, const size_t* lengths, size_t n_lengths);

/* dir/TASK_LENGTH_ID.txt holding the prompt text exactly (dir must exist); dies naming the file */
void ruler_dump_prompt(const char* dir, const RulerItem* it);

#endif
