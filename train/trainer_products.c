/* train.f32_engine and train.compute_dtype resolved into what runs the products (model/engine.h): "auto" becomes
   the engine and the operand type the rule chooses on this CPU, a resumed run keeps those its checkpoint was
   computed with (its trainer_state.json records them), rank 0 decides for every rank, and both resolved values
   are written back into the config, so the saved run_config.json and the start-up lines say what ran. */
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/dist.h"
#include "model/engine.h"
#include "train/trainer.h"

/* the probe's shape: the model's widest block product as the time estimate takes it (train/timeplan.h) */
static void choose(const Trainer* tr, EngineChoice* c, bool want_bf16) {
    engine_choose(c, &tr->mcfg, tr->rc.train.batch_size * tr->rc.data.seq_len, want_bf16);
}

/* rank 0's choice into rc (the train.f32_engine and compute_dtype words), printed. Nothing is timed when
   neither is "auto" (or "auto" is kept from the checkpoint) and compute_dtype is not "bf16" */
static void resolve(Trainer* tr, const TrainerState* st) {
    RunConfig* rc = &tr->rc;
    bool auto_engine = !strcmp(rc->train.f32_engine, "auto"), auto_dtype = !strcmp(rc->train.compute_dtype, "auto");
    bool keep_engine = auto_engine && st->f32_engine[0], keep_dtype = auto_dtype && st->compute_dtype[0];
    bool asked_bf16 = !strcmp(rc->train.compute_dtype, "bf16");
    EngineChoice c = {.f32 = F32_OPENBLAS}; /* set by choose() in every branch that reads it */
    if ((auto_engine && !keep_engine) || (auto_dtype && !keep_dtype) || asked_bf16)
        choose(tr, &c, (auto_dtype && !keep_dtype) || asked_bf16);
    if (keep_engine) {
        snprintf(rc->train.f32_engine, sizeof(rc->train.f32_engine), "%s", st->f32_engine);
        printf("f32 products: %s, as %s was computed with (train.f32_engine \"auto\" keeps it on resume)\n",
               st->f32_engine, tr->resumed_from);
    } else if (auto_engine) {
        snprintf(rc->train.f32_engine, sizeof(rc->train.f32_engine), "%s", f32_engine_name(c.f32));
        engine_print(&c, stdout);
    } else {
        printf("f32 products: %s (train.f32_engine)\n", rc->train.f32_engine);
    }
    if (keep_dtype) {
        snprintf(rc->train.compute_dtype, sizeof(rc->train.compute_dtype), "%s", st->compute_dtype);
        printf("compute dtype: %s, as %s was computed with (\"auto\" keeps it on resume)\n", st->compute_dtype,
               tr->resumed_from);
    } else if (auto_dtype) {
        snprintf(rc->train.compute_dtype, sizeof(rc->train.compute_dtype), "%s", c.bf16_pays ? "bf16" : "f32");
        printf("compute dtype: %s (train.compute_dtype \"auto\": %s)\n", rc->train.compute_dtype, c.bf16_why);
    } else if (asked_bf16 && c.bf16_available && !c.bf16_pays) {
        printf("warning: train.compute_dtype \"bf16\" runs, but it does not pay on this CPU: %s; \"f32\" (or "
               "\"auto\") would be faster here\n",
               c.bf16_why);
    }
}

/* a resumed run whose checkpoint was computed otherwise continues, but not bit-identically */
static void note_changes(const Trainer* tr, const TrainerState* st) {
    const RunConfig* rc = &tr->rc;
    if (st->f32_engine[0] && strcmp(st->f32_engine, rc->train.f32_engine))
        printf("note: %s was computed with f32 products on %s, this run uses %s: the continuation differs from an "
               "uninterrupted run in the last bits\n",
               tr->resumed_from, st->f32_engine, rc->train.f32_engine);
    if (st->compute_dtype[0] && strcmp(st->compute_dtype, rc->train.compute_dtype))
        printf("note: %s was computed with compute_dtype %s, this run uses %s\n", tr->resumed_from, st->compute_dtype,
               rc->train.compute_dtype);
}

void trainer_choose_products(Trainer* tr) {
    RunConfig* rc = &tr->rc;
    TrainerState st = {0};
    if (tr->resumed_from[0]) ckpt_load_state(tr->resumed_from, &st);
    /* a checkpoint of a version before train.f32_engine was computed on OpenBLAS, the only engine then */
    if (tr->resumed_from[0] && !st.f32_engine[0]) snprintf(st.f32_engine, sizeof(st.f32_engine), "openblas");
    if (tr->rank == 0) {
        resolve(tr, &st);
        note_changes(tr, &st);
    }
    dist_bcast(rc->train.f32_engine, sizeof(rc->train.f32_engine));
    dist_bcast(rc->train.compute_dtype, sizeof(rc->train.compute_dtype));
    F32Engine e;
    CHECK(f32_engine_parse(rc->train.f32_engine, &e), "train.f32_engine: unknown engine '%s'", rc->train.f32_engine);
    CHECK(e == F32_OPENBLAS || onednn_available(),
          "train.f32_engine \"onednn\": this build has no oneDNN ('make deps' installs libdnnl-dev; then rebuild)");
    products_set_f32_engine(e);
    fflush(stdout);
}
