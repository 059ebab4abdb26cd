/* Training checkpoints: atomic step directories, `latest`, pruning, restore.
   See checkpoint.h; the files of a step directory are in run_dir.h. */
#include "train/checkpoint.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "common/dist.h"
#include "common/fileio.h"
#include "hf/ckpt_weights.h"
#include "hf/hf_config.h"
#include "hf/peft.h"
#include "optim/adamw_io.h"
#include "train/run_dir.h"

/* 16 lowercase hex digits, as adapter_model.safetensors' repoc.base_fingerprint */
static void hex64(char out[17], uint64_t v) { snprintf(out, 17, "%016llx", (unsigned long long)v); }

static void save_state(const char* path, const TrainerState* st, const char* config_json, const LoraBase* base) {
    cJSON* root = cJSON_CreateObject();
    char hex[17];
    cJSON_AddNumberToObject(root, "format_version", TRAINER_STATE_VERSION);
    if (st->run_id) {
        hex64(hex, st->run_id);
        cJSON_AddStringToObject(root, "run_id", hex);
    }
    if (base) { /* a LoRA checkpoint: the base it belongs to */
        cJSON* b = cJSON_AddObjectToObject(root, "lora_base");
        hex64(hex, base->fingerprint);
        cJSON_AddStringToObject(b, "path", base->path);
        cJSON_AddStringToObject(b, "fingerprint", hex);
    }
    cJSON_AddNumberToObject(root, "step", (double)st->step);
    cJSON_AddNumberToObject(root, "tokens_seen", (double)st->tokens_seen);
    cJSON_AddNumberToObject(root, "rows_per_step", (double)st->rows_per_step);
    cJSON_AddNumberToObject(root, "world_size", (double)st->world_size);
    if (st->threads) cJSON_AddNumberToObject(root, "threads", (double)st->threads);
    if (st->f32_engine[0]) cJSON_AddStringToObject(root, "f32_engine", st->f32_engine);
    if (st->compute_dtype[0]) cJSON_AddStringToObject(root, "compute_dtype", st->compute_dtype);
    if (st->has_loss) cJSON_AddNumberToObject(root, "last_loss", st->last_loss);
    cJSON_AddStringToObject(root, "data_cursor", "batches are a pure function of (seed, step): the cursor is 'step'");
    cJSON* cfg = config_json ? cJSON_Parse(config_json) : NULL;
    if (cfg) cJSON_AddItemToObject(root, "config", cfg);
    char* text = cJSON_Print(root);
    cJSON_Delete(root);
    file_write_atomic(path, text, strlen(text));
    free(text);
}

/* the CKPT_CARRIED files of from (those it has) into dir, each atomically */
static void copy_carried(const char* from, const char* dir) {
    char src[4200], dst[4300]; /* dir: a step directory path of up to 4200 bytes */
    for (size_t i = 0; i < CKPT_N_CARRIED; i++) {
        snprintf(src, sizeof(src), "%s/%s", from, CKPT_CARRIED[i]);
        size_t len;
        char* text = file_read_all_or_null(src, &len);
        if (!text) continue;
        snprintf(dst, sizeof(dst), "%s/%s", dir, CKPT_CARRIED[i]);
        file_write_atomic(dst, text, len);
        free(text);
    }
}

/* a complete checkpoint has all its files (the directory only appears after they were fsynced) */
static bool complete(const char* dir) {
    char p[4096];
    bool missing[4] = {false, false, false, false}; /* by CkptRole */
    for (size_t i = 0; i < CKPT_N_FILES; i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, CKPT_FILES[i].name);
        if (!path_exists(p)) missing[CKPT_FILES[i].role] = true;
    }
    return !missing[CKPT_ALWAYS] && (!missing[CKPT_BASE] || !missing[CKPT_ADAPTER]);
}

/* run_id of out_dir/step_N/trainer_state.json; 0 when absent or unreadable */
static uint64_t run_id_of(const char* out_dir, size_t step) {
    char p[4200];
    snprintf(p, sizeof(p), "%s/step_%07zu/trainer_state.json", out_dir, step);
    size_t len;
    char* text = file_read_all_or_null(p, &len);
    cJSON* root = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, "run_id");
    uint64_t id = cJSON_IsString(v) ? strtoull(v->valuestring, NULL, 16) : 0;
    cJSON_Delete(root);
    return id;
}

/* keep the newest keep_last step directories, never the one just written: the oldest of other runs
   (another run_id: an earlier run that run.overwrite starts over from) go first, then this run's oldest */
static void prune(const char* out_dir, const TrainerState* st, size_t keep_last) {
    size_t* steps;
    size_t n = run_dir_list_steps(out_dir, &steps);
    bool* other = callocCheck(n ? n : 1, 1);
    for (size_t i = 0; n > keep_last && i < n; i++) other[i] = run_id_of(out_dir, steps[i]) != st->run_id;
    size_t excess = n > keep_last ? n - keep_last : 0;
    char path[4200];
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n && excess; i++) {
            if (steps[i] == st->step || other[i] != (pass == 0)) continue;
            snprintf(path, sizeof(path), "%s/step_%07zu", out_dir, steps[i]);
            run_dir_remove_checkpoint(path);
            excess--;
        }
    free(other);
    free(steps);
}

void ckpt_save(const char* out_dir, const Model* m, const AdamW* opt, const TrainerState* st, const char* config_json,
               StDtype model_dtype, size_t keep_last, bool save_base, const char* carry_dir, const CkptExtra* extra) {
    if (dist_rank() != 0) { /* rank 0 writes; the others send their optimizer state */
        adamw_serve_save(opt);
        if (extra) extra->serve(extra->ctx);
        dist_barrier();
        return;
    }
    char final_dir[4096], tmp_dir[4200], path[4300];
    snprintf(final_dir, sizeof(final_dir), "%s/step_%07zu", out_dir, st->step);
    snprintf(tmp_dir, sizeof(tmp_dir), "%s.tmp.%d", final_dir, (int)getpid());
    run_dir_remove_checkpoint(tmp_dir);
    struct stat old;
    CHECK(lstat(tmp_dir, &old) != 0,
          "cannot write the checkpoint: '%s' is in the way (a link, or it holds files "
          "repoc did not write)",
          tmp_dir); /* never write through a link */
    const LoraBase* base = m->cfg.lora_rank && st->lora_base.path[0] ? &st->lora_base : NULL;
    bool adapter_only = base && !save_base;
    ckpt_weights_save(m, tmp_dir, model_dtype, base, adapter_only); /* creates tmp_dir */
    snprintf(path, sizeof(path), "%s/optimizer.safetensors", tmp_dir);
    adamw_save(path, m, opt, !adapter_only && model_dtype != ST_F32);
    snprintf(path, sizeof(path), "%s/trainer_state.json", tmp_dir);
    save_state(path, st, config_json, base);
    if (carry_dir && carry_dir[0]) copy_carried(carry_dir, tmp_dir);
    if (extra) extra->write(extra->ctx, tmp_dir);
    fsync_dir(tmp_dir);
    run_dir_remove_checkpoint(final_dir); /* a re-save of the same step (e.g. after a resume) */
    if (lstat(final_dir, &old) == 0) {    /* kept: it holds what repoc did not write; set it aside, whole */
        snprintf(path, sizeof(path), "%s.kept.%d", final_dir, (int)getpid());
        if (rename(final_dir, path) != 0) DIE("renaming '%s' to '%s': %s", final_dir, path, strerror(errno));
        printf("note: moved the earlier '%s' to '%s'\n", final_dir, path);
    }
    if (rename(tmp_dir, final_dir) != 0) DIE("renaming '%s' to '%s': %s", tmp_dir, final_dir, strerror(errno));
    fsync_dir(out_dir);
    char name[64];
    int len = snprintf(name, sizeof(name), "step_%07zu\n", st->step);
    snprintf(path, sizeof(path), "%s/latest", out_dir);
    file_write_atomic(path, name, (size_t)len);
    prune(out_dir, st, keep_last);
    dist_barrier(); /* the checkpoint is complete when any rank returns */
}

/* `latest` names a step directory of out_dir as save writes it (step_NNNNNNN), nothing else: "../other/step_N"
   would resume another run's checkpoint as if it were this one's. One that is incomplete (its files removed
   after the save) is passed over with a note naming it. */
bool ckpt_find_latest(const char* out_dir, char* path, size_t len) {
    char p[4096];
    snprintf(p, sizeof(p), "%s/latest", out_dir);
    char* text = file_read_all_or_null(p, NULL);
    if (text) {
        text[strcspn(text, "\r\n")] = 0;
        size_t digits = strncmp(text, "step_", 5) ? 0 : strspn(text + 5, "0123456789");
        CHECK(digits >= 7 && !text[5 + digits],
              "'%s' holds '%.200s', which is not the name of a step directory beside it (step_NNNNNNN, as a save "
              "writes it): write the name of the checkpoint to resume from into it, or remove it to resume from "
              "the newest complete one",
              p, text);
        snprintf(path, len, "%s/%s", out_dir, text);
        bool ok = complete(path);
        if (!ok)
            fprintf(stderr,
                    "note: '%s' names %s, which is not a complete checkpoint (files missing); the newest "
                    "complete one is used instead\n",
                    p, text);
        free(text);
        if (ok) return true;
    }
    size_t* steps;
    size_t n = run_dir_list_steps(out_dir, &steps);
    bool found = false;
    for (size_t i = n; i-- > 0 && !found;) {
        snprintf(path, len, "%s/step_%07zu", out_dir, steps[i]);
        found = complete(path);
    }
    free(steps);
    if (!found && len) path[0] = 0; /* no checkpoint: callers test path[0] */
    return found;
}

static cJSON* read_state_json(const char* dir) {
    char p[4096];
    snprintf(p, sizeof(p), "%s/trainer_state.json", dir);
    cJSON* root = json_read_file(p);
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, "format_version");
    CHECK(cJSON_IsNumber(v) && v->valuedouble == TRAINER_STATE_VERSION,
          "%s: format_version %g is not the one this build reads (%d)", p, cJSON_IsNumber(v) ? v->valuedouble : -1.0,
          TRAINER_STATE_VERSION);
    return root;
}

/* trainer_state.json's integer `key`: a JSON number with no fraction in [lo, 2^53] (doubles hold every
   integer up to there); absent is allowed only when `optional` (then *out = 0) */
static size_t state_int(const cJSON* root, const char* p, const char* key, size_t lo, bool optional) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v && optional) return 0;
    CHECK(v, "%s: missing key '%s'", p, key);
    char got[64] = "another JSON type";
    if (cJSON_IsNumber(v)) snprintf(got, sizeof(got), "%.17g", v->valuedouble);
    CHECK(cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && v->valuedouble >= (double)lo &&
              v->valuedouble <= 9007199254740992.0,
          "%s: key '%s': expected an integer in [%zu, 2^53], got %s", p, key, lo, got);
    return (size_t)v->valuedouble;
}

/* trainer_state.json's optional string `key`, one of the '|'-separated words of `choices`, into out ("" when
   absent) */
static void state_word(const cJSON* root, const char* p, const char* key, const char* choices, char* out, size_t n) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, key);
    out[0] = 0;
    if (!v) return;
    bool ok = cJSON_IsString(v) && strlen(v->valuestring) < n;
    if (ok) { /* a whole word of choices */
        const char* hit = strstr(choices, v->valuestring);
        size_t len = strlen(v->valuestring);
        ok = false;
        for (; hit && !ok; hit = strstr(hit + 1, v->valuestring))
            ok = len && (hit == choices || hit[-1] == '|') && (hit[len] == '|' || !hit[len]);
    }
    CHECK(ok, "%s: key '%s': expected one of %s", p, key, choices);
    snprintf(out, n, "%s", v->valuestring);
}

/* trainer_state.json: every field typed and in range, and the step equal to the one the directory
   name (step_NNNNNNN) states */
cJSON* ckpt_load_config(const char* dir) {
    cJSON* root = read_state_json(dir);
    cJSON* cfg = cJSON_DetachItemFromObjectCaseSensitive(root, "config");
    cJSON_Delete(root);
    return cJSON_IsObject(cfg) ? cfg : (cJSON_Delete(cfg), NULL);
}

void ckpt_load_state(const char* dir, TrainerState* st) {
    char p[4096];
    snprintf(p, sizeof(p), "%s/trainer_state.json", dir);
    cJSON* root = read_state_json(dir);
    memset(st, 0, sizeof(*st));
    st->step = state_int(root, p, "step", 0, false);
    st->tokens_seen = state_int(root, p, "tokens_seen", 0, false);
    st->rows_per_step = state_int(root, p, "rows_per_step", 1, true); /* absent in older checkpoints */
    st->world_size = state_int(root, p, "world_size", 1, true);
    st->threads = state_int(root, p, "threads", 1, true);
    state_word(root, p, "f32_engine", "openblas|onednn", st->f32_engine, sizeof(st->f32_engine));
    state_word(root, p, "compute_dtype", "f32|bf16", st->compute_dtype, sizeof(st->compute_dtype));
    const cJSON* loss = cJSON_GetObjectItemCaseSensitive(root, "last_loss");
    CHECK(!loss || (cJSON_IsNumber(loss) && isfinite(loss->valuedouble)),
          "%s: key 'last_loss': expected a finite number", p);
    st->has_loss = loss != NULL;
    st->last_loss = loss ? loss->valuedouble : 0;
    const cJSON* id = cJSON_GetObjectItemCaseSensitive(root, "run_id");
    CHECK(!id || (cJSON_IsString(id) && strlen(id->valuestring) == 16 &&
                  strspn(id->valuestring, "0123456789abcdef") == 16),
          "%s: key 'run_id': expected 16 lowercase hex digits", p);
    st->run_id = id ? strtoull(id->valuestring, NULL, 16) : 0;
    const cJSON* cfg = cJSON_GetObjectItemCaseSensitive(root, "config");
    CHECK(!cfg || cJSON_IsObject(cfg), "%s: key 'config': expected a JSON object", p);
    cJSON_Delete(root);
    const char* base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    size_t named;
    if (run_dir_step_of(base, &named))
        CHECK(named == st->step, "%s: key 'step' is %zu, but the directory is named %s", p, st->step, base);
}

void ckpt_load(const char* dir, Model* m, AdamW* opt, TrainerState* st) {
    ckpt_load_state(dir, st); /* first: a bad state file fails before the large reads */
    ckpt_weights_load(m, dir, 0, false, NULL);
    /* the base later checkpoints name: the one this one names (checked by the load when it holds no copy);
       none (so they keep a copy) for a checkpoint that names none: its own copy may be pruned */
    if (m->cfg.lora_rank) peft_read_lora_base(dir, &st->lora_base);
    bool bf16_model = hf_config_torch_dtype_is_bf16(dir); /* the FP32 master weights are in the optimizer file */
    char p[4096];
    snprintf(p, sizeof(p), "%s/optimizer.safetensors", dir);
    adamw_load(p, m, opt, bf16_model);
}

char* ckpt_read_config(const char* dir) {
    cJSON* root = read_state_json(dir);
    const cJSON* cfg = cJSON_GetObjectItemCaseSensitive(root, "config");
    char* text = cfg ? cJSON_PrintUnformatted(cfg) : NULL;
    cJSON_Delete(root);
    return text;
}
