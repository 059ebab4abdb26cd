/* build/generate --chat: conversations rendered with the checkpoint's chat template (tokenizer_config.json's
   chat_template, template/ and data/chat.h, exactly as the trainer renders "messages" records: the whole text
   tokenized, no BOS or EOS added), each completed with a reply that stops at an end-of-turn token. The
   conversation comes from
     --system / --user / --assistant options, in order: ending in a user turn, one reply is printed;
     otherwise (none, or a last system or assistant turn) an interactive loop: each line of standard input is
     a user turn, the reply is printed, and both join the conversation (the cache keeps the tokens the next
     rendering starts with, gen_rewind);
     --messages FILE.jsonl: each line a {"messages": [...]} record, whose trailing assistant turns are dropped;
     the rest is rendered with add_generation_prompt and completed, and the record is printed as one JSON line
     with the reply as its last assistant turn.
   The stop tokens: the token the template writes right after an assistant turn's text (data/chat.h's
   chat_turn_end, its first added token: <|im_end|>, <end_of_turn>, <|eot_id|>), the eos_token_id of
   generation_config.json and config.json, and the tokenizer's end of text token. */
#ifndef REPOC_PROGRAMS_GENERATE_CHAT_H
#define REPOC_PROGRAMS_GENERATE_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "model/model.h"
#include "programs/gen_sampler.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    const char* role; /* "system", "user" or "assistant" */
    const char* content;
} ChatTurn;

typedef struct {
    const char* tokenizer;     /* the tokenizer.json (or its directory) whose tokenizer_config.json is read */
    const char* ckpt_dir;      /* its generation_config.json */
    const char* messages_file; /* --messages, or NULL */
    const ChatTurn* turns;     /* --system / --user / --assistant in order */
    size_t n_turns, max_new;
    bool ignore_eos;
} ChatSpec;

typedef struct GenChat GenChat;

/* The chat format of spec->tokenizer and the stop tokens (cfg's hf_carried eos_token_id counts; t, cfg and spec's
   strings outlive the GenChat). Dies naming the file on a tokenizer_config.json without a chat template or with
   one repoc cannot render. Before the model is loaded: a wrong template ends the program at once. */
GenChat* gen_chat_open(const ChatSpec* spec, const ModelConfig* cfg, const Tokenizer* t);
/* Runs the conversation(s) with model m and frees c. Dies naming the file and line on a line of --messages that
   is not a messages record. */
void gen_chat_run(GenChat* c, const Model* m, GenSampler* s);

#endif
