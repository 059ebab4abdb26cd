/* Multiple choice encoded once, scored at every evaluation, and files scored as they are read (eval/mc_set.h). */
#include "eval/mc_set.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/clock.h"

void mc_set_add(McSet* set, McScorer* s, const McRecord* r, const char* file, size_t line) {
    mc_encode(s, r, file, line);
    size_t need = s->n_ctx;
    for (size_t k = 0; k < r->n_choices; k++) need += s->n_cont[k];
    mc_reserve((void**)&set->tokens, &set->cap_tokens, set->n_tokens + need, sizeof(int32_t));
    mc_reserve((void**)&set->item, &set->cap_items, set->n + 1, sizeof(McSetItem));
    mc_reserve((void**)&set->choice, &set->cap_choices, set->n_choices + r->n_choices, sizeof(McSetChoice));
    set->item[set->n++] = (McSetItem){.ctx_at = set->n_tokens,
                                      .ctx_len = s->n_ctx,
                                      .first = set->n_choices,
                                      .n_choices = r->n_choices,
                                      .label = r->label};
    memcpy(set->tokens + set->n_tokens, s->ctx, s->n_ctx * sizeof(int32_t));
    set->n_tokens += s->n_ctx;
    for (size_t k = 0; k < r->n_choices; k++) {
        set->choice[set->n_choices++] =
            (McSetChoice){.at = set->n_tokens,
                          .len = s->n_cont[k],
                          .chars = (double)mc_code_points(r->choice[k], strlen(r->choice[k]))};
        memcpy(set->tokens + set->n_tokens, s->cont[k], s->n_cont[k] * sizeof(int32_t));
        set->n_tokens += s->n_cont[k];
    }
}

void mc_set_clear(McSet* set) { set->n = set->n_tokens = set->n_choices = 0; }

typedef struct {
    McSet* set;
    McScorer* s;
    const char* file;
} Loader;

static void load_record(void* arg, const McRecord* r, size_t line) {
    Loader* ld = arg;
    mc_set_add(ld->set, ld->s, r, ld->file, line);
}

void mc_set_load(McSet* set, McScorer* s, const char* file, const McFields* f, size_t n) {
    memset(set, 0, sizeof(*set));
    mc_name(set->name, sizeof set->name, file);
    Loader ld = {set, s, file};
    size_t got = mc_read_file(file, f, n, load_record, &ld);
    CHECK(got == n && n > 0, "%s: ended after %zu items, %zu were counted (changed while read?)", file, got, n);
}

bool mc_set_run(McResult* r, McScorer* s, const McSet* set, const volatile sig_atomic_t* stop) {
    memset(r, 0, sizeof(*r));
    snprintf(r->name, sizeof r->name, "%s", set->name);
    double t0 = now_s();
    McItem it[MC_GROUP_ITEMS];
    for (size_t i = 0; i < set->n; i += MC_GROUP_ITEMS) {
        if (stop && *stop) return false;
        size_t n = set->n - i < MC_GROUP_ITEMS ? set->n - i : MC_GROUP_ITEMS;
        mc_score_items(it, s, set, i, n);
        for (size_t j = 0; j < n; j++) {
            const McSetItem* e = &set->item[i + j];
            mc_tally(r, &it[j], e->n_choices, e->label, NULL, NULL);
        }
    }
    if (stop && *stop) return false; /* the last items may have been cut short */
    mc_result_close(r, set->n, t0);
    return true;
}

size_t mc_set_bytes(const McSet* set) {
    return set->cap_tokens * sizeof(int32_t) + set->cap_items * sizeof(McSetItem) +
           set->cap_choices * sizeof(McSetChoice);
}

void mc_set_free(McSet* set) {
    free(set->tokens);
    free(set->item);
    free(set->choice);
    memset(set, 0, sizeof(*set));
}

/* ---- a file scored as it is read: records in blocks of MC_GROUP_ITEMS, each block one McSet */

/* the per-item record of the JSON output: item e of a set, its id (NULL: its index in the file) */
static cJSON* item_json(const McItem* it, const McSetItem* r, const cJSON* id, size_t index, bool acc, bool acc_norm) {
    cJSON* e = cJSON_CreateObject();
    if (id) cJSON_AddItemToObject(e, "id", cJSON_Duplicate(id, true));
    else cJSON_AddNumberToObject(e, "id", (double)index); /* the item's index in the file, as the harness's doc_id */
    cJSON_AddNumberToObject(e, "label", (double)r->label);
    cJSON_AddItemToObject(e, "loglikelihoods", cJSON_CreateDoubleArray(it->ll, (int)r->n_choices));
    cJSON* g = cJSON_AddArrayToObject(e, "is_greedy");
    for (size_t k = 0; k < r->n_choices; k++) cJSON_AddItemToArray(g, cJSON_CreateBool(it->greedy[k]));
    cJSON_AddItemToObject(e, "choice_chars", cJSON_CreateDoubleArray(it->chars, (int)r->n_choices));
    cJSON_AddNumberToObject(e, "context_tokens", (double)it->ctx_tokens);
    cJSON_AddNumberToObject(e, "acc", acc);
    cJSON_AddNumberToObject(e, "acc_norm", acc_norm);
    return e;
}

typedef struct { /* mc_run_file's state, handed to each record */
    McResult* r;
    McScorer* s;
    const char* file;
    size_t i, n;
    bool progress;
    double t0, shown;
    McSet block;                /* the records read and not yet scored */
    cJSON* ids[MC_GROUP_ITEMS]; /* theirs (copies), or NULL */
    McItem it[MC_GROUP_ITEMS];
} FileRun;

static void progress_line(const McResult* r, size_t i, size_t n, double t0) {
    double dt = now_s() - t0, rate = (double)i / (dt > 0 ? dt : 1e-9), eta = (double)(n - i) / (rate > 0 ? rate : 1);
    printf("\r  mc %-24s %zu/%zu items  %.1f items/s  ETA %dm%02ds   ", r->name, i, n, rate, (int)(eta / 60),
           (int)fmod(eta, 60));
    fflush(stdout);
}

/* score the block of records read, count them, and empty it */
static void run_block(FileRun* f) {
    McSet* b = &f->block;
    mc_score_items(f->it, f->s, b, 0, b->n);
    for (size_t j = 0; j < b->n; j++, f->i++) {
        bool acc, acc_norm;
        mc_tally(f->r, &f->it[j], b->item[j].n_choices, b->item[j].label, &acc, &acc_norm);
        if (f->r->items)
            cJSON_AddItemToArray(f->r->items, item_json(&f->it[j], &b->item[j], f->ids[j], f->i, acc, acc_norm));
        cJSON_Delete(f->ids[j]);
        f->ids[j] = NULL;
    }
    mc_set_clear(b);
    if (f->progress && now_s() - f->shown > 0.5) {
        progress_line(f->r, f->i, f->n, f->t0);
        f->shown = now_s();
    }
}

static void run_record(void* arg, const McRecord* rec, size_t line) {
    FileRun* f = arg;
    f->ids[f->block.n] = rec->id ? cJSON_Duplicate(rec->id, true) : NULL;
    mc_set_add(&f->block, f->s, rec, f->file, line);
    if (f->block.n == MC_GROUP_ITEMS) run_block(f);
}

void mc_run_file(McResult* r, McScorer* s, const char* file, const McFields* f, size_t n, bool keep_items,
                 bool progress) {
    memset(r, 0, sizeof(*r));
    mc_name(r->name, sizeof r->name, file);
    r->items = keep_items ? cJSON_CreateArray() : NULL;
    FileRun* run = callocCheck(1, sizeof(FileRun));
    *run = (FileRun){.r = r, .s = s, .file = file, .n = n, .progress = progress, .t0 = now_s()};
    run->shown = run->t0;
    size_t got = mc_read_file(file, f, n, run_record, run);
    if (run->block.n) run_block(run);
    CHECK(got == n, "%s: ended after %zu items, %zu were counted (changed while read?)", file, got, n);
    if (progress) printf("\r%*s\r", 100, "");
    mc_result_close(r, n, run->t0);
    mc_set_free(&run->block);
    free(run);
}
