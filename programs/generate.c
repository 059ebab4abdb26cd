/* build/generate CHECKPOINT --prompt TEXT: text in, text out. The prompt is
   tokenized with the checkpoint's tokenizer.json (tokenizer/tokenizer.h; the
   post-processor's BOS goes first), run through the model with the KV cache of
   model/generate.h (rope, repo and nope layers alike), and the new tokens are
   sampled one at a time and printed as their bytes as soon as each is drawn.
   Stops after --max-new-tokens or at the end of text token. Greedy when the
   temperature is 0; otherwise softmax(logits / T) restricted to the top-k
   logits and then to the smallest set of most likely tokens whose probability
   reaches top-p. Reproducible from --seed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/fileio.h"
#include "common/rng.h"
#include "common/threads.h"
#include "hf/hf_config.h"
#include "model/generate.h"
#include "tokenizer/tokenizer.h"
#include "programs/cli.h"

typedef struct {
    const char* ckpt;
    const char* tokenizer;
    const char* prompt;
    size_t max_new, top_k;
    double temperature, top_p;
    uint64_t seed;
    CliShared sh; /* --threads, --yarn-factor, --yarn-orig */
    int ignore_eos;
} GenOptions;

static void usage(FILE* fp) {
    fprintf(fp,
            "usage: build/generate CHECKPOINT --prompt TEXT [options]\n"
            "  CHECKPOINT           a Hugging Face checkpoint directory or a run directory (its newest checkpoint)\n"
            "  --tokenizer P        tokenizer.json or its directory (default: the checkpoint directory)\n"
            "  --prompt TEXT        the text to continue\n"
            "  --max-new-tokens N   at most N new tokens (default 128)\n"
            "  --temperature T      0 = greedy (default 0.8)\n"
            "  --top-k K            sample among the K most likely tokens (default 0 = all)\n"
            "  --top-p P            then among the most likely tokens holding probability P (default 1 = all)\n"
            "  --seed S             sampling seed (default 1)\n"
            "  --ignore-eos         keep going after the end of text token\n"
            "  --yarn-factor F      YaRN with factor F (original length: the training length, or --yarn-orig)\n"
            "  --yarn-orig L0       original_max_position_embeddings for --yarn-factor\n"
            "  --compute f32|bf16   the products' operands (bf16: BF16 with FP32 accumulation, train.compute_dtype)\n"
            "  --f32-engine E   auto (default), openblas or onednn: what runs the FP32 products (train.f32_engine)\n"
            "  --threads N          OpenMP and BLAS threads (default: all cores)\n"
            "  --help               this text\n"
            "The text goes to stdout as it is produced; the statistics go to stderr.\n");
}

static void parse_args(GenOptions* o, int argc, char** argv) {
    memset(o, 0, sizeof *o);
    o->max_new = 128;
    o->temperature = 0.8;
    o->top_p = 1;
    o->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_help_or_checkpoint(a, usage, &o->ckpt)) continue;
        if (!strcmp(a, "--ignore-eos")) {
            o->ignore_eos = 1;
            continue;
        }
        if (cli_shared_option(&o->sh, CLI_THREADS | CLI_YARN | CLI_COMPUTE, a, v)) {
            i++;
            continue;
        }
        static const char* const valued[] = {"--tokenizer", "--prompt", "--max-new-tokens", "--temperature", "--top-k",
                                             "--top-p",     "--seed"};
        static int seen[sizeof(valued) / sizeof(valued[0])];
        CLI_VALUED_OPTION(a, v, valued, seen);
        if (!strcmp(a, "--tokenizer")) o->tokenizer = v;
        else if (!strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "--max-new-tokens")) o->max_new = cli_parse_size(a, v, 0, (size_t)1 << 30);
        else if (!strcmp(a, "--top-k")) o->top_k = cli_parse_size(a, v, 0, (size_t)INT32_MAX);
        else if (!strcmp(a, "--seed")) o->seed = cli_parse_size(a, v, 0, (size_t)-1);
        else {
            double d = cli_parse_double(a, v);
            if (!strcmp(a, "--temperature")) {
                if (!(d >= 0)) cli_bad_option("--temperature: expected a number >= 0, got '%s'", v);
                o->temperature = d;
            } else { /* --top-p */
                if (!(d > 0 && d <= 1)) cli_bad_option("--top-p: expected a probability in (0, 1], got '%s'", v);
                o->top_p = d;
            }
        }
        i++;
    }
    if (!o->ckpt) cli_bad_option("no CHECKPOINT given");
    if (!o->prompt) cli_bad_option("no --prompt given");
}

typedef struct {
    real p;
    int32_t id;
} Cand;

static int cand_desc(const void* a, const void* b) {
    real x = ((const Cand*)a)->p, y = ((const Cand*)b)->p;
    if (x != y) return x < y ? 1 : -1;
    return ((const Cand*)a)->id - ((const Cand*)b)->id; /* the smaller id first on a tie */
}

/* top-p (nucleus) on top of the top-k softmax: probabilities over the top-k
   logits, sorted, the shortest prefix whose sum reaches top_p, sampled.
   w and cand hold V entries. */
static int32_t sample_top_p(const real* logits, size_t V, double temperature, size_t top_k, double top_p, real* w,
                            Cand* cand, Rng* rng) {
    gen_softmax_weights(w, logits, V, temperature, -INFINITY);
    for (size_t i = 0; i < V; i++) cand[i] = (Cand){w[i], (int32_t)i};
    qsort(cand, V, sizeof(Cand), cand_desc);
    size_t k = top_k > 0 && top_k < V ? top_k : V;
    while (k < V && cand[k].p == cand[k - 1].p) k++; /* ties with the k-th are kept, as gen_sample does */
    double sum = 0, kept = 0;
    for (size_t i = 0; i < k; i++) sum += cand[i].p;
    size_t n = 0;
    while (n < k && kept < top_p * sum) kept += cand[n++].p;
    double u = rng_uniform(rng) * kept, acc = 0;
    for (size_t i = 0; i < n; i++) {
        acc += cand[i].p;
        if (u < acc) return cand[i].id;
    }
    return cand[n - 1].id;
}

/* a new token's text through the decoder (it follows the prompt: not the start of the text) */
static void put_token(const Tokenizer* t, int32_t id) {
    uint8_t* out = NULL;
    size_t len = 0, cap = 0;
    if (tok_decode_from(t, &id, 1, false, &out, &len, &cap) == 1) fwrite(out, 1, len, stdout);
    else printf("<id %d>", id); /* an id of the model's padded vocab that the tokenizer lacks */
    free(out);
    cli_flush_stdout();
}

int main(int argc, char** argv) {
    cli_init("generate");
    GenOptions o;
    parse_args(&o, argc, argv);
    CkptInfo ci;
    ModelConfig cfg;
    cli_checkpoint_config(&ci, &cfg, o.ckpt, &o.sh);
    char tok_path[4200];
    Tokenizer* t = tok_load(cli_tokenizer(&ci, o.tokenizer, true, tok_path, sizeof(tok_path)));
    CHECK(tok_vocab_size(t) <= cfg.V, "generate: the tokenizer has %zu tokens, more than the model's vocab_size %zu",
          tok_vocab_size(t), cfg.V);

    TokEncoder e;
    tok_encoder_init(&e, t);
    size_t n_prefix;
    const int32_t* prefix = tok_prefix(t, &n_prefix);
    tok_push_ids(&e, prefix, n_prefix);
    tok_encode(&e, (const uint8_t*)o.prompt, strlen(o.prompt));
    if (e.invalid_utf8)
        fprintf(stderr, "generate: the prompt has %zu bytes that are not valid UTF-8\n", e.invalid_utf8);
    CHECK(e.n_ids > 0, "generate: the prompt is empty and the tokenizer adds no BOS: give a --prompt");
    size_t n_prompt = e.n_ids;

    threads_init(o.sh.threads);
    Model m;
    cli_load_model(&m, &cfg, &ci, 1, 1, o.sh.compute_bf16, o.sh.f32_engine);
    Generator g;
    /* the cache starts at prompt + 256 tokens and doubles as the new tokens need it */
    size_t max_T = n_prompt + (o.max_new ? o.max_new : 1), first_T = n_prompt + 256;
    gen_build(&g, &m, first_T < max_T ? first_T : max_T, n_prompt < 512 ? n_prompt : 512);
    gen_allow_growth(&g, max_T);
    Cand* cand = o.top_p < 1 && o.temperature > 0 ? mallocCheck(cfg.V * sizeof(Cand)) : NULL;
    real* w = cand ? mallocCheck(cfg.V * sizeof(real)) : NULL;
    Rng rng;
    rng_seed(&rng, o.seed);
    int32_t eos = tok_eos(t);

    fwrite(o.prompt, 1, strlen(o.prompt), stdout);
    cli_flush_stdout();
    double t0 = now_s();
    const real* logits = gen_prefill(&g, e.ids, n_prompt);
    double t1 = now_s();
    size_t n_new = 0;
    int stopped = 0;
    while (n_new < o.max_new) {
        int32_t id = cand ? sample_top_p(logits, cfg.V, o.temperature, o.top_k, o.top_p, w, cand, &rng)
                          : gen_sample(&g, logits, o.temperature, o.top_k, &rng);
        n_new++;
        if (id == eos && !o.ignore_eos) {
            stopped = 1;
            break;
        }
        put_token(t, id);
        if (n_new < o.max_new) logits = gen_step(&g, id);
    }
    double t2 = now_s();
    printf("\n");
    cli_flush_stdout(); /* the text ends its line before the statistics (stderr) start theirs, in a shared log too */
    fprintf(stderr, "generate: prompt %zu tokens in %.2f s (%.1f tok/s); %zu new tokens in %.2f s: %.1f tok/s%s\n",
            n_prompt, t1 - t0, (double)n_prompt / (t1 - t0), n_new, t2 - t1, t2 > t1 ? (double)n_new / (t2 - t1) : 0.0,
            stopped ? " (stopped at the end of text token)" : "");
    fprintf(stderr, "generate: %s\n", cli_products_line()); /* after the text, with the statistics */
    free(cand);
    free(w);
    gen_free(&g);
    model_free(&m);
    tok_encoder_free(&e);
    tok_free(t);
    cli_ckpt_free(&ci);
    return 0;
}
