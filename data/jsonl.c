/* JSON Lines instruction data, tokenized and packed at open; see jsonl.h. */
#include "data/jsonl.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/hash.h"
#include "common/ints.h"
#include "common/rng.h"
#include "data/chat.h"
#include "tokenizer/tokenizer.h"

#define JSONL_SHUFFLE_DOMAIN 0x6a736f6e6c726f77ull /* "jsonlrow" */

/* The packer: rows of T (token, target, doc id) filled in order. */
typedef struct {
    size_t T, used;     /* tokens in the current row */
    int32_t doc;        /* id of the next document in the current row */
    int32_t pad;        /* the padding token */
    bool one_per_row;   /* every document alone in its row */
    Ints tok, tgt, ids; /* all rows so far, current row last */
} Packer;

static void pack_put(Packer* k, int32_t tok, int32_t tgt, int32_t doc) {
    ints_push(&k->tok, tok), ints_push(&k->tgt, tgt), ints_push(&k->ids, doc);
    if (++k->used == k->T) k->used = 0, k->doc = 0;
}
static void pack_pad_row(Packer* k) { /* pad the current row to T; padding is a document of its own */
    int32_t doc = k->doc;
    while (k->used) pack_put(k, k->pad, -1, doc);
}
/* one document: ids (n) and targets (n), targets[i] = label of ids[i+1] */
static void pack_doc(Packer* k, const int32_t* ids, const int32_t* tgt, size_t n) {
    if (n <= k->T && k->used + n > k->T) pack_pad_row(k);               /* kept whole: start a new row */
    for (size_t i = 0; i < n; i++) pack_put(k, ids[i], tgt[i], k->doc); /* a split one is the next row's doc 0 */
    if (k->used) k->doc++;
    if (k->one_per_row) pack_pad_row(k);
}

/* "a string" field of a record, or NULL when absent; dies when present but not a string */
static const char* string_field(const cJSON* o, const char* key, const char* file, size_t line) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return NULL;
    CHECK(cJSON_IsString(v), "%s:%zu: \"%s\" must be a string", file, line, key);
    return v->valuestring;
}

/* a list of integer ids in [0, vocab) (labels: or -100 / -1, no loss), into out */
static void id_list(Ints* out, const cJSON* v, const char* key, bool labels, size_t vocab, const char* file,
                    size_t line) {
    CHECK(cJSON_IsArray(v), "%s:%zu: \"%s\" must be a list of integers", file, line, key);
    const cJSON* it;
    size_t i = 0;
    cJSON_ArrayForEach(it, v) {
        double x = cJSON_IsNumber(it) ? it->valuedouble : -1.5;
        CHECK(x == (double)(long)x && ((x >= 0 && x < (double)vocab) || (labels && (x == -100 || x == -1))),
              "%s:%zu: \"%s\"[%zu] must be an integer id in [0, %zu)%s", file, line, key, i, vocab,
              labels ? ", or -100 or -1 (no loss)" : "");
        ints_push(out, (int32_t)it->valuedouble);
        i++;
    }
}

#define CHAT_MAX_TURNS 1024 /* assistant turns in one conversation */

typedef struct {
    Tokenizer* tok;
    const char* tok_path; /* where tokenizer_config.json's chat template is looked for */
    ChatFormat chat;      /* loaded at the first "messages" record */
    ChatSpan* spans;      /* (CHAT_MAX_TURNS) */
    TokEncoder enc;
    size_t vocab;
    Ints ids, labels; /* the current document */
} Reader;

static void encode(Reader* r, const char* text, const char* file, size_t line) {
    CHECK(r->tok,
          "%s:%zu: a text record needs a tokenizer: set data.tokenizer (build/train) or pass --tokenizer "
          "(build/sft_eval), a tokenizer.json or its directory, or use a checkpoint with tokenizer.json",
          file, line);
    char source[4200]; /* a tokenizer error names the record (tokenizer.h) */
    snprintf(source, sizeof source, "the text of line %zu of '%s'", line, file);
    r->enc.n_ids = 0;
    r->enc.source = source;
    tok_encode(&r->enc, (const uint8_t*)text, strlen(text));
    r->enc.source = NULL;
}

/* The bytes of text each token of r->enc covers, into lens; false when they cannot be told exactly. A
   token's own bytes (tok_token_bytes) when, in order, they are the text byte for byte (byte-level and other
   tokenizers without a normalizer); else (a normalizer changed the text: Gemma-3's writes each space as ▁)
   each token's decoded text, again only when the pieces, in order, are the text byte for byte. Either way
   every token's place in the text is checked, not assumed: a normalizer whose changes decoding does not
   undo one for one (Llama-2's ▁ before each segment) fails the check. */
static bool token_lengths(const Reader* r, const char* text, size_t len, size_t* lens) {
    size_t at = 0;
    bool same = true;
    for (size_t i = 0; i < r->enc.n_ids && same; i++) {
        const uint8_t* b = tok_token_bytes(r->tok, r->enc.ids[i], &lens[i]);
        same = b && at + lens[i] <= len && !memcmp(b, text + at, lens[i]);
        at += lens[i];
    }
    if (same && at == len) return true;
    uint8_t* buf = NULL;
    size_t n = 0, cap = 0;
    at = 0;
    same = true;
    for (size_t i = 0; i < r->enc.n_ids && same; i++) {
        n = 0;
        size_t got = tok_decode_from(r->tok, &r->enc.ids[i], 1, i == 0, &buf, &n, &cap);
        same = got == 1 && at + n <= len && !memcmp(buf, text + at, n);
        lens[i] = n;
        at += n;
    }
    free(buf);
    return same && at == len;
}

/* a chat record: the conversation rendered with the tokenizer's template (data/chat.h) and tokenized whole
   (special tokens in the text are the tokenizer's added tokens, as apply_chat_template's ids); a token
   carries loss when any of the bytes of text it covers (token_lengths) lies inside an assistant turn's span:
   transformers' assistant mask, which runs from the token holding the span's first character to the one
   holding its last, so " no" after a generation prompt "ASSISTANT:" carries loss though it starts before the
   span. No BOS or EOS is added: the template has its own. */
static void read_chat(Reader* r, PackedRows* p, const cJSON* messages, const char* file, size_t line) {
    CHECK(r->tok,
          "%s:%zu: a \"messages\" record needs a tokenizer with a chat template: set data.tokenizer (a "
          "tokenizer.json or its directory, with tokenizer_config.json beside it)",
          file, line);
    if (!r->chat.tmpl) {
        chat_format_load(&r->chat, r->tok_path,
                         "\"messages\" records are rendered with the tokenizer's chat template (or give the data "
                         "as prompt/completion records)");
        r->spans = mallocCheck(CHAT_MAX_TURNS * sizeof(ChatSpan));
    }
    char* text;
    size_t len, n_spans;
    char err[1024];
    CHECK(chat_render_record(&r->chat, messages, &text, &len, r->spans, CHAT_MAX_TURNS, &n_spans, err, sizeof(err)),
          "%s:%zu: %s", file, line, err);
    char source[4200];
    snprintf(source, sizeof source, "the rendered conversation of line %zu of '%s'", line, file);
    r->enc.n_ids = 0;
    r->enc.source = source;
    tok_encode(&r->enc, (const uint8_t*)text, len);
    r->enc.source = NULL;
    size_t* lens = mallocCheck((r->enc.n_ids + 1) * sizeof(size_t));
    CHECK(token_lengths(r, text, len, lens),
          "%s:%zu: the tokens of the rendered conversation do not spell its text, neither as they are nor "
          "decoded: the tokenizer's normalizer changes the text in a way repoc cannot map back, so the assistant "
          "turns cannot be mapped to tokens; give the data as prompt/completion records, or as input_ids/labels "
          "records with the labels computed elsewhere",
          file, line);
    size_t at = 0, s = 0; /* the byte offset of token i in text; the first span not yet behind it */
    for (size_t i = 0; i < r->enc.n_ids; i++) {
        int32_t id = r->enc.ids[i];
        while (s < n_spans && r->spans[s].end <= at) s++;
        bool loss = s < n_spans && at + lens[i] > r->spans[s].begin; /* [at, at + len) meets [begin, end) */
        ints_push(&r->ids, id), ints_push(&r->labels, loss ? id : -1);
        at += lens[i];
    }
    free(lens);
    free(text);
    p->n_chat++;
}

/* one record into r->ids and r->labels; returns the number of leading prompt tokens (-1 = no prompt) */
static long read_record(Reader* r, PackedRows* p, const cJSON* o, const char* file, size_t line) {
    r->ids.n = r->labels.n = 0;
    const cJSON* messages = cJSON_GetObjectItemCaseSensitive(o, "messages");
    if (messages) {
        static const char* const others[] = {"prompt", "completion", "text", "input_ids", "labels"};
        for (size_t k = 0; k < sizeof(others) / sizeof(others[0]); k++)
            CHECK(!cJSON_GetObjectItemCaseSensitive(o, others[k]),
                  "%s:%zu: a record has both \"messages\" and "
                  "\"%s\": which one to train on is ambiguous",
                  file, line, others[k]);
        read_chat(r, p, messages, file, line);
        for (size_t i = 0; i < r->ids.n; i++)
            CHECK((size_t)r->ids.v[i] < r->vocab,
                  "%s:%zu: token id %d is outside the model's vocabulary [0, %zu) (is "
                  "data.tokenizer the model's tokenizer?)",
                  file, line, r->ids.v[i], r->vocab);
        return -1;
    }
    const char* prompt = string_field(o, "prompt", file, line);
    const char* completion = string_field(o, "completion", file, line);
    const char* text = string_field(o, "text", file, line);
    const cJSON* input_ids = cJSON_GetObjectItemCaseSensitive(o, "input_ids");
    CHECK((text != NULL) + (prompt || completion) + (input_ids != NULL) <= 1,
          "%s:%zu: ambiguous record: it has %s "
          "and %s (a record is one of {\"prompt\", \"completion\"}, {\"text\"} or {\"input_ids\", \"labels\"})",
          file, line, text ? "\"text\"" : "\"prompt\"/\"completion\"",
          input_ids ? "\"input_ids\"" : "\"prompt\"/\"completion\"");
    if (input_ids) {
        id_list(&r->ids, input_ids, "input_ids", false, r->vocab, file, line);
        const cJSON* labels = cJSON_GetObjectItemCaseSensitive(o, "labels");
        if (labels) {
            id_list(&r->labels, labels, "labels", true, r->vocab, file, line);
            CHECK(r->labels.n == r->ids.n, "%s:%zu: \"labels\" has %zu entries, \"input_ids\" %zu", file, line,
                  r->labels.n, r->ids.n);
        } else {
            for (size_t i = 0; i < r->ids.n; i++) ints_push(&r->labels, r->ids.v[i]);
        }
        for (size_t i = 0; i < r->labels.n; i++)
            if (r->labels.v[i] < 0) r->labels.v[i] = -1;
        p->n_pretokenized++;
        return -1;
    }
    CHECK(text || (prompt && completion),
          "%s:%zu: a record needs \"prompt\" and \"completion\", \"text\", "
          "\"messages\", or \"input_ids\" (and optional \"labels\")",
          file, line);
    size_t n_prefix = 0;
    const int32_t* prefix = r->tok ? tok_prefix(r->tok, &n_prefix) : NULL;
    for (size_t i = 0; i < n_prefix; i++) ints_push(&r->ids, prefix[i]), ints_push(&r->labels, -1);
    long n_prompt = -1;
    if (!text) {
        encode(r, prompt, file, line);
        for (size_t i = 0; i < r->enc.n_ids; i++) ints_push(&r->ids, r->enc.ids[i]), ints_push(&r->labels, -1);
        n_prompt = (long)r->ids.n;
    }
    encode(r, text ? text : completion, file, line);
    for (size_t i = 0; i < r->enc.n_ids; i++) ints_push(&r->ids, r->enc.ids[i]), ints_push(&r->labels, r->enc.ids[i]);
    int32_t eos = tok_eos(r->tok);
    CHECK(eos >= 0,
          "%s:%zu: tokenizer '%s' names no end of text token, which ends every text and prompt/completion "
          "record: name one in tokenizer_config.json's eos_token next to it, or give pre-tokenized input_ids records",
          file, line, tok_name(r->tok));
    ints_push(&r->ids, eos), ints_push(&r->labels, eos);
    for (size_t i = 0; i < r->ids.n; i++)
        CHECK((size_t)r->ids.v[i] < r->vocab,
              "%s:%zu: token id %d is outside the model's vocabulary [0, %zu) (is "
              "data.tokenizer the model's tokenizer?)",
              file, line, r->ids.v[i], r->vocab);
    if (text) p->n_text++;
    else p->n_prompt_completion++;
    return n_prompt;
}

static void read_file(Reader* r, Packer* k, PackedRows* p, const char* file, Ints* tgt) {
    size_t len;
    char* text = file_read_all(file, &len);
    size_t line = 0;
    for (char* s = text; s < text + len;) {
        char* e = memchr(s, '\n', (size_t)(text + len - s));
        if (!e) e = text + len;
        *e = 0;
        line++;
        char* c = s;
        const char* start = s;
        s = e + 1;
        while (*c == ' ' || *c == '\t' || *c == '\r') c++;
        if (!*c) continue; /* blank lines are allowed */
        const char* end = NULL;
        cJSON* o = cJSON_ParseWithOpts(c, &end, 0);
        CHECK(o, "%s:%zu: not valid JSON (byte column %zu)", file, line, (size_t)((end ? end : c) - start) + 1);
        char key[128];
        CHECK(!jsonl_nul_string(c, strlen(c), key, sizeof key),
              "%s:%zu: the string of \"%s\" holds \\u0000 (a NUL "
              "character), which would cut the text there: remove it",
              file, line, key);
        CHECK(cJSON_IsObject(o), "%s:%zu: expected a JSON object", file, line);
        if (cJSON_GetObjectItemCaseSensitive(o, "messages")) chat_json_keep_numbers(o, c);
        end += strspn(end, " \t\r");
        CHECK(!*end, "%s:%zu: byte column %zu: more after the JSON object (one object per line)", file, line,
              (size_t)(end - start) + 1);
        long n_prompt = read_record(r, p, o, file, line);
        cJSON_Delete(o);
        p->n_records++;
        if (n_prompt >= (long)p->T) {
            p->n_skipped_prompt++;
            continue;
        } /* no room for the completion */
        size_t n = r->ids.n;
        if (n < 2) { /* nothing to predict */
            p->n_no_loss++;
            continue;
        }
        tgt->n = 0;
        size_t n_loss = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            ints_push(tgt, r->labels.v[i + 1]);
            n_loss += r->labels.v[i + 1] != -1;
        }
        ints_push(tgt, -1);
        p->n_no_loss += n_loss == 0;
        if (n > p->T && k->one_per_row) {
            p->n_too_long++;
            continue;
        }
        if (n > p->T) p->n_split++;
        pack_doc(k, r->ids.v, tgt->v, n);
    }
    free(text);
}

void packed_open(PackedRows* p, const char* const* files, size_t n_files, const char* tokenizer, size_t vocab_size,
                 size_t T, bool one_per_row) {
    memset(p, 0, sizeof(*p));
    p->T = T;
    Reader r = {.vocab = vocab_size, .tok_path = tokenizer};
    if (tokenizer) {
        r.tok = tok_load(tokenizer);
        tok_encoder_init(&r.enc, r.tok);
    }
    Packer k = {.T = T, .one_per_row = one_per_row, .pad = r.tok && tok_eos(r.tok) >= 0 ? tok_eos(r.tok) : 0};
    Ints tgt = {0};
    for (size_t f = 0; f < n_files; f++) { /* in the order given; a glob's files in byte-wise order */
        DataFiles df;
        char err[600];
        if (data_files_expand(&df, &files[f], 1, err, sizeof err)) DIE("%s", err);
        for (size_t i = 0; i < df.n; i++) read_file(&r, &k, p, df.paths[i], &tgt);
        data_files_free(&df);
    }
    if (k.used) pack_pad_row(&k);
    p->n_rows = k.tok.n / T;
    CHECK(p->n_rows > 0, "%s%s: no documents to train on (%zu records, %zu prompts longer than data.seq_len %zu)",
          n_files ? files[0] : "data", n_files > 1 ? " ..." : "", p->n_records, p->n_skipped_prompt, T);
    p->tokens = k.tok.v, p->targets = k.tgt.v, p->doc_ids = k.ids.v;
    for (size_t i = 0; i < p->n_rows * T; i++) p->n_loss_tokens += p->targets[i] != -1;
    CHECK(p->n_loss_tokens > 0,
          "%s%s: no token of the %zu records carries loss (%zu of them have none: labels all -100 or -1, or "
          "one token; %zu prompts fill data.seq_len): a run would train at loss 0 and learn nothing",
          n_files ? files[0] : "data", n_files > 1 ? " ..." : "", p->n_records, p->n_no_loss, p->n_skipped_prompt);
    free(tgt.v), free(r.ids.v), free(r.labels.v);
    if (r.tok) tok_encoder_free(&r.enc), tok_free(r.tok);
    if (r.chat.tmpl) chat_format_free(&r.chat);
    free(r.spans);
}

void packed_close(PackedRows* p) {
    free(p->tokens), free(p->targets), free(p->doc_ids);
    memset(p, 0, sizeof(*p));
}

void packed_print(const PackedRows* p, const char* label, FILE* out) {
    fprintf(out,
            "%s: %zu records (%zu prompt/completion, %zu text, %zu chat, %zu pre-tokenized) -> %zu rows of %zu; "
            "%.1f%% of tokens carry loss",
            label, p->n_records, p->n_prompt_completion, p->n_text, p->n_chat, p->n_pretokenized, p->n_rows, p->T,
            100.0 * (double)p->n_loss_tokens / (double)(p->n_rows * p->T));
    if (p->n_split) fprintf(out, "; %zu documents longer than seq_len split over rows", p->n_split);
    fprintf(out, "\n");
    if (p->n_no_loss * 10 > p->n_records)
        fprintf(out,
                "  warning: %zu of the %zu records of %s carry no loss (labels all -100 or -1, or one token): they "
                "take room in the rows and teach nothing\n",
                p->n_no_loss, p->n_records, label);
    if (p->n_skipped_prompt)
        fprintf(out, "  skipped %zu records whose prompt fills data.seq_len %zu (no room for the completion)\n",
                p->n_skipped_prompt, p->T);
}

void packed_rows(const PackedRows* p, const RowRequest* rq, int32_t* tokens, int32_t* targets, int32_t* doc_ids) {
    CHECK(rq->row0 + rq->n <= rq->rows_per_step, "packed_rows: rows %zu..%zu past the step's %zu", rq->row0,
          rq->row0 + rq->n, rq->rows_per_step);
    size_t T = p->T;
    CHECK(rq->T == T, "packed_rows: rows of %zu tokens asked of records packed into %zu", rq->T, T);
    for (size_t b = 0; b < rq->n; b++) {
        size_t r = rq->row0 + b, src;
        if (rq->order == ORDER_SEQUENTIAL) {
            src = (size_t)(((unsigned __int128)rq->step * rq->rows_per_step + r) % p->n_rows);
        } else {
            Rng rng;
            rng_seed(&rng, mix_triple(JSONL_SHUFFLE_DOMAIN, rq->seed, rq->step, r));
            src = (size_t)rng_below(&rng, p->n_rows);
        }
        if (tokens) memcpy(tokens + b * T, p->tokens + src * T, T * sizeof(int32_t));
        if (targets) memcpy(targets + b * T, p->targets + src * T, T * sizeof(int32_t));
        if (doc_ids) memcpy(doc_ids + b * T, p->doc_ids + src * T, T * sizeof(int32_t));
    }
}
