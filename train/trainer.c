/* The training run: setup, step, eval, save (DESIGN.md §1, issue #4). */
#include "train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/threads.h"
#include "model/hf_checkpoint.h"
#include "model/hf_config.h"
#include "optim/clip.h"
#include "optim/schedule.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the checkpoint to resume from, if any (run.resume: auto | never | a path) */
static bool find_resume(const RunConfig* rc, char* path, size_t len) {
    if (rc->run.resume_mode == RESUME_NEVER) return false;
    if (rc->run.resume_mode == RESUME_AUTO) return ckpt_find_latest(rc->run.out_dir, path, len);
    const char* p = rc->run.resume;
    char ts[4096];
    snprintf(ts, sizeof(ts), "%s/trainer_state.json", p);
    if (path_exists(ts)) { snprintf(path, len, "%s", p); return true; }
    CHECK(ckpt_find_latest(p, path, len), "run.resume: '%s' is neither a checkpoint nor a run directory with one", p);
    return true;
}

/* init_from names a checkpoint directory, or a run directory whose `latest` names one */
static void resolve_init_from(const char* from, char* dir, size_t len) {
    char p[4096];
    snprintf(p, sizeof(p), "%s/config.json", from);
    if (path_exists(p) || !is_dir(from)) { snprintf(dir, len, "%s", from); return; }
    CHECK(ckpt_find_latest(from, dir, len), "model.init_from: '%s' has no config.json and no checkpoint", from);
}

static void resolve_model_config(Trainer* tr) {
    char err[1024];
    RunConfig* rc = &tr->rc;
    if (tr->resumed_from[0]) {   /* the checkpoint's own config: positions as they were trained */
        hf_config_read(tr->resumed_from, &tr->mcfg);
        if (run_config_apply_checkpoint(rc, &tr->mcfg, err, sizeof(err))) DIE("%s", err);
        return;
    }
    if (rc->model.init_from[0]) {
        resolve_init_from(rc->model.init_from, tr->init_dir, sizeof(tr->init_dir));
        hf_config_read(tr->init_dir, &tr->mcfg);
        if (run_config_apply_checkpoint(rc, &tr->mcfg, err, sizeof(err))) DIE("%s", err);
        return;
    }
    run_config_model(rc, &tr->mcfg);
}

void trainer_setup(Trainer* tr) {
    RunConfig* rc = &tr->rc;
    threads_init((int)rc->run.threads);
    threads_print(stdout);
    run_config_print(rc, stdout);
    tr->B = rc->train.batch_size;
    tr->T = rc->data.seq_len;
    tr->rows_per_step = tr->B * rc->train.grad_accum;
    tr->resumed_from[0] = 0;
    find_resume(rc, tr->resumed_from, sizeof(tr->resumed_from));
    resolve_model_config(tr);
    model_config_validate(&tr->mcfg);

    const char* train_files[RC_LIST_MAX];
    const char* val_files[RC_LIST_MAX];
    for (size_t i = 0; i < rc->data.train.n; i++) train_files[i] = rc->data.train.v[i];
    for (size_t i = 0; i < rc->data.val.n; i++) val_files[i] = rc->data.val.v[i];
    data_source_open(&tr->data, rc->data.synthetic, train_files, rc->data.train.n, val_files, rc->data.val.n,
                     rc->data.format, rc->data.order, rc->run.seed, tr->mcfg.V, tr->T);

    run_config_optim(rc, &tr->ocfg);
    const char* freeze[OPTIM_MAX_PATTERNS];
    size_t n_freeze = optim_freeze_patterns(&tr->ocfg, freeze);
    model_build(&tr->model, &tr->mcfg, tr->B, tr->T, freeze, n_freeze, true);
    tr->model.z_loss = rc->optim.z_loss;
    adamw_build(&tr->opt, &tr->model.tensors, &tr->ocfg);
    tr->tokens = mallocCheck(tr->B * tr->T * sizeof(int32_t));
    tr->targets = mallocCheck(tr->B * tr->T * sizeof(int32_t));
    memset(&tr->state, 0, sizeof(tr->state));

    if (tr->resumed_from[0]) {
        ckpt_load(tr->resumed_from, &tr->model, &tr->opt, &tr->state);
        printf("resumed from %s at step %zu\n", tr->resumed_from, tr->state.step);
    } else if (rc->model.init_from[0]) {
        hf_load_weights(&tr->model, tr->init_dir, rc->run.seed, true);
    } else {
        model_init_weights(&tr->model, rc->run.seed, rc->model.init_std);
    }
    /* all input is checked: only now does the run write anything */
    mkdir_p(rc->run.out_dir);
    ckpt_clean_stale(rc->run.out_dir);
    tr->config_json = run_config_to_json(rc);
    char path[4096];
    snprintf(path, sizeof(path), "%s/run_config.json", rc->run.out_dir);
    file_write_atomic(path, tr->config_json, strlen(tr->config_json));
    metrics_open(&tr->metrics, rc->run.out_dir, tr->resumed_from[0] ? tr->state.step : (size_t)-1);
}

void trainer_free(Trainer* tr) {
    metrics_close(&tr->metrics);
    data_source_close(&tr->data);
    adamw_free(&tr->opt);
    model_free(&tr->model);
    free(tr->tokens);
    free(tr->targets);
    free(tr->config_json);
    run_config_free(&tr->rc);
}

/* stop the run at (1-based) step `step`: the last checkpoint on disk is the last good state */
static _Noreturn void die_nonfinite(Trainer* tr, size_t step, const char* what) {
    metrics_break(&tr->metrics);
    char last[4096];
    bool have = ckpt_find_latest(tr->rc.run.out_dir, last, sizeof(last));
    DIE("step %zu: %s; stopping. The last good checkpoint is %s", step, what, have ? last : "(none written yet)");
}

void trainer_step(Trainer* tr) {
    Model* m = &tr->model;
    size_t step = tr->state.step, accum = tr->rc.train.grad_accum;
    double t0 = now_s(), loss = 0;
    model_zero_grad(m);
    for (size_t k = 0; k < accum; k++) {   /* micro-batch k is rows [k*B, (k+1)*B) of the step */
        data_source_rows(&tr->data, false, step, tr->rows_per_step, k * tr->B, tr->B, tr->T, tr->tokens, tr->targets);
        double l = model_forward(m, tr->tokens, tr->targets);
        if (!isfinite(l)) die_nonfinite(tr, step + 1, "the loss is not finite");
        loss += l / (double)accum;
        model_backward(m, 1.0 / (double)accum);
    }
    double norm = grad_global_norm(m->grads, m->tensors.n_grads);
    if (!isfinite(norm)) {
        long bad = first_nonfinite_tensor(&m->tensors, m->grads);
        char what[256];
        snprintf(what, sizeof(what), "the gradient of %s is not finite",
                 bad >= 0 ? m->tensors.t[bad].name : "the model (sum of squares overflowed)");
        die_nonfinite(tr, step + 1, what);
    }
    grad_clip(m->grads, m->tensors.n_grads, tr->ocfg.grad_clip, norm);
    double lr = lr_at(&tr->ocfg, step, tr->rc.train.steps);
    adamw_step(&tr->opt, m->params, m->grads, lr, step);
    double dt = now_s() - t0;

    tr->state.step = step + 1;
    tr->state.tokens_seen += tr->rows_per_step * tr->T;
    tr->state.last_loss = loss;
    tr->state.has_loss = true;
    if (!tr->has_first_loss) tr->first_loss = loss, tr->has_first_loss = true;
    size_t every = tr->rc.train.log_every ? tr->rc.train.log_every : 1;
    if (tr->state.step % every == 0 || tr->state.step == tr->rc.train.steps) {
        StepLog s = {tr->state.step, tr->rc.train.steps, loss, lr, norm, dt * 1e3,
                     tr->rows_per_step * tr->T / dt, dt * (double)(tr->rc.train.steps - tr->state.step),
                     tr->state.tokens_seen};
        metrics_step(&tr->metrics, &s);
    }
}

double trainer_eval(Trainer* tr) {
    size_t n = tr->rc.train.eval_batches;
    double total = 0;
    for (size_t k = 0; k < n; k++) {   /* validation batch k = rows [k*B, (k+1)*B) of the held-out stream */
        data_source_rows(&tr->data, true, k, tr->B, 0, tr->B, tr->T, tr->tokens, tr->targets);
        total += model_forward(&tr->model, tr->tokens, tr->targets);
    }
    tr->model.has_loss = false;   /* an eval forward is never followed by backward */
    double val = n ? total / (double)n : 0;
    tr->last_val_loss = val;
    tr->has_val_loss = true;
    metrics_eval(&tr->metrics, tr->state.step, val, n);
    return val;
}

void trainer_save(Trainer* tr) {
    metrics_break(&tr->metrics);
    StDtype dt = strcmp(tr->rc.train.save_dtype, "bf16") ? ST_F32 : ST_BF16;
    double t0 = now_s();
    ckpt_save(tr->rc.run.out_dir, &tr->model, &tr->opt, &tr->state, tr->config_json, dt, tr->rc.train.keep_last);
    printf("saved %s/step_%07zu (%.1f s)\n", tr->rc.run.out_dir, tr->state.step, now_s() - t0);
    fflush(stdout);
}
