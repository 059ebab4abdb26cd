/* Multiple choice: reading the records (field mapping, the checks that name file, line and field),
   the text rules of the harness (Python's rstrip and len), the pick of acc / acc_norm, and a file's
   run with its progress line and result (eval/mc.h). The model side is eval/mc_score.c. */
#include "eval/mc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/utf8.h"
#include "data/jsonl.h" /* jsonl_nul_string */

int mc_fields_parse(McFields* f, const char* spec, char* err, size_t err_len) {
    snprintf(f->context, MC_FIELD_LEN, "context");
    snprintf(f->choices, MC_FIELD_LEN, "choices");
    snprintf(f->label, MC_FIELD_LEN, "label");
    snprintf(f->id, MC_FIELD_LEN, "id");
    if (!spec) return 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec);
    char* save = NULL;
    for (char* part = strtok_r(buf, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        char* eq = strchr(part, '=');
        if (!eq || !eq[1] || strlen(eq + 1) >= MC_FIELD_LEN)
            return set_err(err, err_len, "--mc-fields: '%s' is not PART=FIELD (a field name of 1 to %d bytes)", part,
                           MC_FIELD_LEN - 1);
        *eq = 0;
        char* dst = !strcmp(part, "context")   ? f->context
                    : !strcmp(part, "choices") ? f->choices
                    : !strcmp(part, "label")   ? f->label
                    : !strcmp(part, "id")      ? f->id
                                               : NULL;
        if (!dst) return set_err(err, err_len, "--mc-fields: unknown part '%s' (context, choices, label, id)", part);
        snprintf(dst, MC_FIELD_LEN, "%s", eq + 1);
    }
    return 0;
}

/* v as a whole number in [lo, hi], else -1 */
static double whole_number(const cJSON* v, double lo, double hi) {
    bool ok =
        cJSON_IsNumber(v) && v->valuedouble >= lo && v->valuedouble <= hi && v->valuedouble == floor(v->valuedouble);
    return ok ? v->valuedouble : -1;
}

/* "mc": a list of 1 to MC_MAX_FILES file names, no two of one task name */
static int plan_files(McPlan* p, const cJSON* v, const char* key, char* err, size_t err_len) {
    size_t n = cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0;
    if (n == 0 || n > MC_MAX_FILES)
        return set_err(err, err_len, "%s.mc: expected a list of 1 to %d JSON Lines files", key, MC_MAX_FILES);
    p->n_files = 0;
    for (const cJSON* e = v->child; e; e = e->next) {
        if (!cJSON_IsString(e) || !e->valuestring[0])
            return set_err(err, err_len, "%s.mc[%zu]: expected a file name", key, p->n_files);
        char a[128], b[128];
        mc_name(a, sizeof a, e->valuestring);
        for (size_t j = 0; j < p->n_files; j++) {
            mc_name(b, sizeof b, p->files[j]);
            if (!strcmp(a, b))
                return set_err(err, err_len, "%s.mc: '%s' and '%s' both have the name '%s'", key, p->files[j],
                               e->valuestring, a);
        }
        p->files[p->n_files++] = e->valuestring;
    }
    return 0;
}

int mc_plan_key(McPlan* p, const cJSON* v, const char* key, char* err, size_t err_len) {
    const char* k = v->string;
    if (!strcmp(k, "mc")) return plan_files(p, v, key, err, err_len);
    if (!strcmp(k, "mc_fields")) {
        McFields f = {.context = ""};
        char e[256];
        if (!cJSON_IsString(v))
            return set_err(err, err_len, "%s.mc_fields: expected a string such as \"context=ctx,choices=endings\"",
                           key);
        if (mc_fields_parse(&f, v->valuestring, e, sizeof e)) return set_err(err, err_len, "%s.mc_fields: %s", key, e);
        p->fields = v->valuestring;
    } else if (!strcmp(k, "mc_delimiter")) {
        if (!cJSON_IsString(v)) return set_err(err, err_len, "%s.mc_delimiter: expected a string", key);
        p->delimiter = v->valuestring;
    } else if (!strcmp(k, "mc_limit") || !strcmp(k, "mc_window")) {
        bool limit = k[3] == 'l';
        double x = whole_number(v, limit ? 1 : 2, 1e15);
        if (x < 0) return set_err(err, err_len, "%s.%s: expected an integer >= %d", key, k, limit ? 1 : 2);
        if (limit) p->limit = (size_t)x;
        else p->window = (size_t)x;
    } else {
        return -1;
    }
    return 0;
}

/* o's member at a dotted path ("question.stem"), or NULL */
static const cJSON* at_path(const cJSON* o, const char* path) {
    char buf[MC_FIELD_LEN];
    snprintf(buf, sizeof buf, "%s", path);
    char* save = NULL;
    for (char* k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
        o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    return o;
}

static void read_choices(McRecord* r, const cJSON* o, const char* spec, const char* file, size_t line) {
    r->n_choices = 0;
    if (strchr(spec, '+')) { /* one field per choice */
        char buf[MC_FIELD_LEN];
        snprintf(buf, sizeof buf, "%s", spec);
        char* save = NULL;
        for (char* k = strtok_r(buf, "+", &save); k; k = strtok_r(NULL, "+", &save)) {
            const cJSON* c = at_path(o, k);
            CHECK(c, "%s:%zu: no field \"%s\" (a choice of --mc-fields choices=%s)", file, line, k, spec);
            CHECK(cJSON_IsString(c), "%s:%zu: \"%s\" is not a string (a choice)", file, line, k);
            CHECK(r->n_choices < MC_MAX_CHOICES, "%s:%zu: more than %d choices", file, line, MC_MAX_CHOICES);
            r->choice[r->n_choices++] = c->valuestring;
        }
    } else {
        const cJSON* list = at_path(o, spec);
        CHECK(list, "%s:%zu: no field \"%s\" (the choices; map another with --mc-fields choices=NAME)", file, line,
              spec);
        CHECK(cJSON_IsArray(list) && list->child, "%s:%zu: \"%s\" is not a non-empty list of strings (the choices)",
              file, line, spec);
        size_t k = 0;
        for (const cJSON* c = list->child; c; c = c->next, k++) {
            CHECK(cJSON_IsString(c), "%s:%zu: \"%s\"[%zu] is not a string", file, line, spec, k);
            CHECK(k < MC_MAX_CHOICES, "%s:%zu: \"%s\" has more than %d choices", file, line, spec, MC_MAX_CHOICES);
            r->choice[r->n_choices++] = c->valuestring;
        }
    }
    for (size_t k = 0; k < r->n_choices; k++)
        CHECK(r->choice[k][0], "%s:%zu: choice %zu (\"%s\") is empty: it has no tokens to score", file, line, k, spec);
}

void mc_record(McRecord* r, const cJSON* o, const McFields* f, const char* file, size_t line) {
    memset(r, 0, sizeof(*r));
    const cJSON* ctx = at_path(o, f->context);
    CHECK(ctx, "%s:%zu: no field \"%s\" (the context; map another with --mc-fields context=NAME)", file, line,
          f->context);
    CHECK(cJSON_IsString(ctx), "%s:%zu: \"%s\" is not a string (the context)", file, line, f->context);
    size_t n = strlen(ctx->valuestring);
    CHECK(mc_rstrip_len(ctx->valuestring, n) > 0, "%s:%zu: \"%s\" is empty%s (the context)", file, line, f->context,
          n ? " but for whitespace" : "");
    r->context = ctx->valuestring;
    read_choices(r, o, f->choices, file, line);
    const cJSON* lab = at_path(o, f->label);
    CHECK(lab, "%s:%zu: no field \"%s\" (the label; map another with --mc-fields label=NAME)", file, line, f->label);
    double v = -1;
    if (cJSON_IsNumber(lab)) v = lab->valuedouble;
    else if (cJSON_IsString(lab) && lab->valuestring[0] && strlen(lab->valuestring) < 10 &&
             strspn(lab->valuestring, "0123456789") == strlen(lab->valuestring))
        v = atof(lab->valuestring); /* HellaSwag's exports write "2" */
    CHECK(v >= 0 && v == floor(v) && v < (double)r->n_choices,
          "%s:%zu: \"%s\" is not a choice index in [0, %zu) (an integer, or a string of digits)", file, line, f->label,
          r->n_choices);
    r->label = (size_t)v;
    r->id = at_path(o, f->id);
}

size_t mc_pick(const double* ll, const double* chars, size_t n, bool norm) {
    size_t best = 0;
    for (size_t i = 1; i < n; i++) {
        double x = norm ? ll[i] / chars[i] : ll[i], y = norm ? ll[best] / chars[best] : ll[best];
        if (x > y) best = i;
    }
    return best;
}

/* Python's str.isspace for one code point */
static bool py_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

size_t mc_rstrip_len(const char* s, size_t n) {
    const uint8_t* u = (const uint8_t*)s;
    while (n > 0) {
        size_t b = n - 1; /* the start of the last code point: back over continuation bytes */
        while (b > 0 && n - b < 4 && (u[b] & 0xC0) == 0x80) b--;
        uint32_t cp;
        size_t len = utf8_decode(u + b, n - b, &cp);
        if (len != n - b) return n; /* not a whole valid sequence: an invalid byte is no space */
        if (!py_space(cp)) return n;
        n = b;
    }
    return 0;
}

size_t mc_code_points(const char* s, size_t n) {
    size_t count = 0;
    for (size_t i = 0; i < n; count++) {
        uint32_t cp;
        size_t len = utf8_decode((const uint8_t*)s + i, n - i, &cp);
        i += len ? len : 1;
    }
    return count;
}

void mc_name(char* name, size_t len, const char* file) {
    const char* base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strlen(base);
    if (n > 6 && !strcmp(base + n - 6, ".jsonl")) n -= 6;
    snprintf(name, len, "%.*s", (int)n, base);
}

/* Reads file line by line (any length, any count): the next record as JSON, or NULL at the end */
typedef struct {
    FILE* fp;
    const char* file;
    char* buf;
    size_t cap, line;
} LineReader;

static cJSON* next_record(LineReader* lr) {
    ssize_t got;
    while ((got = getline(&lr->buf, &lr->cap, lr->fp)) >= 0) {
        lr->line++;
        char* c = lr->buf;
        while (*c == ' ' || *c == '\t' || *c == '\r' || *c == '\n') c++;
        if (!*c) continue; /* blank lines are allowed */
        const char* end = NULL;
        cJSON* o = cJSON_ParseWithOpts(c, &end, 0);
        CHECK(o, "%s:%zu: not valid JSON (byte column %zu)", lr->file, lr->line,
              (size_t)((end ? end : c) - lr->buf) + 1);
        CHECK(cJSON_IsObject(o), "%s:%zu: expected a JSON object", lr->file, lr->line);
        char key[128];
        CHECK(!jsonl_nul_string(c, (size_t)got - (size_t)(c - lr->buf), key, sizeof key),
              "%s:%zu: the string of \"%s\" holds \\u0000, which would cut the text there", lr->file, lr->line, key);
        end += strspn(end, " \t\r\n");
        CHECK(!*end, "%s:%zu: byte column %zu: more after the JSON object (one object per line)", lr->file, lr->line,
              (size_t)(end - lr->buf) + 1);
        return o;
    }
    CHECK(!ferror(lr->fp), "%s: read error after line %zu", lr->file, lr->line);
    return NULL;
}

static void reader_open(LineReader* lr, const char* file) {
    memset(lr, 0, sizeof(*lr));
    lr->file = file;
    lr->fp = fopenCheck(file, "rb");
}

size_t mc_read_file(const char* file, const McFields* f, size_t first, McRecordFn fn, void* arg) {
    LineReader lr;
    reader_open(&lr, file);
    size_t n = 0;
    for (cJSON* o; (!first || n < first) && (o = next_record(&lr)); n++) {
        McRecord r;
        mc_record(&r, o, f, file, lr.line);
        if (fn) fn(arg, &r, lr.line);
        cJSON_Delete(o);
    }
    fclose(lr.fp);
    free(lr.buf);
    return n;
}

size_t mc_check_file(const char* file, const McFields* f, size_t limit) {
    size_t n = mc_read_file(file, f, 0, NULL, NULL);
    CHECK(n > 0, "%s: no items (every line is blank)", file);
    return limit && limit < n ? limit : n;
}

void mc_tally(McResult* r, const McItem* it, size_t n_choices, size_t label, bool* acc, bool* acc_norm) {
    bool a = mc_pick(it->ll, it->chars, n_choices, false) == label;
    bool an = mc_pick(it->ll, it->chars, n_choices, true) == label;
    r->n_acc += a;
    r->n_acc_norm += an;
    if (acc) *acc = a;
    if (acc_norm) *acc_norm = an;
}

void mc_result_close(McResult* r, size_t n, double t0) {
    r->n = n;
    r->seconds = now_s() - t0;
    r->acc = (double)r->n_acc / (double)n;
    r->acc_norm = (double)r->n_acc_norm / (double)n;
    r->acc_stderr = stats_stderr_prop(r->n_acc, n);
    r->acc_norm_stderr = stats_stderr_prop(r->n_acc_norm, n);
    r->acc_ci = stats_wilson(r->n_acc, n);
    r->acc_norm_ci = stats_wilson(r->n_acc_norm, n);
}
