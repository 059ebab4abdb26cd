/* train.log_positions: every N steps, one forward pass on a fixed batch (the
   first validation batch, or without validation data the first training
   batch) and, per RePo layer, the statistics of its learned positions z over
   that batch's rows and every KV head: range, mean |step|, mean step and the
   shares of near-constant, monotonic and hybrid segments. The measures and
   thresholds are build/analyze's (eval/analyze_stats.h, pos_stats_add_layer),
   so the line of step S reads like `build/analyze --positions` on step S's
   checkpoint. Nothing is allocated: the batch goes through the training
   model's own buffers, as a validation batch does. */
#include <stdio.h>

#include "common/clock.h"
#include "eval/analyze_stats.h"
#include "train/trainer.h"

void trainer_log_positions(Trainer* tr) {
    static bool noted;         /* one process runs one trainer */
    if (tr->rank != 0) return; /* rank 0 writes metrics.jsonl; every rank holds the same weights */
    Model* m = &tr->model;
    const ModelConfig* c = &m->cfg;
    size_t layer[MAX_LAYERS], n = 0;
    for (size_t l = 0; l < c->L; l++)
        if (c->pos[l] == POS_REPO) layer[n++] = l;
    if (!n) {
        if (!noted) printf("note: train.log_positions: the model has no RePo layers; no positions are logged\n");
        noted = true;
        return;
    }
    double t0 = now_s();
    Batch b = trainer_eval_batch(tr); /* as in validation: the plain mean, the adapters without dropout */
    if (tr->data.has_val) data_source_val_batch(&tr->data, 0, 0, &b);
    else data_source_batch(&tr->data, false, 0, tr->rows_per_step, 0, &b);
    model_forward(m, &b);
    m->has_loss = false; /* no backward follows */
    size_t seg_len = tr->T < SEG_LEN_DEFAULT ? tr->T : SEG_LEN_DEFAULT;
    SegParams seg = {seg_len, seg_eps_const_default(seg_len), SEG_MONO_FRAC_DEFAULT};
    PosSummary sum[MAX_LAYERS];
    for (size_t i = 0; i < n; i++) {
        PosStats st = {0};
        pos_stats_add_layer(&st, true, m->la[layer[i]].z, tr->B, tr->T, c->KVH, &seg); /* z (B,T,KVH) */
        sum[i] = pos_stats_summary(&st);
    }
    PositionsLog p = {.step = tr->state.step,
                      .rows = tr->B,
                      .T = tr->T,
                      .val = tr->data.has_val,
                      .seg = &seg,
                      .n_layers = n,
                      .layer = layer,
                      .s = sum,
                      .ms = (now_s() - t0) * 1e3};
    metrics_positions(&tr->metrics, &p);
}
