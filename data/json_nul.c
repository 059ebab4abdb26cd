/* The \\u0000 escape in JSON text (data/json_nul.h). */
#include "data/json_nul.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int jsonl_nul_string(const char* text, size_t len, char* key, size_t key_len) {
    const char* str = NULL;                  /* the string being read, after its quote */
    const char *prev = NULL, *member = NULL; /* the last string; the last member name */
    size_t prev_len = 0, member_len = 0;
    bool nul = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (!str) {
            if (c == '"') {
                str = text + i + 1;
                nul = false;
            } else if (c == ':' && prev) {
                member = prev;
                member_len = prev_len;
            } else if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
                prev = NULL;
            }
            continue;
        }
        if (c == '\\') { /* an escape: \u0000 is the NUL; the escaped character is skipped */
            if (i + 5 < len && !memcmp(text + i + 1, "u0000", 5)) nul = true;
            i++;
            continue;
        }
        if (c != '"') continue;
        prev = str;
        prev_len = (size_t)(text + i - str);
        str = NULL;
        if (!nul) continue;
        size_t j = i + 1; /* the string is a member name itself when a ':' follows */
        while (j < len && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\n')) j++;
        if (j < len && text[j] == ':') {
            member = prev;
            member_len = prev_len;
        }
        snprintf(key, key_len, "%.*s", member ? (int)member_len : 11, member ? member : "(top level)");
        return 1;
    }
    return 0;
}
