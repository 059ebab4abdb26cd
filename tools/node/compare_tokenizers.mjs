// Compare build/tokenize's ids with independent implementations on the same
// documents: js-tiktoken (pure JavaScript tiktoken), tiktoken (the Rust
// tiktoken compiled to WebAssembly) and @huggingface/tokenizers (a JavaScript
// implementation of tokenizer.json, given the same tokenizer.json).
//   node tools/node/compare_tokenizers.mjs ENCODING TOKENIZER_JSON DOCS.jsonl REPOC_IDS
// ENCODING: gpt2 | cl100k_base | o200k_base, or hf:NAME for a tokenizer.json of its own
// (@huggingface/tokenizers alone, with the post-processor's special tokens, as
// build/tokenize adds them). REPOC_IDS: build/tokenize --print-ids --no-eos
// output (one line of ids per document). Prints one line per reference and
// exits 1 on any difference, naming the first differing document and token.
import fs from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const [encName, tokJson, docsPath, idsPath] = process.argv.slice(2);
if (!idsPath) {
  console.error("usage: compare_tokenizers.mjs gpt2|cl100k_base|o200k_base TOKENIZER_JSON DOCS.jsonl REPOC_IDS");
  process.exit(2);
}
const docs = fs.readFileSync(docsPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).text);
const ours = fs.readFileSync(idsPath, "utf8").split("\n").slice(0, docs.length)
  .map((l) => (l ? l.split(" ").map(Number) : []));
if (ours.length !== docs.length) { console.error(`${idsPath}: ${ours.length} lines for ${docs.length} documents`); process.exit(1); }

const refs = [];
const own = encName.startsWith("hf:");
let wasm = null;
if (!own) {
  const jsTiktoken = require("js-tiktoken").getEncoding(encName);
  refs.push(["js-tiktoken", (t) => jsTiktoken.encode(t, [], [])]);
  wasm = require("tiktoken").get_encoding(encName);
  refs.push(["tiktoken (wasm)", (t) => Array.from(wasm.encode_ordinary(t))]);
}
const hfMod = require("@huggingface/tokenizers");
const hf = new hfMod.Tokenizer(JSON.parse(fs.readFileSync(tokJson, "utf8")), {});
refs.push(["@huggingface/tokenizers", (t) => hf.encode(t, { add_special_tokens: own }).ids]);

let bad = 0;
const bytes = docs.reduce((s, t) => s + Buffer.byteLength(t), 0);
for (const [name, enc] of refs) {
  let same = 0, firstDiff = null;
  const t0 = process.hrtime.bigint();
  const theirs = docs.map((t) => enc(t));
  const sec = Number(process.hrtime.bigint() - t0) / 1e9;
  for (let d = 0; d < docs.length; d++) {
    const a = ours[d], b = theirs[d];
    let k = 0;
    while (k < a.length && k < b.length && a[k] === b[k]) k++;
    if (k === a.length && k === b.length) same++;
    else if (!firstDiff) firstDiff = { d, k, a: a.slice(k, k + 8), b: b.slice(k, k + 8) };
  }
  const pct = (100 * same / docs.length).toFixed(2);
  console.log(`${encName}: ${name}: ${same}/${docs.length} documents identical (${pct}%), ` +
              `${(bytes / 1e6).toFixed(2)} MB in ${sec.toFixed(2)} s`);
  if (firstDiff) {
    bad++;
    console.log(`  first difference: document ${firstDiff.d}, token ${firstDiff.k}: repoc ${firstDiff.a.join(" ")} | ` +
                `${name} ${firstDiff.b.join(" ")}`);
  }
}
if (wasm) wasm.free();
process.exit(bad ? 1 : 0);
