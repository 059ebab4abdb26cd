/* build/train CONFIG.json [--set a.b.c=value ...]: continual pretraining from a
   config file. Parses the config, sets up, loops, saves, frees.
   Under mpirun (build/mpi/train) every rank runs this same list;
   only rank 0 prints. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/check.h"
#include "common/dist.h"
#include "common/threads.h" /* threads_startup */
#include "programs/cli.h"
#include "train/trainer.h"

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) { stop_requested = sig; }

static void usage(FILE* fp) {
    fprintf(fp, "usage: build/train CONFIG.json [--set KEY=VALUE ...] [--threads N] [--plan]\n"
                "  Trains (or continues training) a model as CONFIG.json says; see docs/config.md for every key.\n"
                "  --set KEY=VALUE   override one key, e.g. --set train.steps=200 --set optim.lr=1e-3\n"
                "                    (VALUE is JSON when it parses as JSON, else a string)\n"
                "  --threads N       threads per rank: the same as --set run.threads=N\n"
                "  --plan            print the memory plan (peak RSS by part, what is available) and the time\n"
                "                    estimate, and exit 0, allocating nothing large and reading only the\n"
                "                    weights' headers (a config.json alone will do); every run prints both at\n"
                "                    start and refuses to start when the memory does not fit (unless\n"
                "                    run.check_memory is false)\n"
                "  SIGINT / SIGTERM / SIGHUP / SIGUSR1  finish the current step (or stop an evaluation between\n"
                "                    batches), save a checkpoint, exit 0\n"
                "                    (under mpirun send SIGUSR1 to mpirun: it forwards it to every rank)\n"
                "  Resume: run.resume \"auto\" (default) continues from OUT_DIR/latest when it exists.\n"
                "  Several ranks (make MPI=1): mpirun -np N build/mpi/train CONFIG.json (docs/mpi.md)\n");
}

/* "peak RSS 812 MiB", or one number per rank */
static void print_peak_rss(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double mine = ru.ru_maxrss / 1024.0, *all = mallocCheck((size_t)dist_world() * sizeof(double)); /* KiB */
    dist_allgather(&mine, all, sizeof(double));
    printf("peak RSS%s", dist_world() > 1 ? " per rank" : "");
    for (int r = 0; r < dist_world(); r++) printf(" %.0f", all[r]);
    printf(" MiB\n");
    free(all);
}

/* leave before training: cleanly for --help; on an error MPI_Abort, as a
   rank that fails alone (say, it cannot read the config) must stop the others */
static int leave(int code) {
    if (code != 0) dist_abort(code);
    dist_finalize();
    return 0;
}

int main(int argc, char** argv) {
    threads_startup(); /* before MPI starts: it may re-execute the program (common/threads.h) */
    dist_init(&argc, &argv);
    if (dist_rank() > 0 && !freopen("/dev/null", "w", stdout)) DIE("cannot redirect stdout of rank %d", dist_rank());
    const char* config = NULL;
    const char* overrides[256];
    size_t n_over = 0;
    bool plan = false;
    cli_init("train");
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return leave(0);
        }
        if (!strcmp(a, "--plan")) {
            plan = true;
            continue;
        }
        const char* over = NULL;
        static char threads[64]; /* --threads N: the other programs' spelling of run.threads */
        if (!strcmp(a, "--threads")) {
            static int seen_threads;
            cli_once(a, &seen_threads);
            snprintf(threads, sizeof threads, "run.threads=%.40s", cli_value(a, i + 1 < argc ? argv[++i] : NULL));
            over = threads;
        } else if (!strcmp(a, "--set")) over = cli_value(a, i + 1 < argc ? argv[++i] : NULL);
        else if (!strncmp(a, "--set=", 6)) over = a + 6;
        else if (a[0] == '-') cli_bad_option("unknown option '%s'", a);
        else if (config) cli_bad_option("unexpected argument '%s' (the config is '%s')", a, config);
        else config = a;
        if (over && n_over == 256) cli_bad_option("--set: more than 256 overrides");
        if (over) overrides[n_over++] = over;
    }
    if (!config) cli_bad_option("no CONFIG.json given");

    static Trainer tr;
    char err[2048];
    if (run_config_load(&tr.rc, config, overrides, n_over, err, sizeof(err))) {
        fprintf(stderr, "error: %s\n", err);
        run_config_free(&tr.rc);
        return leave(1);
    }
    if (plan) {
        trainer_plan_only(&tr);
        run_config_free(&tr.rc);
        dist_finalize();
        return 0;
    }
    trainer_setup(&tr);
    if (tr.rank == 0) data_source_describe(&tr.data, tr.rows_per_step, tr.T, tr.rc.train.steps, stdout);
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* a closed terminal stops the run like SIGTERM, with a checkpoint */
    tr.stop = &stop_requested;
    sigaction(SIGUSR1, &sa, NULL); /* mpirun forwards it; its own SIGINT kills ranks 1 s after SIGTERM */

    const RunConfig* rc = &tr.rc;
    size_t start = tr.state.step;
    bool saved = false, stop = false;
    /* a signal stops all ranks at the same step: each rank asks the others every step */
    while (tr.state.step < rc->train.steps && !(stop = dist_any(stop_requested != 0)) && trainer_data_left(&tr)) {
        if (rc->train.eval_every && tr.data.has_val && tr.state.step % rc->train.eval_every == 0 &&
            !trainer_eval(&tr)) {
            stop = true; /* a signal during the evaluation: no further step */
            break;
        }
        /* every log_positions steps, and at a resumed step (metrics_open dropped its line) */
        if (rc->train.log_positions && (tr.state.step % rc->train.log_positions == 0 || tr.state.step == start))
            trainer_log_positions(&tr);
        trainer_step(&tr);
        saved = rc->train.save_every && tr.state.step % rc->train.save_every == 0;
        if (saved) trainer_save(&tr);
    }
    if (!saved && tr.state.step > start) trainer_save(&tr);
    if (!stop && rc->train.log_positions && tr.state.step > start) trainer_log_positions(&tr); /* the last step's */
    if (stop) {
        if (stop_requested) printf("stopped by signal %d", (int)stop_requested);
        else printf("stopped by a signal to another rank");
        printf(" after step %zu; resume with the same command\n", tr.state.step);
    } else if (tr.data.has_val && rc->train.eval_every && !trainer_eval(&tr)) {
        printf("the final evaluation was stopped by signal %d\n", (int)stop_requested);
    }
    if (tr.state.step == start)
        printf("done: no step ran (the run stays at step %zu of %zu); run directory %s\n", start, rc->train.steps,
               rc->run.out_dir);
    else
        printf("done: steps %zu..%zu, loss %.4f -> %.4f, checkpoints in %s\n", start, tr.state.step,
               tr.has_first_loss ? tr.first_loss : 0.0, tr.state.has_loss ? tr.state.last_loss : 0.0, rc->run.out_dir);
    /* only a loss measured on the weights just saved (an earlier evaluation's is stale) */
    if (tr.has_val_loss && tr.val_step == tr.state.step) printf("final validation loss %.4f\n", tr.last_val_loss);
    print_peak_rss();
    trainer_free(&tr);
    dist_finalize();
    return 0;
}
