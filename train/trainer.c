/* The training run: setup, step, eval, save (docs/design.md, "One training step"). */
#include "train/trainer.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h> /* getpid: a new run's id */

#include "common/check.h"
#include "common/clock.h"
#include "common/dist.h"
#include "common/fileio.h"
#include "common/hash.h" /* mix_triple: the LoRA dropout key of a micro-batch */
#include "common/threads.h"
#include "hf/ckpt_weights.h"
#include "hf/hf_checkpoint.h"
#include "model/products.h" /* the engine a checkpoint records */
#include "optim/clip.h"
#include "optim/schedule.h"
#include "train/linkplan.h"
#include "train/memplan.h"
#include "train/run_dir.h"
#include "train/timeplan.h"

/* The optimizer: the whole state, or this rank's slice of it (ZeRO-1); each rank's slice recorded for the gathers */
static void build_optimizer(Trainer* tr) {
    const TensorTable* tt = &tr->model.tensors;
    tr->sharded = tr->world > 1 && tr->rc.train.shard_optimizer;
    tr->shard_counts = mallocCheck((size_t)tr->world * sizeof(size_t));
    tr->shard_displs = mallocCheck((size_t)tr->world * sizeof(size_t));
    for (int r = 0; r < tr->world; r++) {
        size_t lo, hi;
        dist_share(tt->n_grads, r, tr->world, &lo, &hi);
        tr->shard_displs[r] = lo;
        tr->shard_counts[r] = hi - lo;
    }
    size_t lo = tr->sharded ? tr->shard_displs[tr->rank] : 0;
    size_t hi = tr->sharded ? lo + tr->shard_counts[tr->rank] : tt->n_grads;
    adamw_build_slice(&tr->opt, tt, &tr->ocfg, lo, hi);
    /* the BF16 mirror is written in AdamW's pass; sharded, the other slices arrive by all-gather and the
       mirror is rewritten whole before the next product (gather_params) */
    if (tr->model.opts.compute_bf16 && !tr->sharded) {
        tr->opt.mirror = tr->model.params_bf16;
        tr->opt.mirror_from = tr->model.mirror_from;
    }
    if (tr->world > 1)
        printf("data parallel: %d ranks, global batch %zu rows (%zu x %zu x %d); AdamW state %s\n", tr->world,
               tr->rows_per_step, tr->B, tr->rc.train.grad_accum, tr->world,
               tr->sharded ? "sharded (train.shard_optimizer)" : "replicated on every rank");
}

void trainer_memory_plan(Trainer* tr, bool plan_only) {
    const RunConfig* rc = &tr->rc;
    MemPlan plan;
    memplan_compute(&plan, &tr->mcfg, rc, (size_t)tr->world, memplan_data_bytes(rc));
    plan.local_ranks = (size_t)dist_local_world();
    plan.plan_only = plan_only;
    memplan_print(&plan, stdout);
    char what[192];
    double avail = memplan_available(what, sizeof(what));
    if (plan_only) printf("available: %.2f GiB (%s)\n", avail / 1073741824.0, what);
    TimePlan tp;
    TrainerState st = {0};
    if (tr->resumed_from[0]) ckpt_load_state(tr->resumed_from, &st);
    timeplan_compute(&tp, &tr->mcfg, rc, st.step);
    timeplan_print(&tp, stdout);
    if (rc->run.link_gbps > 0) { /* one rank: the plan for 2 */
        /* summed last: the input embedding's gradient, unless LoRA freezes it (a freeze pattern may too: then
           this overstates what stays exposed) */
        double embed = tr->mcfg.lora_rank ? 0 : (double)tr->mcfg.V * (double)tr->mcfg.D;
        LinkPlan lp = {.gbps = rc->run.link_gbps,
                       .trained = plan.n.grads,
                       .ranks = tr->world > 1 ? (size_t)tr->world : 2,
                       .compute_s = tp.s_per_step,
                       .sharded = plan.sharded,
                       .overlap = rc->train.overlap_grad_reduce,
                       .last_share = plan.n.grads ? embed / (double)plan.n.grads : 0};
        linkplan_print(&lp, stdout);
    }
    fflush(stdout);
    memplan_check(&plan, &tr->mcfg, rc, avail, what);
}

/* run.threads, else the cores shared among this machine's ranks: for the run, and for --plan's sgemm probe */
static void init_threads(const RunConfig* rc) {
    int threads = (int)rc->run.threads;
    threads_init(threads ? threads : threads_share(dist_local_world()));
}

void trainer_plan_only(Trainer* tr) {
    RunConfig* rc = &tr->rc;
    tr->rank = dist_rank();
    tr->world = dist_world();
    init_threads(rc);
    tr->resumed_from[0] = 0;
    trainer_find_resume(rc, tr->resumed_from, sizeof(tr->resumed_from)); /* reads out_dir, locks nothing */
    trainer_resolve_model(tr, true);
    model_config_validate(&tr->mcfg);
    trainer_choose_products(tr);
    trainer_memory_plan(tr, true);
}

/* train.eval_tasks: the plan (checked at config load), the generator settings and a KV cache for the longest
   length of the retrieval families (the multiple-choice files: train/trainer_mc.c) */
static void setup_tasks(Trainer* tr) {
    const RunConfig* rc = &tr->rc;
    char err[512];
    if (run_config_eval_tasks(rc, &tr->tasks, &tr->task_syn, err, sizeof(err))) DIE("%s", err);
    if (!eval_plan_has_families(&tr->tasks)) return;
    synthetic_validate(&tr->task_syn, tr->mcfg.V);
    size_t chunk, max_len = eval_plan_sizes(&tr->tasks, &tr->task_syn, &chunk); /* dies when too short */
    gen_build(&tr->gen, &tr->model, max_len, chunk);
    tr->has_tasks = true;
}

/* what a LoRA run's checkpoints hold of the base */
static void note_lora_base(const Trainer* tr) {
    if (!tr->mcfg.lora_rank || tr->rank != 0) return;
    const LoraBase* b = &tr->state.lora_base;
    if (!b->path[0])
        printf("note: this LoRA run's base is not on disk by itself (a fresh model without "
               "model.init_from, or resumed from a checkpoint that names no base): each checkpoint "
               "keeps a copy of it (model.safetensors)\n");
    else
        printf("LoRA base: %s (weights fingerprint %016llx); checkpoints %s\n", b->path,
               (unsigned long long)b->fingerprint,
               tr->rc.model.lora.save_base ? "keep a copy of it too (model.lora.save_base)"
                                           : "name it and hold the adapter alone");
}

/* The data source of data.*: token files, a mixture, the synthetic generator or JSONL records (tokenized
   with the run's tokenizer), with documents ended by the model's end-of-document token */
static void open_data(Trainer* tr) {
    const RunConfig* rc = &tr->rc;
    char err[1024];
    int32_t eos;
    if (run_config_eos(rc, &tr->mcfg, &eos, err, sizeof(err))) DIE("%s", err);
    const char* train_files[RC_LIST_MAX];
    const char* val_files[RC_LIST_MAX];
    for (size_t i = 0; i < rc->data.train.n; i++) train_files[i] = rc->data.train.v[i];
    for (size_t i = 0; i < rc->data.val.n; i++) val_files[i] = rc->data.val.v[i];
    bool jsonl = !strcmp(rc->data.format, "jsonl");
    char tok[4200]; /* jsonl: data.tokenizer, else the model's tokenizer.json when it has one */
    if (!jsonl || !trainer_tokenizer_json(tr, tok, sizeof(tok))) tok[0] = 0;
    data_source_open(&tr->data, &(DataSourceSpec){.synthetic = rc->data.synthetic,
                                                  .train = train_files,
                                                  .n_train = rc->data.train.n,
                                                  .val = val_files,
                                                  .n_val = rc->data.val.n,
                                                  .train_sources = rc->data.train_sources,
                                                  .val_sources = rc->data.val_sources,
                                                  .format = rc->data.format,
                                                  .tokenizer = tok[0] ? tok : NULL,
                                                  .order = rc->data.order,
                                                  .seed = rc->run.seed,
                                                  .vocab_size = tr->mcfg.V,
                                                  .T = tr->T});
    if (!jsonl) tr->data.eos = eos; /* packed JSONL rows know their records' boundaries */
}

/* Everything the memory plan needs checked (the multiple-choice files, the optimizer config), the plan, then
   the model, with its z-loss and the stds of new RePo weights, and what evaluates it (train.eval_tasks) */
static void build_model(Trainer* tr) {
    RunConfig* rc = &tr->rc;
    trainer_mc_check(tr); /* every multiple-choice file read and checked, the tokenizer loaded */
    run_config_optim(rc, &tr->ocfg);
    trainer_memory_plan(tr, false); /* may refuse to start: nothing large is allocated yet */
    const char* freeze[OPTIM_MAX_PATTERNS];
    size_t n_freeze = optim_freeze_patterns(&tr->ocfg, freeze);
    ModelOpts mo = {rc->train.recompute, memplan_head_chunk(rc, tr->mcfg.V), !strcmp(rc->train.compute_dtype, "bf16"),
                    rc->optim.z_loss};
    model_build_opts(&tr->model, &tr->mcfg, tr->B, tr->T, freeze, n_freeze, &mo, true);
    CHECK(tr->model.tensors.n_grads,
          "nothing to train: every tensor is frozen (%s); remove the optim.freeze "
          "patterns that match %s",
          tr->mcfg.lora_rank ? "with model.lora only the adapters and RePo weights "
                               "train, and optim.freeze matches them all"
                             : "optim.freeze matches every tensor",
          tr->mcfg.lora_rank ? "the adapters (e.g. \"*lora*\")" : "them");
    if (rc->train.eval_tasks) setup_tasks(tr);
    trainer_mc_setup(tr);
}

/* The micro-batch's buffers: the data source fills document ids and answer weights with every batch when the
   batch has them */
static void alloc_batch(Trainer* tr) {
    const RunConfig* rc = &tr->rc;
    batch_alloc(&tr->batch, tr->B, tr->T, rc->data.document_mask,
                tr->data.synthetic && tr->data.syn.answer_weight != 1.0);
    if (rc->data.document_mask) {
        if (tr->data.jsonl) printf("document masking: attention within the packed JSONL records, positions restart\n");
        else
            printf("document masking: attention within documents ended by token %" PRId32 ", positions restart\n",
                   tr->data.eos);
    }
}

/* The weights and state: a resumed checkpoint's, else model.init_from's (with new RePo and LoRA weights
   initialised), else fresh ones; then rank 0's copy on every rank */
static void restore_or_init(Trainer* tr) {
    const RunConfig* rc = &tr->rc;
    memset(&tr->state, 0, sizeof(tr->state));
    if (tr->resumed_from[0]) {
        ckpt_load(tr->resumed_from, &tr->model, &tr->opt, &tr->state);
        printf("resumed from %s at step %zu\n", tr->resumed_from, tr->state.step);
    } else {
        const RcPositions* p = &rc->model.positions; /* the stds of new RePo weights, fresh or continued */
        ModelInit init = {.seed = rc->run.seed,
                          .repo_std = {p->repo_gate_init_std, p->repo_content_init_std, p->repo_final_init_std}};
        if (rc->model.init_from[0]) {
            ckpt_weights_load(&tr->model, tr->init_dir, &init, true, tr->mcfg.lora_rank ? &tr->state.lora_base : NULL);
        } else {
            double std = trainer_init_std(tr);
            init.std = std;
            model_init_weights(&tr->model, &init);
            if (rc->model.from_config[0])
                printf("fresh weights of the architecture in %s: N(0, %g²) truncated at ±3σ, seed %llu\n",
                       rc->model.from_config, std, (unsigned long long)rc->run.seed);
        }
        tr->state.run_id = mix_triple(0x72756e2d6964ull, (uint64_t)time(NULL), (uint64_t)getpid(), 0) | 1;
    }
    note_lora_base(tr);
    /* every rank starts from rank 0's weights */
    dist_bcast(tr->model.params, tr->model.tensors.n_params * sizeof(real));
    model_params_changed(&tr->model);
}

/* The wire dtype, and train.outer's state: from the checkpoint resumed, else the weights every rank starts from */
static void setup_outer(Trainer* tr) {
    tr->wire_bf16 = tr->world > 1 && !strcmp(tr->rc.train.grad_wire_dtype, "bf16");
    if (tr->world > 1)
        printf("gradients on the wire: %s\n", tr->rc.train.outer.every != RC_UNSET
                                                  ? "none (train.outer: the "
                                                    "parameter change every train.outer.every steps)"
                                              : tr->wire_bf16 ? "bf16, summed in FP32"
                                                              : REAL_NAME);
    outer_init(&tr->outer, &tr->rc, &tr->model);
    if (tr->resumed_from[0]) outer_load(&tr->outer, tr->resumed_from, &tr->model, &tr->opt);
    bool sync = tr->world > 1 && !tr->outer.on;
    grad_reduce_init(&tr->reduce, &tr->model, sync, tr->wire_bf16, tr->rc.train.overlap_grad_reduce);
    if (sync)
        printf("gradient sum: %s\n", tr->reduce.overlap ? "each layer's during the backward (train.overlap_grad_reduce)"
                                     : tr->rc.train.overlap_grad_reduce
                                         ? "after the backward (MPI gives no MPI_THREAD_SERIALIZED: no overlap)"
                                         : "after the backward");
}

/* Rank 0, all input checked: only now does the run write anything. out_dir with its lock, run_config.json
   and metrics.jsonl. */
static void open_out_dir(Trainer* tr) {
    const RunConfig* rc = &tr->rc;
    tr->config_json = run_config_to_json(rc);
    if (tr->rank != 0) return; /* rank 0 alone writes to out_dir */
    mkdir_p(rc->run.out_dir);
    run_dir_lock(rc->run.out_dir); /* a new out_dir: two runs that both created it meet here */
    run_dir_clean_stale(rc->run.out_dir);
    char path[4096];
    snprintf(path, sizeof(path), "%s/run_config.json", rc->run.out_dir);
    file_write_atomic(path, tr->config_json, strlen(tr->config_json));
    metrics_open(&tr->metrics, rc->run.out_dir, tr->resumed_from[0] ? tr->state.step : 0);
    trainer_positions_setup(tr);
}

void trainer_setup(Trainer* tr) {
    RunConfig* rc = &tr->rc;
    tr->rank = dist_rank();
    tr->world = dist_world();
    init_threads(rc);
    threads_print(stdout);
    run_config_print(rc, stdout);
    tr->B = rc->train.batch_size;
    tr->T = rc->data.seq_len;
    tr->rows_per_step = tr->B * rc->train.grad_accum * (size_t)tr->world;
    trainer_lock_and_find_resume(tr);
    trainer_resolve_model(tr, false);
    model_config_validate(&tr->mcfg);
    trainer_choose_products(tr);
    open_data(tr);
    build_model(tr);
    build_optimizer(tr);
    alloc_batch(tr);
    restore_or_init(tr);
    setup_outer(tr);
    open_out_dir(tr);
}

void trainer_free(Trainer* tr) {
    metrics_close(&tr->metrics);
    run_dir_unlock(); /* a finished run leaves no run.lock */
    data_source_close(&tr->data);
    adamw_free(&tr->opt);
    outer_free(&tr->outer);
    if (tr->has_tasks) gen_free(&tr->gen);
    trainer_mc_free(tr);
    model_free(&tr->model);
    batch_free(&tr->batch);
    free(tr->config_json);
    free(tr->shard_counts);
    free(tr->shard_displs);
    free(tr->pos_prev);
    run_config_free(&tr->rc);
}

/* stop the run at (1-based) step `step`: the last checkpoint on disk is the last good state */
static _Noreturn void die_nonfinite(Trainer* tr, size_t step, const char* what) {
    metrics_break(&tr->metrics);
    char last[4096];
    bool have = ckpt_find_latest(tr->rc.run.out_dir, last, sizeof(last));
    DIE("step %zu: %s; stopping. The last good checkpoint is %s", step, what, have ? last : "(none written yet)");
}

/* After a sharded AdamW step each rank has updated its slice: give every rank
   every slice. Without frozen tensors the parameter arena has the gradient
   arena's layout and is gathered in place; otherwise the slices travel in the
   gradient arena (no longer needed this step) and are copied back. */
static void gather_params(Trainer* tr) {
    Model* m = &tr->model;
    const TensorTable* tt = &m->tensors;
    if (tt->n_params == tt->n_grads) {
        dist_allgatherv_real(m->params, tr->shard_counts, tr->shard_displs);
        model_params_changed(m);
        return;
    }
    for (size_t k = 0; k < tt->n; k++) { /* this rank's slice, into gradient layout */
        const TensorInfo* t = &tt->t[k];
        size_t g0, g1;
        if (t->grad_offset != NO_GRAD && adamw_slice_part(&tr->opt, t->grad_offset, t->numel, &g0, &g1))
            memcpy(m->grads + g0, m->params + t->offset + (g0 - t->grad_offset), (g1 - g0) * sizeof(real));
    }
    dist_allgatherv_real(m->grads, tr->shard_counts, tr->shard_displs);
    model_trained_params_set(m, m->grads);
}

/* What one step computed, for its log line */
typedef struct {
    double loss;   /* the mean objective over the global batch: cross-entropy + z-loss term */
    double loss_z; /* its z-loss term */
    double pdrop;  /* repo_pdrop's p of the step */
    double norm;   /* the gradient's global norm before clipping */
    double lr;
    double seconds;
} StepSums;

/* The grad_accum micro-batches of this rank: forward and backward of each, the gradients summed into the
   arena (zeroed first unless the last update did), the losses into s */
static void accumulate(Trainer* tr, size_t step, StepSums* s) {
    Model* m = &tr->model;
    size_t accum = tr->rc.train.grad_accum, world = (size_t)tr->world;
    double mean_over = (double)(tr->outer.on ? accum : accum * world); /* DiLoCo: this rank's rows only */
    if (!tr->grads_zeroed) model_zero_grad(m);
    tr->grads_zeroed = false;
    const RcPositions* rp = &tr->rc.model.positions; /* repo_pdrop: a pure function of the step, as resume needs */
    s->pdrop = repo_pdrop_at(rp->repo_pdrop_init, rp->repo_pdrop_steps == RC_UNSET ? 0 : rp->repo_pdrop_steps, step);
    for (size_t k = 0; k < accum; k++) { /* micro-batch k of rank r is global rows [(k*world + r)*B, +B) */
        size_t row0 = (k * world + (size_t)tr->rank) * tr->B;
        Batch* b = &tr->batch; /* with the answer-weighted loss of data.synthetic.answer_weight when set */
        data_source_batch(&tr->data, false, step, tr->rows_per_step, row0, b);
        /* LoRA dropout masks: a pure function of (seed, step, global micro-batch), so resume stays exact */
        b->lora_dropout_on = true;
        b->lora_dropout_key = mix_triple(0x6c6f72612d64726full, tr->rc.run.seed, step, k * world + (size_t)tr->rank);
        b->repo_pdrop = s->pdrop;
        Loss l = model_forward_train(m, b);
        if (!isfinite(l.loss)) die_nonfinite(tr, step + 1, "the loss is not finite");
        s->loss += l.loss / (double)(accum * world);
        s->loss_z += l.z / (double)(accum * world);
        if (k + 1 == accum) grad_reduce_arm(&tr->reduce, m); /* the sums start during the last backward */
        model_backward(m, b, 1.0 / mean_over);
    }
}

/* The sums over the ranks (the mean over the global batch), and the gradient's norm, which must be finite */
static void reduce_and_check(Trainer* tr, size_t step, StepSums* s) {
    Model* m = &tr->model;
    double t_comm = now_s();
    grad_reduce_finish(&tr->reduce, m); /* DiLoCo: each rank keeps its own gradients */
    dist_allreduce_sum_double(&s->loss, 1);
    if (m->opts.z_loss > 0) dist_allreduce_sum_double(&s->loss_z, 1);
    tr->comm_s = now_s() - t_comm;
    s->norm = grad_global_norm(m->grads, m->tensors.n_grads);
    if (!isfinite(s->norm)) {
        long bad = first_nonfinite_tensor(&m->tensors, m->grads);
        char what[256];
        snprintf(what, sizeof(what), "the gradient of %s is not finite",
                 bad >= 0 ? m->tensors.t[bad].name : "the model (sum of squares overflowed)");
        die_nonfinite(tr, step + 1, what);
    }
}

/* AdamW at the schedule's learning rate on the clipped gradients; sharded, every rank's slice to all */
static void update(Trainer* tr, size_t step, StepSums* s) {
    Model* m = &tr->model;
    s->lr = lr_at(&tr->ocfg, step, tr->rc.train.steps);
    /* clipped and zeroed as AdamW reads them; sharded, the all-gather below reuses the arena */
    adamw_step(&tr->opt, m->params, m->grads, s->lr, step, grad_clip_scale(tr->ocfg.grad_clip, s->norm), !tr->sharded);
    tr->grads_zeroed = !tr->sharded;
    if (tr->sharded) {
        double t_comm = now_s();
        gather_params(tr);
        tr->comm_s += now_s() - t_comm;
    }
    if (outer_due(&tr->outer, step)) {
        double t_comm = now_s();
        outer_step(&tr->outer, m);
        tr->comm_s += now_s() - t_comm;
    }
}

/* The step counted in the trainer's state, and every log_every steps (and the last) a metrics line */
static void log_step(Trainer* tr, const StepSums* s) {
    double ce = s->loss - s->loss_z; /* the cross-entropy, as OLMo logs it and metrics.jsonl's "loss"; z_loss apart */
    tr->state.step++;
    tr->state.tokens_seen += tr->rows_per_step * tr->T;
    tr->state.last_loss = ce;
    tr->state.has_loss = true;
    if (!tr->has_first_loss) {
        tr->first_loss = ce;
        tr->has_first_loss = true;
    }
    size_t every = tr->rc.train.log_every ? tr->rc.train.log_every : 1;
    if (tr->state.step % every != 0 && tr->state.step != tr->rc.train.steps) return;
    StepLog l = {.step = tr->state.step,
                 .steps = tr->rc.train.steps,
                 .loss = ce,
                 .z_loss = tr->model.opts.z_loss > 0 ? s->loss_z : -1,
                 .repo_pdrop = s->pdrop > 0 ? s->pdrop : -1,
                 .lr = s->lr,
                 .grad_norm = s->norm,
                 .ms = s->seconds * 1e3,
                 .tokens_per_s = tr->rows_per_step * tr->T / s->seconds,
                 .eta_s = s->seconds * (double)(tr->rc.train.steps - tr->state.step),
                 .tokens_seen = tr->state.tokens_seen,
                 .comm_ms = tr->world > 1 ? tr->comm_s * 1e3 : -1,
                 .wire_bytes = tr->world > 1 ? (double)tr->wire_bytes : -1};
    const Mixture* mx = &tr->data.train_mix;
    const char* names[MIX_MAX_SOURCES];
    size_t tokens[MIX_MAX_SOURCES];
    for (size_t k = 0; k < mx->n; k++) { /* a pure function of the step: right after a resume too */
        names[k] = mx->src[k].name;
        tokens[k] = (size_t)mixture_count(mx, k, (uint64_t)tr->state.step * tr->rows_per_step) * tr->T;
    }
    l.n_sources = mx->n;
    l.source_names = names;
    l.source_tokens = tokens;
    metrics_step(&tr->metrics, &l);
}

/* llm.c's step in four phases: forward and backward of every micro-batch, the sums over ranks checked, the
   update, the log */
void trainer_step(Trainer* tr) {
    size_t step = tr->state.step;
    double t0 = now_s();
    size_t sent0 = dist_bytes_sent();
    StepSums s = {0};
    accumulate(tr, step, &s);
    reduce_and_check(tr, step, &s);
    update(tr, step, &s);
    s.seconds = now_s() - t0;
    tr->wire_bytes = dist_bytes_sent() - sent0;
    log_step(tr, &s);
}

bool trainer_data_left(Trainer* tr) {
    const Mixture* mx = &tr->data.train_mix;
    uint64_t G0 = (uint64_t)tr->state.step * tr->rows_per_step, G1 = G0 + tr->rows_per_step;
    for (size_t k = 0; k < mx->n; k++) {
        const MixSource* s = &mx->src[k];
        uint64_t before = mixture_pass(mx, k, G0, tr->T), after = mixture_pass(mx, k, G1, tr->T);
        if (after <= 1 || after == before) continue;
        if (s->exhausted == MIX_STOP) {
            metrics_break(&tr->metrics);
            printf("data.train source '%s' is used up (%zu tokens, read once by step %zu) and has \"exhausted\": "
                   "\"stop\": ending the run before step %zu\n",
                   s->name, s->data.n_tokens, tr->state.step, tr->state.step + 1);
            return false;
        }
        metrics_break(&tr->metrics);
        printf("note: data.train source '%s' (%zu tokens) wraps around in step %zu: pass %llu over its data begins\n",
               s->name, s->data.n_tokens, tr->state.step + 1, (unsigned long long)after);
    }
    return true;
}

/* Die unless every rank's weights are bit-identical to rank 0's: a 64-bit
   hash of the parameter arena, compared across ranks. */
static void check_replicas(const Trainer* tr) {
    if (tr->world == 1 || (tr->outer.on && tr->state.step % tr->outer.every)) return; /* DiLoCo: equal at outer steps */
    const real* p = tr->model.params;
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < tr->model.tensors.n_params; i++) {
        uint64_t bits = 0;
        memcpy(&bits, &p[i], sizeof(real));
        h = (h ^ bits) * 0x100000001B3ull;
    }
    uint64_t* all = mallocCheck((size_t)tr->world * sizeof(uint64_t));
    dist_allgather(&h, all, sizeof(h));
    for (int r = 1; r < tr->world; r++)
        CHECK(all[r] == all[0], "step %zu: the weights of rank %d differ from rank 0's: the replicas diverged",
              tr->state.step, r);
    free(all);
}

/* train.outer's state file in a checkpoint (CkptExtra) */
static void outer_write(const void* ctx, const char* dir) {
    const Trainer* tr = ctx;
    outer_save(&tr->outer, dir, &tr->model, &tr->opt);
}
static void outer_serve(const void* ctx) {
    const Trainer* tr = ctx;
    outer_serve_save(&tr->outer, &tr->model, &tr->opt);
}

void trainer_save(Trainer* tr) {
    metrics_break(&tr->metrics);
    check_replicas(tr);
    tr->state.rows_per_step = tr->rows_per_step;
    tr->state.world_size = (size_t)tr->world;
    tr->state.threads = threads_max();
    snprintf(tr->state.f32_engine, sizeof(tr->state.f32_engine), "%s", f32_engine_name(products_f32_engine()));
    snprintf(tr->state.compute_dtype, sizeof(tr->state.compute_dtype), "%s", tr->rc.train.compute_dtype);
    StDtype dt = strcmp(tr->rc.train.save_dtype, "bf16") ? ST_F32 : ST_BF16;
    double t0 = now_s();
    CkptExtra outer = {outer_write, outer_serve, tr};
    ckpt_save(tr->rc.run.out_dir, &tr->model, &tr->opt, &tr->state, tr->config_json, dt, tr->rc.train.keep_last,
              tr->rc.model.lora.save_base, tr->tok_dir, tr->outer.on ? &outer : NULL);
    printf("saved %s/step_%07zu (%.1f s)\n", tr->rc.run.out_dir, tr->state.step, now_s() - t0);
    /* the next save copies from this checkpoint: keep_last may prune the one the files came from */
    if (tr->tok_dir[0]) snprintf(tr->tok_dir, sizeof(tr->tok_dir), "%s/step_%07zu", tr->rc.run.out_dir, tr->state.step);
    fflush(stdout);
}
