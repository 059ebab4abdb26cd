/* The evaluation of a training run (train/trainer.h, trainer_eval): the validation loss of every stream,
   summed over the ranks, train.eval_tasks' retrieval accuracies and multiple-choice acc and acc_norm, into
   metrics.jsonl. */
#include <stdio.h>

#include "common/dist.h"
#include "train/trainer.h"

Batch trainer_eval_batch(const Trainer* tr) {
    Batch b = tr->batch;
    b.target_weights = NULL;
    b.lora_dropout_on = false;
    b.lora_dropout_key = 0;
    b.repo_pdrop = 0;
    return b;
}

/* The loss of validation stream k over n batches of B rows, summed over the ranks (batch j on rank j mod
   world); every rank takes part in each round's stop check, so all ranks leave at the same round. False
   when a signal asked to stop. */
static bool eval_stream(Trainer* tr, size_t k, size_t n, double* total, double* total_z) {
    size_t world = (size_t)tr->world;
    Batch b = trainer_eval_batch(tr);
    *total = 0;
    *total_z = 0;
    for (size_t j0 = 0; j0 < n; j0 += world) {
        if (tr->stop && dist_any(*tr->stop != 0)) return false;
        size_t j = j0 + (size_t)tr->rank;
        if (j >= n) continue;
        data_source_val_batch(&tr->data, k, j, &b);
        Loss l = model_forward(&tr->model, &b);
        *total += l.loss;
        *total_z += l.z;
    }
    dist_allreduce_sum_double(total, 1);
    if (tr->model.opts.z_loss > 0) dist_allreduce_sum_double(total_z, 1);
    return true;
}

/* Every (family, length) of train.eval_tasks through eval_task (build/eval's code) with the current
   weights: name "family@length" and exact-match accuracy each. Every rank scores the same items (the
   generator is not split); the stop check between tasks (and after the last) keeps the ranks together, and a
   signal ends a task early on the rank it reaches. */
static bool eval_tasks(Trainer* tr, char (*name)[40], const char** name_ptr, double* acc, double* token_acc,
                       size_t* n) {
    const EvalPlan* p = &tr->tasks;
    tr->gen.stop = tr->stop; /* a signal stops a long task within about a millisecond of work */
    for (int f = 0; f < SYN_N_FAMILIES; f++) {
        if (!p->family_on[f]) continue;
        for (size_t j = 0; j < p->n_lengths; j++) {
            if (tr->stop && dist_any(*tr->stop != 0)) return false;
            TaskResult r;
            eval_task(&r, &tr->gen, &tr->task_syn, (SynFamily)f, p->lengths[j], p->items, p->seed, -1, NULL);
            snprintf(name[*n], 40, "%s@%zu", synthetic_family_name((SynFamily)f), p->lengths[j]);
            name_ptr[*n] = name[*n];
            token_acc[*n] = r.items ? (double)r.tokens_correct / (double)(r.items * r.answer_len) : 0;
            acc[(*n)++] = r.items ? (double)r.correct / (double)r.items : 0;
        }
    }
    return !(tr->stop && dist_any(*tr->stop != 0)); /* the last task may have stopped: nothing is logged */
}

bool trainer_eval(Trainer* tr) {
    size_t n_streams = data_source_val_streams(&tr->data), all = 0;
    const char* names[MIX_MAX_SOURCES];
    double loss[MIX_MAX_SOURCES], weighted = 0, weighted_z = 0;
    size_t batches[MIX_MAX_SOURCES];
    for (size_t k = 0; k < n_streams; k++) { /* each stream's mean, then the mean weighted by its tokens */
        size_t n = data_source_val_batches(&tr->data, k, tr->rc.train.eval_batches, tr->B, tr->T);
        double total, total_z;
        if (!eval_stream(tr, k, n, &total, &total_z)) {
            tr->model.has_loss = false;
            return false;
        }
        names[k] = data_source_val_name(&tr->data, k);
        loss[k] = n ? (total - total_z) / (double)n : 0; /* the cross-entropy; the z-loss term apart */
        batches[k] = n;
        weighted += total - total_z; /* = loss_k * n_k: every batch has B*T tokens */
        weighted_z += total_z;
        all += n;
    }
    tr->model.has_loss = false; /* an eval forward is never followed by backward */
    char task_names[EVAL_MAX_TASKS][40];
    const char* task_ptr[EVAL_MAX_TASKS];
    double acc[EVAL_MAX_TASKS], token_acc[EVAL_MAX_TASKS];
    size_t n_tasks = 0;
    if (tr->has_tasks && !eval_tasks(tr, task_names, task_ptr, acc, token_acc, &n_tasks)) return false;
    char mc_names[2 * MC_MAX_FILES][MC_METRIC_LEN];
    const char* mc_ptr[2 * MC_MAX_FILES];
    double mc_values[2 * MC_MAX_FILES];
    size_t n_mc = 0;
    if (tr->mc.on && !trainer_mc_eval(tr, mc_names, mc_ptr, mc_values, &n_mc)) return false;
    tr->last_val_loss = all ? weighted / (double)all : 0;
    tr->has_val_loss = true;
    tr->val_step = tr->state.step;
    EvalLog e = {.step = tr->state.step,
                 .val_loss = tr->last_val_loss,
                 .val_z_loss = tr->model.opts.z_loss > 0 && all ? weighted_z / (double)all : -1,
                 .n_batches = all,
                 .n_sources = names[0] ? n_streams : 0,
                 .source_names = names,
                 .source_loss = loss,
                 .source_batches = batches,
                 .n_tasks = n_tasks,
                 .task_names = task_ptr,
                 .task_acc = acc,
                 .task_token_acc = token_acc,
                 .n_mc = n_mc,
                 .mc_names = mc_ptr,
                 .mc_values = mc_values};
    metrics_eval(&tr->metrics, &e);
    return true;
}
