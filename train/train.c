/* build/train CONFIG.json [--set a.b.c=value ...]: continual pretraining from a
   config file (issue #4). Parses the config, sets up, loops, saves, frees. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "train/trainer.h"

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) { stop_requested = sig; }

static void usage(FILE* fp) {
    fprintf(fp,
            "usage: build/train CONFIG.json [--set KEY=VALUE ...]\n"
            "  Trains (or continues training) a model as CONFIG.json says; see README.md for every key.\n"
            "  --set KEY=VALUE   override one key, e.g. --set train.steps=200 --set optim.lr=1e-3\n"
            "                    (VALUE is JSON when it parses as JSON, else a string)\n"
            "  SIGINT / SIGTERM  finish the current step, save a checkpoint, exit 0\n"
            "  Resume: run.resume \"auto\" (default) continues from OUT_DIR/latest when it exists.\n");
}

int main(int argc, char** argv) {
    const char* config = NULL;
    const char* overrides[256];
    size_t n_over = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--set") && i + 1 < argc && n_over < 256) overrides[n_over++] = argv[++i];
        else if (!strncmp(argv[i], "--set=", 6) && n_over < 256) overrides[n_over++] = argv[i] + 6;
        else if (argv[i][0] != '-' && !config) config = argv[i];
        else { fprintf(stderr, "train: unexpected argument '%s'\n", argv[i]); usage(stderr); return 2; }
    }
    if (!config) { usage(stderr); return 2; }

    static Trainer tr;
    char err[2048];
    if (run_config_load(&tr.rc, config, overrides, n_over, err, sizeof(err))) {
        fprintf(stderr, "error: %s\n", err);
        run_config_free(&tr.rc);
        return 1;
    }
    trainer_setup(&tr);
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    const RunConfig* rc = &tr.rc;
    size_t start = tr.state.step;
    bool saved = false;
    while (tr.state.step < rc->train.steps && !stop_requested) {
        if (rc->train.eval_every && tr.data.has_val && tr.state.step % rc->train.eval_every == 0) trainer_eval(&tr);
        trainer_step(&tr);
        saved = rc->train.save_every && tr.state.step % rc->train.save_every == 0;
        if (saved) trainer_save(&tr);
    }
    if (!saved && tr.state.step > start) trainer_save(&tr);
    if (stop_requested) {
        printf("stopped by signal %d after step %zu; resume with the same command\n", (int)stop_requested,
               tr.state.step);
    } else if (tr.data.has_val && rc->train.eval_every) {
        trainer_eval(&tr);
    }
    printf("done: steps %zu..%zu, loss %.4f -> %.4f%s, checkpoints in %s\n", start, tr.state.step,
           tr.has_first_loss ? tr.first_loss : 0.0, tr.state.has_loss ? tr.state.last_loss : 0.0,
           tr.has_val_loss ? "" : "", rc->run.out_dir);
    if (tr.has_val_loss) printf("final validation loss %.4f\n", tr.last_val_loss);
    trainer_free(&tr);
    return 0;
}
