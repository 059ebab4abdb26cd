/* train.log_positions: every N steps, one forward pass on a fixed batch (the
   first validation batch, or without validation data the first training
   batch) and, per RePo layer, the statistics of its learned positions z over
   that batch's rows and every KV head: range, mean |step|, mean step and the
   shares of near-constant, monotonic and hybrid segments; mean |z|, and how far
   z moved per optimizer step since the last measurement of this process (mean
   |z - z_prev| / steps, from a snapshot allocated at setup). The measures and
   thresholds are build/analyze's (eval/analyze_stats.h, pos_stats_add_layer),
   so the line of step S reads like `build/analyze --positions` on step S's
   checkpoint. The batch goes through the training model's own buffers, as a
   validation batch does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/check.h"
#include "common/clock.h"
#include "eval/analyze_stats.h"
#include "train/trainer.h"

/* the RePo layers of the model into layer[], their number returned */
static size_t repo_layers(const ModelConfig* c, size_t* layer) {
    size_t n = 0;
    for (size_t l = 0; l < c->L; l++)
        if (c->pos[l] == POS_REPO) layer[n++] = l;
    return n;
}

void trainer_positions_setup(Trainer* tr) {
    size_t layer[MAX_LAYERS];
    size_t n = repo_layers(&tr->model.cfg, layer);
    if (tr->rank != 0 || !tr->rc.train.log_positions || !n) return;
    size_t per = tr->B * tr->T * tr->model.cfg.KVH;
    tr->pos_prev = mallocCheck(mulCheck(n * per, sizeof(real), "train.log_positions snapshot"));
    tr->has_pos_prev = false;
}

void trainer_log_positions(Trainer* tr) {
    static bool noted;         /* one process runs one trainer */
    if (tr->rank != 0) return; /* rank 0 writes metrics.jsonl; every rank holds the same weights */
    Model* m = &tr->model;
    const ModelConfig* c = &m->cfg;
    size_t layer[MAX_LAYERS];
    size_t n = repo_layers(c, layer);
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
    double mean_abs[MAX_LAYERS], moved[MAX_LAYERS];
    size_t per = tr->B * tr->T * c->KVH, steps = tr->state.step - tr->pos_prev_step;
    bool has_moved = tr->pos_prev && tr->has_pos_prev && steps > 0;
    for (size_t i = 0; i < n; i++) {
        const real* z = m->la[layer[i]].z; /* (B,T,KVH) */
        PosStats st = {0};
        pos_stats_add_layer(&st, true, z, tr->B, tr->T, c->KVH, &seg);
        sum[i] = pos_stats_summary(&st);
        real* prev = tr->pos_prev ? tr->pos_prev + i * per : NULL;
        double a = 0, d = 0;
        for (size_t j = 0; j < per; j++) {
            a += fabs((double)z[j]);
            if (has_moved) d += fabs((double)z[j] - (double)prev[j]);
            if (prev) prev[j] = z[j];
        }
        mean_abs[i] = a / (double)per;
        moved[i] = d / (double)per / (double)(steps ? steps : 1);
    }
    if (tr->pos_prev) {
        tr->has_pos_prev = true;
        tr->pos_prev_step = tr->state.step;
    }
    PositionsLog p = {.step = tr->state.step,
                      .rows = tr->B,
                      .T = tr->T,
                      .val = tr->data.has_val,
                      .seg = &seg,
                      .n_layers = n,
                      .layer = layer,
                      .s = sum,
                      .mean_abs = mean_abs,
                      .moved = has_moved ? moved : NULL,
                      .ms = (now_s() - t0) * 1e3};
    metrics_positions(&tr->metrics, &p);
}
