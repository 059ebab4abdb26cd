// A chat template rendered by @huggingface/jinja (the renderer transformers.js uses), for
// tests/test_chat_reference.sh: node tools/node/chat_render.mjs tokenizer_config.json CONTEXT.json
import fs from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { Template } = require(process.env.NODE_MODULES + "/@huggingface/jinja");
const cfg = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const ctx = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
let t = cfg.chat_template;
if (Array.isArray(t)) t = t.find((x) => x.name === "default").template;
const tok = (x) => (typeof x === "object" && x ? x.content : x) ?? "";
const vars = { bos_token: tok(cfg.bos_token), eos_token: tok(cfg.eos_token), ...ctx };
process.stdout.write(new Template(t).render(vars));
