/* Multiple choice encoded once, scored at every evaluation (eval/mc_set.h). */
#include "eval/mc_set.h"

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
