/* JSON text holding the escape \\u0000 (a NUL character), which cJSON's strings cannot hold: each ends at
   its first NUL, so the text after it would be lost without a word. Readers of JSON look for it first. */
#ifndef REPOC_DATA_JSON_NUL_H
#define REPOC_DATA_JSON_NUL_H

#include <stddef.h>

/* Whether the JSON text (len bytes) has a string holding the escape \u0000: cJSON's strings end
   at their first NUL, so its text would be cut there without a word. 1 with the member name of
   that string (as written, escapes kept; "(top level)" outside any object) in key, else 0. */
int jsonl_nul_string(const char* text, size_t len, char* key, size_t key_len);

#endif
