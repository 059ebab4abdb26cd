/* Multiple choice encoded once, scored at every evaluation (eval/mc_set.h). */
#include "eval/mc_set.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/clock.h"

typedef struct {
    McSet* set;
    McScorer* s;
    const char* file;
} Loader;

/* one record: its context_enc and continuations appended to the tokens, with where they start */
static void load_record(void* arg, const McRecord* r, size_t line) {
    Loader* ld = arg;
    McSet* set = ld->set;
    McScorer* s = ld->s;
    mc_encode(s, r, ld->file, line);
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
    const int32_t* cont[MC_MAX_CHOICES];
    size_t n_cont[MC_MAX_CHOICES];
    McItem it;
    for (size_t i = 0; i < set->n; i++) {
        if (stop && *stop) return false;
        const McSetItem* e = &set->item[i];
        for (size_t k = 0; k < e->n_choices; k++) {
            const McSetChoice* c = &set->choice[e->first + k];
            cont[k] = set->tokens + c->at;
            n_cont[k] = c->len;
            it.chars[k] = c->chars;
        }
        mc_score_encoded(&it, s, set->tokens + e->ctx_at, e->ctx_len, cont, n_cont, e->n_choices);
        mc_tally(r, &it, e->n_choices, e->label, NULL, NULL);
    }
    if (stop && *stop) return false; /* the last item may have been cut short */
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
