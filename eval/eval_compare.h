/* build/eval --compare A.json B.json: the paired comparison of two build/eval --json files (or of two
   lists of them, one per seed: A1,A2,A3 B1,B2,B3; a run's evaluations in several files joined by '+').
   Per-item scores are read from
     "mc": {NAME: {"items": [{"id", "label", "loglikelihoods", "choice_chars"}]}}
         -> tasks "mc/NAME" (acc: the argmax choice is the label) and "mc/NAME/acc_norm";
     "ruler": {TASK: {LENGTH: {"items": [{"id", "score"}]}}} -> "ruler/TASK/LENGTH";
     "tasks": [{"family", "length", "per_item": [{"id", "score"}]}] -> "family@length".
   For each task both files have, the items whose ids both hold are paired; reported: n, the means a
   and b, diff = b - a, the 95% paired bootstrap interval of diff (eval/stats.h), McNemar's exact p
   when every score is 0 or 1 (else null), and the verdict: "better" when the interval lies above 0,
   "worse" below, else "no difference at this n". A file that cannot be read, is not JSON, holds no
   per-item scores, an item without an id or with an id twice, a label that differs between the files,
   synthetic tasks of different seeds, and no task or no item in common are errors naming the file
   and key. */
#ifndef REPOC_EVAL_COMPARE_H
#define REPOC_EVAL_COMPARE_H

#include <cjson/cJSON.h>

/* Compare the files a and b (S of each: runs of S seeds, a[k] paired with b[k]; S = 1 the plain paired
   comparison), print the table to stdout. With S > 1 an item is compared where all 2S files hold it, the
   interval is the two-level bootstrap over seeds and items (eval/stats.h), p_mcnemar is null and each
   task also gets "seeds" and "diff_per_seed". pool (n_pool task keys, each in every file): one more
   task, "pool", whose items are those of the listed tasks together (with "tasks": the keys). Returns
   {"format", "version", "a", "b" (a path, or a list when S > 1), "compare": {KEY: {...}}} (the caller's
   to free). */
cJSON* eval_compare(const char* const* a, const char* const* b, size_t S, const char* const* pool, size_t n_pool);

#endif
