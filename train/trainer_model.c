/* Which model a run trains, resolved before anything large is built: the checkpoint it resumes (its own
   config.json), model.init_from's checkpoint (or a run directory's latest), model.from_config's
   architecture with fresh weights (as transformers' from_config), or the typed sizes; and the directory
   whose tokenizer files every checkpoint of the run carries. */
#include "train/trainer.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "model/hf_checkpoint.h"
#include "model/hf_config.h"

void trainer_resolve_init_from(const char* from, char* dir, size_t len) {
    char p[4096];
    snprintf(p, sizeof(p), "%s/config.json", from);
    if (path_exists(p) || !is_dir(from)) { snprintf(dir, len, "%s", from); return; }
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

/* init_from's weights: checked from the headers before the model is allocated. --plan without weights (a
   published config.json alone, before the download) plans from the config and says the weights were not checked. */
static void check_init_weights(const Trainer* tr, bool plan_only) {
    if (!hf_has_weights(tr->init_dir)) {
        if (plan_only) {
            printf("note: weights were not checked: '%s' has no model.safetensors (or index); the plan is from its "
                   "config.json alone\n", tr->init_dir);
            return;
        }
        DIE("model.init_from: '%s' has no weights (expected model.safetensors or model.safetensors.index.json); to "
            "pretrain this architecture from scratch, give it as model.from_config instead", tr->init_dir);
    }
    hf_check_weights(tr->init_dir, &tr->mcfg);
}

void trainer_resolve_model(Trainer* tr, bool plan_only) {
    char err[1024];
    RunConfig* rc = &tr->rc;
    tr->tok_dir[0] = 0;
    if (tr->resumed_from[0]) {   /* the checkpoint's own config: positions as they were trained */
        hf_config_read(tr->resumed_from, &tr->mcfg);
        if (run_config_apply_checkpoint(rc, &tr->mcfg, tr->resumed_from, true, err, sizeof(err))) DIE("%s", err);
        snprintf(tr->tok_dir, sizeof(tr->tok_dir), "%s", tr->resumed_from);   /* its own copies */
        return;
    }
    if (rc->model.init_from[0]) {
        trainer_resolve_init_from(rc->model.init_from, tr->init_dir, sizeof(tr->init_dir));
        hf_config_read(tr->init_dir, &tr->mcfg);
        if (run_config_apply_checkpoint(rc, &tr->mcfg, tr->init_dir, false, err, sizeof(err))) DIE("%s", err);
        check_init_weights(tr, plan_only);
        snprintf(tr->tok_dir, sizeof(tr->tok_dir), "%s", tr->init_dir);
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

bool trainer_tokenizer_json(const Trainer* tr, char* path, size_t len) {
    const RunConfig* rc = &tr->rc;
    if (rc->data.tokenizer[0]) {
        snprintf(path, len, "%s", rc->data.tokenizer);
        return true;
    }
    char dir[4096] = "";
    snprintf(path, len, "%s/tokenizer.json", tr->tok_dir);
    if (tr->tok_dir[0] && path_exists(path)) return true;
    if (!rc->model.init_from[0]) return false;   /* a resumed checkpoint saved before checkpoints carried it */
    trainer_resolve_init_from(rc->model.init_from, dir, sizeof(dir));
    snprintf(path, len, "%s/tokenizer.json", dir);
    return path_exists(path);
}

double trainer_init_std(const Trainer* tr) {
    const RunConfig* rc = &tr->rc;
    if (!rc->model.from_config[0] || run_config_was_set(rc, "model.init_std") || !tr->mcfg.hf_carried[0])
        return rc->model.init_std;
    cJSON* carried = cJSON_Parse(tr->mcfg.hf_carried);
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(carried, "initializer_range");
    double std = cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : rc->model.init_std;
    cJSON_Delete(carried);
    return std;
}
