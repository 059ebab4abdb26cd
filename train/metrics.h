/* What a run reports (docs/formats.md, "metrics.jsonl"): one line per log step on the terminal (a
   live progress line when stdout is a terminal, plain lines otherwise), and the
   same numbers appended to out_dir/metrics.jsonl, one JSON object per line,
   with every float printed so that it reads back bit-identical. A Metrics
   that was never opened logs nothing (ranks other than 0 under MPI). */
#ifndef REPOC_METRICS_H
#define REPOC_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "eval/analyze_stats.h" /* SegParams, PosSummary */
#include "train/tensorboard.h"

typedef struct {
    FILE* jsonl; /* out_dir/metrics.jsonl, appended */
    TbWriter tb; /* the same lines as TensorBoard events (train/tensorboard.h) */
    char* line;  /* the line being composed (open_memstream) */
    size_t line_len;
    bool tty;       /* stdout is a terminal: redraw one progress line */
    bool line_open; /* a progress line is on screen without its newline */
} Metrics;

typedef struct {
    size_t step;       /* optimizer steps completed after this one */
    size_t steps;      /* total steps of the run */
    double loss;       /* the cross-entropy (mean over the step's rows), without the z-loss term */
    double z_loss;     /* the z-loss term of the objective (loss + z_loss); < 0: optim.z_loss is 0, not logged */
    double repo_pdrop; /* model.positions.repo_pdrop's p in this step; <= 0: off or annealed away, not logged */
    double lr, grad_norm;
    double ms; /* this step's wall time */
    double tokens_per_s;
    double eta_s;
    size_t tokens_seen;
    double comm_ms;    /* time in all-reduce and all-gather (several ranks); < 0: one rank, not logged */
    double wire_bytes; /* bytes this rank sent to the others in the step (dist_bytes_sent); < 0: one rank */
    size_t n_sources;  /* a data mixture: tokens seen per source ("source_tokens" in metrics.jsonl); 0 = none */
    const char* const* source_names; /* (n_sources) */
    const size_t* source_tokens;     /* (n_sources) */
} StepLog;

/* One evaluation: the token-weighted mean loss over the validation streams
   and, with data.val given as sources, each source's loss and batches */
typedef struct {
    size_t step;
    double val_loss;                 /* sum_k loss_k * tokens_k / sum_k tokens_k: the cross-entropy */
    double val_z_loss;               /* the z-loss term, the same mean; < 0: optim.z_loss is 0, not logged */
    size_t n_batches;                /* over all streams */
    size_t n_sources;                /* 0: one stream (no per-source losses) */
    const char* const* source_names; /* (n_sources) */
    const double* source_loss;       /* (n_sources) */
    const size_t* source_batches;    /* (n_sources) */
    size_t n_tasks;                  /* train.eval_tasks: "retrieval" in metrics.jsonl, {"family@length": accuracy} */
    const char* const* task_names;   /* (n_tasks) */
    const double* task_acc;          /* (n_tasks) exact-match accuracy in [0, 1] */
    const double* task_token_acc;    /* (n_tasks) answer tokens right ("retrieval_tokens") */
    size_t n_mc;                     /* train.eval_tasks' multiple choice: "mc" in metrics.jsonl */
    const char* const* mc_names;     /* (n_mc) "NAME/acc", "NAME/acc_norm" */
    const double* mc_values;         /* (n_mc) in [0, 1] */
} EvalLog;

/* train.log_positions: the learned positions of each RePo layer on one fixed batch */
typedef struct {
    size_t step;
    size_t rows, T;       /* the batch: rows of T tokens */
    bool val;             /* the first validation batch (else the first training batch) */
    const SegParams* seg; /* the segment classes' thresholds */
    size_t n_layers;
    const size_t* layer;    /* (n_layers) the RePo layers */
    const PosSummary* s;    /* (n_layers) over the batch's rows and all KV heads */
    const double* mean_abs; /* (n_layers) mean |z| over the batch's tokens and KV heads */
    /* (n_layers) mean |z - z_prev| / (steps since z_prev), z_prev the last measurement of this process; NULL when there
       was none */
    const double* moved;
    double ms; /* the measurement's wall time */
} PositionsLog;

/* Open out_dir/metrics.jsonl for appending, after dropping the lines of steps
   after keep_step (a run killed after its last checkpoint logged steps that the
   resumed run will log again): keep_step is the resumed step, 0 for a run that
   starts over (the file then starts empty). Damaged lines are dropped with a
   warning naming the line. The caller holds out_dir's lock (train/run_dir.h). The TensorBoard event files
   beside it are trimmed the same way, and a new one is opened. */
void metrics_open(Metrics* mt, const char* out_dir, size_t keep_step);
void metrics_close(Metrics* mt);
void metrics_step(Metrics* mt, const StepLog* s);
void metrics_eval(Metrics* mt, const EvalLog* e);
/* {"step": S, "positions": {"rows", "T", "batch": "val"|"train", "segment", "eps_const", "mono_frac", "ms",
   "layers": [{"layer", "range", "mean_abs_step", "mean_step", "segments", "constant", "monotonic",
   "hybrid"}, ...]}}; measured before step S + 1, like an evaluation */
void metrics_positions(Metrics* mt, const PositionsLog* p);
/* end the progress line before other output */
void metrics_break(Metrics* mt);

#endif
