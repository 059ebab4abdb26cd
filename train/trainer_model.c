/* Which model a run trains, resolved before anything large is built: the checkpoint it resumes (its own
   config.json), model.init_from's checkpoint (or a run directory's latest), model.from_config's
   architecture with fresh weights (as transformers' from_config), or the typed sizes; and the directory
   whose tokenizer files every checkpoint of the run carries. */
#include "train/trainer.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "hf/ckpt_weights.h"
#include "hf/hf_checkpoint.h"
#include "hf/hf_config.h"
#include "hf/peft.h"

void trainer_resolve_init_from(const char* from, char* dir, size_t len) {
    char p[4096];
    snprintf(p, sizeof(p), "%s/config.json", from);
    if (path_exists(p) || !is_dir(from)) {
        snprintf(dir, len, "%s", from);
        return;
    }
    CHECK(ckpt_find_latest(from, dir, len), "model.init_from: '%s' has no config.json and no checkpoint", from);
}

/* model.from_config: a directory's config.json, or the file itself. *dir: the directory the tokenizer files may be
   taken from (the directory given, or the one holding a file named config.json; else none) */
static void from_config_path(const char* from, char* path, size_t len, char* dir, size_t dir_len) {
    dir[0] = 0;
    if (is_dir(from)) {
        snprintf(path, len, "%s/config.json", from);
        snprintf(dir, dir_len, "%s", from);
    } else {
        snprintf(path, len, "%s", from);
        const char* base = strrchr(from, '/');
        if (!strcmp(base ? base + 1 : from, "config.json")) dir_of(from, dir, dir_len);
    }
    CHECK(path_exists(path), "model.from_config: '%s' does not exist (give a config.json, or a directory holding one)",
          path);
}

/* A resumed run keeps the adapters it saved: the same rank and targets (else the AdamW state and the
   adapter tensors would not fit) and the same alpha (the saved B A is scaled by alpha / r: another alpha
   changes the model); another dropout only changes the noise of the steps to come, with a note. */
static void check_resume_lora(const char* dir, const ModelConfig* c) {
    ModelConfig saved = *c;
    bool had = peft_read_config(dir, &saved);
    const char* fix = "a resumed run keeps its adapters: set the checkpoint's value, or start a new run (another "
                      "run.out_dir, or run.resume \"never\") with model.init_from";
    CHECK(had == (c->lora_rank > 0),
          "cannot resume from %s: it was trained %s LoRA adapters, this config has %s "
          "(model.lora.rank %zu); %s",
          dir, had ? "with" : "without", had ? "none" : "them", c->lora_rank, fix);
    if (!had) return;
    CHECK(saved.lora_rank == c->lora_rank && saved.lora_targets == c->lora_targets,
          "cannot resume from %s: "
          "model.lora.rank %zu or model.lora.targets differ from the checkpoint's adapter_config.json (r %zu); %s",
          dir, c->lora_rank, saved.lora_rank, fix);
    CHECK(saved.lora_alpha == c->lora_alpha,
          "cannot resume from %s: model.lora.alpha %g differs from the "
          "checkpoint's lora_alpha %g, which scales its saved adapters (alpha / r): the resumed model would not "
          "be the saved one; %s",
          dir, c->lora_alpha, saved.lora_alpha, fix);
    if (saved.lora_dropout != c->lora_dropout)
        printf("note: model.lora.dropout %g differs from the checkpoint's lora_dropout %g: the steps from here "
               "on draw dropout %g (the saved adapters are unchanged; the run is no longer the one a straight run "
               "would give)\n",
               c->lora_dropout, saved.lora_dropout, c->lora_dropout);
}

/* init_from's weights: checked from the headers before the model is allocated. --plan without weights (a
   published config.json alone, before the download) plans from the config and says the weights were not checked. */
static void check_init_weights(const Trainer* tr, bool plan_only) {
    char base[4096]; /* a LoRA checkpoint without a base copy: the base it names */
    const char* wdir = ckpt_weights_dir(tr->init_dir, base, sizeof(base));
    if (!hf_has_weights(wdir)) {
        if (plan_only) {
            printf("note: weights were not checked: '%s' has no model.safetensors (or index); the plan is from its "
                   "config.json alone\n",
                   tr->init_dir);
            return;
        }
        DIE("model.init_from: '%s' has no weights (expected model.safetensors or model.safetensors.index.json); to "
            "pretrain this architecture from scratch, give it as model.from_config instead",
            tr->init_dir);
    }
    hf_check_weights(wdir, &tr->mcfg); /* headers only */
}

static void resolve_model_config(Trainer* tr, bool plan_only) {
    char err[1024];
    RunConfig* rc = &tr->rc;
    tr->tok_dir[0] = 0;
    if (tr->resumed_from[0]) { /* the checkpoint's own config: positions as they were trained */
        hf_config_read(tr->resumed_from, &tr->mcfg);
        if (run_config_apply_checkpoint(rc, &tr->mcfg, tr->resumed_from, true, err, sizeof(err))) DIE("%s", err);
        snprintf(tr->tok_dir, sizeof(tr->tok_dir), "%s", tr->resumed_from); /* its own copies */
        check_resume_lora(tr->resumed_from, &tr->mcfg);
        return;
    }
    if (rc->model.init_from[0]) {
        trainer_resolve_init_from(rc->model.init_from, tr->init_dir, sizeof(tr->init_dir));
        hf_config_read(tr->init_dir, &tr->mcfg);
        if (run_config_apply_checkpoint(rc, &tr->mcfg, tr->init_dir, false, err, sizeof(err))) DIE("%s", err);
        check_init_weights(tr, plan_only);
        char tok[4200], base[4096]; /* the tokenizer files: init_from's, else those of the base its adapter names */
        snprintf(tok, sizeof(tok), "%s/tokenizer.json", tr->init_dir);
        const char* from = path_exists(tok) ? tr->init_dir : ckpt_weights_dir(tr->init_dir, base, sizeof(base));
        snprintf(tr->tok_dir, sizeof(tr->tok_dir), "%s", from);
        return;
    }
    if (rc->model.from_config[0]) {
        char path[4200];
        from_config_path(rc->model.from_config, path, sizeof(path), tr->tok_dir, sizeof(tr->tok_dir));
        hf_config_read_file(path, &tr->mcfg);
        if (run_config_apply_checkpoint(rc, &tr->mcfg, path, false, err, sizeof(err))) DIE("%s", err);
        return;
    }
    run_config_model(rc, &tr->mcfg);
}

void trainer_resolve_model(Trainer* tr, bool plan_only) {
    resolve_model_config(tr, plan_only);
    char err[1024];
    if (run_config_save_names(&tr->rc, &tr->mcfg, err, sizeof err)) DIE("%s", err);
}

bool trainer_tokenizer_json(const Trainer* tr, char* path, size_t len) {
    const RunConfig* rc = &tr->rc;
    if (rc->data.tokenizer[0]) {
        snprintf(path, len, "%s", rc->data.tokenizer);
        return true;
    }
    char dir[4096] = "";
    snprintf(path, len, "%s/tokenizer.json", tr->tok_dir);
    if (tr->tok_dir[0] && path_exists(path)) return true;
    if (!rc->model.init_from[0]) return false; /* a resumed checkpoint saved before checkpoints carried it */
    trainer_resolve_init_from(rc->model.init_from, dir, sizeof(dir));
    snprintf(path, len, "%s/tokenizer.json", dir);
    if (path_exists(path)) return true;
    char base[4096]; /* a LoRA checkpoint that names its base: the base's tokenizer */
    snprintf(path, len, "%s/tokenizer.json", ckpt_weights_dir(dir, base, sizeof(base)));
    return path_exists(path);
}

double trainer_init_std(const Trainer* tr) {
    const RunConfig* rc = &tr->rc;
    if (!rc->model.from_config[0] || run_config_was_set(rc, "model.init_std") || !tr->mcfg.hf_carried[0])
        return rc->model.init_std;
    cJSON* carried = cJSON_Parse(tr->mcfg.hf_carried);
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(carried, "initializer_range");
    CHECK(!v || (cJSON_IsNumber(v) && v->valuedouble > 0 && isfinite(v->valuedouble)),
          "%s: initializer_range must be a number > 0 (the weights' standard deviation; transformers draws them "
          "so), not %s: fix it, or set model.init_std",
          rc->model.from_config, cJSON_IsNumber(v) ? "a number <= 0" : "another type");
    double std = v ? v->valuedouble : rc->model.init_std;
    cJSON_Delete(carried);
    return std;
}
