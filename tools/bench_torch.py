#!/usr/bin/python3
"""tools/bench_torch.py - the PyTorch side of `make bench` (docs/performance.md).

An equivalent fp32 training step in PyTorch for the model bench_step times:
OLMo-2 block (q_norm over the whole H*hd vector, k_norm, post-attention and
post-feedforward RMSNorm, SwiGLU MLP), rotate_half RoPE with integer positions
in rope layers and RePo positions z = (silu(x Wg^T) * (x Wc^T)) Wz^T (one per kv
head) in repo layers, untied LM head, cross-entropy, clip_grad_norm_(1.0),
torch.optim.AdamW. It is written the way a researcher writes a torch 1.13 model
(plain q k^T, causal mask, softmax, times v; 1.13 has no scaled_dot_product_attention),
not tuned to lose.

It loads the checkpoint `bench_step --save-weights DIR` wrote (config.json,
model.safetensors in F32, batch.i32 = B*T tokens then B*T targets) so both
programs start from the same weights and tokens; loss0 (the loss of the first
forward) must then match bench_step's.

  /usr/bin/python3 tools/bench_torch.py DIR [--threads 2] [--steps 3] [--warmup 1]
                   [--size S] [--mode repo] [--B 8] [--T 256] [--amp bf16]

--amp bf16 runs the forward under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's own mixed
precision: its linear layers and matmuls take BF16 operands (oneDNN), the weights and AdamW stay fp32.

Prints one JSON line with the same keys as bench_step --json.
"""
import argparse
import json
import math
import os
import resource
import struct
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ckpt", help="directory written by bench_step --save-weights")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--B", type=int, required=True)
    ap.add_argument("--T", type=int, required=True)
    ap.add_argument("--size", default="?", help="label only")
    ap.add_argument("--mode", default="?", help="label only")
    ap.add_argument("--amp", choices=["none", "bf16"], default="none", help="autocast the forward to bf16")
    return ap.parse_args()


ARGS = parse_args()
# same threads for both pools torch uses: its OpenMP one and the (pthread) OpenBLAS
# behind Debian's libblas.so.3; the OpenBLAS count is read once, at load, from the environment
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# ----------------------------------------------------------------------------
# the model (docs/design.md: the decoder block; docs/positions.md), fp32


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, c, pos_mode):
        super().__init__()
        D, self.H, self.KVH, self.hd = c["D"], c["H"], c["KVH"], c["D"] // c["H"]
        self.q_proj = nn.Linear(D, self.H * self.hd, bias=False)
        self.k_proj = nn.Linear(D, self.KVH * self.hd, bias=False)
        self.v_proj = nn.Linear(D, self.KVH * self.hd, bias=False)
        self.o_proj = nn.Linear(self.H * self.hd, D, bias=False)
        self.q_norm = RMSNorm(self.H * self.hd, c["eps"])
        self.k_norm = RMSNorm(self.KVH * self.hd, c["eps"])
        self.pos_mode = pos_mode
        if pos_mode == "repo":   # the RePo module: one real position per kv head
            dp = D // 8
            self.gate_map = nn.Linear(D, dp, bias=False)
            self.content_map = nn.Linear(D, dp, bias=False)
            self.final_map = nn.Linear(dp, self.KVH, bias=False)

    def forward(self, x, cos, sin, inv_freq, mask):
        B, T, _ = x.shape
        q = self.q_norm(self.q_proj(x)).view(B, T, self.H, self.hd).transpose(1, 2)
        k = self.k_norm(self.k_proj(x)).view(B, T, self.KVH, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.KVH, self.hd).transpose(1, 2)
        if self.pos_mode == "repo":
            z = self.final_map(F.silu(self.gate_map(x)) * self.content_map(x))      # (B, T, KVH)
            freqs = z.transpose(1, 2).unsqueeze(-1) * inv_freq                    # (B, KVH, T, hd/2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos(), emb.sin()
            k = k * cos + rotate_half(k) * sin
            if self.H != self.KVH:   # the query heads of a group share its position
                cos = cos.repeat_interleave(self.H // self.KVH, dim=1)
                sin = sin.repeat_interleave(self.H // self.KVH, dim=1)
            q = q * cos + rotate_half(q) * sin
        elif self.pos_mode == "rope":                                             # cos, sin (T, hd)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        if self.H != self.KVH:
            k = k.repeat_interleave(self.H // self.KVH, dim=1)
            v = v.repeat_interleave(self.H // self.KVH, dim=1)
        att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        att = att + mask
        att = F.softmax(att, dim=-1)
        out = torch.matmul(att, v).transpose(1, 2).reshape(B, T, self.H * self.hd)
        return self.o_proj(out)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c["D"], c["F"], bias=False)
        self.up_proj = nn.Linear(c["D"], c["F"], bias=False)
        self.down_proj = nn.Linear(c["F"], c["D"], bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, c, pos_mode):
        super().__init__()
        self.self_attn = Attention(c, pos_mode)
        self.mlp = MLP(c)
        self.post_attention_layernorm = RMSNorm(c["D"], c["eps"])
        self.post_feedforward_layernorm = RMSNorm(c["D"], c["eps"])

    def forward(self, x, cos, sin, inv_freq, mask):
        x = x + self.post_attention_layernorm(self.self_attn(x, cos, sin, inv_freq, mask))
        return x + self.post_feedforward_layernorm(self.mlp(x))


class Decoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["V"], c["D"])
        self.layers = nn.ModuleList([Block(c, p) for p in c["positions"]])
        self.norm = RMSNorm(c["D"], c["eps"])


class CausalLM(nn.Module):
    def __init__(self, c, T):
        super().__init__()
        self.model = Decoder(c)
        self.lm_head = nn.Linear(c["D"], c["V"], bias=False)
        hd = c["D"] // c["H"]
        inv_freq = 1.0 / (c["theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        freqs = torch.outer(torch.arange(T, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)
        mask = torch.full((T, T), float("-inf")).triu(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, tokens, targets):
        x = self.model.embed_tokens(tokens)
        for layer in self.model.layers:
            x = layer(x, self.cos, self.sin, self.inv_freq, self.mask)
        logits = self.lm_head(self.model.norm(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

# ----------------------------------------------------------------------------
# checkpoint: config.json and an F32 model.safetensors (u64 LE header length,
# JSON header, raw data), read tensor by tensor straight into the parameters


def read_config(d):
    with open(os.path.join(d, "config.json")) as f:
        j = json.load(f)
    # a layout with RePo or NoPE layers is saved as repoc's own class (docs/interop.md), the same OLMo-2 block
    if j["architectures"][0] not in ("Olmo2ForCausalLM", "RepocOlmo2ForCausalLM"):
        sys.exit("bench_torch.py: only the OLMo-2 block is implemented, not %s" % j["architectures"][0])
    if j.get("rope_scaling") or j.get("tie_word_embeddings"):
        sys.exit("bench_torch.py: YaRN and tied embeddings are not implemented")
    return {"V": j["vocab_size"], "D": j["hidden_size"], "F": j["intermediate_size"], "L": j["num_hidden_layers"],
            "H": j["num_attention_heads"], "KVH": j["num_key_value_heads"], "eps": j["rms_norm_eps"],
            "theta": j["rope_theta"], "positions": j["repoc_layer_positions"]}


def load_safetensors_into(model, path):
    params = dict(model.named_parameters())
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
        header.pop("__metadata__", None)
        if set(header) != set(params):
            sys.exit("bench_torch.py: %s: tensors differ from the model: missing %s, unexpected %s"
                     % (path, sorted(set(params) - set(header)), sorted(set(header) - set(params))))
        for name, e in header.items():
            p = params[name]
            if e["dtype"] != "F32" or list(e["shape"]) != list(p.shape):
                sys.exit("bench_torch.py: %s: %s is %s %s, want F32 %s" % (path, name, e["dtype"], e["shape"],
                                                                          list(p.shape)))
            begin, end = e["data_offsets"]
            f.seek(8 + n + begin)
            buf = memoryview(p.data.numpy()).cast("B")
            if end - begin != len(buf) or f.readinto(buf) != len(buf):
                sys.exit("bench_torch.py: %s: %s: short or mis-sized data" % (path, name))


def model_flops(c, B, T):
    """the count of bench_step.c model_flops (docs/performance.md "FLOP count")"""
    D, hd, F_, KVH, H = c["D"], c["D"] // c["H"], c["F"], c["KVH"], c["H"]
    in_out = D * c["V"]
    for p in c["positions"]:
        in_out += D * H * hd + 2 * D * KVH * hd + H * hd * D + 3 * D * F_
        if p == "repo":
            in_out += 2 * D * (D // 8) + (D // 8) * KVH
    attn = 3.0 * 2.0 * B * H * T * T * hd * c["L"]
    return 6.0 * B * T * in_out + attn


def main():
    torch.set_num_threads(ARGS.threads)
    torch.manual_seed(0)
    c = read_config(ARGS.ckpt)
    B, T = ARGS.B, ARGS.T
    model = CausalLM(c, T)
    load_safetensors_into(model, os.path.join(ARGS.ckpt, "model.safetensors"))
    batch = np.fromfile(os.path.join(ARGS.ckpt, "batch.i32"), dtype="<i4")
    if batch.size != 2 * B * T:
        sys.exit("bench_torch.py: batch.i32 holds %d ints, want 2*B*T = %d" % (batch.size, 2 * B * T))
    tokens = torch.from_numpy(batch[:B * T].astype(np.int64)).view(B, T)
    targets = torch.from_numpy(batch[B * T:].astype(np.int64)).view(B, T)

    # AdamW groups as repoc's defaults (OLMo-2's): the input embedding without decay, the rest (LM head and
    # norms too) with 0.1
    no_decay = ("model.embed_tokens.weight",)
    named = list(model.named_parameters())
    groups = [{"params": [p for n, p in named if n not in no_decay], "weight_decay": 0.1},
              {"params": [p for n, p in named if n in no_decay], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=1e-4, betas=(0.9, 0.95), eps=1e-8)

    t_step, t_fwd, t_bwd, t_opt, loss0, faults = [], [], [], [], None, 0
    for s in range(ARGS.warmup + ARGS.steps):
        if s == ARGS.warmup:
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=ARGS.amp == "bf16"):
            loss = model(tokens, targets)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        if s == 0:
            loss0 = loss.item()
        if s >= ARGS.warmup:
            t_step.append(t3 - t0), t_fwd.append(t1 - t0), t_bwd.append(t2 - t1), t_opt.append(t3 - t2)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    rss, faults = ru.ru_maxrss / 1024.0, (ru.ru_minflt - faults) / ARGS.steps
    ms = float(np.median(t_step)) * 1e3
    flops = model_flops(c, B, T)
    out = {"impl": "torch" if ARGS.amp == "none" else "torch-" + ARGS.amp, "size": ARGS.size, "mode": ARGS.mode, "block": "olmo2",
           "params": sum(p.numel() for p in model.parameters()), "B": B, "T": T, "threads": torch.get_num_threads(),
           "steps": ARGS.steps, "warmup": ARGS.warmup, "ms_step": round(ms, 2),
           "ms_mean": round(float(np.mean(t_step)) * 1e3, 2), "tokens_per_s": round(B * T / (ms * 1e-3), 1),
           "gflop_step": round(flops * 1e-9, 3), "gflops": round(flops / (ms * 1e-3) * 1e-9, 2),
           "peak_rss_mib": round(rss, 1), "loss0": round(loss0, 6),
           "fwd_ms": round(float(np.median(t_fwd)) * 1e3, 2), "bwd_ms": round(float(np.median(t_bwd)) * 1e3, 2),
           "opt_ms": round(float(np.median(t_opt)) * 1e3, 2), "minflt_per_step": round(faults),
           "torch": torch.__version__}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
