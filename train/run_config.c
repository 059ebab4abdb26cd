/* The training job's configuration (see run_config.h): loading (file, --set
   overrides, checks between keys), printing and JSON output, all driven by
   the key table of run_config_keys.c. Applying one JSON value to one key,
   with its messages, is in run_config_parse.c; the conversions to ModelConfig
   and OptimConfig in run_config_model.c. */
#include "train/run_config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"  /* CHECK, mallocCheck */
#include "common/fileio.h" /* file_read_all_or_null */
#include "train/run_config_parse.h"

#define RS "model.positions.rope_scaling"

void run_config_free(RunConfig* rc) {
    cJSON_Delete(rc->data.synthetic);
    cJSON_Delete(rc->data.train_sources);
    cJSON_Delete(rc->data.val_sources);
    cJSON_Delete(rc->train.eval_tasks);
    rc->train.eval_tasks = NULL;
    rc->data.synthetic = rc->data.train_sources = rc->data.val_sources = NULL;
}

/* ---- loading ---- */
static int load_file(RcCtx* c, const char* path) {
    size_t n;
    char* text = file_read_all_or_null(path, &n);
    if (!text) return rc_fail(c, NULL, "cannot read the config file: %s", strerror(errno));
    const char* end = NULL;
    cJSON* root = strlen(text) == n ? cJSON_ParseWithOpts(text, &end, 1) : NULL; /* a NUL byte stops it */
    int r;
    if (!root) { /* "file:line:column: ..." where cJSON stopped, with the text before it on its line */
        size_t off = end ? (size_t)(end - text) : strlen(text), line = 1, start = 0;
        for (size_t i = 0; i < off; i++)
            if (text[i] == '\n') line++, start = i + 1;
        size_t from = off - start > 24 ? off - 24 : start;
        while (from < off && (text[from] == ' ' || text[from] == '\t')) from++;
        c->src = NULL;
        r = rc_fail(c, NULL, "%s:%zu:%zu: JSON syntax error (byte %zu) after '%.*s'", path, line, off - start + 1, off,
                    (int)(off - from), text + from);
    } else if (!cJSON_IsObject(root)) {
        r = rc_fail(c, NULL, "expected a JSON object at the top level");
    } else {
        r = rc_apply_object(c, "", root);
    }
    cJSON_Delete(root);
    free(text);
    return r;
}

bool run_config_sizes_from_file(const RunConfig* rc) { return rc->model.init_from[0] || rc->model.from_config[0]; }

/* model.from_config names the whole architecture: neither a checkpoint to load nor typed sizes go with it */
static int check_from_config(RcCtx* c) {
    const RcModel* m = &c->rc->model;
    if (m->init_from[0])
        return rc_fail(c, "model.from_config",
                       "given together with model.init_from: from_config starts a fresh model "
                       "of a config.json's architecture, init_from continues a checkpoint's weights; use one");
    static const char* sizes[] = {"model.arch",    "model.vocab_size", "model.d_model", "model.n_layers",
                                  "model.n_heads", "model.n_kv_heads", "model.d_ff",    "model.tie_embeddings"};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        if (run_config_was_set(c->rc, sizes[i]))
            return rc_fail(c, sizes[i],
                           "given together with model.from_config '%s', which sets the architecture: "
                           "remove %s, or drop model.from_config to give every size",
                           m->from_config, sizes[i]);
    return 0;
}

/* The model keys' checks between each other; for a fresh model n_kv_heads = n_heads when it was null. */
static int validate_model(RcCtx* c) {
    RunConfig* rc = c->rc;
    RcModel* m = &rc->model;
    ModelConfig* mc = &m->cfg;
    const RcPositions* p = &m->positions;
    /* max_position_embeddings = factor x original_max is written to config.json as an integer, which
       a reader holds exactly only up to 2^53 */
    if (mc->yarn_factor > 1 && mc->yarn_factor * mc->yarn_orig_max > 9007199254740992.0)
        return rc_fail(c, RS ".factor",
                       "%g x original_max_position_embeddings %g = %g positions exceeds 2^53, the "
                       "largest max_position_embeddings a checkpoint's config.json holds exactly",
                       mc->yarn_factor, mc->yarn_orig_max, mc->yarn_factor * mc->yarn_orig_max);
    const RcList* targets = &m->lora.targets;
    for (size_t i = 0; i < targets->n; i++) {
        LoraTarget t;
        if (!lora_target_parse(targets->v[i], &t))
            return rc_fail(c, "model.lora.targets",
                           "'%s' matches no projection; the valid names are q_proj, k_proj, "
                           "v_proj, o_proj, gate_proj, up_proj, down_proj",
                           targets->v[i]);
    }

    if (!strcmp(m->base_dtype, "bf16") && !m->init_from[0])
        return rc_fail(c, "model.base_dtype",
                       "\"bf16\" keeps a frozen base loaded from model.init_from; give one "
                       "(a fresh model has nothing frozen to keep)");
    if (m->lora.save_base && !mc->lora_rank)
        return rc_fail(c, "model.lora.save_base",
                       "keeps a copy of a LoRA run's base in each checkpoint, but "
                       "model.lora.rank is 0 (no LoRA: every checkpoint holds the whole model); remove the key");
    if (!strcmp(m->base_dtype, "bf16") && !mc->lora_rank && !rc->optim.freeze.n)
        return rc_fail(c, "model.base_dtype",
                       "\"bf16\" keeps the frozen layer matrices in BF16, but this run "
                       "freezes none: model.lora.rank is 0 (no LoRA) and optim.freeze is empty; set model.lora.rank, "
                       "or remove the key (a model without LoRA trains in F32)");
    if (m->from_config[0] && check_from_config(c)) return -1;
    if (!run_config_sizes_from_file(rc)) { /* else from config.json (run_config_apply_checkpoint) */
        if (mc->KVH == RC_UNSET) mc->KVH = mc->H;
        if (mc->D % mc->H) return rc_fail(c, "model.n_heads", "%zu does not divide model.d_model %zu", mc->H, mc->D);
        if (mc->D / mc->H % 2)
            return rc_fail(c, "model.d_model", "head dim d_model / n_heads = %zu must be even (rotary pairs)",
                           mc->D / mc->H);
        if (mc->H % mc->KVH)
            return rc_fail(c, "model.n_kv_heads", "%zu does not divide model.n_heads %zu", mc->KVH, mc->H);
        if (run_config_check_layers(rc, mc->L, c->err, c->len)) return -1;
        ModelConfig fresh;
        run_config_model(rc, &fresh);
        if (cfg_has_repo(&fresh) && mc->D % 8)
            return rc_fail(c, "model.d_model", "%zu must be divisible by 8 for RePo layers (d_p = d_model / 8)", mc->D);
    }
    if (p->repo_start_layer != RC_UNSET && strcmp(p->mode, "repo") && !p->n_layers_list)
        return rc_fail(c, "model.positions.repo_start_layer", "given, but model.positions.mode is \"%s\", not \"repo\"",
                       p->mode);
    if (p->repo_pdrop_init > 0 && p->repo_pdrop_steps == RC_UNSET)
        return rc_fail(c, "model.positions.repo_pdrop.anneal_steps", "missing: init %g needs the steps of its anneal",
                       p->repo_pdrop_init);
    if (mc->yarn_beta_fast <= mc->yarn_beta_slow)
        return rc_fail(c, RS ".beta_fast", "%g must exceed beta_slow %g", mc->yarn_beta_fast, mc->yarn_beta_slow);
    return 0;
}

/* train.outer (DiLoCo) against the keys it depends on */
static int validate_outer(RcCtx* c) {
    const RunConfig* rc = c->rc;
    if (rc->train.outer.every == RC_UNSET) { /* off: its other keys must keep their defaults */
        RunConfig def;
        run_config_defaults(&def);
        const RcOuter *o = &rc->train.outer, *d = &def.train.outer;
        const char* given = o->lr != d->lr               ? "train.outer.lr"
                            : o->momentum != d->momentum ? "train.outer.momentum"
                            : o->nesterov != d->nesterov ? "train.outer.nesterov"
                                                         : NULL;
        if (given)
            return rc_fail(c, "train.outer.every",
                           "missing: %s is given, but the outer loop needs H, the inner AdamW steps between outer "
                           "steps (>= 1)",
                           given);
        return 0;
    }
    if (rc->train.shard_optimizer)
        return rc_fail(c, "train.shard_optimizer",
                       "true, but train.outer (DiLoCo) gives every rank its own AdamW over its own gradients, which "
                       "ZeRO-1 sharding cannot split: set it to false or leave it out");
    return 0;
}

/* Checks between keys, after the file and the overrides. Derives resume_mode
   and, for a fresh model, n_kv_heads = n_heads when it was null. */
static int validate(RcCtx* c) {
    RunConfig* rc = c->rc;
    const char* resume = rc->run.resume;
    rc->run.resume_mode = !strcmp(resume, "auto") ? RESUME_AUTO : !strcmp(resume, "never") ? RESUME_NEVER : RESUME_PATH;
    if (validate_model(c) || validate_outer(c)) return -1;

    const OptimConfig* o = &rc->optim.cfg;
    if (o->min_lr > o->lr) return rc_fail(c, "optim.min_lr", "%g exceeds optim.lr %g", o->min_lr, o->lr);
    if (o->decay_steps != RC_UNSET && o->warmup_steps + o->decay_steps > rc->train.steps)
        return rc_fail(c, "optim.decay_steps", "%zu plus optim.warmup_steps %zu exceeds train.steps %zu",
                       o->decay_steps, o->warmup_steps, rc->train.steps);
    if (o->decay_steps != RC_UNSET && o->schedule != SCHED_WSD)
        return rc_fail(c, "optim.decay_steps", "given, but optim.schedule is not \"wsd\"");
    if (o->warmup_steps > rc->train.steps)
        return rc_fail(c, "optim.warmup_steps", "%zu exceeds train.steps %zu", o->warmup_steps, rc->train.steps);

    /* products of sizes, before they can wrap around: rows per optimizer step, tokens per micro-batch */
    const RcTrain* t = &rc->train;
    if (t->grad_accum > BIG / t->batch_size)
        return rc_fail(c, "train.grad_accum",
                       "%zu x train.batch_size %zu rows per step is more than 2^53: "
                       "lower train.grad_accum or train.batch_size",
                       t->grad_accum, t->batch_size);
    if (rc->data.seq_len > 0x7fffffff / t->batch_size)
        return rc_fail(c, "train.batch_size",
                       "%zu x data.seq_len %zu tokens per micro-batch is more than 2^31 - 1: "
                       "lower train.batch_size or data.seq_len (train.grad_accum adds rows without memory)",
                       t->batch_size, rc->data.seq_len);

    if (rc->train.eval_tasks) { /* checked here, so that the message names the config file */
        EvalPlan plan;
        SyntheticConfig syn;
        char e[400];
        if (run_config_eval_tasks(rc, &plan, &syn, e, sizeof(e))) return rc_fail_keyed(c, e);
        if (!rc->train.eval_every)
            return rc_fail(c, "train.eval_tasks", "given, but train.eval_every is 0: the tasks run at evaluations");
    }
    const RcData* d = &rc->data;
    bool train = d->train.n || d->train_sources, val = d->val.n || d->val_sources;
    if (train && d->synthetic) return rc_fail(c, "data.synthetic", "given together with data.train: use one");
    if (!train && !d->synthetic)
        return rc_fail(c, "data.train", "no training data: give files or globs, or a data.synthetic generator");
    if (!val && !d->synthetic && rc->train.eval_every)
        return rc_fail(c, "data.val",
                       "empty while train.eval_every is %zu: give files or globs, or set "
                       "train.eval_every to 0",
                       rc->train.eval_every);
    if (d->document_mask && d->eos_token_id == RC_UNSET && !run_config_sizes_from_file(rc) &&
        strcmp(d->format, "jsonl"))
        return rc_fail(c, "data.eos_token_id",
                       "is required with data.document_mask: the token that ends each "
                       "document (model.init_from's checkpoint supplies it when its config.json has eos_token_id)");
    return 0;
}

/* Defaults that do not fit a short run adapt to it, with a note; a value given explicitly is never changed
   (validate then refuses a contradiction): no validation data turns evaluation off, and the 100-step
   warmup shrinks to a tenth of a run shorter than 1000 steps. */
static void adapt_defaults(RunConfig* rc) {
    size_t n = 0;
    rc->notes[0] = 0;
    if (!rc->data.val.n && !rc->data.val_sources && !rc->data.synthetic && rc->train.eval_every &&
        !run_config_was_set(rc, "train.eval_every")) {
        rc->train.eval_every = 0;
        n += (size_t)snprintf(rc->notes + n, sizeof(rc->notes) - n,
                              "note: no data.val given: evaluation is off "
                              "(give data.val files to evaluate every train.eval_every steps)\n");
    }
    if (rc->train.outer.every != RC_UNSET && !run_config_was_set(rc, "train.shard_optimizer") &&
        n < sizeof(rc->notes)) {
        rc->train.shard_optimizer = false;
        n += (size_t)snprintf(rc->notes + n, sizeof(rc->notes) - n,
                              "note: train.outer (DiLoCo): every rank keeps its own whole AdamW state "
                              "(train.shard_optimizer false)\n");
    }
    size_t warm = rc->train.steps / 10;
    if (!run_config_was_set(rc, "optim.warmup_steps") && rc->optim.cfg.warmup_steps > warm &&
        rc->train.steps < 10 * rc->optim.cfg.warmup_steps && n < sizeof(rc->notes)) {
        snprintf(rc->notes + n, sizeof(rc->notes) - n,
                 "note: optim.warmup_steps %zu (the default) is more than a "
                 "tenth of train.steps %zu: warming up for %zu steps\n",
                 rc->optim.cfg.warmup_steps, rc->train.steps, warm);
        rc->optim.cfg.warmup_steps = warm;
    }
}

int run_config_load(RunConfig* rc, const char* path, const char* const* overrides, size_t n_overrides, char* err,
                    size_t err_len) {
    run_config_defaults(rc);
    RcCtx c = {rc, path, err, err_len, false, NULL};
    if (err && err_len) err[0] = 0;
    if (path) {
        if (strlen(path) >= sizeof(rc->source)) return rc_fail(&c, NULL, "config path too long");
        strcpy(rc->source, path);
        if (load_file(&c, path)) return -1;
    }
    char arg[RC_PATH_LEN + 16];
    for (size_t i = 0; i < n_overrides; i++) {
        snprintf(arg, sizeof(arg), "--set %s", overrides[i]);
        c.src = arg;
        if (rc_apply_override(&c, overrides[i])) return -1;
    }
    c.src = path;
    adapt_defaults(rc);
    c.by_key = true;
    return validate(&c);
}

/* ---- output: the print and the JSON share value_json ---- */

/* left out: with init_from or from_config, a key the config.json provides that was not set */
static bool from_checkpoint(const RunConfig* rc, const RcKey* k) {
    return run_config_sizes_from_file(rc) && (k->flags & KF_CKPT) && !rc->set[k - RC_KEYS];
}

/* the shortest text that reads back as the same double */
static cJSON* number_json(double x) {
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof(buf), "%.*g", digits, x);
        if (strtod(buf, NULL) == x) break;
    }
    return cJSON_CreateRaw(buf);
}

/* one key's value (a section: an empty object) */
static cJSON* value_json(const RunConfig* rc, const RcKey* k) {
    const void* f = (const char*)rc + k->off;
    char buf[32];
    cJSON* v;
    switch (k->type) {
    case KT_OBJ: return cJSON_CreateObject();
    case KT_STR: return (k->flags & KF_NULL) && !*(const char*)f ? cJSON_CreateNull() : cJSON_CreateString(f);
    case KT_WORD: return cJSON_CreateString(f);
    case KT_ENUM: return cJSON_CreateString(rc_word(k->choices, *(const int*)f, buf, sizeof(buf)));
    case KT_BOOL: return cJSON_CreateBool(*(const bool*)f);
    case KT_SIZE:
        if ((k->flags & KF_NULL) && *(const size_t*)f == RC_UNSET) return cJSON_CreateNull();
        snprintf(buf, sizeof(buf), "%zu", *(const size_t*)f);
        return cJSON_CreateRaw(buf);
    case KT_U64:
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)*(const uint64_t*)f);
        return cJSON_CreateRaw(buf);
    case KT_REAL:
        return (k->flags & KF_NULL) && *(const double*)f == 0 ? cJSON_CreateNull() : number_json(*(const double*)f);
    case KT_LIST:
        if (f == &rc->data.train && rc->data.train_sources) return cJSON_Duplicate(rc->data.train_sources, 1);
        if (f == &rc->data.val && rc->data.val_sources) return cJSON_Duplicate(rc->data.val_sources, 1);
        v = cJSON_CreateArray();
        for (size_t i = 0; i < ((const RcList*)f)->n; i++)
            cJSON_AddItemToArray(v, cJSON_CreateString(((const RcList*)f)->v[i]));
        return v;
    case KT_LAYERS:
        if (!rc->model.positions.n_layers_list) return cJSON_CreateNull();
        v = cJSON_CreateArray();
        for (size_t i = 0; i < rc->model.positions.n_layers_list; i++)
            cJSON_AddItemToArray(v, cJSON_CreateString(pos_mode_name(((const PosMode*)f)[i])));
        return v;
    case KT_LRMULT:
        v = cJSON_CreateObject();
        for (size_t i = 0; i < rc->optim.lr_mult.n; i++)
            cJSON_AddItemToObject(v, rc->optim.lr_mult.v[i].pattern, number_json(rc->optim.lr_mult.v[i].mult));
        return v;
    case KT_RAW: return *(cJSON* const*)f ? cJSON_Duplicate(*(cJSON* const*)f, 1) : cJSON_CreateNull();
    }
    return NULL;
}

void run_config_print(const RunConfig* rc, FILE* fp) {
    const char* section = "";
    for (size_t i = 0; i < RC_N_KEYS; i++) { /* one line per section: its own keys follow it in the table */
        const RcKey* k = &RC_KEYS[i];
        if (k->type == KT_OBJ) {
            fprintf(fp, "%s%s:", i ? "\n" : "", k->path);
            section = k->path;
            continue;
        }
        const char* dot = strrchr(k->path, '.');
        CHECK(dot && (size_t)(dot - k->path) == strlen(section) && !strncmp(k->path, section, strlen(section)),
              "key table order: %s is not a key of section %s", k->path, section);
        if (from_checkpoint(rc, k)) {
            fprintf(fp, " %s=(%s)", dot + 1, rc->model.init_from[0] ? "init_from" : "from_config");
            continue;
        }
        cJSON* v = value_json(rc, k);
        char* text = cJSON_PrintUnformatted(v);
        CHECK(v && text, "out of memory printing %s", k->path);
        fprintf(fp, " %s=%s", dot + 1, text);
        cJSON_free(text);
        cJSON_Delete(v);
    }
    fprintf(fp, "\n%s", rc->notes);
}

char* run_config_to_json(const RunConfig* rc) {
    cJSON* root = cJSON_CreateObject();
    cJSON* node[RC_KEYS_MAX] = {0};
    char parent_path[RC_PATH_LEN];
    for (size_t i = 0; i < RC_N_KEYS; i++) {
        const RcKey* k = &RC_KEYS[i];
        const char* dot = strrchr(k->path, '.');
        cJSON* parent = root;
        if (dot) {
            snprintf(parent_path, sizeof(parent_path), "%.*s", (int)(dot - k->path), k->path);
            parent = node[rc_find_key(parent_path) - RC_KEYS];
        }
        if (!parent || from_checkpoint(rc, k)) continue;
        node[i] = value_json(rc, k);
        CHECK(node[i], "out of memory writing %s", k->path);
        cJSON_AddItemToObject(parent, dot ? dot + 1 : k->path, node[i]);
    }
    char* text = cJSON_Print(root);
    CHECK(text, "out of memory writing the config as JSON");
    size_t n = strlen(text);
    char* out = mallocCheck(n + 2);
    memcpy(out, text, n);
    strcpy(out + n, "\n");
    cJSON_free(text);
    cJSON_Delete(root);
    return out;
}
