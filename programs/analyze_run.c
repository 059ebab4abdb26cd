/* build/analyze's inputs, forward passes and range runs (programs/analyze_run.h, docs/analyze.md). */
#include "programs/analyze_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "eval/eval_tasks.h" /* eval_prompt_len */
#include "eval/ruler.h"      /* ruler_max_length: what the model addresses */
#include "tokenizer/tokenizer.h"

/* the length of the UTF-8 sequence that starts s (n bytes left), 0 when it is not a whole valid one */
static size_t utf8_len(const unsigned char* s, size_t n) {
    size_t len = s[0] < 0x80             ? 1
                 : (s[0] & 0xE0) == 0xC0 ? 2
                 : (s[0] & 0xF0) == 0xE0 ? 3
                 : (s[0] & 0xF8) == 0xF0 ? 4
                                         : 0;
    if (!len || len > n || (len == 2 && s[0] < 0xC2)) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return len;
}

/* a token's bytes as printable UTF-8: controls as \n, \t, \r or \xNN, and so is each byte that is not part
   of a whole UTF-8 character (a token may hold half of one) */
static char* printable(const unsigned char* s, size_t n) {
    char* out = mallocCheck(4 * n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_len(s + i, n - i);
        if (len > 1 || (len == 1 && s[i] >= 0x20 && s[i] != 0x7F)) {
            memcpy(out + o, s + i, len);
            o += len;
            i += len;
            continue;
        }
        const char* esc = s[i] == '\n' ? "\\n" : s[i] == '\t' ? "\\t" : s[i] == '\r' ? "\\r" : NULL;
        o += esc ? (size_t)sprintf(out + o, "%s", esc) : (size_t)sprintf(out + o, "\\x%02X", s[i]);
        i++;
    }
    out[o] = 0;
    return out;
}

void analyze_text_input(Analysis* an, const char* text, const char* text_file, const char* tokenizer,
                        const CkptInfo* ci) {
    const char* opt = text_file ? "--text-file" : "--text";
    size_t n = 0;
    char* bytes = text_file ? file_read_all_or_null(text_file, &n) : NULL;
    if (text_file && !bytes) DIE("analyze: --text-file '%s': %s", text_file, file_read_error(errno));
    if (!text_file) n = strlen(text);
    CHECK(n > 0, "analyze: %s: the text is empty", opt);
    if (tokenizer)
        CHECK(path_exists(tokenizer), "analyze: --tokenizer '%s' does not exist (a tokenizer.json or its directory)",
              tokenizer);
    char path[4200];
    snprintf(an->tokenizer, sizeof(an->tokenizer), "%s", cli_tokenizer(ci, tokenizer, true, path, sizeof(path)));
    Tokenizer* tok = tok_load(an->tokenizer); /* cli_tokenizer died when there is none */
    CHECK(tok_vocab_size(tok) <= an->cfg.V,
          "analyze: --tokenizer %s has %zu tokens, more than the model's vocab_size %zu", tok_name(tok),
          tok_vocab_size(tok), an->cfg.V);
    TokEncoder e;
    tok_encoder_init(&e, tok);
    size_t n_prefix;
    const int32_t* prefix = tok_prefix(tok, &n_prefix);
    tok_push_ids(&e, prefix, n_prefix);
    tok_encode(&e, (const uint8_t*)(bytes ? bytes : text), n);
    size_t max = ruler_max_length(&an->cfg);
    CHECK(e.n_ids >= 2, "analyze: %s: the text is %zu token(s); learned positions need at least 2", opt, e.n_ids);
    CHECK(e.n_ids <= max,
          "analyze: %s: the text is %zu tokens, above what the model can address: %zu positions "
          "(max_position_embeddings, or the YaRN factor times original_max_position_embeddings; --yarn-factor "
          "extends it)",
          opt, e.n_ids, max);
    an->length = e.n_ids;
    an->tokens0 = mallocCheck(e.n_ids * sizeof(int32_t));
    memcpy(an->tokens0, e.ids, e.n_ids * sizeof(int32_t));
    an->pieces = callocCheck(e.n_ids, sizeof(char*));
    for (size_t t = 0; t < e.n_ids; t++) {
        size_t len = 0;
        const uint8_t* b = tok_token_bytes(tok, e.ids[t], &len);
        an->pieces[t] = printable(b ? b : (const uint8_t*)"", b ? len : 0);
    }
    an->text_from = text_file ? text_file : "--text";
    printf("text from %s: %zu bytes, %zu tokens with %s\n", an->text_from, n, e.n_ids, tok_name(tok));
    tok_encoder_free(&e);
    tok_free(tok);
    free(bytes);
}

/* input i of T tokens (prompt P for a synthetic item): the item (its prompt, then its answer but the last
   token) with its spans, the token window starting at offset, or the text */
static void make_input(int32_t* x, ItemSpans* spans, const Analysis* an, const SyntheticConfig* syn,
                       const TokenData* td, size_t i, size_t T, size_t P) {
    if (an->kind == INPUT_TEXT) {
        memcpy(x, an->tokens0, T * sizeof(int32_t));
        return;
    }
    if (an->kind == INPUT_TOKENS) {
        for (size_t t = 0; t < T; t++) x[t] = (int32_t)token_data_at(td, an->offset + t);
        return;
    }
    int32_t answer[SYN_MAX_ANSWER];
    size_t at = synthetic_item(syn, an->family, an->seed, i, P, an->depth, x, answer);
    memcpy(x + P, answer, (T - P) * sizeof(int32_t));
    item_spans(spans, syn, an->family, x, P);
    bool found = an->family == SYN_TABLE; /* the table's start is not its asked row's */
    for (size_t b = 0; b < spans->n_needles; b++) found |= spans->needle[b].begin == at;
    CHECK(found, "analyze: item %zu: the asked needle at %zu is not among the spans found", i, at);
}

/* (b) and (c) of item i from every RePo layer's z (T,KVH) */
static void gather_boundaries(Analysis* an, const Model* m, const int32_t* x, size_t i, uint8_t* is_boundary) {
    size_t T = an->length, KVH = an->cfg.KVH;
    item_boundary_gaps(is_boundary, &an->spans[i], x, an->prompt_len, T, an->eos);
    for (size_t r = 0; r < an->n_repo; r++) {
        const real* z = m->la[an->repo_layer[r]].z; /* (T,KVH) */
        for (size_t g = 0; g < KVH; g++) {
            size_t at = (i * an->n_repo + r) * KVH + g;
            BoundaryCount c = boundary_count(z + g, KVH, T, is_boundary, an->top_frac);
            an->bnd_share[at] = boundary_share(&c);
            an->bnd_chance[i] = boundary_chance(&c);
            an->bnd_best[i] = boundary_best(&c);
            an->bnd_large = c.large;
            ZDist d = z_query_distance(z + g, KVH, &an->spans[i]);
            an->d_needle[at] = d.needle;
            an->d_filler[at] = d.filler;
        }
    }
}

static void alloc_results(Analysis* an) {
    size_t T = an->length, KVH = an->cfg.KVH, heads = an->n_repo * KVH;
    if (!an->tokens0) an->tokens0 = mallocCheck(T * sizeof(int32_t));
    an->head_stats = callocCheck(heads, sizeof(PosStats));
    an->z0 = callocCheck(an->n_repo * T * KVH, sizeof(real));
    an->layer_rows = callocCheck(an->n_att, sizeof(Mass));
    an->layer_sep = callocCheck(an->n_att, sizeof(Mass));
    an->item_rows = callocCheck(an->items, sizeof(Mass));
    an->spans = callocCheck(an->items, sizeof(ItemSpans));
    if (an->synthetic && an->has_pos) {
        an->bnd_share = callocCheck(an->items * heads, sizeof(double));
        an->bnd_chance = callocCheck(an->items, sizeof(double));
        an->bnd_best = callocCheck(an->items, sizeof(double));
        an->d_needle = callocCheck(an->items * heads, sizeof(double));
        an->d_filler = callocCheck(an->items * heads, sizeof(double));
    }
}

void analyze_run(Analysis* an, Model* m, const SyntheticConfig* syn, const TokenData* td) {
    size_t T = an->length, KVH = an->cfg.KVH;
    alloc_results(an);
    int32_t* x = mallocCheck(T * sizeof(int32_t));
    uint8_t* is_boundary = mallocCheck(T);
    Mass* rows = callocCheck(an->n_att, sizeof(Mass));
    Mass* sep = callocCheck(an->n_att, sizeof(Mass));
    for (size_t i = 0; i < an->items; i++) {
        make_input(x, &an->spans[i], an, syn, td, i, T, an->prompt_len);
        model_forward(m, &(Batch){.B = 1, .T = T, .tokens = x});
        if (i == 0) memcpy(an->tokens0, x, T * sizeof(int32_t));
        for (size_t r = 0; an->has_pos && r < an->n_repo; r++) {
            const real* z = m->la[an->repo_layer[r]].z; /* (T,KVH) */
            if (i == 0) memcpy(an->z0 + r * T * KVH, z, T * KVH * sizeof(real));
            pos_stats_add_layer(&an->head_stats[r * KVH], false, z, 1, T, KVH, &an->seg);
        }
        if (an->bnd_share) gather_boundaries(an, m, x, i, is_boundary);
        if (!an->has_att) continue;
        attn_mass_item(rows, sep, m, &an->spans[i], an->att_layer, an->n_att);
        for (size_t l = 0; l < an->n_att; l++) {
            attn_mass_merge(&an->layer_rows[l], &rows[l]);
            attn_mass_merge(&an->layer_sep[l], &sep[l]);
            attn_mass_merge(&an->item_rows[i], &rows[l]);
        }
    }
    free(rows);
    free(sep);
    free(is_boundary);
    free(x);
}

/* one run of (a): the model with cfg at mult x the analysed length, the ranges of every input's z */
static void range_run(RangeRun* rr, const Analysis* an, const ModelConfig* cfg, const CkptInfo* ci,
                      const SyntheticConfig* syn, const TokenData* td) {
    size_t T = rr->length, KVH = an->cfg.KVH;
    size_t P = an->synthetic ? eval_prompt_len(syn, an->family, T) : 0;
    Model m;
    cli_load_model(&m, cfg, ci, 1, T, false, NULL);
    rr->head = callocCheck(an->n_repo * KVH, sizeof(ZRange));
    int32_t* x = mallocCheck(T * sizeof(int32_t));
    double* work = mallocCheck(T * sizeof(double));
    ItemSpans spans;
    for (size_t i = 0; i < rr->items; i++) {
        make_input(x, &spans, an, syn, td, i, T, P);
        model_forward(&m, &(Batch){.B = 1, .T = T, .tokens = x});
        for (size_t r = 0; r < an->n_repo; r++)
            for (size_t g = 0; g < KVH; g++) {
                ZRange zr = z_range(m.la[an->repo_layer[r]].z + g, KVH, T, work);
                rr->head[r * KVH + g].range += zr.range / (double)rr->items;
                rr->head[r * KVH + g].span += zr.span / (double)rr->items;
            }
    }
    free(x);
    free(work);
    model_free(&m);
}

void analyze_ranges(Analysis* an, const CkptInfo* ci, const SyntheticConfig* syn, const TokenData* td,
                    const size_t* mults, size_t n, bool with_yarn, double yarn_orig) {
    an->ranges = callocCheck(2 * n, sizeof(RangeRun));
    for (size_t k = 0; k < n; k++)
        for (int yarn = 0; yarn < (with_yarn && mults[k] > 1 ? 2 : 1); yarn++) {
            RangeRun* rr = &an->ranges[an->n_ranges++];
            ModelConfig cfg = an->cfg;
            if (yarn) { /* as build/eval --yarn-factor mult: original length --yarn-orig, else the training one */
                cfg.yarn_factor = (double)mults[k];
                cfg.yarn_orig_max = yarn_orig ? yarn_orig : ci->train_len ? (double)ci->train_len : (double)an->length;
                model_config_validate(&cfg);
            }
            *rr =
                (RangeRun){mults[k] * an->length, mults[k], cfg.yarn_factor, yarn, an->synthetic ? an->items : 1, NULL};
            printf("ranges: length %zu (%zux)%s\n", rr->length, rr->mult, yarn ? " with YaRN" : "");
            range_run(rr, an, &cfg, ci, syn, td);
        }
}

void analysis_free(Analysis* an) {
    free(an->tokens0);
    free(an->head_stats);
    free(an->z0);
    free(an->layer_rows);
    free(an->layer_sep);
    free(an->item_rows);
    free(an->spans);
    free(an->bnd_share);
    free(an->bnd_chance);
    free(an->bnd_best);
    free(an->d_needle);
    free(an->d_filler);
    for (size_t k = 0; k < an->n_ranges; k++) free(an->ranges[k].head);
    free(an->ranges);
    for (size_t t = 0; an->pieces && t < an->length; t++) free(an->pieces[t]);
    free(an->pieces);
}
