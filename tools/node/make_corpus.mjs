// Collect real text from this Debian machine into a JSONL corpus (one file =
// one document, {"source": path, "text": ...}) for the tokenizer comparison:
// English prose (common-licenses, /usr/share/doc), code (C headers, Python),
// numbers and roff markup (English man pages), and other scripts (the
// translated man pages: ja, ko, ru, uk, zh_CN, zh_TW, ...; vim's tutors in 30
// languages: Greek, Bulgarian, Vietnamese, ...; the alphabets of chardet's
// language table and the copyright files of the bidi and shaping libraries:
// Arabic, Hebrew, Thai, ...). Files that are not
// valid UTF-8 are skipped (a JavaScript string cannot hold their bytes).
//   node tools/node/make_corpus.mjs OUT.jsonl [MEGABYTES]   (default 4)
// Also writes OUT.txt: the documents back to back (for the round trip check).
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";

const [out, mbArg] = process.argv.slice(2);
if (!out) { console.error("usage: make_corpus.mjs OUT.jsonl [MEGABYTES]"); process.exit(2); }
const budget = Number(mbArg ?? 4) * 1e6;

function walk(dir, pred, acc = []) {
  let ents;
  try { ents = fs.readdirSync(dir, { withFileTypes: true }); } catch { return acc; }
  for (const e of ents.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, pred, acc);
    else if (e.isFile() && pred(p)) acc.push(p);
  }
  return acc;
}
const decoder = new TextDecoder("utf-8", { fatal: true });
function read(p) {
  let b = fs.readFileSync(p);
  if (p.endsWith(".gz")) b = zlib.gunzipSync(b);
  try { return decoder.decode(b); } catch { return null; }
}

const foreign = ["ja", "ko", "ru", "uk", "zh_CN", "zh_TW", "cs", "pl", "de", "fr", "es", "sr", "tr"];
const groups = [   // [label, files, share of the budget]
  ["licenses", walk("/usr/share/common-licenses", () => true), 0.14],
  ["doc", walk("/usr/share/doc", (p) => /(README|NEWS|changelog)[^/]*$/.test(p)), 0.13],
  ["c-headers", walk("/usr/include", (p) => p.endsWith(".h")), 0.17],
  ["python", walk("/usr/lib/python3/dist-packages", (p) => p.endsWith(".py")), 0.09],
  ["man-en", walk("/usr/share/man/man1", (p) => p.endsWith(".gz")), 0.09],
  ["man-foreign", foreign.flatMap((l) => walk(`/usr/share/man/${l}`, (p) => p.endsWith(".gz"))), 0.26],
  ["vim-tutors", walk("/usr/share/vim", (p) => /\/tutor\/tutor(\.[a-z_]+)?\.utf-8$/.test(p)), 0.11],
  ["alphabets", [...walk("/usr/lib/python3/dist-packages/chardet/metadata", (p) => p.endsWith("/languages.py")),
                 ...["libfribidi0", "libharfbuzz0b", "libraqm0"].map((d) => `/usr/share/doc/${d}/copyright`)
                   .filter((p) => fs.existsSync(p))], 0.03],
];
const lines = [], texts = [];
let skipped = 0, total = 0;
for (const [label, files, share] of groups) {
  let used = 0, n = 0;
  const step = Math.max(1, Math.floor(files.length / 400));   // spread over the whole list
  for (let i = 0; i < files.length && used < share * budget; i += step) {
    const text = read(files[i]);
    if (text === null) { skipped++; continue; }
    if (!text.length || text.includes("<|endo")) continue;
    lines.push(JSON.stringify({ source: files[i], text }));
    texts.push(text);
    used += Buffer.byteLength(text);
    n++;
  }
  total += used;
  console.error(`${label}: ${n} documents, ${(used / 1e6).toFixed(2)} MB`);
}
fs.writeFileSync(out, lines.join("\n") + "\n");
fs.writeFileSync(out.replace(/\.jsonl$/, "") + ".txt", texts.join(""));
console.error(`${out}: ${lines.length} documents, ${(total / 1e6).toFixed(2)} MB (${skipped} files not UTF-8 skipped)`);
