// Write the tokenizer fixtures of tests/test_tokenizer.sh (tests/fixtures/tokenizer/):
// small vocabularies (the first 1000 ranks of gpt2 and of cl100k_base) as
// tokenizer.json, and the ids of tests/fixtures/tokenizer/sample.txt computed
// by independent implementations:
//   gpt2.json, cl100k.json   js-tiktoken with its ranks cut to the same 1000
//   smol.json                SmolLM2's pipeline (Digits, individual digits, then
//                            ByteLevel) over the gpt2 cut, with a BOS prefix
//                            (TemplateProcessing, as Llama-3's): @huggingface/tokenizers
//   prefix.json              the gpt2 cut with ByteLevel's add_prefix_space: @huggingface/tokenizers
//   node tools/node/make_tokenizer_fixture.mjs   (after make deps-node)
import fs from "node:fs";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const dir = "tests/fixtures/tokenizer";
const N = 1000;
const text = fs.readFileSync(`${dir}/sample.txt`, "utf8");
const { Tiktoken } = require("js-tiktoken/lite");
const hfMod = require("@huggingface/tokenizers");

for (const [name, enc] of [["gpt2", "gpt2"], ["cl100k", "cl100k_base"]]) {
  execFileSync("node", ["tools/node/tiktoken_to_json.mjs", enc, `${dir}/${name}.json`, String(N)], { stdio: "inherit" });
  // the same cut for js-tiktoken: ranks < N, one line "x 0 tok tok ..."
  const full = require(`js-tiktoken/ranks/${enc}`);
  const data = full.default ?? full;
  const toks = [];
  for (const line of data.bpe_ranks.split("\n")) {
    if (!line) continue;
    const [, offset, ...b64] = line.split(" ");
    b64.forEach((t, i) => { if (Number(offset) + i < N) toks[Number(offset) + i] = t; });
  }
  const specials = Object.fromEntries(Object.keys(data.special_tokens).map((s, k) => [s, N + k]));
  const cut = new Tiktoken({ pat_str: data.pat_str, special_tokens: specials, bpe_ranks: `x 0 ${toks.join(" ")}` });
  fs.writeFileSync(`${dir}/${name}.ids`, cut.encode(text, [], []).join(" ") + "\n");
}

const smol = JSON.parse(fs.readFileSync(`${dir}/gpt2.json`, "utf8"));
smol.pre_tokenizer = { type: "Sequence", pretokenizers: [
  { type: "Digits", individual_digits: true },
  { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true }] };
smol.post_processor = { type: "TemplateProcessing",
  single: [{ SpecialToken: { id: "<|endoftext|>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
  pair: [{ Sequence: { id: "A", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } }],
  special_tokens: { "<|endoftext|>": { id: "<|endoftext|>", ids: [N], tokens: ["<|endoftext|>"] } } };
fs.writeFileSync(`${dir}/smol.json`, JSON.stringify(smol));
const hf = new hfMod.Tokenizer(smol, {});
fs.writeFileSync(`${dir}/smol.ids`, hf.encode(text, { add_special_tokens: true }).ids.join(" ") + "\n");

// ByteLevel with add_prefix_space (a space before a text that does not start with one)
const prefix = JSON.parse(fs.readFileSync(`${dir}/gpt2.json`, "utf8"));
prefix.pre_tokenizer.add_prefix_space = true;
fs.writeFileSync(`${dir}/prefix.json`, JSON.stringify(prefix));
const hfp = new hfMod.Tokenizer(prefix, {});
fs.writeFileSync(`${dir}/prefix.ids`, hfp.encode(text, { add_special_tokens: false }).ids.join(" ") + "\n");
console.error(`${dir}: gpt2, cl100k, smol, prefix fixtures written`);
