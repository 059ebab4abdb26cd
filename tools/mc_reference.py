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

--score CKPT ITEMS scores a JSON Lines file (the default fields) on a checkpoint instead (model_type llama,
olmo2, qwen2 or qwen3, one model.safetensors), by the same rules, in float32 unless --dtype float64, with
--tokenizer (default CKPT/tokenizer.json), --window (default max_position_embeddings), --threads and
--limit; prints acc, acc_norm and items/s of the scoring (the encoding through build/tokenize not counted):
tools/bench_mc.sh times build/eval --mc against it.
"""
import argparse
import time
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
from reference_model import Cfg, forward, init_params, st_read, st_write  # noqa: E402
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


def encode_all(texts, bos, tokenizer=TOKENIZER):
    """repoc's BPE ids of each text (build/tokenize), without the BOS it adds"""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "texts.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps({"text": t}) + "\n")
        out = subprocess.run([os.path.join(ROOT, "build", "tokenize"), "--tokenizer", tokenizer, "--jsonl",
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


def score(c, P, items, bos, window=W, tokenizer=TOKENIZER, timed=None):
    pairs = [[encode_pair(it["context"], DELIM + ch) for ch in it["choices"]] for it in items]
    texts = sorted({t for p in pairs for pair in p for t in pair})
    enc = encode_all(texts, bos, tokenizer)
    if timed is not None:
        timed.append(time.perf_counter())
    results = []
    for it, p in zip(items, pairs):
        lls, greedy, ctx_tokens, conts = [], [], None, []
        for ctx_text, whole_text in p:
            whole = bos + enc[whole_text]
            context_enc = bos + enc[ctx_text]
            cont = whole[len(context_enc):]
            assert 1 <= len(cont) <= window
            inp = (context_enc + cont)[-(window + 1):][:-1]  # HFLM._loglikelihood_tokens
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


def checkpoint_cfg(ckpt):
    """reference_model's Cfg of a checkpoint's config.json (the blocks whose keys it reads: not Gemma-3)"""
    hf = json.load(open(os.path.join(ckpt, "config.json")))
    # repoc_<type>: a layout with RePo or NoPE layers, named so that stock transformers refuses it
    arch, L = hf["model_type"].removeprefix("repoc_"), hf["num_hidden_layers"]
    assert arch in ("llama", "olmo2", "qwen2", "qwen3"), "--score: model_type %s is not supported" % arch
    assert "repoc_layer_positions" in hf or "pe_config" not in hf, "--score: RePo without repoc_layer_positions"
    return Cfg(name="score", arch=arch, V=hf["vocab_size"], D=hf["hidden_size"], L=L, H=hf["num_attention_heads"],
               KVH=hf.get("num_key_value_heads") or hf["num_attention_heads"], F=hf["intermediate_size"],
               head_dim=hf.get("head_dim"), eps=hf["rms_norm_eps"], theta=float(hf.get("rope_theta", 10000.0)),
               yarn=hf.get("rope_scaling"), tied=hf.get("tie_word_embeddings", False),
               attn_bias=hf.get("attention_bias", False), max_pos=hf.get("max_position_embeddings") or 2048,
               positions=hf.get("repoc_layer_positions") or ["rope"] * L)


def score_checkpoint(argv):
    ap = argparse.ArgumentParser(prog="mc_reference.py --score")
    ap.add_argument("ckpt")
    ap.add_argument("items")
    ap.add_argument("--tokenizer")
    ap.add_argument("--window", type=int)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    c = checkpoint_cfg(a.ckpt)
    dtype = getattr(torch, a.dtype)
    P = {k: v.to(dtype) for k, v in st_read(os.path.join(a.ckpt, "model.safetensors"))[0].items()}
    tokenizer = a.tokenizer or os.path.join(a.ckpt, "tokenizer.json")
    if os.path.isdir(tokenizer):
        tokenizer = os.path.join(tokenizer, "tokenizer.json")
    items = [json.loads(line) for line in open(a.items, encoding="utf-8") if line.strip()]
    items = items[:a.limit] if a.limit else items
    t = [time.perf_counter()]
    with torch.no_grad():
        results = score(c, P, items, prefix_ids(json.load(open(tokenizer, encoding="utf-8"))),
                        a.window or c.max_pos, tokenizer, t)
    seconds = time.perf_counter() - t[1]
    n = len(results)
    print("reference (PyTorch %s, %s, %d threads): %d items  acc %.4f  acc_norm %.4f  %.6g items/s "
          "(%.1f s scoring, %.1f s encoding)" % (torch.__version__, a.dtype, a.threads, n,
                                                  sum(r["acc"] for r in results) / n,
                                                  sum(r["acc_norm"] for r in results) / n, n / seconds, seconds,
                                                  t[1] - t[0]))


def main():
    if sys.argv[1:2] == ["--score"]:
        return score_checkpoint(sys.argv[2:])
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
