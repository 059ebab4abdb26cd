// Write a Hugging Face tokenizer.json for a tiktoken vocabulary shipped by the
// js-tiktoken package (gpt2 = r50k_base, cl100k_base, o200k_base), so that
// build/tokenize and @huggingface/tokenizers can be compared with tiktoken on
// the same vocab.
//   node tools/node/tiktoken_to_json.mjs gpt2|cl100k_base|o200k_base OUT.json [MAX_RANK] [--js-pattern]
// --js-pattern writes js-tiktoken's own spelling of the pre-tokenizer regex
// (contractions spelled out as ASCII cases) instead of tiktoken's (?i:...) one:
// the same pre-tokens on text without U+017F, another string for the reader.
// MAX_RANK keeps the tokens of rank < MAX_RANK (a smaller vocabulary that
// tiktoken's ranks restricted the same way reproduce; the test fixtures) and
// numbers the special tokens from MAX_RANK.
// Needs `make deps-node` (NODE_PATH=build/node/node_modules).
// vocab: each token's bytes written with GPT-2's byte-to-unicode map; id = rank.
// merges: for each token of two or more bytes, in rank order, the two parts
// that tiktoken's own merge loop reaches when it may only use lower ranks
// (so that lowest-rank-first BPE over these merges replays tiktoken).
// ignore_merges: tiktoken takes a pre-token that is a token as that token.
import fs from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
const jsPattern = args.includes("--js-pattern");
const [name, out, maxArg] = args.filter((a) => a !== "--js-pattern");
const maxRank = maxArg ? Number(maxArg) : Infinity;
if (!["gpt2", "cl100k_base", "o200k_base"].includes(name) || !out) {
  console.error("usage: tiktoken_to_json.mjs gpt2|cl100k_base|o200k_base OUT.json [MAX_RANK] [--js-pattern]");
  process.exit(2);
}
const ranks = require(`js-tiktoken/ranks/${name}`);
const data = ranks.default ?? ranks;

// GPT-2's bytes_to_unicode
const byteChar = [];
let next = 256;
for (let b = 0; b < 256; b++) {
  const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  byteChar[b] = String.fromCodePoint(printable ? b : next++);
}
const show = (bytes) => Array.from(bytes, (b) => byteChar[b]).join("");

// the compressed rank list: lines "<x> <first rank> <base64 token> ..."
const tokens = []; // rank -> Buffer
const rankOf = new Map(); // latin1 string of the bytes -> rank
for (const line of data.bpe_ranks.split("\n")) {
  if (!line) continue;
  const [, offset, ...b64] = line.split(" ");
  b64.forEach((t, i) => {
    const bytes = Buffer.from(t, "base64");
    const r = Number(offset) + i;
    if (r >= maxRank) return;
    tokens[r] = bytes;
    rankOf.set(bytes.toString("latin1"), r);
  });
}

// tiktoken's merge loop on `bytes`, merging only pairs whose rank is < maxRank
function mergeBelow(bytes, maxRank) {
  let parts = Array.from(bytes, (b) => Buffer.from([b]));
  for (;;) {
    let best = -1, bestRank = maxRank;
    for (let i = 0; i + 1 < parts.length; i++) {
      const r = rankOf.get(Buffer.concat([parts[i], parts[i + 1]]).toString("latin1"));
      if (r !== undefined && r < bestRank) { bestRank = r; best = i; }
    }
    if (best < 0) return parts;
    parts.splice(best, 2, Buffer.concat([parts[best], parts[best + 1]]));
  }
}

const vocab = {};
const merges = [];
for (let r = 0; r < tokens.length; r++) {
  if (!tokens[r]) continue;
  vocab[show(tokens[r])] = r;
  if (tokens[r].length < 2) continue;
  const parts = mergeBelow(tokens[r], r);
  if (parts.length !== 2) throw new Error(`token ${r}: ${parts.length} parts below its rank`);
  merges.push([show(parts[0]), show(parts[1])]);
}

const added = Object.entries(data.special_tokens).map(([content, id], k) => {
  if (maxRank !== Infinity) id = maxRank + k;
  vocab[content] = id;
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
});

// tiktoken's own spellings (its Python package); js-tiktoken's with --js-pattern
const CL100K = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const UPPER = "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]", LOWER = "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]";
const CONTRACTION = "(?i:'s|'t|'re|'ve|'m|'ll|'d)?";
const O200K = [
  `[^\\r\\n\\p{L}\\p{N}]?${UPPER}*${LOWER}+${CONTRACTION}`, `[^\\r\\n\\p{L}\\p{N}]?${UPPER}+${LOWER}*${CONTRACTION}`,
  "\\p{N}{1,3}", " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*", "\\s*[\\r\\n]+", "\\s+(?!\\S)", "\\s+"].join("|");
const pattern = jsPattern ? data.pat_str : name === "o200k_base" ? O200K : CL100K;
const pre = name === "gpt2" && !jsPattern
  ? { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true }
  : { type: "Sequence", pretokenizers: [
      { type: "Split", pattern: { Regex: pattern }, behavior: "Isolated", invert: false },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false }] };

const json = {
  version: "1.0", truncation: null, padding: null, added_tokens: added, normalizer: null,
  pre_tokenizer: pre,
  post_processor: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
  decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
  model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
           fuse_unk: false, byte_fallback: false, ignore_merges: true, vocab, merges },
};
fs.writeFileSync(out, JSON.stringify(json));
console.error(`${out}: ${Object.keys(vocab).length} tokens, ${merges.length} merges, ${added.length} added`);
