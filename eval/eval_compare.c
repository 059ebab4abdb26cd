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

#define COMPARE_MAX_PARTS 8

typedef struct {
    const char* path;
    cJSON* root[COMPARE_MAX_PARTS]; /* one per file joined by '+'; root[0] holds the synthetic seed and depth */
    size_t n_roots;
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

/* one file's per-item scores into f (a later part's root in f->root[f->n_roots]) */
static void read_part(ScoreFile* f, const char* path) {
    size_t len, had = f->n;
    char* text = file_read_all_or_null(path, &len);
    CHECK(text, "eval --compare: cannot read '%s': %s", path, file_read_error(errno));
    CHECK(f->n_roots < COMPARE_MAX_PARTS, "eval --compare: %s: more than %d files joined by '+'", f->path,
          COMPARE_MAX_PARTS);
    cJSON* root = f->root[f->n_roots++] = cJSON_ParseWithLength(text, len);
    free(text);
    CHECK(cJSON_IsObject(root), "eval --compare: %s is not a JSON object (a build/eval --json file)", path);
    const cJSON* fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    CHECK(!fmt || (cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "repoc-eval")),
          "eval --compare: %s: \"format\" is not \"repoc-eval\" (a build/eval --json file)", path);
    const cJSON *x, *mc = cJSON_GetObjectItemCaseSensitive(root, "mc");
    cJSON_ArrayForEach(x, mc) { read_mc(f, items_of(f, x, x->string, "items"), x->string); }
    const cJSON *len_obj, *ruler = cJSON_GetObjectItemCaseSensitive(root, "ruler");
    cJSON_ArrayForEach(x, ruler) {
        cJSON_ArrayForEach(len_obj, x) {
            char key[192];
            snprintf(key, sizeof key, "ruler/%s/%s", x->string, len_obj->string);
            read_scored(f, items_of(f, len_obj, key, "items"), key);
        }
    }
    const cJSON* tasks = cJSON_GetObjectItemCaseSensitive(root, "tasks");
    cJSON_ArrayForEach(x, tasks) {
        const cJSON* fam = cJSON_GetObjectItemCaseSensitive(x, "family");
        const cJSON* L = cJSON_GetObjectItemCaseSensitive(x, "length");
        CHECK(cJSON_IsString(fam) && cJSON_IsNumber(L),
              "eval --compare: %s: a \"tasks\" entry without family and length", path);
        char key[192];
        snprintf(key, sizeof key, "%s@%.0f", fam->valuestring, L->valuedouble);
        read_scored(f, items_of(f, x, key, "per_item"), key);
    }
    CHECK(f->n > had, "eval --compare: %s holds no per-item scores (\"mc\", \"ruler\" or \"tasks\" with \"per_item\")",
          path);
    for (size_t i = had; i < f->n; i++)
        for (size_t j = 0; j < had; j++)
            CHECK(strcmp(f->t[i].key, f->t[j].key), "eval --compare: %s: task %s is in two of its files", f->path,
                  f->t[i].key);
}

/* path: a build/eval --json file, or several joined by '+' (one run's evaluations, tasks distinct) */
static void read_file(ScoreFile* f, const char* path) {
    memset(f, 0, sizeof(*f));
    f->path = path;
    char* parts = strdup(path);
    CHECK(parts, "out of memory");
    char* save = NULL;
    for (char* p = strtok_r(parts, "+", &save); p; p = strtok_r(NULL, "+", &save)) read_part(f, p);
    CHECK(f->n_roots, "eval --compare: an empty file name");
    free(parts);
}

static void free_file(ScoreFile* f) {
    for (size_t i = 0; i < f->n; i++) free(f->t[i].it);
    free(f->t);
    for (size_t i = 0; i < f->n_roots; i++) cJSON_Delete(f->root[i]);
}

/* synthetic items are the same items only under the same seed and depth */
static void check_same_items(const ScoreFile* a, const ScoreFile* b) {
    static const char* const keys[] = {"seed", "depth"};
    for (int k = 0; k < 2; k++) {
        const cJSON* x = cJSON_GetObjectItemCaseSensitive(a->root[0], keys[k]);
        const cJSON* y = cJSON_GetObjectItemCaseSensitive(b->root[0], keys[k]);
        char* sx = x ? cJSON_PrintUnformatted(x) : NULL;
        char* sy = y ? cJSON_PrintUnformatted(y) : NULL;
        bool same = (!sx && !sy) || (sx && sy && !strcmp(sx, sy));
        CHECK(same, "eval --compare: \"%s\" is %s in %s and %s in %s: the synthetic items differ", keys[k],
              sx ? sx : "absent", a->path, sy ? sy : "absent", b->path);
        free(sx);
        free(sy);
    }
}

static const TaskScores* find_task(const ScoreFile* f, const char* key) {
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].key, key)) return &f->t[i];
    return NULL;
}

static const char* verdict(Interval ci) {
    return ci.lo > 0 ? "better" : ci.hi < 0 ? "worse" : "no difference at this n";
}

/* A task's scores in every file: S runs per side, paired by seed; the items every file holds, paired by id */
typedef struct {
    size_t S, n;
    double *a, *b; /* (S,n): row s the scores of a[s], b[s] */
} Paired;

/* key's items that all 2S files hold (in a[0]'s order), their scores into p; dies on a label that differs */
static void collect(Paired* p, const ScoreFile* fa, const ScoreFile* fb, size_t S, const char* key) {
    const TaskScores* t0 = find_task(&fa[0], key);
    size_t cap = t0->n;
    p->S = S;
    p->n = 0;
    p->a = mallocCheck((S * cap + 1) * sizeof(double));
    p->b = mallocCheck((S * cap + 1) * sizeof(double));
    const ScoreFile* files[2 * STATS_MAX_SEEDS];
    const TaskScores* tasks[2 * STATS_MAX_SEEDS]; /* key's scores in each file: a[0..S), then b[0..S) */
    for (size_t f = 0; f < 2 * S; f++) {
        files[f] = f < S ? &fa[f] : &fb[f - S];
        tasks[f] = find_task(files[f], key);
    }
    for (size_t i = 0; i < cap; i++) {
        const ItemScore* it = &t0->it[i];
        const ItemScore* found[2 * STATS_MAX_SEEDS];
        bool everywhere = true;
        for (size_t f = 0; f < 2 * S && everywhere; f++) {
            const TaskScores* t = tasks[f];
            found[f] = bsearch(it, t->it, t->n, sizeof(ItemScore), cmp_item);
            everywhere = found[f] != NULL;
            bool both_nan = everywhere && isnan(found[f]->label) && isnan(it->label);
            CHECK(!everywhere || both_nan || found[f]->label == it->label,
                  "eval --compare: %s: item \"%s\" has label %g in %s and %g in %s: not the same item", key, it->id,
                  it->label, fa[0].path, found[f]->label, files[f]->path);
        }
        if (!everywhere) continue;
        for (size_t k = 0; k < S; k++) {
            p->a[k * cap + p->n] = found[k]->score;
            p->b[k * cap + p->n] = found[S + k]->score;
        }
        p->n++;
    }
    for (size_t k = 1; k < S; k++) { /* rows of stride cap to rows of stride n */
        memmove(p->a + k * p->n, p->a + k * cap, p->n * sizeof(double));
        memmove(p->b + k * p->n, p->b + k * cap, p->n * sizeof(double));
    }
}

/* q's items appended to p's, seed by seed */
static void append(Paired* p, const Paired* q) {
    size_t n = p->n + q->n, S = q->S;
    double* a = mallocCheck((S * n + 1) * sizeof(double));
    double* b = mallocCheck((S * n + 1) * sizeof(double));
    for (size_t k = 0; k < S; k++) {
        if (p->n) memcpy(a + k * n, p->a + k * p->n, p->n * sizeof(double));
        if (p->n) memcpy(b + k * n, p->b + k * p->n, p->n * sizeof(double));
        memcpy(a + k * n + p->n, q->a + k * q->n, q->n * sizeof(double));
        memcpy(b + k * n + p->n, q->b + k * q->n, q->n * sizeof(double));
    }
    free(p->a);
    free(p->b);
    *p = (Paired){S, n, a, b};
}

/* one task's comparison: JSON entry and table row. S = 1: the paired bootstrap over items and McNemar's p
   for 0/1 scores; S > 1: the two-level bootstrap over seeds and items, and the difference of each seed */
static void compare_task(cJSON* out, const char* key, const Paired* p, double* work) {
    size_t S = p->S, n = p->n, N = S * n;
    double ma = stats_mean(p->a, N), mb = stats_mean(p->b, N);
    Interval ci = stats_bootstrap_diff_seeds(p->a, p->b, S, n, work);
    bool binary = S == 1 && stats_binary(p->a, n) && stats_binary(p->b, n);
    size_t n01 = 0, n10 = 0;
    for (size_t i = 0; binary && i < n; i++) {
        n01 += p->a[i] == 0 && p->b[i] == 1;
        n10 += p->a[i] == 1 && p->b[i] == 0;
    }
    double pv = binary ? stats_mcnemar_exact(n01, n10) : NAN;
    cJSON* e = cJSON_AddObjectToObject(out, key);
    cJSON_AddNumberToObject(e, "n", (double)n);
    if (S > 1) cJSON_AddNumberToObject(e, "seeds", (double)S);
    cJSON_AddNumberToObject(e, "a", ma);
    cJSON_AddNumberToObject(e, "b", mb);
    cJSON_AddNumberToObject(e, "diff", mb - ma);
    cJSON_AddItemToObject(e, "ci", cJSON_CreateDoubleArray((double[]){ci.lo, ci.hi}, 2));
    if (binary) cJSON_AddNumberToObject(e, "p_mcnemar", pv);
    else cJSON_AddNullToObject(e, "p_mcnemar");
    cJSON_AddStringToObject(e, "verdict", verdict(ci));
    char pbuf[16] = "-";
    if (binary) snprintf(pbuf, sizeof pbuf, "%.4g", pv);
    printf("%-28s %6zu  %7.4f  %7.4f  %+8.4f  [%+.4f, %+.4f]  %-9s  %s\n", key, n, ma, mb, mb - ma, ci.lo, ci.hi, pbuf,
           verdict(ci));
    if (S > 1) {
        cJSON* d = cJSON_AddArrayToObject(e, "diff_per_seed");
        printf("%-28s per seed:", "");
        for (size_t k = 0; k < S; k++) {
            double dk = stats_mean(p->b + k * n, n) - stats_mean(p->a + k * n, n);
            cJSON_AddItemToArray(d, cJSON_CreateNumber(dk));
            printf(" %+.4f", dk);
        }
        printf("\n");
    }
}

/* "k1, k2, ..." of f's tasks into buf */
static void task_list(char* buf, size_t len, const ScoreFile* f) {
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < f->n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "", f->t[i].key);
}

/* true when every file holds the task */
static bool in_all(const ScoreFile* fa, const ScoreFile* fb, size_t S, const char* key) {
    for (size_t k = 0; k < S; k++)
        if (!find_task(&fa[k], key) || !find_task(&fb[k], key)) return false;
    return true;
}

static cJSON* path_list(const char* const* paths, size_t S) {
    if (S == 1) return cJSON_CreateString(paths[0]);
    cJSON* l = cJSON_CreateArray();
    for (size_t k = 0; k < S; k++) cJSON_AddItemToArray(l, cJSON_CreateString(paths[k]));
    return l;
}

cJSON* eval_compare(const char* const* path_a, const char* const* path_b, size_t S, const char* const* pool,
                    size_t n_pool) {
    CHECK(S >= 1 && S <= STATS_MAX_SEEDS, "eval --compare: %zu files per side (expected 1 .. %d)", S, STATS_MAX_SEEDS);
    ScoreFile* fa = mallocCheck(2 * S * sizeof(ScoreFile));
    ScoreFile* fb = fa + S;
    for (size_t k = 0; k < S; k++) {
        read_file(&fa[k], path_a[k]);
        read_file(&fb[k], path_b[k]);
    }
    size_t shared = 0;
    for (size_t i = 0; i < fa[0].n; i++) shared += in_all(fa, fb, S, fa[0].t[i].key);
    char la[1024], lb[1024];
    task_list(la, sizeof la, &fa[0]);
    task_list(lb, sizeof lb, &fb[0]);
    CHECK(shared, "eval --compare: no task in %s: %s has %s; %s has %s", S == 1 ? "both files" : "every file",
          path_a[0], la, path_b[0], lb);
    for (size_t j = 0; j < n_pool; j++)
        CHECK(in_all(fa, fb, S, pool[j]), "eval --compare: --pool names '%s', which not every file holds (%s has %s)",
              pool[j], path_a[0], la);
    cJSON* root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "repoc-eval-compare");
    cJSON_AddNumberToObject(root, "version", COMPARE_VERSION);
    cJSON_AddItemToObject(root, "a", path_list(path_a, S));
    cJSON_AddItemToObject(root, "b", path_list(path_b, S));
    cJSON* out = cJSON_AddObjectToObject(root, "compare");
    if (S == 1) {
        printf("paired comparison, items matched by id: A = %s, B = %s\n", path_a[0], path_b[0]);
        printf("95%% interval of B - A: paired bootstrap over items (%d resamples); verdict better/worse when it "
               "excludes 0\n",
               STATS_RESAMPLES);
    } else {
        printf("paired comparison of %zu runs per side, paired by position (seed) and items by id: A = %s, ..., "
               "B = %s, ...\n",
               S, path_a[0], path_b[0]);
        printf("95%% interval of B - A: two-level bootstrap, seeds then items (%d resamples); verdict better/worse "
               "when it excludes 0\n",
               STATS_RESAMPLES);
    }
    printf("%-28s %6s  %7s  %7s  %8s  %-18s  %-9s  %s\n", "task", "n", "A", "B", "B - A", "95% interval", "McNemar p",
           "verdict");
    double* work = mallocCheck(STATS_RESAMPLES * sizeof(double));
    Paired pooled = {S, 0, NULL, NULL};
    for (size_t i = 0; i < fa[0].n; i++) {
        const char* key = fa[0].t[i].key;
        if (!in_all(fa, fb, S, key)) {
            printf(S == 1 ? "%-28s only in %s\n" : "%-28s not in every file\n", key, path_a[0]);
            continue;
        }
        for (size_t k = 0; k < 2 * S; k++)
            if (!strchr(key, '/')) check_same_items(&fa[0], &fa[k]); /* a synthetic family@length */
        Paired p;
        collect(&p, fa, fb, S, key);
        CHECK(p.n > 0, "eval --compare: %s: no item id is in %s %s (%zu items) and %s (%zu items)", key,
              S == 1 ? "both" : "every file of", path_a[0], find_task(&fa[0], key)->n, path_b[0],
              find_task(&fb[0], key)->n);
        compare_task(out, key, &p, work);
        for (size_t j = 0; j < n_pool; j++)
            if (!strcmp(pool[j], key)) append(&pooled, &p);
        free(p.a);
        free(p.b);
    }
    for (size_t i = 0; i < fb[0].n; i++)
        if (!find_task(&fa[0], fb[0].t[i].key)) printf("%-28s only in %s\n", fb[0].t[i].key, path_b[0]);
    if (n_pool) {
        compare_task(out, "pool", &pooled, work);
        cJSON* names = cJSON_AddArrayToObject(cJSON_GetObjectItemCaseSensitive(out, "pool"), "tasks");
        for (size_t j = 0; j < n_pool; j++) cJSON_AddItemToArray(names, cJSON_CreateString(pool[j]));
        free(pooled.a);
        free(pooled.b);
    }
    free(work);
    for (size_t k = 0; k < 2 * S; k++) free_file(&fa[k]);
    free(fa);
    return root;
}
