/* Regular expressions through Oniguruma for tokenizer/ (tokenizer/regex.c). Not for use outside tokenizer/. */
#ifndef REPOC_TOK_REGEX_H
#define REPOC_TOK_REGEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct TokRegex TokRegex;
/* pattern[0..len) compiled as Hugging Face tokenizers does (ONIG_SYNTAX_DEFAULT, UTF-8, no options);
   NULL with Oniguruma's message in err on a bad pattern */
TokRegex* tok_regex_new(const char* pattern, size_t len, char* err, size_t err_len);
void tok_regex_free(TokRegex* re);
/* a pattern that matches the string s literally (malloc'd) */
char* tok_regex_escape(const char* s);
/* The spans of s[0..n) as tokenizers' find_matches gives them: in order, covering the text,
   each matched (1) or not (0); an empty match is a span of its own. A byte that is not valid
   UTF-8 is a span of its own with is_match -1 (the regex sees each valid run alone).
   region: the caller's Oniguruma region, made when *region is NULL (tok_regex_region_free). */
typedef void (*SpanFn)(void* ctx, size_t a, size_t b, int is_match);
void tok_regex_spans(const TokRegex* re, void** region, const uint8_t* s, size_t n, SpanFn fn, void* ctx);
void tok_regex_region_free(void* region);
/* What the calling thread's searches run over, for the message of a failed one: the text tok_encode was
   given and what it is ("'a.jsonl' line 12"; NULL: the text being encoded); text NULL when none */
void tok_regex_site(const char* source, const uint8_t* text, size_t len);

#endif
