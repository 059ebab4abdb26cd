/* build/tokenize --show-records FILES: JSONL records as the trainer sees them (data/jsonl.h, packed_open with
   each record alone in a row: the same rendering, tokens and loss mask as data.format "jsonl"), each printed
   as its decoded text with the tokens that carry loss marked: between [[ and ]], or underlined in green
   when standard output is a terminal. */
#ifndef REPOC_PROGRAMS_SHOW_RECORDS_H
#define REPOC_PROGRAMS_SHOW_RECORDS_H

#include <stddef.h>

/* tokenizer: a tokenizer.json or its directory (its tokenizer_config.json has the chat template); records
   longer than T tokens are left out and counted */
void show_records(const char* tokenizer, const char* const* files, size_t n_files, size_t T);

#endif
