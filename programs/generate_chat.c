/* build/generate --chat (generate_chat.h): the stop tokens, one reply of a conversation, and the three ways a
   conversation arrives (options, standard input, a JSONL file). */
#include "programs/generate_chat.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/fileio.h"
#include "common/ints.h"
#include "data/chat.h"
#include "data/json_nul.h"
#include "programs/cli.h"

#define CHAT_MAX_STOPS 16

struct GenChat {
    ChatSpec spec;
    ChatFormat fmt;
    const Tokenizer* t;
    const ModelConfig* cfg;
    const Model* m;
    GenSampler* s;
    int32_t stop[CHAT_MAX_STOPS];
    size_t n_stop, max_new;
    bool ignore_eos;
    Generator g;
    bool built;
    TokEncoder enc;
    Ints cached;                                         /* the tokens in the generator's cache, in order */
    size_t n_prompt, n_run, n_new, n_replies, n_stopped; /* statistics: n_run of the n_prompt tokens prefilled */
    double t_prefill, t_gen;
};
typedef struct GenChat Chat;

static void add_stop(Chat* c, int32_t id, const char* why) {
    if (id < 0 || (size_t)id >= c->cfg->V) return;
    for (size_t i = 0; i < c->n_stop; i++)
        if (c->stop[i] == id) return;
    if (c->n_stop == CHAT_MAX_STOPS) return;
    c->stop[c->n_stop++] = id;
    size_t n = 0;
    const uint8_t* b = tok_token_bytes(c->t, id, &n);
    fprintf(stderr, "%s %.*s (id %d, %s)", c->n_stop == 1 ? "generate: stops at" : ",", b ? (int)n : 0,
            b ? (const char*)b : "", (int)id, why);
}

/* eos_token_id of a JSON object: an id or a list of them */
static void add_eos_ids(Chat* c, const cJSON* root, const char* why) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
    if (cJSON_IsNumber(v)) add_stop(c, (int32_t)v->valuedouble, why);
    if (!cJSON_IsArray(v)) return;
    const cJSON* it;
    cJSON_ArrayForEach(it, v) {
        if (cJSON_IsNumber(it)) add_stop(c, (int32_t)it->valuedouble, why);
    }
}

/* the template's end of turn (the first added token after an assistant turn's text), the eos ids of
   generation_config.json and config.json, the tokenizer's end of text */
static void find_stops(Chat* c, const char* ckpt_dir) {
    char err[1024];
    char* end = chat_turn_end(&c->fmt, err, sizeof(err));
    CHECK(end, "%s: chat_template: %s", c->fmt.config_path, err);
    c->enc.n_ids = 0;
    tok_encode(&c->enc, (const uint8_t*)end, strlen(end));
    for (size_t i = 0; i < c->enc.n_ids; i++)
        if (tok_is_added(c->t, c->enc.ids[i])) {
            add_stop(c, c->enc.ids[i], "the template's end of turn");
            break;
        }
    if (!c->n_stop)
        fprintf(stderr, "generate: note: the template writes no special token after an assistant turn ('%s')\n", end);
    free(end);
    char path[4200];
    snprintf(path, sizeof(path), "%s/generation_config.json", ckpt_dir);
    char* text = file_read_all_or_null(path, NULL);
    cJSON* root = text ? cJSON_Parse(text) : NULL;
    CHECK(!text || root, "%s: not valid JSON", path);
    add_eos_ids(c, root, "generation_config.json");
    cJSON_Delete(root);
    free(text);
    root = c->cfg->hf_carried[0] ? cJSON_Parse(c->cfg->hf_carried) : NULL;
    add_eos_ids(c, root, "config.json");
    cJSON_Delete(root);
    add_stop(c, tok_eos(c->t), "the tokenizer's eos_token");
    CHECK(c->n_stop,
          "%s: no end-of-turn token: the template writes no special token after an assistant turn, and "
          "neither generation_config.json, config.json nor the tokenizer names an eos token",
          c->fmt.config_path);
    fprintf(stderr, "\n");
}

static bool is_stop(const Chat* c, int32_t id) {
    for (size_t i = 0; i < c->n_stop; i++)
        if (c->stop[i] == id) return true;
    return false;
}

/* room in the cache for need tokens: a new generator when the current one cannot grow to it */
static void make_room(Chat* c, size_t need) {
    if (c->built && need <= c->g.limit_T) return;
    if (c->built) gen_free(&c->g);
    size_t first = need < 1024 ? need : 1024;
    gen_build(&c->g, c->m, first, first < 512 ? first : 512);
    gen_allow_growth(&c->g, 2 * need);
    c->built = true;
    c->cached.n = 0;
}

/* prefill the ids of a rendering: the cached tokens it starts with are kept (gen_rewind), the rest run */
static const real* prefill(Chat* c, const int32_t* ids, size_t n) {
    make_room(c, n + c->max_new);
    size_t same = 0;
    while (same < c->cached.n && same + 1 < n && c->cached.v[same] == ids[same]) same++;
    if (!same || !gen_rewind(&c->g, same)) {
        gen_reset(&c->g);
        same = 0;
    }
    c->cached.n = same;
    c->n_run += n - same;
    for (size_t i = same; i < n; i++) ints_push(&c->cached, ids[i]);
    return gen_prefill(&c->g, ids + same, n - same);
}

/* Complete messages[0..n) with add_generation_prompt: the reply's text into *reply (malloc'd), streamed to out
   when not NULL */
static char* reply(Chat* c, const cJSON* messages, size_t n, FILE* out, const char* where) {
    char err[1024];
    size_t len = 0;
    char* text = chat_render_messages(&c->fmt, messages, n, true, &len, err, sizeof(err));
    CHECK(text, "%s: %s: chat_template: %s", where, c->fmt.config_path, err);
    c->enc.n_ids = 0;
    tok_encode(&c->enc, (const uint8_t*)text, len);
    free(text);
    CHECK(c->enc.n_ids > 0, "%s: the conversation renders to no tokens", where);
    double t0 = now_s();
    const real* logits = prefill(c, c->enc.ids, c->enc.n_ids);
    double t1 = now_s();
    c->n_prompt += c->enc.n_ids;
    uint8_t* buf = NULL;
    size_t blen = 0, cap = 0, n_new = 0;
    bool stopped = false;
    while (n_new < c->max_new) {
        int32_t id = gen_sampler_next(c->s, &c->g, logits);
        n_new++;
        stopped = is_stop(c, id) && !c->ignore_eos;
        if (stopped) break;
        size_t k = gen_token_text(c->t, id, &buf, &blen, &cap);
        if (out) {
            fwrite(buf + blen - k, 1, k, out);
            cli_flush_stdout();
        }
        if (n_new < c->max_new) {
            logits = gen_step(&c->g, id);
            ints_push(&c->cached, id);
        }
    }
    c->t_prefill += t1 - t0;
    c->t_gen += now_s() - t1;
    c->n_new += n_new;
    c->n_replies++;
    c->n_stopped += stopped;
    char* s = mallocCheck(blen + 1);
    if (blen) memcpy(s, buf, blen);
    s[blen] = 0;
    free(buf);
    return s;
}

static void add_turn(cJSON* list, const char* role, const char* content) {
    cJSON* m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    cJSON_AddStringToObject(m, "content", content);
    cJSON_AddItemToArray(list, m);
}

/* standard input: each line a user turn (a prompt on a terminal), each reply printed and kept */
static void interactive(Chat* c, cJSON* list) {
    bool tty = isatty(0);
    char* line = NULL;
    size_t cap = 0;
    for (;;) {
        if (tty) fprintf(stderr, "user> ");
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) break;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (!n) continue;
        add_turn(list, "user", line);
        char* r = reply(c, list, (size_t)cJSON_GetArraySize(list), stdout, "standard input");
        printf("\n");
        cli_flush_stdout();
        add_turn(list, "assistant", r);
        free(r);
    }
    free(line);
}

/* one line of --messages: the record with its reply as the last assistant turn, printed as one JSON line */
static void complete_record(Chat* c, char* line, const char* file, size_t lineno) {
    char where[4200], err[1024];
    snprintf(where, sizeof(where), "%s:%zu", file, lineno);
    const char* end = NULL;
    cJSON* o = cJSON_ParseWithOpts(line, &end, 0);
    CHECK(o, "%s: not valid JSON (byte column %zu)", where, (size_t)((end ? end : line) - line) + 1);
    char key[128];
    CHECK(!jsonl_nul_string(line, strlen(line), key, sizeof(key)), "%s: the string of \"%s\" holds \\u0000", where,
          key);
    cJSON* list = cJSON_GetObjectItemCaseSensitive(o, "messages");
    CHECK(cJSON_IsObject(o) && list,
          "%s: not a messages record: --messages takes one {\"messages\": [{\"role\", \"content\"}, ...]} object "
          "per line",
          where);
    chat_json_keep_numbers(o, line);
    size_t n = 0;
    CHECK(chat_check_messages(list, &n, err, sizeof(err)), "%s: %s", where, err);
    while (n > 0) { /* the trailing assistant turns are the part to generate */
        const cJSON* role = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, (int)n - 1), "role");
        if (strcmp(role->valuestring, "assistant")) break;
        cJSON_DeleteItemFromArray(list, (int)--n);
    }
    CHECK(n > 0, "%s: the conversation has only assistant turns: nothing to reply to", where);
    char* r = reply(c, list, n, NULL, where);
    add_turn(list, "assistant", r);
    free(r);
    char* json = cJSON_PrintUnformatted(o);
    CHECK(json, "out of memory");
    printf("%s\n", json);
    cli_flush_stdout();
    free(json);
    cJSON_Delete(o);
}

static void messages_file(Chat* c, const char* file) {
    bool std_in = !strcmp(file, "-");
    FILE* f = std_in ? stdin : fopenCheck(file, "rb");
    char* line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        CHECK(strlen(line) == (size_t)n, "%s:%zu: the line holds a NUL byte", file, lineno);
        if (!line[strspn(line, " \t\r\n")]) continue; /* blank lines are allowed */
        complete_record(c, line, std_in ? "standard input" : file, lineno);
    }
    CHECK(lineno > 0, "%s: empty: --messages takes one messages record per line", file);
    free(line);
    if (!std_in) fclose(f);
}

GenChat* gen_chat_open(const ChatSpec* spec, const ModelConfig* cfg, const Tokenizer* t) {
    Chat* c = callocCheck(1, sizeof(Chat));
    *c = (Chat){.spec = *spec, .t = t, .cfg = cfg, .max_new = spec->max_new, .ignore_eos = spec->ignore_eos};
    chat_format_load(&c->fmt, spec->tokenizer,
                     "build/generate --chat renders the conversation with the tokenizer's chat template (pass "
                     "--tokenizer a tokenizer directory that has one, or use --prompt with the text itself)");
    tok_encoder_init(&c->enc, t);
    find_stops(c, spec->ckpt_dir);
    return c;
}

void gen_chat_run(GenChat* c, const Model* m, GenSampler* s) {
    const ChatSpec* spec = &c->spec;
    c->m = m;
    c->s = s;
    cJSON* list = cJSON_CreateArray();
    for (size_t i = 0; i < spec->n_turns; i++) add_turn(list, spec->turns[i].role, spec->turns[i].content);
    if (spec->messages_file) {
        messages_file(c, spec->messages_file);
    } else if (spec->n_turns && !strcmp(spec->turns[spec->n_turns - 1].role, "user")) {
        free(reply(c, list, spec->n_turns, stdout, "the options"));
        printf("\n");
        cli_flush_stdout();
    } else {
        interactive(c, list);
    }
    fprintf(stderr,
            "generate: %zu repl%s: %zu prompt tokens (%zu run, the rest kept in the cache) in %.2f s; %zu new "
            "tokens in %.2f s: %.1f tok/s; %zu stopped at an end-of-turn token, %zu at --max-new-tokens\n",
            c->n_replies, c->n_replies == 1 ? "y" : "ies", c->n_prompt, c->n_run, c->t_prefill, c->n_new, c->t_gen,
            c->t_gen > 0 ? (double)c->n_new / c->t_gen : 0.0, c->n_stopped, c->n_replies - c->n_stopped);
    cJSON_Delete(list);
    free(c->cached.v);
    if (c->built) gen_free(&c->g);
    tok_encoder_free(&c->enc);
    chat_format_free(&c->fmt);
    free(c);
}
