/* Chat records rendered with the tokenizer's chat template, and their assistant spans (data/chat.h). */
#include "data/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "data/json_nul.h"

char* chat_template_from_config(const char* path, char* err, size_t err_len) {
    size_t n;
    char* text = file_read_all_or_null(path, &n);
    if (!text) {
        snprintf(err, err_len, "cannot read it");
        return NULL;
    }
    char key[128];
    if (jsonl_nul_string(text, n, key, sizeof(key))) {
        snprintf(err, err_len, "the string of \"%s\" holds \\u0000 (a NUL character), which would cut it there", key);
        free(text);
        return NULL;
    }
    cJSON* c = cJSON_ParseWithLength(text, n);
    free(text);
    const cJSON* t = c ? cJSON_GetObjectItemCaseSensitive(c, "chat_template") : NULL;
    char* out = NULL;
    if (cJSON_IsString(t)) {
        out = strdup(t->valuestring);
    } else if (cJSON_IsArray(t)) { /* [{"name": "default", "template": ...}, {"name": "tool_use", ...}] */
        const cJSON* it;
        cJSON_ArrayForEach(it, t) {
            const cJSON* name = cJSON_GetObjectItemCaseSensitive(it, "name");
            const cJSON* body = cJSON_GetObjectItemCaseSensitive(it, "template");
            if (cJSON_IsString(name) && !strcmp(name->valuestring, "default") && cJSON_IsString(body))
                out = strdup(body->valuestring);
        }
        if (!out) snprintf(err, err_len, "its chat_template list has no template named \"default\"");
    } else {
        snprintf(err, err_len, c ? "it has no chat_template" : "it is not a JSON object");
    }
    cJSON_Delete(c);
    return out;
}

char* chat_special_token(const cJSON* c, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(c, key);
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return strdup(cJSON_IsString(v) ? v->valuestring : "");
}

void chat_format_load(ChatFormat* f, const char* tokenizer_path, const char* use) {
    memset(f, 0, sizeof(*f));
    char dir[4096];
    if (is_dir(tokenizer_path)) snprintf(dir, sizeof(dir), "%s", tokenizer_path);
    else dir_of(tokenizer_path, dir, sizeof(dir));
    int w = snprintf(f->config_path, sizeof(f->config_path), "%.4000s/tokenizer_config.json", dir);
    CHECK(w > 0 && (size_t)w < sizeof(f->config_path), "%s: the path is too long", dir);
    char err[1024];
    char* src = chat_template_from_config(f->config_path, err, sizeof(err));
    CHECK(src, "%s: %s; %s", f->config_path, err, use);
    f->tmpl = chat_template_parse(src, err, sizeof(err));
    free(src);
    CHECK(f->tmpl,
          "%s: chat_template, %s: repoc renders a template exactly or not at all (docs/finetune.md, "
          "\"Chat data\", lists what it renders); %s",
          f->config_path, err, use);
    size_t n;
    char* text = file_read_all(f->config_path, &n);
    cJSON* c = cJSON_ParseWithLength(text, n);
    free(text);
    f->bos_token = chat_special_token(c, "bos_token");
    f->eos_token = chat_special_token(c, "eos_token");
    cJSON_Delete(c);
}

void chat_format_free(ChatFormat* f) {
    chat_template_free(f->tmpl);
    free(f->bos_token);
    free(f->eos_token);
    memset(f, 0, sizeof(*f));
}

char* chat_render_messages(const ChatFormat* f, const cJSON* messages, size_t n, bool gen, size_t* len, char* err,
                           size_t err_len) {
    cJSON* ctx = cJSON_CreateObject();
    cJSON* list = cJSON_AddArrayToObject(ctx, "messages");
    const cJSON* m = messages->child;
    for (size_t k = 0; k < n && m; k++, m = m->next) cJSON_AddItemToArray(list, cJSON_Duplicate(m, true));
    cJSON_AddStringToObject(ctx, "bos_token", f->bos_token);
    cJSON_AddStringToObject(ctx, "eos_token", f->eos_token);
    cJSON_AddBoolToObject(ctx, "add_generation_prompt", gen);
    char* out = chat_template_render(f->tmpl, ctx, len, err, err_len);
    cJSON_Delete(ctx);
    return out;
}

static bool starts_with(const char* s, size_t n, const char* p, size_t m) { return m <= n && !memcmp(s, p, m); }

bool chat_check_messages(const cJSON* messages, size_t* n, char* err, size_t err_len) {
    *n = 0;
    if (!cJSON_IsArray(messages) || !messages->child) {
        snprintf(err, err_len, "\"messages\" must be a non-empty list of {\"role\", \"content\"} objects");
        return false;
    }
    const cJSON* m;
    cJSON_ArrayForEach(m, messages) {
        const cJSON* role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role) || !cJSON_GetObjectItemCaseSensitive(m, "content")) {
            snprintf(err, err_len, "messages[%zu] must be an object with a string \"role\" and a \"content\"", *n);
            return false;
        }
        (*n)++;
    }
    return true;
}

/* the content of the probe's assistant turn: plain text no template changes */
#define CHAT_PROBE "Hello there."

char* chat_turn_end(const ChatFormat* f, char* err, size_t err_len) {
    cJSON* msgs = cJSON_CreateArray();
    cJSON* u = cJSON_CreateObject();
    cJSON_AddStringToObject(u, "role", "user");
    cJSON_AddStringToObject(u, "content", "Hi.");
    cJSON_AddItemToArray(msgs, u);
    cJSON* a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "role", "assistant");
    cJSON_AddStringToObject(a, "content", CHAT_PROBE);
    cJSON_AddItemToArray(msgs, a);
    size_t p_len = 0, w_len = 0;
    char* prompt = chat_render_messages(f, msgs, 1, true, &p_len, err, err_len);
    char* whole = prompt ? chat_render_messages(f, msgs, 2, false, &w_len, err, err_len) : NULL;
    cJSON_Delete(msgs);
    char* out = NULL;
    if (whole) {
        size_t from = p_len <= w_len && !memcmp(prompt, whole, p_len) ? p_len : 0; /* after the generation prompt */
        const char* at = strstr(whole + from, CHAT_PROBE);
        if (at) out = strdup(at + strlen(CHAT_PROBE));
        else
            snprintf(err, err_len,
                     "the rendering of a conversation [user, assistant] does not hold the assistant's text");
    }
    free(prompt);
    free(whole);
    return out;
}

bool chat_render_record(const ChatFormat* f, const cJSON* messages, char** text, size_t* len, ChatSpan* spans,
                        size_t max_spans, size_t* n_spans, char* err, size_t err_len) {
    *text = NULL, *n_spans = 0;
    size_t n = 0;
    if (!chat_check_messages(messages, &n, err, err_len)) return false;
    const cJSON* m;
    char sub[768];
    *text = chat_render_messages(f, messages, n, false, len, sub, sizeof(sub));
    if (!*text) {
        snprintf(err, err_len, "%s: chat_template: %s", f->config_path, sub);
        return false;
    }
    size_t i = 0, last_end = 0;
    cJSON_ArrayForEach(m, messages) {
        const char* role = cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring;
        if (strcmp(role, "assistant")) {
            i++;
            continue;
        }
        size_t a_len, b_len;
        char* a = chat_render_messages(f, messages, i, true, &a_len, sub, sizeof(sub));
        char* b = a ? chat_render_messages(f, messages, i + 1, false, &b_len, sub, sizeof(sub)) : NULL;
        bool ok = a && b && starts_with(*text, *len, a, a_len) && starts_with(*text, *len, b, b_len) &&
                  a_len <= b_len && a_len >= last_end;
        if (!ok && a && b)
            snprintf(sub, sizeof(sub),
                     "the template renders the turns before messages[%zu] (assistant) differently "
                     "once it is followed by more turns, so its span cannot be located: split the conversation "
                     "into records that end at that turn",
                     i);
        free(a);
        free(b);
        if (!ok || *n_spans == max_spans) {
            if (ok) snprintf(sub, sizeof(sub), "more than %zu assistant turns", max_spans);
            snprintf(err, err_len, "%s: %s", f->config_path, sub);
            free(*text);
            *text = NULL;
            return false;
        }
        spans[(*n_spans)++] = (ChatSpan){a_len, b_len};
        last_end = b_len;
        i++;
    }
    if (*n_spans == 0) {
        snprintf(err, err_len, "the conversation has no assistant turn, so no token would carry loss");
        free(*text);
        *text = NULL;
        return false;
    }
    return true;
}
