/* build/tools/chat_render TEMPLATE CONTEXT.json: the chat template in file TEMPLATE (or, when it ends in
   .json, a tokenizer_config.json's chat_template) rendered with the JSON object of CONTEXT.json, to
   stdout. For the comparison with @huggingface/jinja (tests/test_chat_node.sh). Exit 1 with the message
   on a template or rendering repoc refuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "data/chat.h"
#include "template/chat_template.h"

int main(int argc, char** argv) {
    CHECK(argc == 3, "usage: chat_render TEMPLATE|tokenizer_config.json CONTEXT.json");
    size_t n;
    char* src = NULL;
    char err[1024];
    const char* path = argv[1];
    size_t plen = strlen(path);
    if (plen > 5 && !strcmp(path + plen - 5, ".json")) src = chat_template_from_config(path, err, sizeof(err));
    else src = file_read_all(path, &n);
    CHECK(src, "%s: %s", path, err);
    ChatTemplate* t = chat_template_parse(src, err, sizeof(err));
    CHECK(t, "%s: %s", path, err);
    char* ctx_text = file_read_all(argv[2], &n);
    cJSON* ctx = cJSON_ParseWithLength(ctx_text, n);
    CHECK(cJSON_IsObject(ctx), "%s: not a JSON object", argv[2]);
    chat_json_keep_numbers(ctx, ctx_text);
    if (plen > 5 && !strcmp(path + plen - 5, ".json")) { /* the config's special tokens, as the trainer passes them */
        char* text = file_read_all(path, &n);
        cJSON* c = cJSON_ParseWithLength(text, n);
        const char* keys[] = {"bos_token", "eos_token"};
        for (int k = 0; k < 2; k++) {
            if (cJSON_GetObjectItemCaseSensitive(ctx, keys[k])) continue;
            char* v = chat_special_token(c, keys[k]);
            cJSON_AddStringToObject(ctx, keys[k], v);
            free(v);
        }
        cJSON_Delete(c);
        free(text);
    }
    char* out = chat_template_render(t, ctx, &n, err, sizeof(err));
    CHECK(out, "%s: %s", path, err);
    fwrite(out, 1, n, stdout);
    free(out);
    cJSON_Delete(ctx);
    free(ctx_text);
    chat_template_free(t);
    free(src);
    return 0;
}
