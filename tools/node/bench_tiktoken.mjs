// Throughput of npm `tiktoken` (Rust tiktoken compiled to WebAssembly) on the
// documents of a JSONL file: MB of text per second, single thread, the best of
// PASSES passes after one warm-up pass. Used by tools/tokenizer_compare.sh.
//   node tools/node/bench_tiktoken.mjs gpt2|cl100k_base DOCS.jsonl [PASSES]
import fs from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const [name, docsPath, passArg] = process.argv.slice(2);
const docs = fs.readFileSync(docsPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).text);
const bytes = docs.reduce((s, t) => s + Buffer.byteLength(t), 0);
const enc = require("tiktoken").get_encoding(name);
let best = 0, tokens = 0;
for (let p = 0; p <= Number(passArg ?? 3); p++) {
  const t0 = process.hrtime.bigint();
  tokens = 0;
  for (const d of docs) tokens += enc.encode_ordinary(d).length;
  const mbs = bytes / 1e6 / (Number(process.hrtime.bigint() - t0) / 1e9);
  if (p > 0 && mbs > best) best = mbs;
}
enc.free();
console.log(`tiktoken-wasm ${name}: ${(bytes / 1e6).toFixed(3)} MB, ${tokens} tokens, ${best.toFixed(2)} MB/s`);
