"""The reference rendering of chat records, for tests/test_chat_reference.sh: transformers' apply_chat_template
settings (a jinja2 sandbox with trim_blocks, lstrip_blocks and loop controls, json.dumps as tojson,
raise_exception; strftime_now left undefined, as repoc leaves it) and the assistant spans found the way
data/chat.h finds them, from prefixes of the conversation.

  chat_reference.py render TEMPLATE_OR_CONFIG CONTEXT.json    the rendering of one context, to stdout
  chat_reference.py spans  TOKENIZER_CONFIG FILE.jsonl        per record {"text": ..., "spans": [[b, e], ...]}
                                                             (byte offsets), one JSON line each
Runs with Debian's python3-jinja2 (/usr/bin/python3); never needed to build or train."""
import json
import sys

from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def load_template(path):
    if not path.endswith(".json"):
        return open(path, encoding="utf-8").read(), {}
    cfg = json.load(open(path, encoding="utf-8"))
    t = cfg["chat_template"]
    if isinstance(t, list):
        t = [x for x in t if x["name"] == "default"][0]["template"]
    tok = lambda v: v.get("content", "") if isinstance(v, dict) else (v or "")
    return t, {"bos_token": tok(cfg.get("bos_token")), "eos_token": tok(cfg.get("eos_token"))}


def compile_template(src):
    def raise_exception(message):
        raise ValueError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env.from_string(src)


def spans(template, special, messages):
    def render(msgs, gen):
        return template.render(messages=msgs, add_generation_prompt=gen, **special).encode("utf-8")

    full = render(messages, False)
    out = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        a, b = render(messages[:i], True), render(messages[: i + 1], False)
        assert full.startswith(a) and full.startswith(b), "turn %d cannot be located" % i
        out.append([len(a), len(b)])
    return full.decode("utf-8"), out


def main():
    mode, path, data = sys.argv[1:4]
    src, special = load_template(path)
    template = compile_template(src)
    if mode == "render":
        ctx = json.load(open(data, encoding="utf-8"))
        sys.stdout.write(template.render(**{**special, **ctx}))
        return
    for line in open(data, encoding="utf-8"):
        if line.strip():
            text, sp = spans(template, special, json.loads(line)["messages"])
            print(json.dumps({"text": text, "spans": sp}, ensure_ascii=False))


if __name__ == "__main__":
    main()
