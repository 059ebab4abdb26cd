// The ids and loss mask of reference chat records (tools/chat_reference.py's "spans" lines on stdin),
// encoded by @huggingface/tokenizers with tokenizer.json, without added BOS/EOS, as apply_chat_template's
// ids: one line {"ids": [...], "loss": [...]} per record, a token carrying loss when one of its bytes lies
// in an assistant span (transformers' assistant mask: from the token holding a span's first character through
// the one holding its last). Byte offsets come from the tokens' strings: for a byte-level BPE tokenizer, GPT-2's
// byte alphabet; for a vocabulary of UTF-8 strings whose normalizer is Replace(" ", "▁") (Gemma-3), each ▁ stands
// for the one space it replaced and a byte-fallback token <0xHH> for one byte; a special added token for its
// content. Usage: node tools/node/chat_ids.mjs TOKENIZER.json < spans.jsonl
import fs from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { Tokenizer } = require(process.env.NODE_MODULES + "/@huggingface/tokenizers");
const json = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const tok = new Tokenizer(json, {});
const added = new Map((json.added_tokens || []).filter((t) => t.special)
    .map((t) => [t.content, Buffer.byteLength(t.content, "utf8")]));
const byteLevel = JSON.stringify(json.decoder || {}).includes('"ByteLevel"');
const norm = json.normalizer || {};
if (!byteLevel && !(norm.type === "Replace" && norm.pattern?.String === " " && norm.content === "\u2581"))
    throw new Error("neither byte-level nor a Replace(' ', '\u2581') normalizer: offsets unknown");
const byteOf = new Map();   // GPT-2's bytes_to_unicode, inverted: each char stands for one byte
let n = 0;
for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    byteOf.set(String.fromCodePoint(printable ? b : 256 + n++), b);
}
for (const line of fs.readFileSync(0, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const { text, spans } = JSON.parse(line);
    const enc = tok.encode(text, { add_special_tokens: false });
    const loss = [];
    let at = 0;
    for (const t of enc.tokens) {
        const start = at;
        if (added.has(t)) at += added.get(t);
        else if (!byteLevel) at += /^<0x[0-9A-F]{2}>$/.test(t) ? 1 : Buffer.byteLength(t.replaceAll("\u2581", " "), "utf8");
        else for (const ch of t) { if (!byteOf.has(ch)) throw new Error("not a byte-level token: " + t); at++; }
        loss.push(spans.some(([b, e]) => start < e && at > b) ? 1 : 0);
    }
    if (at !== Buffer.byteLength(text, "utf8")) throw new Error(`tokens hold ${at} bytes, the text ${Buffer.byteLength(text)}`);
    console.log(JSON.stringify({ ids: enc.ids, loss }));
}
