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
   render (template/chat_template.h says what it can), with `use` (what the template is needed for, and the
   way around it) at the end of the message. */
void chat_format_load(ChatFormat* f, const char* tokenizer_path, const char* use);
void chat_format_free(ChatFormat* f);

/* True when messages is a non-empty list of objects, each with a string "role" and a "content"; their count in
   *n. False with err naming the first that is not. */
bool chat_check_messages(const cJSON* messages, size_t* n, char* err, size_t err_len);

/* messages[0..n) (a checked list) rendered with add_generation_prompt gen, bos_token and eos_token: malloc'd text
   of *len bytes, or NULL with the template's refusal in err */
char* chat_render_messages(const ChatFormat* f, const cJSON* messages, size_t n, bool gen, size_t* len, char* err,
                           size_t err_len);

/* What the template writes right after an assistant turn's text ("<|im_end|>\n" for ChatML, "<end_of_turn>\n" for
   Gemma, "<|eot_id|>" for Llama-3): the rendering of a probe conversation [user, assistant] after the assistant's
   content (found after the generation prompt). malloc'd; NULL with err when the template refuses the probe or
   does not write the content verbatim. */
char* chat_turn_end(const ChatFormat* f, char* err, size_t err_len);

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
