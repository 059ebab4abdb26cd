/* What the programs share (build/train, eval, analyze, generate, tokenize, plot, merge,
   sft_eval): usage errors, option values (never a word starting with "--"), the
   shared options --threads and --yarn-*, whole-string number parsing, resolving CHECKPOINT (a Hugging
   Face directory or a run directory) with what its trainer_state.json says
   about training, the generator settings, YaRN from the command line, and
   loading the weights for inference. Every message starts with the program's
   name, set once by cli_init. */
#ifndef REPOC_CLI_H
#define REPOC_CLI_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "data/synthetic.h"
#include "model/model.h"

/* prog: "eval", "analyze"; names the program in every message below. Also, for every
   program: at exit, a failed write to standard output (fflush, ferror, fclose) is an error
   exit 1 "<prog>: writing standard output failed: <reason>"; SIGXFSZ is ignored, so a write
   past `ulimit -f` fails with EFBIG and dies naming its file. */
void cli_init(const char* prog);

/* fflush(stdout) for a program that shows its output as it goes; a failure is remembered for the exit
   check cli_init sets up, so its message names the cause (No space left on device) */
void cli_flush_stdout(void);

/* A usage error: "<prog>: <message>", a pointer to --help, exit status 2 */
_Noreturn void cli_bad_option(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/* an option given a second time is a usage error (it would silently replace the first);
   seen counts opt's uses, starting at 0 */
void cli_once(const char* opt, int* seen);
/* The arguments every program with one checkpoint reads: --help or -h (usage to stdout, exit 0) and
   the checkpoint, a word not starting with '-', given once. True when a was one of them. */
bool cli_help_or_checkpoint(const char* a, void (*usage)(FILE*), const char** ckpt);
/* v, the word after option opt, as its value: a usage error naming opt when there is none
   (v NULL) or when v starts with "--" (an option: `--json --threads 4` must not write a
   file called "--threads"). A single "-" (stdin) and negative numbers pass. */
const char* cli_value(const char* opt, const char* v);
/* a, one of the n options in names that take a value v: dies when it is unknown, given
   twice (seen: n counters, zeroed) or has no value (cli_value); returns its index */
size_t cli_valued_option(const char* a, const char* v, const char* const* names, size_t n, int* seen);
#define CLI_VALUED_OPTION(a, v, names, seen) \
    cli_valued_option((a), (v), (names), sizeof(names) / sizeof((names)[0]), (seen))

/* The options several programs share, parsed here alone:
     --threads N         OpenMP and BLAS threads, N in [1, 4096] (0 when not given: all cores)
     --yarn-factor F     YaRN with factor F >= 1 at inference (cli_apply_yarn)
     --yarn-orig L0      its original length, L0 in [1, 2^31]
     --compute f32|bf16  the products' operands, as train.compute_dtype (model/products.h)
     --f32-engine auto|openblas|onednn   what runs the FP32 products, as train.f32_engine (model/engine.h)
   which: the ones a program takes (CLI_THREADS | CLI_YARN | CLI_COMPUTE: --compute and --f32-engine). */
enum { CLI_THREADS = 1, CLI_YARN = 2, CLI_COMPUTE = 4 };
typedef struct {
    int threads;                   /* 0: not given */
    double yarn_factor, yarn_orig; /* 0: not given */
    bool compute_bf16;             /* --compute bf16 */
    const char* f32_engine;        /* --f32-engine: NULL when not given ("auto") */
    int seen[5];                   /* uses of each, for "given twice" */
} CliShared;
/* When a is one of the shared options in which: checks and parses its value v into sh and
   returns true (the caller skips v); false for any other a */
bool cli_shared_option(CliShared* sh, unsigned which, const char* a, const char* v);

/* a whole-string unsigned integer in [lo, hi]; opt names the option in the message */
size_t cli_parse_size(const char* opt, const char* s, size_t lo, size_t hi);
/* a whole-string finite number */
double cli_parse_double(const char* opt, const char* s);
/* a comma-separated list of at most max integers in [lo, hi] into out; returns the count (>= 1) */
size_t cli_parse_size_list(const char* opt, const char* s, size_t lo, size_t hi, size_t* out, size_t max);

/* What a checkpoint's trainer_state.json says about its training, if it has one */
typedef struct {
    char dir[4096];   /* the Hugging Face checkpoint directory itself */
    size_t train_len; /* data.seq_len; 0 = unknown */
    cJSON* synthetic; /* data.synthetic (owned), NULL when absent or null */
} CkptInfo;

/* path: a checkpoint (has config.json) or a run directory (its newest complete
   checkpoint). Dies naming path when it is neither. */
void cli_resolve_checkpoint(CkptInfo* ci, const char* path);
void cli_ckpt_free(CkptInfo* ci);

/* The generator settings: opt (JSON text or a file of it) when given, else the
   checkpoint's data.synthetic, else the defaults. Returns where they came from. */
const char* cli_resolve_synthetic(SyntheticConfig* syn, const char* opt, const CkptInfo* ci);

/* cli_resolve_checkpoint, its config.json (and a LoRA adapter's) into cfg, then cli_apply_yarn with
   sh's --yarn-factor and --yarn-orig */
void cli_checkpoint_config(CkptInfo* ci, ModelConfig* cfg, const char* path, const CliShared* sh);

/* YaRN: the checkpoint's own, or factor > 1 with L0 = orig (> 0) or the
   training length; validates cfg */
void cli_apply_yarn(ModelConfig* cfg, double factor, double orig, const CkptInfo* ci);

/* Outputs are checked before any work, so a long run never ends in "cannot
   create": a file (--json) is created and removed again next to where it will
   go (next to a symbolic link's target; a FIFO or device must be writable:
   file_output_kind); a directory (--out) that does not exist yet is not created, but its
   nearest existing parent must take a new file. Each dies naming opt, the path
   and the fix. */
void cli_check_output_file(const char* opt, const char* path);
void cli_check_output_dir(const char* opt, const char* dir);

/* The tokenizer of a checkpoint's program: `given` (--tokenizer) when not NULL, else the checkpoint's own
   tokenizer.json (training copies model.init_from's into every checkpoint) into buf. None: NULL, or, when
   required, die saying how to pass one. */
const char* cli_tokenizer(const CkptInfo* ci, const char* given, bool required, char* buf, size_t len);

/* Build m for batches (B, T) without gradients and load the checkpoint's
   weights; dies when config.json asks for RePo weights the checkpoint lacks. f32_engine: --f32-engine, or
   NULL for the engine model/engine.h chooses; the program prints cli_products_line() where its output has
   room for it. */
void cli_load_model(Model* m, const ModelConfig* cfg, const CkptInfo* ci, size_t B, size_t T, bool compute_bf16,
                    const char* f32_engine);
/* "products: f32: oneDNN 2.6.3, ISA avx512_core (measured ...)": what runs the products of the model
   cli_load_model built, and why */
const char* cli_products_line(void);

#endif
