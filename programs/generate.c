/* build/generate CHECKPOINT --prompt TEXT: text in, text out. The prompt is
   tokenized with the checkpoint's tokenizer.json (tokenizer/tokenizer.h; the
   post-processor's BOS goes first), run through the model with the KV cache of
   model/generate.h (rope, repo and nope layers alike), and the new tokens are
   sampled one at a time (programs/gen_sampler.h: greedy at temperature 0, else
   top-k then top-p, reproducible from --seed) and printed as their bytes as
   soon as each is drawn. Stops after --max-new-tokens or at the end of text
   token. build/generate CHECKPOINT --chat ...: conversations through the
   checkpoint's chat template, each reply stopped at the end of its turn
   (programs/generate_chat.h). */
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
#include "programs/gen_sampler.h"
#include "programs/generate_chat.h"

#define MAX_TURNS 256 /* --system / --user / --assistant options */

typedef struct {
    const char* ckpt;
    const char* tokenizer;
    const char* prompt;
    size_t max_new, top_k;
    double temperature, top_p;
    uint64_t seed;
    CliShared sh; /* --threads, --yarn-factor, --yarn-orig */
    int ignore_eos;
    bool chat;                 /* --chat, or any of the options below */
    const char* messages;      /* --messages FILE.jsonl */
    ChatTurn turns[MAX_TURNS]; /* --system / --user / --assistant, in order */
    size_t n_turns;
} GenOptions;

static void usage(FILE* fp) {
    fprintf(fp,
            "usage: build/generate CHECKPOINT --prompt TEXT [options]\n"
            "       build/generate CHECKPOINT --chat [--system TEXT] [--user TEXT [--assistant TEXT --user TEXT]...]\n"
            "       build/generate CHECKPOINT --chat --messages FILE.jsonl\n"
            "  CHECKPOINT           a Hugging Face checkpoint directory or a run directory (its newest checkpoint)\n"
            "  --tokenizer P        tokenizer.json or its directory (default: the checkpoint directory)\n"
            "  --prompt TEXT        the text to continue\n"
            "  --chat               render a conversation with the tokenizer_config.json's chat_template and reply,\n"
            "                       stopping at the end of the turn; with no --user (or a last --system or\n"
            "                       --assistant), each line of standard input is a user turn, answered in turn\n"
            "  --system, --user, --assistant TEXT   the conversation's turns, in order (each implies --chat)\n"
            "  --messages FILE      JSONL of {\"messages\": [...]} records ('-': standard input): each completed with\n"
            "                       a reply (trailing assistant turns dropped first), printed as one JSON line\n"
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
        if (!strcmp(a, "--ignore-eos") || !strcmp(a, "--chat")) {
            if (a[2] == 'c') o->chat = true;
            else o->ignore_eos = 1;
            continue;
        }
        if (!strcmp(a, "--system") || !strcmp(a, "--user") || !strcmp(a, "--assistant")) {
            if (o->n_turns == MAX_TURNS) cli_bad_option("more than %d turns", MAX_TURNS);
            o->turns[o->n_turns++] = (ChatTurn){a + 2, cli_value(a, v)};
            o->chat = true;
            i++;
            continue;
        }
        if (cli_shared_option(&o->sh, CLI_THREADS | CLI_YARN | CLI_COMPUTE, a, v)) {
            i++;
            continue;
        }
        static const char* const valued[] = {"--tokenizer", "--prompt", "--max-new-tokens", "--temperature",
                                             "--top-k",     "--top-p",  "--seed",           "--messages"};
        static int seen[sizeof(valued) / sizeof(valued[0])];
        CLI_VALUED_OPTION(a, v, valued, seen);
        if (!strcmp(a, "--tokenizer")) o->tokenizer = v;
        else if (!strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "--messages")) o->messages = v, o->chat = true;
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
    if (o->chat && o->prompt) cli_bad_option("--prompt is the text to continue as it is; --chat takes the turns");
    if (o->messages && o->n_turns) cli_bad_option("--messages holds the conversations: no --system/--user/--assistant");
    if (!o->prompt && !o->chat) cli_bad_option("no --prompt given (or --chat for a conversation)");
}

/* a new token's text, printed as soon as it is drawn */
static void put_token(const Tokenizer* t, int32_t id) {
    uint8_t* out = NULL;
    size_t len = 0, cap = 0;
    gen_token_text(t, id, &out, &len, &cap);
    fwrite(out, 1, len, stdout);
    free(out);
    cli_flush_stdout();
}

/* the --prompt text continued with m; the statistics on stderr */
static void continue_prompt(const GenOptions* o, const Model* m, const Tokenizer* t, const TokEncoder* e,
                            GenSampler* s) {
    size_t n_prompt = e->n_ids;
    Generator g;
    /* the cache starts at prompt + 256 tokens and doubles as the new tokens need it */
    size_t max_T = n_prompt + (o->max_new ? o->max_new : 1), first_T = n_prompt + 256;
    gen_build(&g, m, first_T < max_T ? first_T : max_T, n_prompt < 512 ? n_prompt : 512);
    gen_allow_growth(&g, max_T);
    int32_t eos = tok_eos(t);
    fwrite(o->prompt, 1, strlen(o->prompt), stdout);
    cli_flush_stdout();
    double t0 = now_s();
    const real* logits = gen_prefill(&g, e->ids, n_prompt);
    double t1 = now_s();
    size_t n_new = 0;
    int stopped = 0;
    while (n_new < o->max_new) {
        int32_t id = gen_sampler_next(s, &g, logits);
        n_new++;
        if (id == eos && !o->ignore_eos) {
            stopped = 1;
            break;
        }
        put_token(t, id);
        if (n_new < o->max_new) logits = gen_step(&g, id);
    }
    double t2 = now_s();
    printf("\n");
    cli_flush_stdout(); /* the text ends its line before the statistics (stderr) start theirs, in a shared log too */
    fprintf(stderr, "generate: prompt %zu tokens in %.2f s (%.1f tok/s); %zu new tokens in %.2f s: %.1f tok/s%s\n",
            n_prompt, t1 - t0, (double)n_prompt / (t1 - t0), n_new, t2 - t1, t2 > t1 ? (double)n_new / (t2 - t1) : 0.0,
            stopped ? " (stopped at the end of text token)" : "");
    gen_free(&g);
}

int main(int argc, char** argv) {
    cli_init("generate");
    GenOptions o;
    parse_args(&o, argc, argv);
    CkptInfo ci;
    ModelConfig cfg;
    cli_checkpoint_config(&ci, &cfg, o.ckpt, &o.sh);
    char tok_path[4200];
    const char* tok_at = cli_tokenizer(&ci, o.tokenizer, true, tok_path, sizeof(tok_path));
    Tokenizer* t = tok_load(tok_at);
    CHECK(tok_vocab_size(t) <= cfg.V, "generate: the tokenizer has %zu tokens, more than the model's vocab_size %zu",
          tok_vocab_size(t), cfg.V);
    TokEncoder e;
    tok_encoder_init(&e, t);
    GenChat* chat = NULL;
    if (o.chat) {
        ChatSpec spec = {.tokenizer = tok_at,
                         .ckpt_dir = ci.dir,
                         .messages_file = o.messages,
                         .turns = o.turns,
                         .n_turns = o.n_turns,
                         .max_new = o.max_new,
                         .ignore_eos = o.ignore_eos};
        chat = gen_chat_open(&spec, &cfg, t);
    } else {
        size_t n_prefix;
        const int32_t* prefix = tok_prefix(t, &n_prefix);
        tok_push_ids(&e, prefix, n_prefix);
        tok_encode(&e, (const uint8_t*)o.prompt, strlen(o.prompt));
        if (e.invalid_utf8)
            fprintf(stderr, "generate: the prompt has %zu bytes that are not valid UTF-8\n", e.invalid_utf8);
        CHECK(e.n_ids > 0, "generate: the prompt is empty and the tokenizer adds no BOS: give a --prompt");
    }
    threads_init(o.sh.threads);
    Model m;
    cli_load_model(&m, &cfg, &ci, 1, 1, o.sh.compute_bf16, o.sh.f32_engine);
    GenSampler s;
    gen_sampler_init(&s, cfg.V, o.temperature, o.top_k, o.top_p, o.seed);
    if (chat) gen_chat_run(chat, &m, &s);
    else continue_prompt(&o, &m, t, &e, &s);
    fprintf(stderr, "generate: %s\n", cli_products_line()); /* after the text, with the statistics */
    gen_sampler_free(&s);
    model_free(&m);
    tok_encoder_free(&e);
    tok_free(t);
    cli_ckpt_free(&ci);
    return 0;
}
