/* build/eval --compare: paired differences of two eval JSON files, item by item (eval/eval_compare.h). */
#include "eval/eval_compare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "eval/mc.h"
#include "eval/stats.h"

#define COMPARE_VERSION 1
#define ID_LEN 128

typedef struct {
    char id[ID_LEN];
    double score;
    double label; /* mc items: the label, checked against the other file's; else NAN */
} ItemScore;

typedef struct {
    char key[192]; /* "mc/NAME", "mc/NAME/acc_norm", "ruler/TASK/LENGTH", "family@length" */
    ItemScore* it; /* (n), sorted by id */
    size_t n;
} TaskScores;

typedef struct {
    const char* path;
    cJSON* root;
    TaskScores* t;
    size_t n, cap;
} ScoreFile;

static TaskScores* add_task(ScoreFile* f, const char* key, size_t n) {
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->t = realloc(f->t, f->cap * sizeof(TaskScores));
        CHECK(f->t, "eval --compare: out of memory");
    }
    TaskScores* t = &f->t[f->n++];
    snprintf(t->key, sizeof(t->key), "%s", key);
    t->it = callocCheck(n, sizeof(ItemScore));
    t->n = n;
    return t;
}

static const cJSON* member(const ScoreFile* f, const cJSON* o, const char* name, const char* where, size_t i) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, name);
    CHECK(v, "eval --compare: %s: %s item %zu has no \"%s\"", f->path, where, i, name);
    return v;
}

static double number(const ScoreFile* f, const cJSON* o, const char* name, const char* where, size_t i) {
    const cJSON* v = member(f, o, name, where, i);
    CHECK(cJSON_IsNumber(v) && isfinite(v->valuedouble), "eval --compare: %s: %s item %zu: \"%s\" is not a number",
          f->path, where, i, name);
    return v->valuedouble;
}

/* an item's "id" (a string or a number) as text */
static void item_id(char* out, const ScoreFile* f, const cJSON* item, const char* where, size_t i) {
    const cJSON* id = member(f, item, "id", where, i);
    if (cJSON_IsString(id)) snprintf(out, ID_LEN, "%s", id->valuestring);
    else if (cJSON_IsNumber(id)) snprintf(out, ID_LEN, "%.17g", id->valuedouble);
    else DIE("eval --compare: %s: %s item %zu: \"id\" is neither a string nor a number", f->path, where, i);
}

static int cmp_item(const void* a, const void* b) {
    return strcmp(((const ItemScore*)a)->id, ((const ItemScore*)b)->id);
}

static void sort_check(const ScoreFile* f, TaskScores* t, const char* where) {
    qsort(t->it, t->n, sizeof(ItemScore), cmp_item);
    for (size_t i = 1; i < t->n; i++)
        CHECK(strcmp(t->it[i - 1].id, t->it[i].id), "eval --compare: %s: %s: id \"%s\" occurs twice", f->path, where,
              t->it[i].id);
}

static const cJSON* items_of(const ScoreFile* f, const cJSON* task, const char* key, const char* list) {
    const cJSON* items = cJSON_GetObjectItemCaseSensitive(task, list);
    CHECK(cJSON_IsArray(items), "eval --compare: %s: %s has no list \"%s\" of per-item scores", f->path, key, list);
    return items;
}

/* items [{"id", "score"}] (ruler, synthetic) into a task named key */
static void read_scored(ScoreFile* f, const cJSON* items, const char* key) {
    TaskScores* t = add_task(f, key, (size_t)cJSON_GetArraySize(items));
    size_t i = 0;
    for (const cJSON* it = items->child; it; it = it->next, i++) {
        item_id(t->it[i].id, f, it, key, i);
        t->it[i].score = number(f, it, "score", key, i);
        t->it[i].label = NAN;
    }
    sort_check(f, t, key);
}

/* an mc task's items: acc and acc_norm recomputed from the log-likelihoods (mc_pick) */
static void read_mc(ScoreFile* f, const cJSON* items, const char* name) {
    char key[192], key_norm[192];
    snprintf(key, sizeof key, "mc/%s", name);
    snprintf(key_norm, sizeof key_norm, "mc/%s/acc_norm", name);
    size_t n = (size_t)cJSON_GetArraySize(items), i = 0;
    TaskScores* acc = add_task(f, key, n);
    TaskScores* norm = add_task(f, key_norm, n);
    acc = &f->t[f->n - 2]; /* add_task may have moved the first */
    for (const cJSON* it = items->child; it; it = it->next, i++) {
        const cJSON* ll = member(f, it, "loglikelihoods", key, i);
        const cJSON* chars = member(f, it, "choice_chars", key, i);
        size_t k = (size_t)cJSON_GetArraySize(ll);
        CHECK(cJSON_IsArray(ll) && cJSON_IsArray(chars) && k >= 1 && k <= 4096 &&
                  (size_t)cJSON_GetArraySize(chars) == k,
              "eval --compare: %s: %s item %zu: \"loglikelihoods\" and \"choice_chars\" must be lists of the same "
              "length (1 .. 4096)",
              f->path, key, i);
        double l[4096], c[4096];
        size_t j = 0;
        for (const cJSON *x = ll->child, *y = chars->child; x && y; x = x->next, y = y->next, j++) {
            CHECK(cJSON_IsNumber(x) && cJSON_IsNumber(y) && y->valuedouble > 0,
                  "eval --compare: %s: %s item %zu: \"loglikelihoods\"[%zu] or \"choice_chars\"[%zu] is not a "
                  "number (a positive one for choice_chars)",
                  f->path, key, i, j, j);
            l[j] = x->valuedouble;
            c[j] = y->valuedouble;
        }
        double label = number(f, it, "label", key, i);
        CHECK(label >= 0 && label < (double)k && label == floor(label),
              "eval --compare: %s: %s item %zu: \"label\" %g is not a choice index", f->path, key, i, label);
        item_id(acc->it[i].id, f, it, key, i);
        memcpy(norm->it[i].id, acc->it[i].id, ID_LEN);
        acc->it[i].label = norm->it[i].label = label;
        acc->it[i].score = mc_pick(l, c, k, false) == (size_t)label;
        norm->it[i].score = mc_pick(l, c, k, true) == (size_t)label;
    }
    sort_check(f, acc, key);
    sort_check(f, norm, key_norm);
}

static void read_file(ScoreFile* f, const char* path) {
    memset(f, 0, sizeof(*f));
    f->path = path;
    size_t len;
    char* text = file_read_all_or_null(path, &len);
    CHECK(text, "eval --compare: cannot read '%s': %s", path, file_read_error(errno));
    f->root = cJSON_ParseWithLength(text, len);
    free(text);
    CHECK(cJSON_IsObject(f->root), "eval --compare: %s is not a JSON object (a build/eval --json file)", path);
    const cJSON* fmt = cJSON_GetObjectItemCaseSensitive(f->root, "format");
    CHECK(!fmt || (cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "repoc-eval")),
          "eval --compare: %s: \"format\" is not \"repoc-eval\" (a build/eval --json file)", path);
    const cJSON *x, *mc = cJSON_GetObjectItemCaseSensitive(f->root, "mc");
    cJSON_ArrayForEach(x, mc) { read_mc(f, items_of(f, x, x->string, "items"), x->string); }
    const cJSON *len_obj, *ruler = cJSON_GetObjectItemCaseSensitive(f->root, "ruler");
    cJSON_ArrayForEach(x, ruler) {
        cJSON_ArrayForEach(len_obj, x) {
            char key[192];
            snprintf(key, sizeof key, "ruler/%s/%s", x->string, len_obj->string);
            read_scored(f, items_of(f, len_obj, key, "items"), key);
        }
    }
    const cJSON* tasks = cJSON_GetObjectItemCaseSensitive(f->root, "tasks");
    cJSON_ArrayForEach(x, tasks) {
        const cJSON* fam = cJSON_GetObjectItemCaseSensitive(x, "family");
        const cJSON* L = cJSON_GetObjectItemCaseSensitive(x, "length");
        CHECK(cJSON_IsString(fam) && cJSON_IsNumber(L),
              "eval --compare: %s: a \"tasks\" entry without family and length", path);
        char key[192];
        snprintf(key, sizeof key, "%s@%.0f", fam->valuestring, L->valuedouble);
        read_scored(f, items_of(f, x, key, "per_item"), key);
    }
    CHECK(f->n, "eval --compare: %s holds no per-item scores (\"mc\", \"ruler\" or \"tasks\" with \"per_item\")", path);
}

static void free_file(ScoreFile* f) {
    for (size_t i = 0; i < f->n; i++) free(f->t[i].it);
    free(f->t);
    cJSON_Delete(f->root);
}

/* synthetic items are the same items only under the same seed and depth */
static void check_same_items(const ScoreFile* a, const ScoreFile* b) {
    static const char* const keys[] = {"seed", "depth"};
    for (int k = 0; k < 2; k++) {
        const cJSON* x = cJSON_GetObjectItemCaseSensitive(a->root, keys[k]);
        const cJSON* y = cJSON_GetObjectItemCaseSensitive(b->root, keys[k]);
        char* sx = x ? cJSON_PrintUnformatted(x) : NULL;
        char* sy = y ? cJSON_PrintUnformatted(y) : NULL;
        bool same = (!sx && !sy) || (sx && sy && !strcmp(sx, sy));
        CHECK(same, "eval --compare: \"%s\" is %s in %s and %s in %s: the synthetic items differ", keys[k],
              sx ? sx : "absent", a->path, sy ? sy : "absent", b->path);
        free(sx);
        free(sy);
    }
}

/* the items of ta that tb holds too, their scores into xa, xb; returns how many */
static size_t pair_items(const ScoreFile* a, const TaskScores* ta, const ScoreFile* b, const TaskScores* tb, double* xa,
                         double* xb) {
    size_t n = 0;
    for (size_t i = 0; i < ta->n; i++) {
        const ItemScore* o = bsearch(&ta->it[i], tb->it, tb->n, sizeof(ItemScore), cmp_item);
        if (!o) continue;
        bool both_nan = isnan(o->label) && isnan(ta->it[i].label);
        CHECK(both_nan || o->label == ta->it[i].label,
              "eval --compare: %s: item \"%s\" has label %g in %s and %g in %s: not the same item", ta->key, o->id,
              ta->it[i].label, a->path, o->label, b->path);
        xa[n] = ta->it[i].score;
        xb[n++] = o->score;
    }
    return n;
}

static const char* verdict(Interval ci) {
    return ci.lo > 0 ? "better" : ci.hi < 0 ? "worse" : "no difference at this n";
}

/* one task's comparison: JSON entry and table row */
static void compare_task(cJSON* out, const ScoreFile* a, const TaskScores* ta, const ScoreFile* b, const TaskScores* tb,
                         double* work) {
    double* xa = mallocCheck((ta->n + 1) * sizeof(double));
    double* xb = mallocCheck((ta->n + 1) * sizeof(double));
    size_t n = pair_items(a, ta, b, tb, xa, xb);
    CHECK(n > 0, "eval --compare: %s: no item id is in both %s (%zu items) and %s (%zu items)", ta->key, a->path, ta->n,
          b->path, tb->n);
    double ma = stats_mean(xa, n), mb = stats_mean(xb, n);
    Interval ci = stats_bootstrap_diff(xa, xb, n, work);
    bool binary = stats_binary(xa, n) && stats_binary(xb, n);
    size_t n01 = 0, n10 = 0;
    for (size_t i = 0; binary && i < n; i++) {
        n01 += xa[i] == 0 && xb[i] == 1;
        n10 += xa[i] == 1 && xb[i] == 0;
    }
    double p = binary ? stats_mcnemar_exact(n01, n10) : NAN;
    cJSON* e = cJSON_AddObjectToObject(out, ta->key);
    cJSON_AddNumberToObject(e, "n", (double)n);
    cJSON_AddNumberToObject(e, "a", ma);
    cJSON_AddNumberToObject(e, "b", mb);
    cJSON_AddNumberToObject(e, "diff", mb - ma);
    cJSON_AddItemToObject(e, "ci", cJSON_CreateDoubleArray((double[]){ci.lo, ci.hi}, 2));
    if (binary) cJSON_AddNumberToObject(e, "p_mcnemar", p);
    else cJSON_AddNullToObject(e, "p_mcnemar");
    cJSON_AddStringToObject(e, "verdict", verdict(ci));
    char pbuf[16] = "-";
    if (binary) snprintf(pbuf, sizeof pbuf, "%.4g", p);
    printf("%-28s %6zu  %7.4f  %7.4f  %+8.4f  [%+.4f, %+.4f]  %-9s  %s\n", ta->key, n, ma, mb, mb - ma, ci.lo, ci.hi,
           pbuf, verdict(ci));
    free(xa);
    free(xb);
}

static const TaskScores* find_task(const ScoreFile* f, const char* key) {
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].key, key)) return &f->t[i];
    return NULL;
}

/* "k1, k2, ..." of f's tasks into buf */
static void task_list(char* buf, size_t len, const ScoreFile* f) {
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < f->n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "", f->t[i].key);
}

cJSON* eval_compare(const char* path_a, const char* path_b) {
    ScoreFile a, b;
    read_file(&a, path_a);
    read_file(&b, path_b);
    size_t shared = 0;
    for (size_t i = 0; i < a.n; i++) shared += find_task(&b, a.t[i].key) != NULL;
    char la[1024], lb[1024];
    task_list(la, sizeof la, &a);
    task_list(lb, sizeof lb, &b);
    CHECK(shared, "eval --compare: no task in both files: %s has %s; %s has %s", path_a, la, path_b, lb);
    cJSON* root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "repoc-eval-compare");
    cJSON_AddNumberToObject(root, "version", COMPARE_VERSION);
    cJSON_AddStringToObject(root, "a", path_a);
    cJSON_AddStringToObject(root, "b", path_b);
    cJSON* out = cJSON_AddObjectToObject(root, "compare");
    printf("paired comparison, items matched by id: A = %s, B = %s\n", path_a, path_b);
    printf("95%% interval of B - A: paired bootstrap over items (%d resamples); verdict better/worse when it "
           "excludes 0\n",
           STATS_RESAMPLES);
    printf("%-28s %6s  %7s  %7s  %8s  %-18s  %-9s  %s\n", "task", "n", "A", "B", "B - A", "95% interval", "McNemar p",
           "verdict");
    double* work = mallocCheck(STATS_RESAMPLES * sizeof(double));
    for (size_t i = 0; i < a.n; i++) {
        const TaskScores* tb = find_task(&b, a.t[i].key);
        if (!tb) {
            printf("%-28s only in %s\n", a.t[i].key, path_a);
            continue;
        }
        if (!strchr(a.t[i].key, '/')) check_same_items(&a, &b); /* a synthetic family@length */
        compare_task(out, &a, &a.t[i], &b, tb, work);
    }
    for (size_t i = 0; i < b.n; i++)
        if (!find_task(&a, b.t[i].key)) printf("%-28s only in %s\n", b.t[i].key, path_b);
    free(work);
    free_file(&a);
    free_file(&b);
    return root;
}
