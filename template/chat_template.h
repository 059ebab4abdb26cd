/* Chat templates: the Jinja subset that tokenizer_config.json's "chat_template" is written in, rendered the
   way transformers' apply_chat_template renders it (Jinja with trim_blocks and lstrip_blocks, loop controls).

   Supported: text, {{ expr }}, {% if / elif / else / endif %}, {% for x in xs %} (several targets, an
   else branch, loop.index / index0 / first / last / length / revindex / revindex0 / previtem / nextitem),
   {% set name = expr %}, {% set ns.attr = expr %} with namespace(...), {% break %}, {% continue %},
   {% generation %} (transparent), comments, the whitespace controls {%- -%} {{- -}} {#- -#} {%+.
   Expressions: string, number, true/false/none literals (either case), lists, dicts, attribute and item
   access, slices with steps, calls, `a if c else b`, or / and / not, == != < <= > >=, in / not in, + - * /
   // % ~, unary -, filters (length count trim upper lower title capitalize first last join default list
   string int float tojson items reverse replace abs; not safe, whose Markup escapes what is added to it), tests (defined undefined none string number integer
   float boolean true false mapping iterable sequence even odd), string methods (startswith endswith strip
   lstrip rstrip split upper lower title capitalize replace), dict methods (items keys values get), and the
   globals raise_exception, namespace and range. Each filter and method takes the arguments Jinja's (or
   Python's) takes, tojson transformers' (ensure_ascii, indent, separators, sort_keys), join its attribute,
   int its default and base; an argument it does not take is refused, never ignored. The source is read as
   Jinja's lexer reads it (every \r\n or \r a \n, one newline at its end dropped), a string's length,
   index and slice count code points. Anything else — a macro, a block set, an unknown filter,
   test, method or tag — is refused at parse or render time with its name and line: repoc renders a
   template exactly or not at all. strftime_now is left undefined (templates that test for it fall back
   to their fixed date), so a rendering never depends on the day it ran. Ints are 64-bit: a literal or a
   result beyond that is refused (Python's have no bound). An expression nested more than 64 deep or 256
   operations deep, and a value nested more than 500 deep when printed or compared, are refused. A rendering
   holds at most 256 MiB of text and values together (its pool frees nothing until it ends, so a string grown
   in a loop keeps every step: about 20000 steps of one character fit) and is refused past that. */
#ifndef REPOC_TEMPLATE_CHAT_TEMPLATE_H
#define REPOC_TEMPLATE_CHAT_TEMPLATE_H

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct ChatTemplate ChatTemplate;

/* Parse src (the template keeps a copy: src may be freed at once). NULL with err ("line L: ...") when it uses
   something outside the subset above. */
ChatTemplate* chat_template_parse(const char* src, char* err, size_t err_len);
void chat_template_free(ChatTemplate* t);

/* Render t with the variables of context (a JSON object: messages, bos_token, eos_token,
   add_generation_prompt, ...). Returns the text (malloc'd, NUL-terminated, *len bytes), or NULL with err
   (an unsupported construct met at render time, an undefined value used, or the template's own
   raise_exception message). */
char* chat_template_render(const ChatTemplate* t, const cJSON* context, size_t* len, char* err, size_t err_len);

/* Keep the literal of every number of root, which cJSON parsed from text, in its valuestring (cJSON leaves
   it unused for a number; cJSON_Duplicate copies it, cJSON_Delete frees it), so that the template reads each
   as Python's json.loads does: 1.0 a float that prints "1.0", 9007199254740993 an exact int (one beyond 64
   bits is refused at render time). A number without its literal is an int when integral below 2^53. */
void chat_json_keep_numbers(cJSON* root, const char* text);

#endif
