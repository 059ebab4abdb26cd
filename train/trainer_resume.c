/* Where a run starts: the checkpoint it resumes from and the checks that it continues that checkpoint's run
   (train/trainer.h). */
#include "train/trainer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/dist.h"
#include "common/fileio.h"
#include "common/threads.h"
#include "train/run_dir.h"

bool trainer_find_resume(const RunConfig* rc, char* path, size_t len) {
    if (rc->run.resume_mode == RESUME_NEVER) return false;
    if (rc->run.resume_mode == RESUME_AUTO) return ckpt_find_latest(rc->run.out_dir, path, len);
    const char* p = rc->run.resume;
    char ts[4096];
    snprintf(ts, sizeof(ts), "%s/trainer_state.json", p);
    if (path_exists(ts)) {
        snprintf(path, len, "%s", p);
        return true;
    }
    CHECK(ckpt_find_latest(p, path, len), "run.resume: '%s' is neither a checkpoint nor a run directory with one", p);
    return true;
}

/* Rank 0, before anything is built: a run that does not continue out_dir's own
   checkpoints refuses an out_dir holding an earlier run (its metrics.jsonl
   would start over and keep_last would prune its checkpoints) unless
   run.overwrite says to start over there. run.resume "auto" without a
   complete checkpoint starts at step 0 with a note. */
static void check_earlier_run(const Trainer* tr) {
    const RunConfig* rc = &tr->rc;
    const char* out = rc->run.out_dir;
    if (!is_dir(out)) return;
    char parent[4096], a[4096], b[4096];
    if (tr->resumed_from[0]) {
        dir_of(tr->resumed_from, parent, sizeof(parent));
        if (realpath(parent, a) && realpath(out, b) && !strcmp(a, b)) return; /* continues out_dir's run */
    }
    RunDirContents c = run_dir_contents(out);
    if (!c.n_steps && !c.metrics) return;
    char what[128];
    snprintf(what, sizeof(what), "%zu step director%s%s", c.n_steps, c.n_steps == 1 ? "y" : "ies",
             c.metrics ? " and metrics.jsonl" : "");
    if (rc->run.resume_mode == RESUME_AUTO && !tr->resumed_from[0])
        printf("note: run.out_dir '%s' holds %s but no complete checkpoint: starting at step 0, "
               "metrics.jsonl starts over\n",
               out, what);
    else if (rc->run.overwrite)
        printf("note: run.overwrite: starting over in '%s', which holds %s of an earlier run: metrics.jsonl "
               "starts over and keep_last prunes the earlier checkpoints as this run saves its own\n",
               out, what);
    else
        DIE("run.out_dir '%s' holds an earlier run (%s) that this run does not continue (run.resume \"%s\"): "
            "set run.resume to \"auto\" to continue it, run.overwrite to true to start over there, or choose "
            "another run.out_dir",
            out, what, rc->run.resume);
}

/* Row r of step s is a function of (s * rows_per_step + r) in every data order
   (data/tokens.h, data/mixture.h): resumed with another global batch, step s
   would start elsewhere in the data, skipping or repeating rows. Refused
   before anything large is built; checkpoints older than the field pass. */
static void check_resume_batch(const Trainer* tr) {
    TrainerState st;
    ckpt_load_state(tr->resumed_from, &st);
    if (!st.rows_per_step || st.rows_per_step == tr->rows_per_step) return;
    DIE("cannot resume from %s: it was trained with %zu rows per step (batch_size x grad_accum x ranks, %zu "
        "rank%s), this run takes %zu (train.batch_size %zu x train.grad_accum %zu x %d rank%s); the rows of "
        "each step depend on that number, so the data order would change. Set batch_size x grad_accum x ranks "
        "to %zu, or start a new run from these weights with model.init_from",
        tr->resumed_from, st.rows_per_step, st.world_size, st.world_size == 1 ? "" : "s", tr->rows_per_step, tr->B,
        tr->rc.train.grad_accum, tr->world, tr->world == 1 ? "" : "s", st.rows_per_step);
}

/* Which rows step s reads is a function of run.seed (the shuffle, and the dropout masks), data.order and
   data.seq_len as well: resumed with another value of one, the run would read other data from the step it
   resumes at than the run it continues, repeating or skipping rows. Refused like another global batch;
   train.compute_dtype and the products' engine change only the arithmetic, and are noted
   (trainer_products.c). Checkpoints without a saved config pass. */
static void check_resume_data(const Trainer* tr) {
    cJSON* cfg = ckpt_load_config(tr->resumed_from);
    if (!cfg) return;
    const RunConfig* rc = &tr->rc;
    char now[3][64], then[3][64];
    static const char* const keys[3][2] = {{"run", "seed"}, {"data", "seq_len"}, {"data", "order"}};
    snprintf(now[0], sizeof(now[0]), "%llu", (unsigned long long)rc->run.seed);
    snprintf(now[1], sizeof(now[1]), "%zu", rc->data.seq_len);
    snprintf(now[2], sizeof(now[2]), "%s", rc->data.order == ORDER_SHUFFLE ? "shuffle" : "sequential");
    for (int k = 0; k < 3; k++) {
        const cJSON* v =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cfg, keys[k][0]), keys[k][1]);
        if (cJSON_IsNumber(v)) snprintf(then[k], sizeof(then[k]), "%.0f", v->valuedouble);
        else snprintf(then[k], sizeof(then[k]), "%.60s", cJSON_IsString(v) ? v->valuestring : now[k]);
        if (strcmp(now[k], then[k]))
            DIE("cannot resume from %s: it was trained with %s.%s %s, this run has %s; which rows each step reads "
                "depends on run.seed, data.order and data.seq_len, so the continuation would read other data than "
                "the run it continues. Set %s.%s back to %s, or start a new run from these weights with "
                "model.init_from",
                tr->resumed_from, keys[k][0], keys[k][1], then[k], now[k], keys[k][0], keys[k][1], then[k]);
    }
    cJSON_Delete(cfg);
}

/* A resumed run with run.threads 0 computes with the thread count its checkpoint was made with, whatever
   the cores' load now, so it continues bit-identically (results move in the last bits between counts) */
static void keep_resumed_threads(const Trainer* tr) {
    TrainerState st;
    ckpt_load_state(tr->resumed_from, &st);
    if (!st.threads || st.threads == threads_max()) return;
    threads_init((int)st.threads);
    printf("note: resuming with the %zu thread(s) per rank %s was computed with, for a bit-identical continuation "
           "(run.threads sets another count)\n",
           st.threads, tr->resumed_from);
}

void trainer_lock_and_find_resume(Trainer* tr) {
    const RunConfig* rc = &tr->rc;
    tr->resumed_from[0] = 0;
    if (tr->rank == 0) {
        if (is_dir(rc->run.out_dir)) run_dir_lock(rc->run.out_dir);
        trainer_find_resume(rc, tr->resumed_from, sizeof(tr->resumed_from));
        check_earlier_run(tr);
    }
    dist_bcast(tr->resumed_from, sizeof(tr->resumed_from)); /* rank 0 decides for all */
    if (tr->resumed_from[0]) check_resume_batch(tr);
    if (tr->resumed_from[0]) check_resume_data(tr);
    if (tr->resumed_from[0] && !rc->run.threads) keep_resumed_threads(tr);
}
