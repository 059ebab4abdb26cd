/* build/eval --mc: the multiple-choice files of one run (eval/mc.h), checked before the model
   loads, scored, printed and written to the JSON's "mc" object (docs/eval.md, "Multiple choice"). */
#ifndef REPOC_EVAL_MC_H
#define REPOC_EVAL_MC_H

#include <cjson/cJSON.h>

#include "eval/mc_set.h"
#include "programs/cli.h"

typedef struct {
    const char* files[MC_MAX_FILES];
    size_t n_files;
    size_t n_items[MC_MAX_FILES]; /* what each file will score (--mc-limit) */
    McFields fields;
    const char* delimiter;
    size_t W; /* the window */
    Tokenizer* tok;
    McResult res[MC_MAX_FILES];
} EvalMc;

/* Check every file's every line, the names (two files may not share one), the tokenizer (--tokenizer,
   else the checkpoint's) against the vocabulary and the window's cache against memory. window 0:
   mc_window's default; limit 0: every item. */
void eval_mc_plan(EvalMc* p, const char* const* files, size_t n, const char* fields, const char* delimiter,
                  size_t window, size_t limit, const char* tokenizer, const CkptInfo* ci, const ModelConfig* cfg);
/* Score every file, printing a line per file (and a progress line on a terminal); no_sharing: run
   each context again for every choice; no_batching: each item alone, its choices one after another */
void eval_mc_run(EvalMc* p, const Model* m, bool keep_items, bool no_sharing, bool no_batching);
/* "mc": {NAME: {n, acc, acc_stderr, acc_ci, acc_norm, ..., items}} into root (the items move there) */
void eval_mc_json(cJSON* root, EvalMc* p);
void eval_mc_free(EvalMc* p);

#endif
