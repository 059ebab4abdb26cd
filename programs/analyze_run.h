/* The work of build/analyze on one checkpoint, once programs/analyze.c has
   decided what to measure (docs/analyze.md): the inputs (synthetic items, a
   window of a token file, a text through a tokenizer), one forward pass per
   input and what is gathered from it (position statistics, boundary alignment,
   query distance, attention mass), and the range runs at several lengths. */
#ifndef REPOC_ANALYZE_RUN_H
#define REPOC_ANALYZE_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "data/tokens.h"
#include "eval/analyze_types.h"
#include "programs/cli.h"

/* --text (text) or --text-file (text_file) through the tokenizer (--tokenizer, else the checkpoint's): the
   tokenizer's prefix (a BOS) and the text's ids into an->tokens0, each token's text, printable, into
   an->pieces, their count into an->length. Dies naming the option on an empty text, a missing tokenizer, one
   larger than the model's vocabulary, fewer than 2 tokens, or more than the model addresses
   (max_position_embeddings, or YaRN's factor x its original length). */
void analyze_text_input(Analysis* an, const char* text, const char* text_file, const char* tokenizer,
                        const CkptInfo* ci);

/* Forward every input through m (built for B = 1, T = an->length) and gather what an asks for */
void analyze_run(Analysis* an, Model* m, const SyntheticConfig* syn, const TokenData* td);

/* (a): for each multiple mults[k], the inputs at mults[k] x an->length, their z ranges into an->ranges; with
   with_yarn, for each multiple above 1 again with YaRN of that factor and original length yarn_orig (0: the
   training length, else an->length). Builds and loads the model once per run. */
void analyze_ranges(Analysis* an, const CkptInfo* ci, const SyntheticConfig* syn, const TokenData* td,
                    const size_t* mults, size_t n, bool with_yarn, double yarn_orig);

void analysis_free(Analysis* an);

#endif
