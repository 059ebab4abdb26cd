/* train.eval_tasks' multiple-choice files in the training loop (train/trainer.h, trainer_mc_*): build/eval
   --mc's rules and code (eval/mc.h) on the training model's weights, with the run's tokenizer. The files are
   checked line by line before anything large is allocated, their items encoded once after the model is
   built, and each evaluation only runs the model: nothing is read, encoded or allocated then, and nothing
   of the training state (weights, optimizer, data cursor, RNG) is touched, so a resumed run stays exact. */
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/dist.h"
#include "train/trainer.h"

void trainer_mc_check(Trainer* tr) {
    TrainerMc* mc = &tr->mc;
    memset(mc, 0, sizeof(*mc));
    EvalPlan plan;
    SyntheticConfig syn;
    char err[512];
    if (!tr->rc.train.eval_tasks) return;
    if (run_config_eval_tasks(&tr->rc, &plan, &syn, err, sizeof err)) DIE("%s", err);
    if (!plan.mc.n_files) return;
    mc->on = true;
    mc->plan = plan.mc;
    if (mc_fields_parse(&mc->fields, mc->plan.fields, err, sizeof err)) DIE("train.eval_tasks.mc_fields: %s", err);
    for (size_t i = 0; i < mc->plan.n_files; i++)
        mc->n_items[i] = mc_check_file(mc->plan.files[i], &mc->fields, mc->plan.limit);
    char path[4200];
    if (!trainer_tokenizer_json(tr, path, sizeof path))
        DIE("train.eval_tasks.mc: no tokenizer to encode the items with: set data.tokenizer, or train from a "
            "checkpoint that carries tokenizer.json (model.init_from, or model.from_config's directory)");
    mc->tok = tok_load(path);
    CHECK(tok_vocab_size(mc->tok) <= tr->mcfg.V,
          "train.eval_tasks.mc: the tokenizer %s has ids up to %zu, the model's vocab_size is %zu", tok_name(mc->tok),
          tok_vocab_size(mc->tok) - 1, tr->mcfg.V);
    mc->W = mc_window(mc->plan.window, tr->mcfg.max_position_embeddings);
}

void trainer_mc_setup(Trainer* tr) {
    TrainerMc* mc = &tr->mc;
    if (!mc->on) return;
    mc_scorer_init(&mc->scorer, &tr->model, mc->tok, mc->W, mc->plan.delimiter ? mc->plan.delimiter : " ");
    size_t items = 0, tokens = 0, bytes = 0;
    for (size_t i = 0; i < mc->plan.n_files; i++) {
        mc_set_load(&mc->sets[i], &mc->scorer, mc->plan.files[i], &mc->fields, mc->n_items[i]);
        items += mc->sets[i].n;
        tokens += mc->sets[i].n_tokens;
        bytes += mc_set_bytes(&mc->sets[i]);
    }
    if (tr->rank == 0)
        printf("multiple choice at every evaluation (build/eval --mc's rules): %zu file%s, %zu items, window %zu "
               "tokens, tokenizer %s; %zu tokens encoded (%.1f MiB), generator %.1f MiB\n",
               mc->plan.n_files, mc->plan.n_files == 1 ? "" : "s", items, mc->W, tok_name(mc->tok), tokens,
               (double)bytes / 1048576.0, (double)mc->scorer.g.n_arena * sizeof(real) / 1048576.0);
}

bool trainer_mc_eval(Trainer* tr, char (*name)[MC_METRIC_LEN], const char** name_ptr, double* value, size_t* n) {
    TrainerMc* mc = &tr->mc;
    mc->scorer.g.stop = tr->stop; /* a signal stops a long context within about a millisecond of work */
    for (size_t i = 0; i < mc->plan.n_files; i++) {
        if (tr->stop && dist_any(*tr->stop != 0)) return false;
        McResult r;
        if (!mc_set_run(&r, &mc->scorer, &mc->sets[i], tr->stop)) continue; /* stopped: the next check says so */
        for (int norm = 0; norm < 2; norm++) {
            snprintf(name[*n], MC_METRIC_LEN, "%s/%s", r.name, norm ? "acc_norm" : "acc");
            name_ptr[*n] = name[*n];
            value[(*n)++] = norm ? r.acc_norm : r.acc;
        }
    }
    return !(tr->stop && dist_any(*tr->stop != 0)); /* the last file may have stopped: nothing is logged */
}

void trainer_mc_free(Trainer* tr) {
    TrainerMc* mc = &tr->mc;
    if (!mc->on) return;
    for (size_t i = 0; i < mc->plan.n_files; i++) mc_set_free(&mc->sets[i]);
    if (mc->scorer.V) mc_scorer_free(&mc->scorer);
    tok_free(mc->tok);
    mc->on = false;
}
