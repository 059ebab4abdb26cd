#!/usr/bin/python3
"""tools/mc_reference.py - the PyTorch reference for build/eval --mc (docs/eval.md, "Multiple choice").

Writes tests/fixtures/mc/: a tiny OLMo-2 checkpoint (vocab 1001 with the test tokenizer
tests/fixtures/tokenizer/smol.json, which puts BOS = 1000 before every text; layers rope, repo,
nope; max_position_embeddings 40, the scoring window), items.jsonl (36 items: contexts ending
in whitespace of several kinds, multi-token and non-ASCII choices, contexts longer than the
window, identical choices that tie, labels as numbers and as strings, items without an id) and
reference.json: every choice's log-likelihood and is_greedy, each item's acc and acc_norm, as
lm-evaluation-harness computes them. tests/test_mc.c compares build/eval's scores with it.

Independent of repoc's scoring code: the harness's rules are written here again (Python's
rstrip and len, target_delimiter " ", _encode_pair, the left truncation to the window, the sum of
log-softmax rows, numpy's argmax), and the forward is tools/reference_model.py's float64 model.
Only the BPE itself is repoc's: the ids of each text come from build/tokenize (run `make` first),
with the BOS this script reads from tokenizer.json's post-processor.

Run from the repository root:  /usr/bin/python3 tools/mc_reference.py
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_model import Cfg, forward, init_params, st_write  # noqa: E402
from reference import hf_config  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "mc")
TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "smol.json")
DELIM = " "  # lm-evaluation-harness's default target_delimiter
W = 40       # the window: max_position_embeddings of the checkpoint

WORDS = ("the cat sat on a warm mat while rain fell over quiet hills and old men told stories of ships "
         "that sailed north past ice toward lands where nobody had gone before this cold winter").split()


def model_cfg():
    return Cfg(name="mc", arch="olmo2", V=1001, D=32, L=3, H=4, KVH=2, F=48, eps=1e-6, theta=10000.0,
               yarn=None, tied=False, max_pos=W, positions=["rope", "repo", "nope"], write_layer_positions=True,
               embed_std=1.0, head_std=0.3, gain=1.0, norm_noise=0.1, repo_in_std=0.3, repo_out_std=0.5)


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def make_items():
    """36 items; every special case the rules have"""
    rng = random.Random(7)
    ends = ["", " ", "\n", "  \t", "\u00a0", "\u3000", ":"]
    items = []
    for i in range(30):
        ctx = sentence(rng, rng.randint(2, 9)).capitalize() + ends[i % len(ends)]
        k = rng.randint(2, 5)
        choices = [sentence(rng, rng.randint(1, 4)) for _ in range(k)]
        items.append({"id": "item-%d" % i, "context": ctx, "choices": choices, "label": rng.randrange(k)})
    items[3]["choices"][1] = "café au lait naïve"           # 18 code points, 20 bytes
    items[4]["choices"][0] = sentence(rng, 14)               # a long continuation
    items[5]["label"] = str(items[5]["label"])               # HellaSwag's exports write "2"
    items[6]["choices"] = ["same words", "other words", "same words"]  # a tie: the first of equals wins
    items[6]["label"] = 2
    del items[7]["id"]                                       # an item without an id: its index
    for j in range(6):                                       # contexts longer than the window
        ctx = sentence(rng, 30 + 5 * j) + (" " if j % 2 else "")
        choices = [sentence(rng, rng.randint(1, 6)) for _ in range(3)]
        items.append({"id": 100 + j, "context": ctx, "choices": choices, "label": j % 3})
    return items


def prefix_ids(tok_json):
    """the ids a TemplateProcessing post-processor puts before a single sequence"""
    pp = tok_json.get("post_processor") or {}
    if pp.get("type") != "TemplateProcessing":
        return []
    out = []
    for part in pp["single"]:
        if "Sequence" in part:
            break
        out += pp["special_tokens"][part["SpecialToken"]["id"]]["ids"]
    return out


def encode_all(texts, bos):
    """repoc's BPE ids of each text (build/tokenize), without the BOS it adds"""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "texts.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps({"text": t}) + "\n")
        out = subprocess.run([os.path.join(ROOT, "build", "tokenize"), "--tokenizer", TOKENIZER, "--jsonl",
                              "--no-eos", "--print-ids", "--threads", "1", path],
                             check=True, capture_output=True, text=True).stdout.splitlines()
    assert len(out) == len(texts), (len(out), len(texts))
    ids = [[int(x) for x in line.split()] for line in out]
    for x in ids:
        assert x[:len(bos)] == bos, x
    return {t: x[len(bos):] for t, x in zip(texts, ids)}


def encode_pair(context, continuation):
    """lm-evaluation-harness's _encode_pair: (the context's text, the whole text)"""
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces > 0:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    return context, context + continuation


def label_of(item):
    return int(item["label"])


def score(c, P, items, bos):
    pairs = [[encode_pair(it["context"], DELIM + ch) for ch in it["choices"]] for it in items]
    texts = sorted({t for p in pairs for pair in p for t in pair})
    enc = encode_all(texts, bos)
    results = []
    for it, p in zip(items, pairs):
        lls, greedy, ctx_tokens, conts = [], [], None, []
        for ctx_text, whole_text in p:
            whole = bos + enc[whole_text]
            context_enc = bos + enc[ctx_text]
            cont = whole[len(context_enc):]
            assert 1 <= len(cont) <= W
            inp = (context_enc + cont)[-(W + 1):][:-1]       # HFLM._loglikelihood_tokens
            tokens = torch.tensor([inp], dtype=torch.int32)
            logits = forward(c, P, tokens, torch.zeros_like(tokens), 0.0)[1][0]
            rows = logits[len(inp) - len(cont):]              # [cont, V]
            logp = torch.log_softmax(rows, dim=-1)
            target = torch.tensor(cont)
            lls.append(logp.gather(-1, target[:, None]).sum().item())
            greedy.append(bool((rows.argmax(dim=-1) == target).all().item()))
            ctx_tokens = len(context_enc)
            conts.append(cont)
        chars = [float(len(ch)) for ch in it["choices"]]
        ll = np.array(lls)
        results.append({"id": it.get("id", len(results)), "label": label_of(it), "loglikelihoods": lls,
                        "is_greedy": greedy, "choice_chars": chars, "context_tokens": ctx_tokens,
                        "continuation_tokens": conts,
                        "acc": int(np.argmax(ll) == label_of(it)),
                        "acc_norm": int(np.argmax(ll / np.array(chars)) == label_of(it))})
    return results


def check_margins(results, items):
    """acc and acc_norm must not hang on float32 rounding: distinct choices differ by > 1e-3"""
    for r, it in zip(results, items):
        for a in range(len(r["loglikelihoods"])):
            for b in range(a):
                if it["choices"][a] == it["choices"][b]:
                    assert r["loglikelihoods"][a] == r["loglikelihoods"][b]
                    continue
                la, lb = r["loglikelihoods"][a], r["loglikelihoods"][b]
                ca, cb = r["choice_chars"][a], r["choice_chars"][b]
                assert abs(la - lb) > 1e-3 and abs(la / ca - lb / cb) > 1e-4, (r["id"], a, b)


def main():
    torch.manual_seed(99)
    c = model_cfg()
    P = init_params(c)
    tok_json = json.load(open(TOKENIZER, encoding="utf-8"))
    bos = prefix_ids(tok_json)
    assert bos == [1000], bos
    items = make_items()
    results = score(c, P, items, bos)
    check_margins(results, items)
    os.makedirs(os.path.join(OUT, "ckpt"), exist_ok=True)
    with open(os.path.join(OUT, "ckpt", "config.json"), "w") as f:
        f.write(hf_config(c, "float32"))
    st_write(os.path.join(OUT, "ckpt", "model.safetensors"), {k: v.to(torch.float32) for k, v in P.items()},
             {"format": "pt"})
    shutil.copy(TOKENIZER, os.path.join(OUT, "ckpt", "tokenizer.json"))
    with open(os.path.join(OUT, "items.jsonl"), "w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")
    n = len(results)
    acc = sum(r["acc"] for r in results) / n
    acc_norm = sum(r["acc_norm"] for r in results) / n
    ref = {"format": "repoc-mc-reference", "window": W, "delimiter": DELIM, "n": n, "acc": acc,
           "acc_norm": acc_norm, "items": results}
    with open(os.path.join(OUT, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(ref, f, indent=1, ensure_ascii=False)
        f.write("\n")
    truncated = sum(1 for r in results for cont in r["continuation_tokens"] if r["context_tokens"] + len(cont) - 1 > W)
    print("%d items, %d choices (%d truncated on the left), acc %.4f, acc_norm %.4f"
          % (n, sum(len(r["loglikelihoods"]) for r in results), truncated, acc, acc_norm))


if __name__ == "__main__":
    sys.exit(main())
