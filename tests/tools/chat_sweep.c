/* build/tools/chat_sweep CASES.jsonl: each case of tools/chat_sweep.py ({"template", "context", "ok", "out" or
   "error"}) rendered by repoc and compared with jinja2's outcome. A case is
     same        both rendered, byte for byte the same text
     both        both refused
     refused     jinja2 rendered it, repoc refused it (a construct outside its subset, a documented limit)
     DIFFERENT   repoc rendered text that jinja2 did not: other text, or text where jinja2 raised
   Prints the counts (and the templates of DIFFERENT cases); exit 1 when there is one. For
   tests/test_chat_sweep.sh. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "template/chat_template.h"

int main(int argc, char** argv) {
    CHECK(argc == 2, "usage: chat_sweep CASES.jsonl");
    size_t len;
    char* text = file_read_all(argv[1], &len);
    size_t n_same = 0, n_both = 0, n_refused = 0, n_diff = 0, n_cases = 0, n_templates = 0;
    char last_template[1 << 14] = "";
    for (char *line = text, *next; *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        else next = line + strlen(line);
        if (!*line) continue;
        cJSON* c = cJSON_Parse(line);
        chat_json_keep_numbers(c, line);
        const cJSON* tmpl = cJSON_GetObjectItemCaseSensitive(c, "template");
        const cJSON* ctx = cJSON_GetObjectItemCaseSensitive(c, "context");
        const cJSON* want = cJSON_GetObjectItemCaseSensitive(c, "out");
        CHECK(cJSON_IsString(tmpl) && cJSON_IsObject(ctx), "%s: case %zu is not {template, context, ...}", argv[1],
              n_cases + 1);
        n_cases++;
        if (strcmp(last_template, tmpl->valuestring)) n_templates++;
        snprintf(last_template, sizeof(last_template), "%s", tmpl->valuestring);
        char err[512] = "";
        ChatTemplate* t = chat_template_parse(tmpl->valuestring, err, sizeof(err));
        size_t out_len = 0;
        char* out = t ? chat_template_render(t, ctx, &out_len, err, sizeof(err)) : NULL;
        bool jinja_ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "ok"));
        if (out && jinja_ok && cJSON_IsString(want) && out_len == strlen(want->valuestring) &&
            !memcmp(out, want->valuestring, out_len))
            n_same++;
        else if (!out && !jinja_ok) n_both++;
        else if (!out) n_refused++;
        else {
            n_diff++;
            if (n_diff <= 10)
                printf(
                    "DIFFERENT case %zu:\n  template: %s\n  jinja2:   %s\n  repoc:    %s\n", n_cases, tmpl->valuestring,
                    jinja_ok ? want->valuestring : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "error")),
                    out);
        }
        if (!out && jinja_ok && n_refused <= 5) printf("refused, jinja2 renders it: %s\n", err);
        free(out);
        chat_template_free(t);
        cJSON_Delete(c);
    }
    printf("%zu templates, %zu renderings: %zu the same as jinja2, %zu refused by both, %zu refused by repoc only, "
           "%zu different\n",
           n_templates, n_cases, n_same, n_both, n_refused, n_diff);
    free(text);
    return n_diff ? 1 : 0;
}
