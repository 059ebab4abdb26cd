/* What eval/ruler_text.c, ruler_tasks.c and ruler.c share and build/eval does not call:
   RULER's random needles, the essay cut into sentences with needles
   placed at depths, and the task generators a given haystack size at a time. */
#ifndef REPOC_RULER_INTERNAL_H
#define REPOC_RULER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"
#include "common/textbuf.h"
#include "eval/ruler.h"

/* RULER's needle formats (out holds RULER_REF_LEN bytes): a 7-digit number in [10^6, 10^7 - 1];
   a version-4 UUID, lowercase; a key word: two words of the list joined by '-' (RULER joins an
   adjective and a noun of the wonderwords lists); an uppercase variable name of len letters */
void ruler_rand_number(Rng* rng, char* out);
void ruler_rand_uuid(Rng* rng, char* out);
void ruler_rand_key_word(Rng* rng, const RulerSources* s, char* out);
void ruler_rand_letters(Rng* rng, char* out, size_t len, char first);

/* Fisher-Yates shuffle of n items of size bytes each */
void ruler_shuffle(Rng* rng, void* items, size_t n, size_t size);
/* k distinct indices of [0, n), in the order drawn (random.sample) */
void ruler_sample(Rng* rng, size_t n, size_t k, size_t* out);

/* The essay's first n_words words (cycled when n_words exceeds the essay) cut into sentences:
   ends[j] = the index of the first word after sentence j. Returns the count; ends holds
   n_words entries at most. */
size_t ruler_essay_sentence_ends(const RulerSources* s, size_t n_words, size_t* ends);
/* RULER's essay context: the first n_words words as sentences, needle j placed before
   sentence floor(sentences x depth_pct[j] / 100) (depth_pct ascending), every piece joined by
   one space, as RULER joins them (an empty piece leaves two spaces) */
void ruler_essay_context(TextBuf* out, const RulerSources* s, size_t n_words, const char* const* needles,
                         const int* depth_pct, size_t k);

/* The item's text (it->text) and everything in it but its tokens, with haystack units n and,
   for vt, n_icl noise sentences in its one-shot example. Pure function of its arguments. it: zeroed,
   or an item of an earlier call (freed first). */
void ruler_task_text(RulerItem* it, const RulerSources* s, RulerTask t, size_t length, uint64_t seed, size_t id,
                     size_t n, size_t n_icl);
/* vt's one-shot example alone with n_icl noise sentences, as RULER sizes it: at most
   RULER_VT_ICL_TOKENS tokens, text only, no tokens to generate. */
void ruler_vt_icl_text(TextBuf* out, uint64_t seed, size_t id, size_t n_icl);
#define RULER_VT_ICL_TOKENS 500
/* the smallest haystack a task's item can have */
size_t ruler_min_haystack(RulerTask t);

#endif
