/* A BPE tokenizer read from a Hugging Face tokenizer.json: byte-level ones
   (GPT-2, OLMo-2 dolma2, Llama-3, SmolLM2, Qwen, GPT-4o, DeepSeek-V3,
   tiktoken-converted vocabularies) and vocabularies of UTF-8 strings
   (Llama-2, Gemma-3). Encoding follows the Hugging Face library step by step
   (docs/tokenizer.md lists each component):
     1. added tokens with normalized: false are matched verbatim,
        leftmost-longest (lstrip, rstrip, single_word), and split the text into
        segments;
     2. each segment goes through the normalizer (tokenizer/normalize.c), and
        added tokens with normalized: true split the normalized segment;
     3. each piece goes through the pre-tokenizer steps (ByteLevel, Split with
        any regex through Oniguruma or a hand-written matcher for the GPT-2 /
        cl100k / Qwen / o200k regexes, Digits, Metaspace, Punctuation, Whitespace,
        WhitespaceSplit, Sequence) into pre-tokens;
     4. each pre-token is merged by BPE (lowest merge rank first, leftmost on a
        tie; ignore_merges: a pre-token that is a vocab entry is that token;
        the general model starts from characters with byte_fallback, unk and
        the subword prefix/suffix, tokenizer/bpe_word.c).
   Decoding runs the decoder steps (tokenizer/decode.c). A byte-level
   vocabulary has a token for every byte (checked at load), so no input is
   unknown. Ids must lie below 2 x (vocab entries + added tokens) + 2^20, no
   string may hold a NUL, and a pre-token longer than 1 MiB is refused
   (tokenizer/tok_internal.h). Text that is not valid UTF-8 is tokenized as its
   bytes: each invalid byte is a character of its own that is neither letter,
   number nor space. Anything in tokenizer.json this code does not implement
   exactly (a Unigram or WordPiece model, dropout, another normalizer, ...) is
   refused at load with a message naming the JSON path. */
#ifndef REPOC_TOKENIZER_H
#define REPOC_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Tokenizer Tokenizer;

/* path: a tokenizer.json, or a directory holding one. Dies with a message
   naming the file and the JSON path of what is wrong or unsupported. The end
   of text token (tok_eos) comes from tokenizer_config.json's eos_token next
   to it when there is one, else from the first added token among
   <|endoftext|>, <|end_of_text|>, </s>, <eos>. */
Tokenizer* tok_load(const char* path);
/* The same from JSON text; name is used in messages. NULL and err filled on failure. */
Tokenizer* tok_load_json(const char* json, size_t len, const char* name, char* err, size_t err_len);
void tok_free(Tokenizer* t);

size_t tok_vocab_size(const Tokenizer* t); /* the largest id + 1 */
const char* tok_name(const Tokenizer* t);  /* the file it was read from, for messages */
int32_t tok_eos(const Tokenizer* t);       /* -1 when unknown */
/* Whether id is one of tokenizer.json's added_tokens (<|im_end|>, <end_of_turn>, ...) */
bool tok_is_added(const Tokenizer* t, int32_t id);
/* Set the end of text token by its content; false when no token has it. */
bool tok_set_eos(Tokenizer* t, const char* content);
/* The ids the post-processor puts before a single sequence (Llama-3's BOS) and
   after it (an EOS, in some templates); count in *n. */
const int32_t* tok_prefix(const Tokenizer* t, size_t* n);
const int32_t* tok_suffix(const Tokenizer* t, size_t* n);
/* The bytes of token id (the decoded text of an added token); NULL for an id without a token. */
const uint8_t* tok_token_bytes(const Tokenizer* t, int32_t id, size_t* len);
/* The id of the token with exactly these bytes (vocab or added), -1 when none. */
int32_t tok_lookup(const Tokenizer* t, const uint8_t* bytes, size_t len);

/* Per-thread encoding state: output ids, a cache of pre-tokens already merged, scratch. */
typedef struct {
    const Tokenizer* t;
    int32_t* ids; /* output, appended to by tok_encode */
    size_t n_ids, cap_ids;
    size_t invalid_utf8; /* bytes not part of a valid UTF-8 sequence, summed over calls */
    void* cache;         /* tokenizer/bpe.c */
    int32_t* parts;      /* BPE work space: (n) ids and (n) ranks of a pre-token */
    uint32_t* ranks;
    size_t cap_parts;
    void* region; /* Oniguruma's match region (tokenizer/regex.c) */
    /* what the caller is encoding, for an error's message ("'a.jsonl' line 12"): set it before tok_encode,
       NULL for "the text being encoded"; the caller keeps the string alive */
    const char* source;
} TokEncoder;

void tok_encoder_init(TokEncoder* e, const Tokenizer* t);
void tok_encoder_free(TokEncoder* e);
/* Append the ids of text (len bytes, any bytes) to e->ids. Adds no BOS/EOS. */
void tok_encode(TokEncoder* e, const uint8_t* text, size_t len);

/* Append n ids to e->ids (a BOS or EOS around a document). */
void tok_push_ids(TokEncoder* e, const int32_t* ids, size_t n);

/* Bytes of ids appended to *out (realloc'd; *len and *cap updated). Returns the
   index of the first id without a token, or n when all decode. */
size_t tok_decode(const Tokenizer* t, const int32_t* ids, size_t n, uint8_t** out, size_t* len, size_t* cap);
/* The same for a piece of a longer list: at_start false for every piece after the first, so
   that decoders which treat the start of the text apart (Metaspace, Strip after Fuse) see
   the pieces as one list. */
size_t tok_decode_from(const Tokenizer* t, const int32_t* ids, size_t n, bool at_start, uint8_t** out, size_t* len,
                       size_t* cap);

/* Count of bytes in text that are not part of a valid UTF-8 sequence. */
size_t tok_count_invalid_utf8(const uint8_t* s, size_t len);

#endif
