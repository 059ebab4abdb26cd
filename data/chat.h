/* Chat records ({"messages": [{"role": ..., "content": ...}, ...]}) rendered with the tokenizer's own chat
   template (tokenizer_config.json's chat_template, template/chat_template.h), with the byte spans of the
   assistant turns, which carry the loss.

   A turn's span is found the way a prefix is: for assistant turn i, the rendering of messages[0..i) with
   add_generation_prompt must be a prefix of the whole rendering (the span starts after it), and the
   rendering of messages[0..i] must be one too (the span ends there: the turn's text and its end-of-turn
   token). A template that renders earlier turns differently once later ones follow (Qwen3 keeps the
   reasoning of the last assistant turn only) fails this for some records; they are refused with the turn
   named, never trained with a guessed mask. */
#ifndef REPOC_DATA_CHAT_H
#define REPOC_DATA_CHAT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "template/chat_template.h"

/* tokenizer_config.json's chat_template (a string, or the "default" of a list of {name, template}), with
   NULL and err when the file has none or cannot be read */
char* chat_template_from_config(const char* path, char* err, size_t err_len);

/* a special token of tokenizer_config.json c: a string or an AddedToken object's "content"; "" when absent
   (malloc'd) */
char* chat_special_token(const cJSON* c, const char* key);

typedef struct {
    char config_path[4096]; /* the tokenizer_config.json it came from */
    ChatTemplate* tmpl;
    char* bos_token; /* tokenizer_config.json's, "" when it names none */
    char* eos_token;
} ChatFormat;

/* The chat format of the tokenizer at tokenizer_path (a tokenizer.json or its directory): the
   tokenizer_config.json beside it. Dies naming the file when it has no chat_template or one repoc cannot
   render (template/chat_template.h says what it can). */
void chat_format_load(ChatFormat* f, const char* tokenizer_path);
void chat_format_free(ChatFormat* f);

typedef struct {
    size_t begin, end; /* bytes [begin, end) of the rendered text */
} ChatSpan;

/* Render messages (the record's array) into *text (malloc'd, *len bytes) and the spans of its assistant
   turns into spans (*n_spans of them, at most max_spans). False with err naming the turn when the
   messages are malformed (each an object with a string "role" and a "content"), have no assistant turn,
   the template refuses them, or a span cannot be located (see above). */
bool chat_render_record(const ChatFormat* f, const cJSON* messages, char** text, size_t* len, ChatSpan* spans,
                        size_t max_spans, size_t* n_spans, char* err, size_t err_len);

#endif
