/* Instruction / completion data (data.format "jsonl"): JSON Lines files whose
   records are tokenized once at open and packed into rows of seq_len tokens.
   A line is one of
     {"prompt": P, "completion": C}   BOS + P + C + EOS; only C and EOS carry loss
     {"text": S}                      BOS + S + EOS; every token carries loss
     {"messages": [{"role", "content"}, ...]}   the conversation rendered with the tokenizer's chat
                                      template (data/chat.h); the assistant turns carry loss
     {"input_ids": [...], "labels": [...]}   pre-tokenized; labels (optional, the
                                      same length, aligned with input_ids as in
                                      Hugging Face: -100 or -1 = no loss) default
                                      to input_ids
   BOS is the tokenizer's post-processor prefix (tok_prefix), EOS its end of
   text token. The target of token i is the label of token i + 1, so a
   document's last token has none (-1). Documents are packed in file order into
   rows of T tokens, each kept whole when it fits in the rest of the row (else
   the row is padded and the document starts the next one); a document longer
   than T starts where the last one ended and continues over as many rows as it
   needs. A prompt that leaves no room for its completion within T tokens is
   counted and skipped. Rows are then picked per (seed, step, row), like
   token files, so exact resume and data-parallel slicing need no cursor. */
#ifndef REPOC_DATA_JSONL_H
#define REPOC_DATA_JSONL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "data/json_nul.h" /* jsonl_nul_string, which JSONL readers use */
#include "data/tokens.h"

typedef struct {
    size_t T, n_rows;
    int32_t* tokens;  /* (n_rows, T) */
    int32_t* targets; /* (n_rows, T): -1 = no loss (prompt, padding, a document's last token) */
    int32_t* doc_ids; /* (n_rows, T): 0, 1, ... per document within a row, padding one more */
    size_t n_records, n_prompt_completion, n_text, n_chat, n_pretokenized;
    size_t n_skipped_prompt; /* prompts too long for T */
    size_t n_split;          /* documents longer than T, split over rows */
    size_t n_loss_tokens;    /* targets != -1 over all rows */
    size_t n_too_long;       /* one_per_row: documents longer than T, left out */
    size_t n_no_loss;        /* records none of whose tokens carries loss */
} PackedRows;

/* Read, tokenize and pack every line of the files. tokenizer: a tokenizer.json
   or its directory, NULL when every line is pre-tokenized. Dies naming the file
   and line on a line that is not one JSON object with exactly one of the field
   sets above (the byte column of a syntax error or of text after the object), a
   token id >= vocab_size, a label other than an id, -100 or -1, a text record
   when the tokenizer names no end of text token, on files that give no rows, and on files where no token
   carries loss (a run on them would train at loss 0 and learn nothing). one_per_row (for
   evaluation): each document alone in a padded row, those longer than T left out and counted. */
void packed_open(PackedRows* p, const char* const* files, size_t n_files, const char* tokenizer, size_t vocab_size,
                 size_t T, bool one_per_row);
void packed_close(PackedRows* p);
/* records, skipped prompts, rows and the fraction of tokens that carry loss; a warning when more than a
   tenth of the records carry no loss */
void packed_print(const PackedRows* p, const char* label, FILE* out);

/* The rows rq asks (rq->T must be p's T): row r of the step is packed row (step * rows_per_step + r) mod
   n_rows (sequential) or one drawn by Rng(mix_triple(domain, seed, step, r)) (shuffle).
   tokens, targets, doc_ids (n, T); each may be NULL. */
void packed_rows(const PackedRows* p, const RowRequest* rq, int32_t* tokens, int32_t* targets, int32_t* doc_ids);

#endif
