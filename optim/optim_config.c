/* Optimizer configuration: defaults, validation, printing, pattern lists and
   the per-tensor group rules (decay, lr_mult). See optim/optim_config.h. */
#include "optim/optim_config.h"

#include <fnmatch.h>
#include <math.h>
#include <string.h>

#include "common/check.h"

/* the defaults listed in optim_config.h; the lists start empty */
void optim_config_default(OptimConfig* c) {
    memset(c, 0, sizeof(*c));
    c->lr = 3e-4;
    c->min_lr = 0.0;
    c->schedule = SCHED_COSINE;
    c->warmup_steps = 0;
    c->decay_steps = 0;
    c->decay_fraction = 0.2;
    c->decay_shape = DECAY_LINEAR;
    c->total_steps = 0;
    c->beta1 = 0.9;
    c->beta2 = 0.95;
    c->eps = 1e-8;
    c->weight_decay = 0.1;
    c->decay_embeddings = false;
    c->decay_norms = true;
    c->decay_biases = false;
    c->grad_clip = 1.0;
    c->repo_lr_mult = 1.0;
    c->n_lr_mult = 0;
    c->n_freeze = 0;
}

/* every range check names its key; NaN fails every comparison, so it is caught too */
void optim_config_validate(const OptimConfig* c) {
    CHECK(isfinite(c->lr) && c->lr >= 0, "optim: lr %g must be finite and >= 0", c->lr);
    CHECK(isfinite(c->min_lr) && c->min_lr >= 0 && c->min_lr <= c->lr, "optim: min_lr %g must be in [0, lr = %g]",
          c->min_lr, c->lr);
    CHECK(c->schedule == SCHED_CONSTANT || c->schedule == SCHED_LINEAR || c->schedule == SCHED_COSINE ||
              c->schedule == SCHED_WSD,
          "optim: schedule %d is not constant | linear | cosine | wsd", (int)c->schedule);
    CHECK(c->decay_fraction >= 0 && c->decay_fraction <= 1, "optim: decay_fraction %g must be in [0, 1]",
          c->decay_fraction);
    CHECK(c->beta1 >= 0 && c->beta1 < 1, "optim: beta1 %g must be in [0, 1)", c->beta1);
    CHECK(c->beta2 >= 0 && c->beta2 < 1, "optim: beta2 %g must be in [0, 1)", c->beta2);
    CHECK(isfinite(c->eps) && c->eps > 0, "optim: eps %g must be finite and > 0", c->eps);
    CHECK(isfinite(c->weight_decay) && c->weight_decay >= 0, "optim: weight_decay %g must be finite and >= 0",
          c->weight_decay);
    CHECK(isfinite(c->grad_clip) && c->grad_clip >= 0, "optim: grad_clip %g must be finite and >= 0 (0 = off)",
          c->grad_clip);
    CHECK(isfinite(c->repo_lr_mult) && c->repo_lr_mult >= 0, "optim: repo_lr_mult %g must be finite and >= 0",
          c->repo_lr_mult);
    CHECK(c->n_lr_mult <= OPTIM_MAX_PATTERNS && c->n_freeze <= OPTIM_MAX_PATTERNS,
          "optim: at most %d lr_mult and %d freeze patterns", OPTIM_MAX_PATTERNS, OPTIM_MAX_PATTERNS);
    for (size_t i = 0; i < c->n_lr_mult; i++)
        CHECK(isfinite(c->lr_mult[i].mult) && c->lr_mult[i].mult >= 0,
              "optim: lr_mult %g of pattern '%s' must be finite and >= 0", c->lr_mult[i].mult, c->lr_mult[i].pattern);
}

/* the resolved section, one line of scalars, then one line per pattern */
void optim_config_print(const OptimConfig* c, FILE* fp) {
    fprintf(fp, "optim: adamw lr=%g min_lr=%g schedule=%s warmup_steps=%zu total_steps=%zu\n", c->lr, c->min_lr,
            schedule_name(c->schedule), c->warmup_steps, c->total_steps);
    fprintf(fp,
            "  beta1=%g beta2=%g eps=%g weight_decay=%g decay_embeddings=%s decay_norms=%s decay_biases=%s "
            "grad_clip=%g repo_lr_mult=%g\n",
            c->beta1, c->beta2, c->eps, c->weight_decay, c->decay_embeddings ? "true" : "false",
            c->decay_norms ? "true" : "false", c->decay_biases ? "true" : "false", c->grad_clip, c->repo_lr_mult);
    for (size_t i = 0; i < c->n_lr_mult; i++)
        fprintf(fp, "  lr_mult '%s' x%g\n", c->lr_mult[i].pattern, c->lr_mult[i].mult);
    for (size_t i = 0; i < c->n_freeze; i++) fprintf(fp, "  freeze '%s'\n", c->freeze[i]);
}

/* copy a pattern into a fixed-size slot, dying when it does not fit */
static void copy_pattern(char dst[TENSOR_NAME_LEN], const char* pattern, const char* list) {
    CHECK(strlen(pattern) < TENSOR_NAME_LEN, "optim: %s pattern longer than %d characters: '%s'", list,
          TENSOR_NAME_LEN - 1, pattern);
    strcpy(dst, pattern);
}

/* patterns keep their order: the first match wins (optim_tensor_lr_mult) */
void optim_config_add_lr_mult(OptimConfig* c, const char* pattern, double mult) {
    CHECK(c->n_lr_mult < OPTIM_MAX_PATTERNS, "optim: more than %d lr_mult patterns (at '%s')", OPTIM_MAX_PATTERNS,
          pattern);
    copy_pattern(c->lr_mult[c->n_lr_mult].pattern, pattern, "lr_mult");
    c->lr_mult[c->n_lr_mult].mult = mult;
    c->n_lr_mult++;
}

/* a frozen tensor is chosen by the model build (tensor_table_build); adamw_build checks it agrees */
void optim_config_add_freeze(OptimConfig* c, const char* pattern) {
    CHECK(c->n_freeze < OPTIM_MAX_PATTERNS, "optim: more than %d freeze patterns (at '%s')", OPTIM_MAX_PATTERNS,
          pattern);
    copy_pattern(c->freeze[c->n_freeze], pattern, "freeze");
    c->n_freeze++;
}

/* pointers into c, for model_build's `const char* const*` */
size_t optim_freeze_patterns(const OptimConfig* c, const char* out[OPTIM_MAX_PATTERNS]) {
    for (size_t i = 0; i < c->n_freeze; i++) out[i] = c->freeze[i];
    return c->n_freeze;
}

/* the config spelling of a schedule */
const char* schedule_name(Schedule s) {
    return s == SCHED_CONSTANT ? "constant" : s == SCHED_LINEAR ? "linear" : s == SCHED_COSINE ? "cosine" : "wsd";
}

/* the inverse of schedule_name; *out is untouched on failure */
bool schedule_parse(const char* s, Schedule* out) {
    if (!strcmp(s, "constant")) *out = SCHED_CONSTANT;
    else if (!strcmp(s, "linear")) *out = SCHED_LINEAR;
    else if (!strcmp(s, "cosine")) *out = SCHED_COSINE;
    else if (!strcmp(s, "wsd")) *out = SCHED_WSD;
    else return false;
    return true;
}

/* the table's flags decide: only embed_tokens is an embedding (an untied lm_head decays, as OLMo-2's
   trainer decays every Linear weight); RePo matrices decay */
bool optim_tensor_decays(const OptimConfig* c, const TensorInfo* t) {
    if (t->is_embedding) return c->decay_embeddings;
    if (t->is_norm) return c->decay_norms;
    if (t->is_bias) return c->decay_biases;
    return true;
}

/* patterns first, in order; then the RePo default; then 1 */
double optim_tensor_lr_mult(const OptimConfig* c, const TensorInfo* t, int* source) {
    for (size_t i = 0; i < c->n_lr_mult; i++) {
        if (fnmatch(c->lr_mult[i].pattern, t->name, 0) == 0) { /* first match wins */
            if (source) *source = (int)i;
            return c->lr_mult[i].mult;
        }
    }
    if (source) *source = t->is_repo ? LR_MULT_REPO : LR_MULT_NONE;
    return t->is_repo ? c->repo_lr_mult : 1.0;
}
