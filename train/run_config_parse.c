/* Applying JSON values to the fields of the run config's key table
   (run_config_keys.h): type and range checks, lists, per-layer modes,
   lr_mult, data.synthetic, `--set a.b.c=value` paths, and the messages, which
   name the key path, what was expected and what was found; an unknown key
   gets the nearest valid one (edit distance over names and common aliases). */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h" /* CHECK, mallocCheck */
#include "data/mixture.h" /* mixture_given, mixture_parse: data.train / data.val as sources */
#include "train/run_config_parse.h"

static const char* base_name(const RcKey* k) {
    const char* dot = strrchr(k->path, '.');
    return dot ? dot + 1 : k->path;
}

/* is k directly under parent ("" = the top level)? */
static bool is_child(const RcKey* k, const char* parent) {
    size_t n = strlen(parent);
    if (n && (strncmp(k->path, parent, n) || k->path[n] != '.')) return false;
    return !strchr(k->path + (n ? n + 1 : 0), '.');
}

static void join(char* out, size_t n, const char* parent, const char* name) {
    snprintf(out, n, "%s%s%s", parent, *parent ? "." : "", name);
}

/* Levenshtein distance, case-insensitive (99 for words over 63 characters) */
static size_t lev(const char* a, const char* b) {
    size_t na = strlen(a), nb = strlen(b), row[64];
    if (na > 63 || nb > 63) return 99;
    for (size_t j = 0; j <= nb; j++) row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j], cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
            row[j] = diag + cost < best ? diag + cost : best;
            diag = up;
        }
    }
    return row[nb];
}

/* Index of word in "a|b|c" (-1 if absent). With dist != NULL: instead the
   index of the nearest entry, its distance in *dist. */
static int word_index(const char* list, const char* word, size_t* dist) {
    int best = -1, i = 0;
    size_t best_d = 1000;
    for (const char* p = list; p && *p; i++) {
        const char* bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        char w[64];
        snprintf(w, sizeof(w), "%.*s", (int)n, p);
        size_t d = lev(word, w);
        if (!dist && !strcmp(w, word)) return i;
        if (dist && d < best_d) {
            best_d = d;
            best = i;
        }
        p = bar ? bar + 1 : NULL;
    }
    if (dist) *dist = best_d;
    return dist ? best : -1;
}

/* close enough to suggest: a few edits, and at most half the word */
static bool near(const char* word, size_t d) { return d <= 3 && 2 * d <= strlen(word) + 1; }

/* The key nearest to name under parent (by its name or an alias), else a key
   anywhere with exactly that name or alias; NULL when nothing is close. */
static const RcKey* suggest_key(const char* parent, const char* name) {
    const RcKey* best = NULL;
    size_t best_d = 1000, d;
    for (size_t i = 0; i < RC_N_KEYS; i++) {
        if (!is_child(&RC_KEYS[i], parent)) continue;
        size_t dn = lev(name, base_name(&RC_KEYS[i]));
        if (RC_KEYS[i].aliases && (word_index(RC_KEYS[i].aliases, name, &d), d < dn)) dn = d;
        if (dn < best_d) {
            best_d = dn;
            best = &RC_KEYS[i];
        }
    }
    if (best && near(name, best_d)) return best;
    for (size_t i = 0; i < RC_N_KEYS; i++) {
        const RcKey* k = &RC_KEYS[i];
        if (!strcmp(base_name(k), name) || (k->aliases && word_index(k->aliases, name, NULL) >= 0)) return k;
    }
    return NULL;
}

/* the --set argument that gave path (or the key above it, for entries of
   lr_mult and data.synthetic), NULL when it came from the file */
static const char* set_arg_of(const RunConfig* rc, const char* path) {
    char prefix[RC_PATH_LEN];
    snprintf(prefix, sizeof(prefix), "%s", path);
    for (;;) {
        const RcKey* k = rc_find_key(prefix);
        if (k) return rc->set_arg[k - RC_KEYS];
        char* dot = strrchr(prefix, '.');
        if (!dot) return NULL;
        *dot = 0;
    }
}

/* "<src>: <path>: <message>", where src is "--set <argument>" when one gave path; returns -1 */
int rc_fail(RcCtx* c, const char* path, const char* fmt, ...) {
    if (!c->err || !c->len) return -1;
    const RunConfig* rc = c->rc ? c->rc : c->read;
    const char* arg = c->by_key && rc && path ? set_arg_of(rc, path) : NULL;
    int n = arg ? snprintf(c->err, c->len, "--set %s: %s: ", arg, path)
                : snprintf(c->err, c->len, "%s%s%s%s", c->src ? c->src : "", c->src ? ": " : "", path ? path : "",
                           path ? ": " : "");
    if (n >= 0 && (size_t)n < c->len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->len - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int rc_fail_keyed(RcCtx* c, const char* msg) {
    const char* rest = strstr(msg, ": ");
    char at[RC_PATH_LEN];
    snprintf(at, sizeof(at), "%.*s", rest ? (int)(rest - msg) : 0, msg);
    return rest ? rc_fail(c, at, "%s", rest + 2) : rc_fail(c, NULL, "%s", msg);
}

/* a JSON value as short text for messages */
static void describe(const cJSON* v, char* out, size_t n) {
    char* s = cJSON_PrintUnformatted(v);
    if (!s) snprintf(out, n, "(unprintable)");
    else if (strlen(s) > 60) snprintf(out, n, "%.57s...", s);
    else snprintf(out, n, "%s", s);
    cJSON_free(s);
}

static int unknown_key(RcCtx* c, const char* parent, const char* name) {
    char path[RC_PATH_LEN], valid[512] = "";
    join(path, sizeof(path), parent, name);
    const RcKey* s = suggest_key(parent, name);
    if (s) return rc_fail(c, path, "unknown key (did you mean %s?)", s->path);
    for (size_t i = 0; i < RC_N_KEYS; i++)
        if (is_child(&RC_KEYS[i], parent))
            snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), " %s", base_name(&RC_KEYS[i]));
    return rc_fail(c, path, "unknown key (valid here:%s)", valid);
}

static int type_error(RcCtx* c, const RcKey* k, const char* path, const cJSON* v) {
    char got[80], what[160];
    describe(v, got, sizeof(got));
    switch (k->type) {
    case KT_OBJ:
    case KT_RAW: snprintf(what, sizeof(what), "an object"); break;
    case KT_STR: snprintf(what, sizeof(what), "a string"); break;
    case KT_WORD:
    case KT_ENUM: snprintf(what, sizeof(what), "one of %s", k->choices); break;
    case KT_BOOL: snprintf(what, sizeof(what), "true or false"); break;
    case KT_SIZE:
    case KT_U64: snprintf(what, sizeof(what), "an integer"); break;
    case KT_REAL: snprintf(what, sizeof(what), "a number"); break;
    case KT_LIST:
        snprintf(what, sizeof(what), "a list of strings%s",
                 strncmp(k->path, "data.", 5) ? "" : " or of sources {\"name\", \"files\", \"weight\"}");
        break;
    case KT_LAYERS: snprintf(what, sizeof(what), "a list of %s", k->choices); break;
    case KT_LRMULT: snprintf(what, sizeof(what), "an object of pattern: multiplier"); break;
    }
    return rc_fail(c, path, "expected %s%s, got %s", what, k->flags & KF_NULL ? " or null" : "", got);
}

/* a word of `choices`, or an error naming them and the nearest one */
static int check_word(RcCtx* c, const char* path, const char* choices, const cJSON* v, int* index) {
    char got[80], sug[96] = "", w[64];
    if (cJSON_IsString(v) && (*index = word_index(choices, v->valuestring, NULL)) >= 0) return 0;
    size_t d;
    int i = cJSON_IsString(v) ? word_index(choices, v->valuestring, &d) : -1;
    if (i >= 0 && near(v->valuestring, d))
        snprintf(sug, sizeof(sug), " (did you mean %s?)", rc_word(choices, i, w, sizeof(w)));
    describe(v, got, sizeof(got));
    return rc_fail(c, path, "expected one of %s, got %s%s", choices, got, sug);
}

/* a string that fits cap (and is not empty when it must not be) */
static int check_string(RcCtx* c, const char* path, const cJSON* v, size_t cap, bool nonempty) {
    if (strlen(v->valuestring) >= cap)
        return rc_fail(c, path, "longer than %zu characters: \"%.40s...\"", cap - 1, v->valuestring);
    if (nonempty && !v->valuestring[0]) return rc_fail(c, path, "expected a non-empty string, got \"\"");
    return 0;
}

/* a name pattern: "repo" (lr_mult only) or an fnmatch pattern over HF tensor names */
static int check_pattern(RcCtx* c, const char* path, const char* pat, bool allow_repo) {
    if ((allow_repo && !strcmp(pat, "repo")) || strpbrk(pat, ".*?[")) {
        if (strlen(pat) < TENSOR_NAME_LEN) return 0;
        return rc_fail(c, path, "pattern longer than %d characters", TENSOR_NAME_LEN - 1);
    }
    return rc_fail(c, path,
                   "expected %sa pattern over Hugging Face tensor names (such as model.layers.*.mlp.*), "
                   "got \"%s\"%s",
                   allow_repo ? "\"repo\" or " : "", pat,
                   allow_repo && near(pat, lev(pat, "repo")) ? " (did you mean repo?)" : "");
}

/* ---- applying one JSON value to one key ---- */
static void mark_set(RunConfig* rc, const RcKey* k) { /* the key and every section above it */
    char prefix[RC_PATH_LEN];
    snprintf(prefix, sizeof(prefix), "%s", k->path);
    for (;;) {
        const RcKey* p = rc_find_key(prefix);
        if (p) rc->set[p - RC_KEYS] = true;
        char* dot = strrchr(prefix, '.');
        if (!dot) return;
        *dot = 0;
    }
}

static int number(RcCtx* c, const RcKey* k, const char* path, const cJSON* v, double* out) {
    char got[80], range[96];
    if (!cJSON_IsNumber(v)) return type_error(c, k, path, v);
    double x = v->valuedouble;
    describe(v, got, sizeof(got));
    bool integral = k->type == KT_SIZE || k->type == KT_U64;
    if (!isfinite(x)) return rc_fail(c, path, "expected a finite number"); /* cJSON reads 1e999 as inf */
    if (integral && x != floor(x)) return type_error(c, k, path, v);
    bool lo_ok = k->flags & KF_LO_OPEN ? x > k->lo : x >= k->lo;
    bool hi_ok = k->flags & KF_HI_OPEN ? x < k->hi : x <= k->hi;
    if (lo_ok && hi_ok) return *out = x, 0;
    if (integral && k->hi >= BIG)
        snprintf(range, sizeof(range),
                 k->lo == 0   ? "a non-negative integer"
                 : k->lo == 1 ? "a positive integer"
                              : "an integer >= %.0f",
                 k->lo);
    else if (integral) snprintf(range, sizeof(range), "an integer in [%.0f, %.0f]", k->lo, k->hi);
    else if (isinf(k->hi)) snprintf(range, sizeof(range), "a number %s %g", k->flags & KF_LO_OPEN ? ">" : ">=", k->lo);
    else
        snprintf(range, sizeof(range), "a number in %c%g, %g%c", k->flags & KF_LO_OPEN ? '(' : '[', k->lo, k->hi,
                 k->flags & KF_HI_OPEN ? ')' : ']');
    return rc_fail(c, path, "expected %s, got %s", range, got);
}

/* a member named like an earlier one of the same object is an error */
static int duplicate(RcCtx* c, const char* parent, const cJSON* obj, const cJSON* it) {
    char path[RC_PATH_LEN];
    for (const cJSON* prev = obj->child; prev != it; prev = prev->next) {
        if (strcmp(prev->string, it->string)) continue;
        join(path, sizeof(path), parent, it->string);
        return rc_fail(c, path, "duplicate key");
    }
    return 0;
}

/* model.positions.layers: the n modes of list (NULL: none), the layers after them rope (model_config_default) */
static void set_layers(RunConfig* rc, const PosMode* list, size_t n) {
    for (size_t l = 0; l < MAX_LAYERS; l++) rc->model.cfg.pos[l] = l < n ? list[l] : POS_ROPE;
    rc->model.positions.n_layers_list = n;
}

/* null for a key that accepts it: its "absent" value */
static int apply_null(RcCtx* c, const RcKey* k, void* f) {
    switch (k->type) {
    case KT_STR: *(char*)f = 0; break;
    case KT_SIZE: *(size_t*)f = RC_UNSET; break;
    case KT_REAL: *(double*)f = 0; break;
    case KT_LAYERS: set_layers(c->rc, NULL, 0); break;
    case KT_RAW: cJSON_Delete(*(cJSON**)f), *(cJSON**)f = NULL; break;
    case KT_OBJ: { /* a nullable section: each of its keys goes back to its default */
        RunConfig* d = mallocCheck(sizeof(*d));
        run_config_defaults(d);
        size_t n = strlen(k->path);
        for (size_t i = 0; i < RC_N_KEYS; i++) {
            const RcKey* e = &RC_KEYS[i];
            if (strncmp(e->path, k->path, n) || e->path[n] != '.') continue;
            memcpy((char*)c->rc + e->off, (char*)d + e->off, rc_field_size(e));
        }
        free(d);
        break;
    }
    default: break;
    }
    return 0;
}

/* data.train / data.val in the mixture form: checked here (so the message names the config file), kept as JSON */
static int apply_sources(RcCtx* c, const char* path, const cJSON* v, RcList* out) {
    cJSON** keep = out == &c->rc->data.train ? &c->rc->data.train_sources : &c->rc->data.val_sources;
    Mixture mx;
    char err[512];
    int bad = mixture_parse(&mx, v, path, err, sizeof(err));
    mixture_close(&mx);
    if (bad) return rc_fail_keyed(c, err);
    cJSON_Delete(*keep);
    *keep = cJSON_Duplicate(v, 1);
    CHECK(*keep, "out of memory copying %s", path);
    out->n = 0;
    return 0;
}

static int apply_list(RcCtx* c, const RcKey* k, const char* path, const cJSON* v, RcList* out) {
    char ep[RC_PATH_LEN + 16], got[80];
    bool data_list = out == &c->rc->data.train || out == &c->rc->data.val;
    if (data_list && mixture_given(v)) return apply_sources(c, path, v, out);
    if (data_list) { /* a list of files replaces the sources */
        cJSON** keep = out == &c->rc->data.train ? &c->rc->data.train_sources : &c->rc->data.val_sources;
        cJSON_Delete(*keep);
        *keep = NULL;
    }
    bool one = cJSON_IsString(v);
    if (!one && !cJSON_IsArray(v)) return type_error(c, k, path, v);
    size_t n = one ? 1 : (size_t)cJSON_GetArraySize(v), i = 0;
    if (n > RC_LIST_MAX) return rc_fail(c, path, "at most %d entries, got %zu", RC_LIST_MAX, n);
    for (const cJSON* e = one ? v : v->child; i < n; e = e->next, i++) {
        snprintf(ep, sizeof(ep), "%s[%zu]", path, i);
        if (!cJSON_IsString(e)) {
            describe(e, got, sizeof(got));
            return rc_fail(c, ep, "expected a string, got %s", got);
        }
        if (check_string(c, ep, e, (size_t)k->hi, true)) return -1;
        if ((k->flags & KF_PATTERN) && check_pattern(c, ep, e->valuestring, false)) return -1;
        strcpy(out->v[i], e->valuestring);
    }
    out->n = n;
    return 0;
}

static int apply_layers(RcCtx* c, const RcKey* k, const char* path, const cJSON* v) {
    char ep[RC_PATH_LEN + 16];
    int mode;
    PosMode list[MAX_LAYERS];
    if (!cJSON_IsArray(v)) return type_error(c, k, path, v);
    size_t n = (size_t)cJSON_GetArraySize(v), i = 0;
    if (n < 1 || n > MAX_LAYERS) return rc_fail(c, path, "expected 1 to %d entries, got %zu", MAX_LAYERS, n);
    for (const cJSON* e = v->child; e; e = e->next, i++) {
        snprintf(ep, sizeof(ep), "%s[%zu]", path, i);
        if (check_word(c, ep, k->choices, e, &mode)) return -1;
        CHECK(pos_mode_parse(e->valuestring, &list[i]), "'%s' not a PosMode", e->valuestring);
    }
    set_layers(c->rc, list, n);
    return 0;
}

/* one lr_mult entry: replaces the pattern's multiplier, or appends it */
static int lr_mult_set(RcCtx* c, const char* pattern, const cJSON* v) {
    RcLrMult* m = &c->rc->optim.lr_mult;
    char path[RC_PATH_LEN + TENSOR_NAME_LEN];
    static const RcKey mult = {"optim.lr_mult.*", KT_REAL, 0, 0, HUGE_VAL, 0, NULL, NULL}; /* its range */
    double x = 0;
    join(path, sizeof(path), "optim.lr_mult", pattern);
    if (check_pattern(c, path, pattern, true) || number(c, &mult, path, v, &x)) return -1;
    size_t i = 0;
    while (i < m->n && strcmp(m->v[i].pattern, pattern)) i++;
    if (i == RC_LIST_MAX) return rc_fail(c, path, "at most %d lr_mult entries", RC_LIST_MAX);
    if (i == m->n) strcpy(m->v[m->n++].pattern, pattern);
    m->v[i].mult = x;
    return 0;
}

static int apply(RcCtx* c, const RcKey* k, const cJSON* v) {
    const char* path = k->path;
    void* f = (char*)c->rc + k->off;
    double x = 0;
    int idx;
    mark_set(c->rc, k);
    if (cJSON_IsNull(v)) return k->flags & KF_NULL ? apply_null(c, k, f) : type_error(c, k, path, v);
    switch (k->type) {
    case KT_OBJ: return cJSON_IsObject(v) ? rc_apply_object(c, k->path, v) : type_error(c, k, path, v);
    case KT_STR:
        if (!cJSON_IsString(v)) return type_error(c, k, path, v);
        if (check_string(c, path, v, (size_t)k->hi, k->flags & KF_NONEMPTY)) return -1;
        strcpy(f, v->valuestring);
        return 0;
    case KT_WORD:
        if (check_word(c, path, k->choices, v, &idx)) return -1;
        strcpy(f, v->valuestring);
        return 0;
    case KT_ENUM:
        if (check_word(c, path, k->choices, v, &idx)) return -1;
        *(int*)f = idx;
        return 0;
    case KT_BOOL:
        if (!cJSON_IsBool(v)) return type_error(c, k, path, v);
        *(bool*)f = cJSON_IsTrue(v);
        return 0;
    case KT_SIZE:
    case KT_U64:
    case KT_REAL:
        if (number(c, k, path, v, &x)) return -1;
        if (k->type == KT_SIZE) *(size_t*)f = (size_t)x;
        else if (k->type == KT_U64) *(uint64_t*)f = (uint64_t)x;
        else *(double*)f = x;
        return 0;
    case KT_LIST: return apply_list(c, k, path, v, f);
    case KT_LAYERS: return apply_layers(c, k, path, v);
    case KT_LRMULT:
        if (!cJSON_IsObject(v)) return type_error(c, k, path, v);
        c->rc->optim.lr_mult.n = 0; /* the object given is the whole map */
        for (const cJSON* e = v->child; e; e = e->next)
            if (duplicate(c, path, v, e) || lr_mult_set(c, e->string, e)) return -1;
        return 0;
    case KT_RAW:
        if (!cJSON_IsObject(v)) return type_error(c, k, path, v);
        cJSON_Delete(*(cJSON**)f);
        *(cJSON**)f = cJSON_Duplicate(v, 1);
        CHECK(*(cJSON**)f, "out of memory copying %s", path);
        return 0;
    }
    return 0;
}

int rc_apply_object(RcCtx* c, const char* parent, const cJSON* obj) {
    char path[RC_PATH_LEN];
    for (const cJSON* it = obj->child; it; it = it->next) {
        join(path, sizeof(path), parent, it->string);
        if (duplicate(c, parent, obj, it)) return -1;
        const RcKey* k = rc_find_key(path);
        if (k && strchr(it->string, '.')) return rc_fail(c, path, "a dotted key: write it as nested objects");
        if (!k) return unknown_key(c, parent, it->string);
        if (apply(c, k, it)) return -1;
    }
    return 0;
}

/* <raw key>.<a.b.c> = v (data.synthetic, train.eval_tasks), making the objects on the way */
static int raw_set(RcCtx* c, const RcKey* k, const char* rest, const cJSON* v) {
    char path[RC_PATH_LEN + 16], buf[RC_PATH_LEN];
    snprintf(path, sizeof(path), "%s.%s", k->path, rest);
    snprintf(buf, sizeof(buf), "%s", rest);
    cJSON** field = (cJSON**)((char*)c->rc + k->off);
    if (!*field) *field = cJSON_CreateObject();
    cJSON* obj = *field;
    char* name = buf;
    for (char* dot; obj && (dot = strchr(name, '.')) != NULL; name = dot + 1) {
        *dot = 0;
        if (!*name) return rc_fail(c, path, "empty key");
        cJSON* sub = cJSON_GetObjectItemCaseSensitive(obj, name);
        if (!sub) sub = cJSON_AddObjectToObject(obj, name);
        else if (!cJSON_IsObject(sub)) return rc_fail(c, path, "'%s' is not an object", name);
        obj = sub;
    }
    if (!*name) return rc_fail(c, path, "empty key");
    cJSON* copy = cJSON_Duplicate(v, 1);
    CHECK(obj && copy, "out of memory setting %s", path);
    if (cJSON_GetObjectItemCaseSensitive(obj, name)) cJSON_ReplaceItemInObjectCaseSensitive(obj, name, copy);
    else cJSON_AddItemToObject(obj, name, copy);
    return 0;
}

int rc_apply_override(RcCtx* c, const char* text) {
    char path[RC_PATH_LEN], cur[RC_PATH_LEN], name[RC_PATH_LEN];
    const char* eq = strchr(text, '=');
    if (!eq || eq == text || (size_t)(eq - text) >= sizeof(path))
        return rc_fail(c, NULL, "expected key.path=value"); /* c->src names the argument */
    snprintf(path, sizeof(path), "%.*s", (int)(eq - text), text);

    /* walk the sections; lr_mult and data.synthetic take the rest of the path as their own key */
    const RcKey* k = NULL;
    const char* rest = path;
    while (rest) {
        const char* dot = strchr(rest, '.');
        size_t n = dot ? (size_t)(dot - rest) : strlen(rest);
        snprintf(name, sizeof(name), "%.*s", (int)n, rest);
        snprintf(cur, sizeof(cur), "%.*s", (int)(rest - path + n), path); /* the path up to name */
        if (!name[0] || !(k = rc_find_key(cur))) {
            snprintf(cur, sizeof(cur), "%.*s", (int)(rest == path ? 0 : rest - path - 1), path);
            return unknown_key(c, cur, name);
        }
        rest = dot ? dot + 1 : NULL;
        if (rest && (k->type == KT_LRMULT || k->type == KT_RAW)) break;
        if (rest && k->type != KT_OBJ) return rc_fail(c, cur, "is not an object: cannot set %s", path);
    }

    /* the value: JSON when it parses; else (or, for a key of strings, a number or a bool) the text itself */
    const char* val = eq + 1;
    cJSON* v = cJSON_ParseWithOpts(val, NULL, 1);
    bool text_key = !rest && (k->type == KT_STR || k->type == KT_WORD || k->type == KT_LIST);
    if (!v || (text_key && (cJSON_IsNumber(v) || cJSON_IsBool(v)))) {
        cJSON_Delete(v);
        v = cJSON_CreateString(val);
        CHECK(v, "out of memory parsing --set %s", text);
    }
    int r;
    if (!rest) {
        r = apply(c, k, v);
    } else { /* an entry of lr_mult or data.synthetic */
        mark_set(c->rc, k);
        r = k->type == KT_LRMULT ? lr_mult_set(c, rest, v) : raw_set(c, k, rest, v);
    }
    cJSON_Delete(v);
    if (r == 0) c->rc->set_arg[k - RC_KEYS] = text; /* later messages about this key name the argument */
    return r;
}
