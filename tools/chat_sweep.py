"""Random chat templates of the subset repoc renders (template/chat_template.h), rendered by Python's jinja2 with
transformers' settings (tools/chat_reference.py), for tests/test_chat_sweep.sh: each line of the output is
{"template": T, "context": C, "ok": true, "out": jinja2's rendering} or {..., "ok": false, "error": its
exception}. build/tools/chat_sweep renders the same and compares. Seeded, so a run writes the same cases.

  chat_sweep.py SEED N_TEMPLATES OUT.jsonl      each template on every context of CONTEXTS

Runs with Debian's python3-jinja2 (/usr/bin/python3); never needed to build or train."""
import json
import random
import sys

from chat_reference import compile_template

CONTEXTS = [
    {"messages": [{"role": "user", "content": "Hi there"}, {"role": "assistant", "content": "Hello! How can I help?"}],
     "add_generation_prompt": False, "bos_token": "<s>", "eos_token": "</s>"},
    {"messages": [{"role": "system", "content": "  Be brief.  "}, {"role": "user", "content": "Ünïcödé — 日本語 ✓ \"q\" \\ b"},
                  {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nSure:\t日本\n\n"}],
     "add_generation_prompt": True, "bos_token": "", "eos_token": "<|im_end|>"},
    {"messages": [{"role": "user", "content": "weather?"},
                  {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
                      "name": "get_weather", "arguments": {"city": "Paris", "days": 3, "lat": 48.0, "big": 9007199254740993,
                                                           "ok": True, "none": None, "list": [1, "two", 3.5]}}}]},
                  {"role": "tool", "content": "{\"temp\": 21.5}"}, {"role": "assistant", "content": "21.5 degrees."}],
     "tools": [{"name": "get_weather", "description": "Weather of a city", "parameters": {"type": "object"}}],
     "add_generation_prompt": False, "bos_token": "<|begin|>", "eos_token": "<|end|>"},
]

NAMES = ["messages", "m", "x", "i", "ns.n", "ns.s", "bos_token", "eos_token", "add_generation_prompt", "tools",
         "loop.index", "loop.first", "loop.last", "loop.length", "loop.revindex0", "missing"]
STRINGS = ["''", "'a'", "' x '", "'<|im_start|>'", "'\\n'", "'it\\'s'", "'日本'", "'a,b,,c'", "'Hello World'",
           "'  pad  '", "'x-y z'", "'1_000'", "'42'", "' 7 '", "'3.5'", "'é'", "\"dq\"", "'tool'", "'user'"]
NUMBERS = ["0", "1", "2", "-1", "3", "10", "2.5", "-0.0", "1e3", "1_000", "7", "100"]
FILTERS = ["trim", "upper", "lower", "title", "capitalize", "length", "count", "first", "last", "string", "list",
           "reverse | list", "items | list", "int", "float", "abs", "tojson", "tojson(indent=2)",
           "tojson(sort_keys=true)", "tojson(separators=[',', ':'])", "tojson(ensure_ascii=true)", "join",
           "join(', ')", "join('-', attribute='role')", "default('dflt')", "default('d', true)", "replace('a', 'A')",
           "replace(' ', '_', 1)", "trim('x')", "int(7)", "int(base=16)", "float(1.5)", "d('z')", "safe"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable", "sequence",
         "even", "odd", "divisibleby 3", "true", "false", "boolean", "eq 'user'", "in ['user', 'system']"]
METHODS = ["strip()", "strip('x')", "lstrip()", "rstrip('\\n')", "split()", "split(',')", "split(' ', 1)",
           "startswith('a')", "endswith(('.'))", "replace('e', 'E')", "upper()", "lower()", "title()",
           "capitalize()", "get('role')", "get('x', 5)", "items() | list", "keys() | list", "values() | list"]
OPS = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "and", "or"]


def expr(r, depth):
    if depth <= 0 or r.random() < 0.25:
        k = r.random()
        if k < 0.4:
            return r.choice(NAMES)
        if k < 0.7:
            return r.choice(STRINGS)
        if k < 0.9:
            return r.choice(NUMBERS)
        return r.choice(["true", "false", "none", "[1, 2, 3]", "['a', 'b']", "{'k': 1, 'j': 'v'}", "range(4)"])
    k = r.randrange(10)
    a = expr(r, depth - 1)
    if k == 0:
        return "%s | %s" % (a, r.choice(FILTERS))
    if k == 1:
        return "(%s %s %s)" % (a, r.choice(OPS), expr(r, depth - 1))
    if k == 2:
        return "(%s is %s%s)" % (a, r.choice(["", "not "]), r.choice(TESTS))
    if k == 3:
        return "%s.%s" % (r.choice(["m", "messages[0]", "messages[-1]", "x", "'ab c'", "{'role': 'r'}"]), r.choice(METHODS))
    if k == 4:
        return "%s[%s]" % (r.choice(["messages", "m", "'hello'", "[1, 2, 3]", "x"]),
                           r.choice(["0", "-1", "1", "'role'", "'content'", "1:", ":2", "::-1", "1::2", "-2:"]))
    if k == 5:
        return "(%s if %s else %s)" % (a, expr(r, depth - 1), expr(r, depth - 1))
    if k == 6:
        return "(not %s)" % a
    if k == 7:
        return "%s.%s" % (r.choice(["m", "messages[0]", "x", "ns"]), r.choice(["role", "content", "tool_calls", "n", "s"]))
    if k == 8:
        return "[%s, %s]" % (a, expr(r, depth - 1))
    return "(-%s)" % a


def ws(r):
    return r.choice(["", "", "-", "+"]) if r.random() < 0.5 else ""


def block(r, depth, in_loop):
    parts = []
    for _ in range(r.randrange(1, 4)):
        k = r.randrange(9 if depth > 0 else 4)
        if k == 0:
            parts.append(r.choice(["text ", "\n", "  indented\n", "<|im_start|>", " ", "a\r\nb", "\t"]))
        elif k in (1, 2):
            parts.append("{{%s %s %s}}" % (r.choice(["", "-"]), expr(r, 2), r.choice(["", "-"])))
        elif k == 3:
            parts.append("{%% set x = %s %%}" % expr(r, 2) if r.random() < 0.5 else "{%% set ns.n = %s %%}" % expr(r, 1))
        elif k in (4, 5):
            body = block(r, depth - 1, in_loop)
            other = "{%% else %%}%s" % block(r, depth - 1, in_loop) if r.random() < 0.4 else ""
            parts.append("{%%%s if %s %%}%s%s{%% endif %%}" % (ws(r), expr(r, 2), body, other))
        elif k in (6, 7):
            it = r.choice(["messages", "messages[1:]", "messages | reverse | list", "range(3)", "'abc'",
                           "{'a': 1, 'b': 2}", "{'a': 1} | items | list", "tools or []", "x if x is iterable else []"])
            var = r.choice(["m", "m", "i", "k, v"]) if "items" not in it else "k, v"
            cond = " if %s" % expr(r, 1) if r.random() < 0.2 else ""
            body = block(r, depth - 1, True)
            other = "{%% else %%}E" if r.random() < 0.2 else ""
            parts.append("{%% for %s in %s%s %%}%s%s{%% endfor %%}" % (var, it, cond, body, other))
        elif in_loop:
            parts.append(r.choice(["{% if loop.index > 1 %}{% break %}{% endif %}", "{% continue %}", "{{ loop.index0 }}"]))
        else:
            parts.append("{# c #}")
    return "".join(parts)


def template(r):
    head = "{% set ns = namespace(n=0, s='') %}"
    return head + block(r, 2, False) + r.choice(["", "\n", "{% if add_generation_prompt %}<|assistant|>{% endif %}"])


def main():
    seed, n, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    r = random.Random(seed)
    with open(out, "w", encoding="utf-8") as f:
        for _ in range(n):
            src = template(r)
            try:
                t = compile_template(src)
            except Exception as e:  # a template jinja2 refuses to parse: repoc must refuse it too
                t, parse_error = None, "%s: %s" % (type(e).__name__, e)
            for ctx in CONTEXTS:
                case = {"template": src, "context": ctx}
                try:
                    if t is None:
                        raise ValueError(parse_error)
                    case.update(ok=True, out=t.render(**ctx))
                except Exception as e:
                    case.update(ok=False, error="%s: %s" % (type(e).__name__, str(e)[:200]))
                f.write(json.dumps(case, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
