// Throughput of @huggingface/tokenizers (the JavaScript implementation of
// tokenizer.json) on the documents of a JSONL file: MB of text per second,
// single thread, the best of PASSES passes after one warm-up pass (JIT).
// Timed: encode(text) with the post-processor's special tokens, as
// build/tokenize encodes; not timed: reading the files and building the
// tokenizer. Each pass starts with the model's BPE cache emptied, as each
// build/tokenize run starts with an empty cache. Used by tools/tokenizer_compare.sh.
//   node tools/node/bench_hf_tokenizers.mjs TOKENIZER_JSON DOCS.jsonl [PASSES]
import fs from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const [tokJson, docsPath, passArg] = process.argv.slice(2);
const docs = fs.readFileSync(docsPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).text);
const bytes = docs.reduce((s, t) => s + Buffer.byteLength(t), 0);
const { Tokenizer } = require("@huggingface/tokenizers");
const hf = new Tokenizer(JSON.parse(fs.readFileSync(tokJson, "utf8")), {});
let best = 0, tokens = 0;
for (let p = 0; p <= Number(passArg ?? 3); p++) {
  hf.model?.clear_cache?.();
  const t0 = process.hrtime.bigint();
  tokens = 0;
  for (const d of docs) tokens += hf.encode(d, { add_special_tokens: true }).ids.length;
  const mbs = bytes / 1e6 / (Number(process.hrtime.bigint() - t0) / 1e9);
  if (p > 0 && mbs > best) best = mbs;
}
console.log(`@huggingface/tokenizers ${tokJson}: ${(bytes / 1e6).toFixed(3)} MB, ${tokens} tokens, ${best.toFixed(2)} MB/s`);
