/* build/analyze CHECKPOINT [options]: where a checkpoint's attention goes and
   what positions its RePo layers learn (docs/analyze.md):
   - the learned positions z per RePo layer and KV head for synthetic items or
     a window of a token file, with range, step and segment-class statistics;
   - the attention mass of the query rows of synthetic retrieval items on the
     needle, the query and the rest, for any position mode;
   - the paper's analyses of z: its range against the input length (--ranges),
     how its large jumps align with the items' segment boundaries, and how close
     the needle sits to the query against the filler;
   - the positions of any text through a tokenizer (--text, --text-file);
   - CSV, JSON and SVG figures (--out DIR), and --compare for several runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/threads.h"
#include "data/tokens.h"
#include "eval/analyze_compare.h"
#include "eval/analyze_out.h"
#include "eval/eval_tasks.h" /* eval_prompt_len: the same lengths as build/eval */
#include "hf/hf_config.h"
#include "programs/analyze_run.h"
#include "programs/cli.h"

#define MAX_COMPARE 64
#define MAX_LENGTH ((size_t)1 << 31)
#define MAX_RANGES 8

typedef struct {
    const char* ckpt;
    const char* compare[MAX_COMPARE];
    size_t n_compare;
    bool want_pos, want_att, parts_given;
    const char* tokens;
    size_t offset;
    SynFamily family;
    size_t length, items; /* 0: the training length (else 256); items 1 */
    bool items_given;
    uint64_t seed;
    double depth; /* < 0: drawn per item */
    const char* synthetic;
    SegParams seg;             /* eps_const < 0: 0.1 x len */
    size_t layer_lo, layer_hi; /* layer_hi < layer_lo: the default layers */
    size_t plot_heads[MAX_LAYERS], n_plot_heads;
    const char* label;
    const char* out;
    size_t range_mult[MAX_RANGES], n_ranges; /* --ranges */
    bool ranges_yarn;
    double top_frac;
    const char *text, *text_file, *tokenizer;
    bool length_given;
    CliShared sh; /* --threads, --yarn-factor, --yarn-orig */
} AnalyzeOptions;

static void usage(FILE* fp) {
    fprintf(fp, "usage: build/analyze CHECKPOINT [options]\n"
                "       build/analyze --compare A.json B.json ... --out DIR\n"
                "  CHECKPOINT          a Hugging Face checkpoint directory or a run directory (its newest checkpoint)\n"
                "  --positions         learned positions z of the RePo layers (default: with --attention)\n"
                "  --attention         attention mass of the query rows on needle / query / rest (default: with\n"
                "                      --positions; synthetic input only)\n"
                "  --task NAME         synthetic family: single (default), multikey, multivalue, multiquery,\n"
                "                      distractor, table\n"
                "  --length L          tokens the model reads (default: the training seq_len T0, else 256)\n"
                "  --items N           synthetic items; statistics and masses are averaged over them (default 1)\n"
                "  --seed S            item seed (default 1), as build/eval's\n"
                "  --depth D           put the asked needle at fraction D in [0,1] of the haystack (default: random)\n"
                "  --synthetic JSON    generator settings (default: the checkpoint's data.synthetic, else defaults)\n"
                "  --tokens FILE       positions for one window of a token file instead (--offset N, default 0)\n"
                "  --segment N         tokens per segment of the segment classes (default 16)\n"
                "  --eps-const E       near-constant: range below E position units (default 0.1 x segment)\n"
                "  --mono-frac F       monotonic: at least F of the steps share one sign (default 0.9)\n"
                "  --layers A-B        attention layers (default: the RePo layers, else floor(L/3)..L-1)\n"
                "  --plot-heads LIST   KV heads drawn in positions.svg (default: the first four)\n"
                "  --ranges LIST       (a) z's range at these multiples of the length, e.g. 1,2,4 (ranges.csv, .svg)\n"
                "  --ranges-yarn       (a) also with YaRN, factor = the multiple (as build/eval --yarn-factor)\n"
                "  --top-frac F        (b) large |dz|: the top F of each item's gaps (default 0.1)\n"
                "  --text S            the positions of a text (--text-file F: of a file's text) through\n"
                "                      --tokenizer P (default: the checkpoint's tokenizer.json)\n"
                "  --label NAME        names the checkpoint in the JSON and in --compare (default: its position plan)\n"
                "  --out DIR           write positions.csv, analysis.json, positions.svg, attention.svg (and PNG\n"
                "                      when rsvg-convert is on PATH)\n"
                "  --compare FILES...  grouped bars and a table from several analysis.json files (needs --out)\n"
                "  --yarn-factor F     YaRN with factor F (--yarn-orig L0, default the training length)\n"
                "  --threads N         OpenMP and BLAS threads (default: all cores)\n"
                "  --help              this text\n");
}

/* "A-B" or "A" */
static void parse_layers(AnalyzeOptions* o, const char* v) {
    char buf[64];
    snprintf(buf, sizeof(buf), "%s", v);
    char* dash = strchr(buf, '-');
    if (dash) *dash = 0;
    o->layer_lo = cli_parse_size("--layers", buf, 0, MAX_LAYERS - 1);
    o->layer_hi = dash ? cli_parse_size("--layers", dash + 1, 0, MAX_LAYERS - 1) : o->layer_lo;
    if (o->layer_hi < o->layer_lo) cli_bad_option("--layers: '%s' ends before it starts", v);
}

/* the options that take a value; the value is v */
static void parse_valued(AnalyzeOptions* o, const char* a, const char* v) {
    if (!strcmp(a, "--task")) {
        int f = synthetic_family_parse(v);
        if (f < 0) cli_bad_option("--task: unknown task '%s' (%s)", v, synthetic_family_list());
        o->family = (SynFamily)f;
    } else if (!strcmp(a, "--length")) {
        o->length = cli_parse_size(a, v, 2, MAX_LENGTH);
        o->length_given = true;
    } else if (!strcmp(a, "--ranges")) o->n_ranges = cli_parse_size_list(a, v, 1, 64, o->range_mult, MAX_RANGES);
    else if (!strcmp(a, "--top-frac")) {
        o->top_frac = cli_parse_double(a, v);
        if (!(o->top_frac > 0 && o->top_frac <= 1))
            cli_bad_option("--top-frac: expected a share in (0, 1], got '%s'", v);
    } else if (!strcmp(a, "--text")) o->text = v;
    else if (!strcmp(a, "--text-file")) o->text_file = v;
    else if (!strcmp(a, "--tokenizer")) o->tokenizer = v;
    else if (!strcmp(a, "--items")) {
        o->items = cli_parse_size(a, v, 1, 1000000);
        o->items_given = true;
    } else if (!strcmp(a, "--seed")) o->seed = cli_parse_size(a, v, 0, (size_t)-1);
    else if (!strcmp(a, "--depth")) {
        o->depth = cli_parse_double(a, v);
        if (!(o->depth >= 0 && o->depth <= 1)) cli_bad_option("--depth: expected a fraction in [0, 1], got '%s'", v);
    } else if (!strcmp(a, "--synthetic")) o->synthetic = v;
    else if (!strcmp(a, "--tokens")) o->tokens = v;
    else if (!strcmp(a, "--offset")) o->offset = cli_parse_size(a, v, 0, (size_t)-1);
    else if (!strcmp(a, "--segment")) o->seg.len = cli_parse_size(a, v, 2, 1 << 20);
    else if (!strcmp(a, "--eps-const")) {
        o->seg.eps_const = cli_parse_double(a, v);
        if (!(o->seg.eps_const >= 0)) cli_bad_option("--eps-const: expected a number >= 0, got '%s'", v);
    } else if (!strcmp(a, "--mono-frac")) {
        o->seg.mono_frac = cli_parse_double(a, v);
        if (!(o->seg.mono_frac > 0.5 && o->seg.mono_frac <= 1))
            cli_bad_option("--mono-frac: expected a share in (0.5, 1], got '%s'", v);
    } else if (!strcmp(a, "--layers")) parse_layers(o, v);
    else if (!strcmp(a, "--plot-heads"))
        o->n_plot_heads = cli_parse_size_list(a, v, 0, 1 << 20, o->plot_heads, MAX_LAYERS);
    else if (!strcmp(a, "--label")) o->label = v;
    else o->out = v; /* --out */
}

/* what --text and --ranges combine with: usage errors before any file is read */
static void check_text_options(const AnalyzeOptions* o) {
    if (o->ranges_yarn && !o->n_ranges) cli_bad_option("--ranges-yarn adds YaRN runs to --ranges LIST; give --ranges");
    const char* text = o->text ? "--text" : o->text_file ? "--text-file" : NULL;
    if (o->text && o->text_file) cli_bad_option("give --text or --text-file, not both");
    if (o->tokenizer && !text) cli_bad_option("--tokenizer is read with --text or --text-file");
    if (!text) return;
    if (o->tokens) cli_bad_option("%s and --tokens: one input at a time", text);
    if (o->want_att) cli_bad_option("--attention needs synthetic items (needle and query spans); %s has none", text);
    if (o->items_given) cli_bad_option("--items: %s is one input", text);
    if (o->length_given) cli_bad_option("--length: %s sets the length (its tokens)", text);
    if (o->n_ranges) cli_bad_option("--ranges measures synthetic items or a token window; not %s", text);
}

static void parse_args(AnalyzeOptions* o, int argc, char** argv) {
    memset(o, 0, sizeof(*o));
    o->family = SYN_SINGLE;
    o->items = 1;
    o->seed = 1;
    o->depth = -1;
    o->seg = (SegParams){SEG_LEN_DEFAULT, -1, SEG_MONO_FRAC_DEFAULT};
    o->layer_hi = 0; /* unset */
    o->layer_lo = 1;
    o->top_frac = BOUNDARY_TOP_FRAC_DEFAULT;
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        if (cli_help_or_checkpoint(a, usage, &o->ckpt)) continue;
        if (!strcmp(a, "--compare")) {
            while (i + 1 < argc && argv[i + 1][0] != '-') {
                if (o->n_compare == MAX_COMPARE) cli_bad_option("--compare: more than %d files", MAX_COMPARE);
                o->compare[o->n_compare++] = argv[++i];
            }
            if (!o->n_compare) cli_bad_option("--compare: expected at least one analysis.json");
        } else if (!strcmp(a, "--positions")) o->want_pos = o->parts_given = true;
        else if (!strcmp(a, "--attention")) o->want_att = o->parts_given = true;
        else if (!strcmp(a, "--ranges-yarn")) o->ranges_yarn = true;
        else {
            static const char* valued[] = {"--task",      "--length",   "--items",      "--seed",      "--depth",
                                           "--synthetic", "--tokens",   "--offset",     "--segment",   "--eps-const",
                                           "--mono-frac", "--layers",   "--plot-heads", "--label",     "--out",
                                           "--ranges",    "--top-frac", "--text",       "--text-file", "--tokenizer"};
            static int seen[sizeof(valued) / sizeof(valued[0])];
            const char* v = i + 1 < argc ? argv[i + 1] : NULL;
            if (!cli_shared_option(&o->sh, CLI_THREADS | CLI_YARN, a, v)) {
                CLI_VALUED_OPTION(a, v, valued, seen);
                parse_valued(o, a, v);
            }
            i++;
        }
    }
    if (o->n_compare && o->ckpt)
        cli_bad_option("--compare reads analysis.json files; give no CHECKPOINT ('%s')", o->ckpt);
    if (o->n_compare && !o->out) cli_bad_option("--compare needs --out DIR for its figures");
    if (!o->n_compare && !o->ckpt) cli_bad_option("no CHECKPOINT given");
    if (o->seg.eps_const < 0) o->seg.eps_const = seg_eps_const_default(o->seg.len);
    check_text_options(o);
}

/* "rope,rope,repo" (sep ","), cut where out ends */
static void mode_list(char* out, size_t n, const ModelConfig* cfg, const char* sep) {
    size_t used = 0;
    out[0] = 0;
    for (size_t l = 0; l < cfg->L && used + 8 < n; l++)
        used += (size_t)snprintf(out + used, n - used, "%s%s", l ? sep : "", pos_mode_name(cfg->pos[l]));
}

/* the plan name when cfg's layers follow one (build/train's position plans), else the modes */
static void default_label(char* out, size_t n, const ModelConfig* cfg) {
    static const char* const plans[] = {"rope", "nope", "repo", "r2n1", "n2r1"};
    for (size_t i = 0; i < sizeof(plans) / sizeof(plans[0]); i++) {
        ModelConfig c = *cfg;
        if (model_config_plan_positions(&c, plans[i], REPO_START_DEFAULT) &&
            !memcmp(c.pos, cfg->pos, cfg->L * sizeof(PosMode))) {
            snprintf(out, n, "%s", plans[i]);
            return;
        }
    }
    mode_list(out, n, cfg, ",");
}

/* The attention layers: --layers, else the RePo layers, else floor(L/3)..L-1 (where
   the default plan puts RePo, so checkpoints of every mode are compared on the
   same layers); the KV heads of the figure: --plot-heads, else the first four */
static void choose_layers_and_heads(Analysis* an, AnalyzeOptions* o) {
    const ModelConfig* c = &an->cfg;
    if (o->layer_hi >= o->layer_lo) {
        if (o->layer_hi >= c->L)
            cli_bad_option("--layers: layer %zu, the model has %zu (0..%zu)", o->layer_hi, c->L, c->L - 1);
        for (size_t l = o->layer_lo; l <= o->layer_hi; l++) an->att_layer[an->n_att++] = l;
    } else if (an->n_repo) {
        memcpy(an->att_layer, an->repo_layer, an->n_repo * sizeof(size_t));
        an->n_att = an->n_repo;
    } else {
        for (size_t l = c->L / 3; l < c->L; l++) an->att_layer[an->n_att++] = l;
    }
    if (!o->n_plot_heads)
        for (size_t g = 0; g < c->KVH && g < 4; g++) o->plot_heads[o->n_plot_heads++] = g;
    for (size_t i = 0; i < o->n_plot_heads; i++)
        if (o->plot_heads[i] >= c->KVH)
            cli_bad_option("--plot-heads: head %zu, the model has %zu KV heads (0..%zu)", o->plot_heads[i], c->KVH,
                           c->KVH - 1);
}

/* Decide what runs on what, and check it all before loading any weight */
static void plan(Analysis* an, AnalyzeOptions* o, const CkptInfo* ci, SyntheticConfig* syn) {
    const ModelConfig* c = &an->cfg;
    an->ckpt_dir = ci->dir;
    an->train_len = ci->train_len;
    an->kind = o->text || o->text_file ? INPUT_TEXT : o->tokens ? INPUT_TOKENS : INPUT_SYNTHETIC;
    an->synthetic = an->kind == INPUT_SYNTHETIC;
    if (o->tokens && o->want_att)
        cli_bad_option("--attention needs synthetic items (it sums over the needle and query spans); --tokens "
                       "gives positions only");
    if (o->tokens && o->items_given) cli_bad_option("--items: --tokens analyses one window (use --offset)");
    an->has_pos = o->parts_given ? o->want_pos : true;
    an->has_att = o->parts_given ? o->want_att : an->synthetic;
    for (size_t l = 0; l < c->L; l++)
        if (c->pos[l] == POS_REPO) an->repo_layer[an->n_repo++] = l;
    if (an->has_pos && !an->n_repo) {
        char modes[1024];
        mode_list(modes, sizeof(modes), c, " ");
        DIE("analyze: %s has no RePo layers (layer positions: %s): it has no learned positions to analyse; "
            "--attention alone gives the attention mass",
            ci->dir, modes);
    }
    if (o->n_ranges && !an->n_repo)
        DIE("analyze: --ranges: %s has no RePo layers: it has no learned positions whose range to measure", ci->dir);
    if (o->ranges_yarn && c->yarn_factor > 1)
        DIE("analyze: --ranges-yarn: the model already has YaRN (factor %g, original length %g; from the checkpoint "
            "or --yarn-factor), which every run of --ranges uses; give --ranges alone",
            c->yarn_factor, c->yarn_orig_max);
    choose_layers_and_heads(an, o);
    if (o->label) snprintf(an->label, sizeof(an->label), "%s", o->label);
    else default_label(an->label, sizeof(an->label), c);

    an->length = o->length ? o->length : ci->train_len ? ci->train_len : 256;
    an->items = o->items;
    an->family = o->family;
    an->seed = o->seed;
    an->depth = o->depth;
    an->tokens_file = o->tokens;
    an->offset = o->offset;
    an->seg = o->seg;
    an->top_frac = o->top_frac;
    double eos = hf_carried_eos(c);
    an->eos = eos >= 0 && eos < (double)c->V ? (int32_t)eos : -1;
    for (size_t k = 0; k < o->n_ranges; k++)
        if (o->range_mult[k] > MAX_LENGTH / an->length)
            cli_bad_option("--ranges: %zu x the length %zu is above %zu tokens", o->range_mult[k], an->length,
                           MAX_LENGTH);
    if (an->kind == INPUT_TEXT) {
        an->items = 1;
        analyze_text_input(an, o->text, o->text_file, o->tokenizer, ci); /* sets the length */
        return;
    }
    if (an->synthetic) {
        const char* from = cli_resolve_synthetic(syn, o->synthetic, ci);
        synthetic_validate(syn, c->V);
        SynIds id = synthetic_ids(syn);
        if (an->eos >= (int32_t)syn->first_id && an->eos < id.end) an->eos = -1; /* a mark or symbol, not an eos */
        an->prompt_len = eval_prompt_len(syn, an->family, an->length);           /* dies when the length is too short */
        printf("synthetic items: %zu x %s, length %zu (prompt %zu), seed %llu; generator settings from %s\n", an->items,
               synthetic_family_name(an->family), an->length, an->prompt_len, (unsigned long long)an->seed, from);
    }
    if (an->has_pos && an->length < an->seg.len)
        cli_bad_option("--segment %zu is longer than the input (%zu tokens)", an->seg.len, an->length);
}

int main(int argc, char** argv) {
    cli_init("analyze");
    AnalyzeOptions o;
    parse_args(&o, argc, argv);
    if (o.out) cli_check_output_dir("--out", o.out);
    if (o.n_compare) {
        analyze_compare(o.compare, o.n_compare, o.out);
        return 0;
    }
    CkptInfo ci;
    Analysis an;
    memset(&an, 0, sizeof(an));
    cli_checkpoint_config(&ci, &an.cfg, o.ckpt, &o.sh); /* a LoRA adapter's config too */
    SyntheticConfig syn;
    plan(&an, &o, &ci, &syn);
    TokenData td = {0};
    if (o.tokens) {
        const char* pat[] = {o.tokens};
        token_data_open(&td, pat, 1, "auto", an.cfg.V);
        size_t window = an.length;
        for (size_t k = 0; k < o.n_ranges; k++)
            window = o.range_mult[k] * an.length > window ? o.range_mult[k] * an.length : window;
        CHECK(o.offset <= td.n_tokens && td.n_tokens - o.offset >= window,
              "analyze: %s holds %zu tokens; a "
              "window of %zu from offset %zu runs past its end%s",
              o.tokens, td.n_tokens, window, o.offset, window > an.length ? " (the longest of --ranges)" : "");
    }

    threads_init(o.sh.threads);
    threads_print(stdout);
    printf("checkpoint %s (%s)\n", ci.dir, an.label);
    model_config_print(&an.cfg, stdout);
    Model m;
    cli_load_model(&m, &an.cfg, &ci, 1, an.length, false, NULL);
    printf("%s\n", cli_products_line());
    analyze_run(&an, &m, &syn, &td);
    model_free(&m);
    if (o.n_ranges) analyze_ranges(&an, &ci, &syn, &td, o.range_mult, o.n_ranges, o.ranges_yarn, o.sh.yarn_orig);
    analysis_print(&an);
    if (o.out) analysis_write(&an, o.out, o.plot_heads, o.n_plot_heads);
    else printf("(--out DIR writes positions.csv, analysis.json and the figures)\n");

    if (o.tokens) token_data_close(&td);
    analysis_free(&an);
    cli_ckpt_free(&ci);
    return 0;
}
