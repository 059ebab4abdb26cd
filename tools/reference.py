#!/usr/bin/python3
"""tools/reference.py - float64 PyTorch reference for repoc's model and AdamW step.

An independent implementation of DESIGN.md sections 1-3 and 5 (OLMo-2 and Llama
blocks, RoPE / RePo / NoPE positions in the HF rotate_half layout, YaRN and llama3
rope_scaling, document masking of packed rows, tied
head, cross-entropy with ignore index -1, optional z-loss, AdamW). It writes the
committed fixtures under tests/fixtures/ (see tests/fixtures/README.md). It needs
only torch and numpy; safetensors is read and written by the small code below.

Run from the repository root:  /usr/bin/python3 tools/reference.py
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as Fn

torch.set_num_threads(1)                 # fixed reduction order: identical files on every run
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures")

# ----------------------------------------------------------------------------
# safetensors: u64 LE header length, JSON header (padded with spaces to 8), data

ST_DTYPES = {"F64": (torch.float64, "<f8"), "F32": (torch.float32, "<f4"),
             "I32": (torch.int32, "<i4"), "BF16": (torch.bfloat16, "<i2")}
ST_NAME = {v[0]: k for k, v in ST_DTYPES.items()}


def tensor_bytes(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    return t.numpy().astype(ST_DTYPES[ST_NAME[t.dtype]][1]).tobytes()


def st_write(path, tensors, metadata=None):
    """Tensors laid out in sorted-name order; __metadata__ first in the header."""
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = {k: str(metadata[k]) for k in sorted(metadata)}
    for name in sorted(tensors):
        t = tensors[name]
        raw = tensor_bytes(t)
        header[name] = {"dtype": ST_NAME[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hj = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((-len(hj)) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))


def st_read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data) and n % 8 == 0, path
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = data[8 + n:]
    meta = header.pop("__metadata__", {})
    out, end_max = {}, 0
    for name, e in header.items():
        b, e_ = e["data_offsets"]
        dtype, npd = ST_DTYPES[e["dtype"]]
        count = int(np.prod(e["shape"])) if e["shape"] else 1
        assert 0 <= b <= e_ <= len(body) and e_ - b == count * np.dtype(npd).itemsize, name
        arr = np.frombuffer(body[b:e_], dtype=npd).copy().reshape(e["shape"])
        t = torch.from_numpy(arr.astype(arr.dtype.newbyteorder("=")))
        out[name] = t.view(torch.bfloat16) if dtype == torch.bfloat16 else t
        end_max = max(end_max, e_)
    assert end_max == len(body), path
    return out, meta


def bf16_bits_rne(t32):
    """Independent float32 -> bf16 round-to-nearest-even on the bit pattern (no NaNs here)."""
    bits = t32.numpy().view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype(np.uint16)

# ----------------------------------------------------------------------------
# model (DESIGN sections 1-3), all in float64


class Cfg:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.hd = self.D // self.H
        self.dp = self.D // 8
        self.G = self.H // self.KVH


def rope_tables(c):
    """inv_freq[hd/2] and the cos/sin scale m (DESIGN section 2, HF semantics)."""
    half = c.hd // 2
    base = [c.theta ** (-2.0 * i / c.hd) for i in range(half)]
    if c.yarn is None:
        return torch.tensor(base, dtype=torch.float64), 1.0
    if c.yarn["rope_type"] == "llama3":         # Llama-3.1: by wavelength 2 pi / f against L0/high and L0/low
        s, L0 = float(c.yarn["factor"]), float(c.yarn["original_max_position_embeddings"])
        lo, hi = float(c.yarn["low_freq_factor"]), float(c.yarn["high_freq_factor"])
        inv = []
        for f in base:
            w = 2 * math.pi / f
            if w < L0 / hi:
                inv.append(f)                    # short wavelengths: unchanged
            elif w > L0 / lo:
                inv.append(f / s)                # long wavelengths: interpolated by s
            else:
                a = (L0 / w - lo) / (hi - lo)    # a = 1 at L0/high, 0 at L0/low
                inv.append(a * f + (1 - a) * f / s)
        return torch.tensor(inv, dtype=torch.float64), 1.0
    s, L0 = float(c.yarn["factor"]), float(c.yarn["original_max_position_embeddings"])
    beta_fast, beta_slow = 32.0, 1.0

    def corr_dim(r):
        return c.hd * math.log(L0 / (2 * math.pi * r)) / (2 * math.log(c.theta))
    low = max(math.floor(corr_dim(beta_fast)), 0)
    high = min(math.ceil(corr_dim(beta_slow)), c.hd - 1)
    if low == high:
        high += 0.001
    inv = []
    for i in range(half):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        extra = 1.0 - ramp
        inv.append((base[i] / s) * (1.0 - extra) + base[i] * extra)
    m = 0.1 * math.log(s) + 1.0 if s > 1 else 1.0
    return torch.tensor(inv, dtype=torch.float64), m


def param_shapes(c):
    D, hd, F = c.D, c.hd, c.F
    S = {"model.embed_tokens.weight": (c.V, D)}
    for i in range(c.L):
        p = "model.layers.%d." % i
        S[p + "self_attn.q_proj.weight"] = (c.H * hd, D)
        S[p + "self_attn.k_proj.weight"] = (c.KVH * hd, D)
        S[p + "self_attn.v_proj.weight"] = (c.KVH * hd, D)
        S[p + "self_attn.o_proj.weight"] = (D, c.H * hd)
        if c.arch == "olmo2":
            S[p + "self_attn.q_norm.weight"] = (c.H * hd,)
            S[p + "self_attn.k_norm.weight"] = (c.KVH * hd,)
        if c.positions[i] == "repo":
            S[p + "self_attn.gate_map.weight"] = (c.dp, D)
            S[p + "self_attn.content_map.weight"] = (c.dp, D)
            S[p + "self_attn.final_map.weight"] = (c.KVH, c.dp)
        if c.arch == "llama":
            S[p + "input_layernorm.weight"] = (D,)
        S[p + "post_attention_layernorm.weight"] = (D,)
        if c.arch == "olmo2":
            S[p + "post_feedforward_layernorm.weight"] = (D,)
        S[p + "mlp.gate_proj.weight"] = (F, D)
        S[p + "mlp.up_proj.weight"] = (F, D)
        S[p + "mlp.down_proj.weight"] = (D, F)
    S["model.norm.weight"] = (D,)
    if not c.tied:
        S["lm_head.weight"] = (c.V, D)
    return S


def init_params(c):
    """Random weights, rounded to float32 (the checkpoint) and held as float64."""
    P = {}
    for name, shape in param_shapes(c).items():
        if name.endswith("norm.weight"):
            w = 1.0 + c.norm_noise * torch.randn(shape, dtype=torch.float64)
        elif name == "model.embed_tokens.weight":
            w = c.embed_std * torch.randn(shape, dtype=torch.float64)
        elif name == "lm_head.weight":
            w = c.head_std * torch.randn(shape, dtype=torch.float64)
        elif "gate_map" in name or "content_map" in name:
            w = c.repo_in_std * torch.randn(shape, dtype=torch.float64)
        elif "final_map" in name:
            w = c.repo_out_std * torch.randn(shape, dtype=torch.float64)
        else:
            w = c.gain / math.sqrt(shape[1]) * torch.randn(shape, dtype=torch.float64)
        P[name] = w.to(torch.float32).to(torch.float64)
    return P


def doc_ids(c):
    """[B,T] int32 document ids from c.docs (per row: document lengths), or None (one document per row)."""
    if getattr(c, "docs", None) is None:
        return None
    ids = torch.tensor([[d for d, n in enumerate(row) for _ in range(n)] for row in c.docs], dtype=torch.int32)
    assert ids.shape == (c.B, c.T), ids.shape
    return ids


def make_batch(c):
    """tokens [B,T] and next-token targets [B,T] (int32), n_ignore targets set to -1."""
    seq = torch.randint(0, c.V, (c.B, c.T + 1))
    tokens, targets = seq[:, :-1].to(torch.int32), seq[:, 1:].to(torch.int32).clone()
    targets.view(-1)[torch.randperm(c.B * c.T)[:c.n_ignore]] = -1
    return tokens, targets


def rmsnorm(x, w, eps):
    return w * (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps))


def rotate(x, p, inv_freq, m):
    """x [B,T,n,hd], p [B,T,n] float64: pair i = (x[i], x[i+hd/2]), angle p*inv_freq[i]."""
    half = x.shape[-1] // 2
    ang = p[..., None] * inv_freq
    cs, sn = m * torch.cos(ang), m * torch.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cs - x2 * sn, x2 * cs + x1 * sn], dim=-1)


def mlp(h, P, p):
    g = h @ P[p + "mlp.gate_proj.weight"].T
    u = h @ P[p + "mlp.up_proj.weight"].T
    return (Fn.silu(g) * u) @ P[p + "mlp.down_proj.weight"].T


def attention(c, h, P, p, i, inv_freq, m, zs):
    B, T, _ = h.shape
    H, KVH, hd = c.H, c.KVH, c.hd
    q = h @ P[p + "self_attn.q_proj.weight"].T
    k = h @ P[p + "self_attn.k_proj.weight"].T
    v = h @ P[p + "self_attn.v_proj.weight"].T
    if c.arch == "olmo2":                        # QK-norm over the whole H*hd / KVH*hd vector
        q = rmsnorm(q, P[p + "self_attn.q_norm.weight"], c.eps)
        k = rmsnorm(k, P[p + "self_attn.k_norm.weight"], c.eps)
    q, k, v = q.view(B, T, H, hd), k.view(B, T, KVH, hd), v.view(B, T, KVH, hd)
    mode = c.positions[i]
    ids = doc_ids(c)
    if ids is None:
        same_doc = torch.ones(B, T, T, dtype=torch.bool)
        t_in_doc = torch.arange(T, dtype=torch.float64)[None, :].expand(B, T)
    else:                                        # packed documents: attend within one; positions from its start
        same_doc = ids[:, :, None] == ids[:, None, :]
        first = torch.stack([torch.nonzero(ids[b] == ids[b, t])[0, 0] for b in range(B) for t in range(T)])
        t_in_doc = (torch.arange(T)[None, :] - first.view(B, T)).to(torch.float64)
    if mode == "rope":
        pk = t_in_doc[:, :, None].expand(B, T, KVH)
    elif mode == "repo":                         # one position per KV head
        r = Fn.silu(h @ P[p + "self_attn.gate_map.weight"].T) * (h @ P[p + "self_attn.content_map.weight"].T)
        pk = r @ P[p + "self_attn.final_map.weight"].T
        zs[i] = pk
    if mode != "nope":
        pq = pk.repeat_interleave(c.G, dim=2)    # query head j uses kv head j // G
        q, k = rotate(q, pq, inv_freq, m), rotate(k, pk, inv_freq, m)
    k, v = k.repeat_interleave(c.G, dim=2), v.repeat_interleave(c.G, dim=2)
    s = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(hd)
    causal = torch.ones(T, T, dtype=torch.bool).tril()[None] & same_doc
    s = s.masked_fill(~causal[:, None], float("-inf"))
    a = torch.einsum("bhts,bshd->bthd", torch.softmax(s, dim=-1), v).reshape(B, T, H * hd)
    return a @ P[p + "self_attn.o_proj.weight"].T


def forward(c, P, tokens, targets, z_loss):
    """Returns loss (0-dim), logits [B,T,V], {layer: z [B,T,KVH]}, block inputs list."""
    inv_freq, m = rope_tables(c)
    x = P["model.embed_tokens.weight"][tokens.long()]
    zs, hidden = {}, []
    for i in range(c.L):
        hidden.append(x)
        p = "model.layers.%d." % i
        if c.arch == "olmo2":
            o = attention(c, x, P, p, i, inv_freq, m, zs)
            x = x + rmsnorm(o, P[p + "post_attention_layernorm.weight"], c.eps)
            x = x + rmsnorm(mlp(x, P, p), P[p + "post_feedforward_layernorm.weight"], c.eps)
        else:
            h = rmsnorm(x, P[p + "input_layernorm.weight"], c.eps)
            x = x + attention(c, h, P, p, i, inv_freq, m, zs)
            x = x + mlp(rmsnorm(x, P[p + "post_attention_layernorm.weight"], c.eps), P, p)
    hidden.append(x)
    xf = rmsnorm(x, P["model.norm.weight"], c.eps)
    head = P["model.embed_tokens.weight"] if c.tied else P["lm_head.weight"]
    logits = xf @ head.T
    lse = torch.logsumexp(logits, dim=-1)
    valid = targets != -1
    n_valid = valid.sum()
    picked = logits.gather(-1, targets.long().clamp(min=0)[..., None])[..., 0]
    loss = ((lse - picked) * valid).sum() / n_valid
    loss = loss + z_loss * ((lse * lse) * valid).sum() / n_valid
    return loss, logits, zs, hidden


def loss_and_grads(c, P, batch, z_loss):
    Q = {k: v.clone().requires_grad_(True) for k, v in P.items()}
    loss, logits, zs, hidden = forward(c, Q, *batch, z_loss)
    names = list(Q)
    grads = torch.autograd.grad(loss, [Q[k] for k in names])
    return loss.detach(), dict(zip(names, grads)), logits.detach(), zs, hidden

# ----------------------------------------------------------------------------
# AdamW (torch.optim.AdamW, checked against the formula written out by hand)


# OLMo-2's trainer groups: every Linear weight (the untied lm_head included) and every norm weight
# decays (decay_norm_and_bias true); only the input embedding is exempt (decay_embeddings false).
NO_DECAY = ("model.embed_tokens.weight",)


def wd_of(k, hp):
    return 0.0 if k in NO_DECAY else hp["weight_decay"]


def adamw_run(c, P, batch, hp):
    Q = {k: v.clone().requires_grad_(True) for k, v in P.items()}
    names = list(Q)
    groups = [{"params": [Q[k] for k in names if k not in NO_DECAY], "weight_decay": hp["weight_decay"]},
              {"params": [Q[k] for k in names if k in NO_DECAY], "weight_decay": 0.0}]
    opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]),
                            eps=hp["eps"])
    losses = []
    for _ in range(hp["adamw_steps"]):
        opt.zero_grad()
        loss = forward(c, Q, *batch, hp["z_loss"])[0]
        loss.backward()
        losses.append(loss.item())
        opt.step()
    return losses, {k: (Q[k].detach() - P[k]) for k in names}


def adamw_manual(c, P, batch, hp):
    W = {k: v.clone() for k, v in P.items()}
    mom = {k: torch.zeros_like(v) for k, v in P.items()}
    vel = {k: torch.zeros_like(v) for k, v in P.items()}
    b1, b2, lr, eps = hp["beta1"], hp["beta2"], hp["lr"], hp["eps"]
    for t in range(1, hp["adamw_steps"] + 1):
        g = loss_and_grads(c, W, batch, hp["z_loss"])[1]
        for k in W:
            mom[k] = b1 * mom[k] + (1 - b1) * g[k]
            vel[k] = b2 * vel[k] + (1 - b2) * g[k] * g[k]
            mhat, vhat = mom[k] / (1 - b1 ** t), vel[k] / (1 - b2 ** t)
            W[k] = W[k] - lr * wd_of(k, hp) * W[k] - lr * mhat / (vhat.sqrt() + eps)
    return {k: W[k] - P[k] for k in W}


def f32_storage_floor(c, P, batch, hp):
    """Noise floor of a float32 trainer: the same steps with the weights rounded to float32 after
    each step and the update taken as a float32 difference; max over tensors of the rel L2 error."""
    b1, b2, lr, eps = hp["beta1"], hp["beta2"], hp["lr"], hp["eps"]
    W = {k: v.clone() for k, v in P.items()}
    mom = {k: torch.zeros_like(v) for k, v in P.items()}
    vel = {k: torch.zeros_like(v) for k, v in P.items()}
    for t in range(1, hp["adamw_steps"] + 1):
        g = loss_and_grads(c, W, batch, hp["z_loss"])[1]
        for k in W:
            mom[k] = b1 * mom[k] + (1 - b1) * g[k]
            vel[k] = b2 * vel[k] + (1 - b2) * g[k] * g[k]
            step = (lr / (1 - b1 ** t)) * mom[k] / (vel[k].sqrt() / math.sqrt(1 - b2 ** t) + eps)
            W[k] = (W[k] - lr * wd_of(k, hp) * W[k] - step).to(torch.float32).to(torch.float64)
    return {k: (W[k].float() - P[k].float()).double() for k in W}


def rel_l2(a, b):
    return ((a - b).norm() / b.norm()).item()

# ----------------------------------------------------------------------------
# self-checks


def check_yarn_table():
    """factor 2, L0 8, hd 8, theta 500000: corr_dim(32) = -0.98 -> low 0, corr_dim(1) = 0.074 -> high 1,
    so ramp = [0, 1, 1, 1]: pair 0 keeps theta^0 = 1, pairs 1..3 are divided by 2."""
    c = Cfg(D=32, H=4, KVH=2, theta=500000.0,
            yarn={"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 8})
    inv, m = rope_tables(c)
    expect = [1.0, 0.5 / 500000.0 ** 0.25, 0.5 / 500000.0 ** 0.5, 0.5 / 500000.0 ** 0.75]
    expect_num = [1.0, 0.018803015465431968, 0.00070710678118654752, 2.6591479484724942e-05]
    for a, b, n in zip(inv.tolist(), expect, expect_num):
        assert abs(a - b) <= 1e-15 * b and abs(a - n) <= 1e-12 * n, (inv, expect)
    assert abs(m - (1.0 + 0.1 * math.log(2.0))) < 1e-15 and abs(m - 1.0693147180559945) < 1e-15
    return inv, m


def check_llama3_table():
    """factor 4, low 1, high 4, L0 256, hd 8, theta 500000: wavelengths 2 pi theta^(i/4) = 6.28, 167.1, 4443,
    118105 against L0/high = 64 and L0/low = 256: pair 0 kept, pair 1 blended, pairs 2, 3 divided by 4."""
    c = Cfg(D=32, H=4, KVH=2, theta=500000.0,
            yarn={"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 256})
    inv, m = rope_tables(c)
    f1 = 500000.0 ** -0.25
    a = (256 * f1 / (2 * math.pi) - 1) / 3      # L0 / wavelength = L0 f / (2 pi)
    expect = [1.0, f1 / 4 + a * (f1 - f1 / 4), 500000.0 ** -0.5 / 4, 500000.0 ** -0.75 / 4]
    assert 0 < a < 1 and m == 1.0, (a, m)
    for x, y in zip(inv.tolist(), expect):
        assert abs(x - y) <= 1e-15 * y, (inv, expect)
    return inv, a


def check_rotation():
    """rotate() is multiplication of x[i] + i x[i+hd/2] by m e^{i p inv_freq[i]}, so a score between
    a rotated query and key depends on positions only through their difference (times m^2)."""
    g = torch.Generator().manual_seed(7)
    x, y = torch.randn(5, 8, generator=g, dtype=torch.float64), torch.randn(5, 8, generator=g, dtype=torch.float64)
    p, q = 20 * torch.randn(5, generator=g, dtype=torch.float64), 20 * torch.randn(5, generator=g, dtype=torch.float64)
    inv, m = torch.tensor([1.0, 0.3, 0.05, 0.002], dtype=torch.float64), 1.3
    rx = rotate(x[None, :, None], p[None, :, None], inv, m)[0, :, 0]
    cx = torch.complex(x[:, :4], x[:, 4:]) * m * torch.exp(1j * p[:, None] * inv)
    assert torch.allclose(rx, torch.cat([cx.real, cx.imag], -1), rtol=0, atol=1e-12)
    ry = rotate(y[None, :, None], q[None, :, None], inv, m)[0, :, 0]
    ry2 = rotate(y[None, :, None], (q - p)[None, :, None], inv, m)[0, :, 0]
    rel = rotate(x[None, :, None], torch.zeros(1, 5, 1, dtype=torch.float64), inv, m)[0, :, 0]
    assert torch.allclose((rx * ry).sum(-1), (rel * ry2).sum(-1), rtol=1e-12, atol=1e-12)


def check_fd(c, P, batch, z_loss, grads):
    """Central differences in float64 on the largest and one random element of several tensors."""
    picks = [n for n in P if any(s in n for s in (
        "embed_tokens", "lm_head", "layers.0.self_attn.q_proj", "q_norm", "k_norm", "gate_map",
        "content_map", "final_map", "layers.1.self_attn.k_proj", "v_proj", "o_proj",
        "input_layernorm", "post_feedforward", "layers.2.mlp.down", "model.norm"))]
    h, worst = 1e-6, 0.0
    for name in picks:
        g = grads[name].reshape(-1)
        for idx in (int(g.abs().argmax()), int(torch.randint(g.numel(), (1,)))):
            vals = []
            for sgn in (1.0, -1.0):
                Q = dict(P)
                Q[name] = P[name].clone()
                Q[name].view(-1)[idx] += sgn * h
                vals.append(forward(c, Q, *batch, z_loss)[0].item())
            fd = (vals[0] - vals[1]) / (2 * h)
            err = abs(fd - g[idx].item())
            assert err <= 1e-8 + 1e-6 * abs(g[idx].item()), (name, idx, fd, g[idx].item())
            worst = max(worst, err)
    return len(picks), worst


def check_tied(c, P, batch, z_loss, grads):
    """The tied embedding grad = (embedding use) + (head use), both non-trivial."""
    cu = Cfg(**{**c.__dict__, "tied": False})
    Pu = dict(P)
    Pu["lm_head.weight"] = P["model.embed_tokens.weight"].clone()
    lu, gu = loss_and_grads(cu, Pu, batch, z_loss)[:2]
    assert abs(lu.item() - loss_and_grads(c, P, batch, z_loss)[0].item()) < 1e-14
    both = gu["model.embed_tokens.weight"] + gu["lm_head.weight"]
    assert torch.allclose(grads["model.embed_tokens.weight"], both, rtol=1e-12, atol=1e-15)
    ne, nh = gu["model.embed_tokens.weight"].norm().item(), gu["lm_head.weight"].norm().item()
    assert ne > 0.05 * nh and nh > 0.05 * ne, (ne, nh)
    return ne, nh

# ----------------------------------------------------------------------------
# one fixture


def hf_config(c, dtype):
    repo_layers = [i for i, m in enumerate(c.positions) if m == "repo"]
    ids = ",".join(str(i) for i in repo_layers)
    cfg = {
        "architectures": ["Olmo2ForCausalLM" if c.arch == "olmo2" else "LlamaForCausalLM"],
        "model_type": c.arch, "vocab_size": c.V, "hidden_size": c.D,
        "intermediate_size": c.F, "num_hidden_layers": c.L, "num_attention_heads": c.H,
        "num_key_value_heads": c.KVH, "rms_norm_eps": c.eps, "rope_theta": c.theta,
        "rope_scaling": c.yarn, "tie_word_embeddings": c.tied,
        "max_position_embeddings": c.max_pos, "hidden_act": "silu", "attention_bias": False,
        "torch_dtype": dtype,
        "pe_config": {"dynamic_pe_mode": "swigluex_multihead",
                      "dynamic_pe_start_layer": repo_layers[0], "dynmaic_pe_start_layer": repo_layers[0],
                      "dynamic_pe_layer_ids": ids, "dynmaic_pe_layer_ids": ids},
    }
    if c.write_layer_positions:
        cfg["repoc_layer_positions"] = list(c.positions)
    return json.dumps(cfg, indent=2) + "\n"


def adamw_analysis(c, P, batch, hp, seed):
    """The AdamW steps, cross-checked by hand, and how well conditioned the updates are."""
    losses, upd = adamw_run(c, P, batch, hp)
    man = adamw_manual(c, P, batch, hp)
    for k in upd:
        assert rel_l2(man[k], upd[k]) < 1e-12, k
    g0 = loss_and_grads(c, P, batch, hp["z_loss"])[1]
    cond, gcond = {k: 0.0 for k in P}, {k: 0.0 for k in P}
    for draw in range(3):        # 1e-7 relative noise on every weight (float32 rounding level)
        gen = torch.Generator().manual_seed(seed + 1 + draw)
        Pp = {k: v * (1 + 1e-7 * torch.randn(v.shape, generator=gen, dtype=torch.float64))
              for k, v in P.items()}
        upd_p = adamw_run(c, Pp, batch, hp)[1]
        gp = loss_and_grads(c, Pp, batch, hp["z_loss"])[1]
        for k in P:
            cond[k] = max(cond[k], rel_l2(upd_p[k], upd[k]))
            gcond[k] = max(gcond[k], rel_l2(gp[k], g0[k]))
    decay = {k: (1 - hp["lr"] * wd_of(k, hp)) ** hp["adamw_steps"] - 1 for k in P}
    u32 = f32_storage_floor(c, P, batch, hp)
    st = {"cond": cond, "gcond": gcond,
          "upd_rel": {k: (upd[k].norm() / P[k].norm()).item() for k in P},
          "gshare": {k: ((upd[k] - decay[k] * P[k]).norm() / upd[k].norm()).item() for k in P},
          "floor": {k: rel_l2(u32[k], upd[k]) for k in P}}
    # the decayed tensors move by >= 1% of their norm, so float32 storage costs them <= 1e-5 of the update;
    # the exempt embedding moves only by its (sparse, small) gradient step: its floor is reported separately
    decayed = [k for k in P if k not in NO_DECAY]
    assert max(cond.values()) <= 5e-6 and max(st["floor"][k] for k in decayed) <= 1e-5, st
    assert min(st["upd_rel"][k] for k in decayed) >= 1e-2, st["upd_rel"]
    assert max(st["floor"][k] for k in P if k in NO_DECAY) <= 5e-5, st["floor"]
    return losses, upd, st


def write_checked(path, tensors, metadata=None):
    st_write(path, tensors, metadata)
    back, meta = st_read(path)
    assert sorted(back) == sorted(tensors), path
    for k, t in tensors.items():
        assert back[k].dtype == t.dtype and back[k].shape == t.shape, (path, k)
        assert torch.equal(back[k].view(torch.int16) if t.dtype == torch.bfloat16 else back[k],
                           t.view(torch.int16) if t.dtype == torch.bfloat16 else t), (path, k)
    assert meta == ({k: str(v) for k, v in metadata.items()} if metadata else {}), path
    return back


def make_fixture(c, hp, seed):
    torch.manual_seed(seed)
    d = os.path.join(OUT, c.name)
    P, batch = init_params(c), make_batch(c)
    tokens, targets = batch

    loss, grads, logits, zs, hidden = loss_and_grads(c, P, batch, hp["z_loss"])
    for i, z in zs.items():                                 # positions must matter
        spread = (z.max() - z.min()).item()
        assert spread >= 4.0 and z.std().item() >= 1.0, (c.name, i, spread)
    n_fd, fd_err = check_fd(c, P, batch, hp["z_loss"], grads)
    tied = check_tied(c, P, batch, hp["z_loss"], grads) if c.tied else None

    losses, upd, st = adamw_analysis(c, P, batch, hp, seed)
    assert abs(losses[0] - loss.item()) < 1e-13

    # checkpoints
    ck32 = {k: v.to(torch.float32) for k, v in P.items()}
    ck16 = {k: v.to(torch.bfloat16) for k, v in ck32.items()}
    for k in ck32:                                          # RNE agrees with an independent rounding
        assert np.array_equal(ck16[k].view(torch.int16).numpy().view(np.uint16), bf16_bits_rne(ck32[k]))
    for sub, tens, dt in (("ckpt", ck32, "float32"), ("ckpt_bf16", ck16, "bfloat16")):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
        with open(os.path.join(d, sub, "config.json"), "w") as f:
            f.write(hf_config(c, dt))
        back = write_checked(os.path.join(d, sub, "model.safetensors"), tens, {"format": "pt"})
    P16 = {}
    for k, t in back.items():                               # bf16 -> f32 is bits << 16
        bits = t.view(torch.int16).numpy().view(np.uint16).astype(np.uint32) << 16
        f32 = torch.from_numpy(bits.view(np.float32).copy())
        assert torch.equal(f32, t.to(torch.float32)), k
        P16[k] = f32.to(torch.float64)
    loss16 = forward(c, P16, *batch, hp["z_loss"])[0].item()

    inv, m = rope_tables(c)
    ref = {"tokens": tokens, "targets": targets, "loss": loss.reshape(1),
           "logits": logits.to(torch.float32), "loss_bf16": torch.tensor([loss16], dtype=torch.float64),
           "adamw_losses": torch.tensor(losses, dtype=torch.float64)}
    if doc_ids(c) is not None:
        ref["doc_ids"] = doc_ids(c)
    for i, z in zs.items():
        ref["z.%d" % i] = z.detach().to(torch.float32)
    for i, h in enumerate(hidden):
        ref["hidden.%d" % i] = h.detach().to(torch.float32)
    for k in P:
        ref["grad." + k] = grads[k].to(torch.float32)
        ref["update." + k] = upd[k].to(torch.float32)
    meta = {k: repr(v) for k, v in hp.items()}
    meta.update({"B": c.B, "T": c.T, "layer_positions": ",".join(c.positions), "arch": c.arch,
                 "seed": seed, "update_conditioning": "%.3e" % max(st["cond"].values()),
                 "grad_conditioning": "%.3e" % max(st["gcond"].values()),
                 "min_update_rel": "%.3e" % min(st["upd_rel"].values()),
                 "min_gradient_share": "%.3f" % min(st["gshare"].values()),
                 "f32_weight_rounding_error": "%.3e" % max(v for k, v in st["floor"].items() if k not in NO_DECAY),
                 "f32_weight_rounding_error_exempt": "%.3e" % max(v for k, v in st["floor"].items() if k in NO_DECAY),
                 "inv_freq": ",".join(repr(x) for x in inv.tolist()), "rope_scale_m": repr(m),
                 "n_valid": int((targets != -1).sum()), "ignore_index": -1,
                 "loss_def": "mean_valid(lse - logit[target]) + z_loss * mean_valid(lse^2)",
                 "adamw": "torch.optim.AdamW: w -= lr*wd*w; m,v EMA; "
                          "w -= (lr/(1-b1^t)) * m / (sqrt(v)/sqrt(1-b2^t) + eps); t = 1,2,3",
                 "decay_exempt": ",".join(NO_DECAY)})
    write_checked(os.path.join(d, "reference.safetensors"), ref, meta)

    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs)
    sizes = {os.path.relpath(f, ROOT): os.path.getsize(f) for f in files}
    print("== %s (%s, positions %s)" % (c.name, c.arch, ",".join(c.positions)))
    print("  loss %.12f  loss_bf16 %.12f  adamw_losses %s" % (loss.item(), loss16,
          " ".join("%.12f" % x for x in losses)))
    for i, z in zs.items():
        print("  z.%d: min %.3f max %.3f std %.3f" % (i, z.min(), z.max(), z.std()))
    gn = {k: g.abs().max().item() for k, g in grads.items()}
    print("  |grad| max over tensors: min %.2e  max %.2e" % (min(gn.values()), max(gn.values())))
    print("  finite differences: %d tensors, max abs err %.2e" % (n_fd, fd_err))
    if tied:
        print("  tied embedding grad norms: embedding use %.3e, head use %.3e" % tied)
    for key, label in (("upd_rel", "update/weight (rel L2), min"), ("gshare", "gradient share of update, min")):
        v = st[key]
        print("  %s %.3e (%s), max %.3e" % (label, min(v.values()), min(v, key=v.get), max(v.values())))
    for key, label in (("cond", "update_conditioning (max rel L2 change, 1e-7 weight noise, 3 draws)"),
                       ("gcond", "gradient conditioning (same noise)"),
                       ("floor", "float32 weight-storage floor of the update (max rel L2)")):
        v = st[key]
        print("  %s: %.3e (%s)" % (label, max(v.values()), max(v, key=v.get)))
    for f, s in sizes.items():
        print("  %8d  %s" % (s, f))
    return sum(sizes.values())


def fixtures():
    """(model config, AdamW/loss hyperparameters, seed) of each fixture."""
    olmo = Cfg(name="olmo2_mix", arch="olmo2", V=64, D=32, L=4, H=4, KVH=4, F=64, eps=1e-6,
               theta=10000.0, yarn=None, tied=False, max_pos=64, positions=["rope", "rope", "repo", "nope"],
               write_layer_positions=True, B=2, T=16, n_ignore=3, embed_std=1.0, head_std=0.2,
               gain=1.0, norm_noise=0.1, repo_in_std=0.12, repo_out_std=0.5)
    llama = Cfg(name="llama_gqa", arch="llama", V=64, D=32, L=3, H=4, KVH=2, F=48, eps=1e-5,
                theta=500000.0, tied=True, max_pos=16,
                yarn={"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 8},
                positions=["rope", "repo", "repo"], write_layer_positions=False, B=2, T=16, n_ignore=3,
                embed_std=0.3, head_std=None, gain=0.8, norm_noise=0.1, repo_in_std=0.4, repo_out_std=0.4)
    hp_olmo = {"lr": 6e-2, "beta1": 0.9, "beta2": 0.95, "eps": 2.0, "weight_decay": 0.1,
               "z_loss": 1e-4, "adamw_steps": 3}
    hp_llama = dict(hp_olmo, z_loss=0.0)
    # Llama-3.2-style RoPE (llama3, factor 4, L0 256: wavelengths 6.3 kept, 167 blended, 4443 and 1.2e5
    # divided) and three packed documents per row with document masking
    doc = Cfg(name="llama3_docs", arch="llama", V=64, D=32, L=3, H=4, KVH=2, F=48, eps=1e-5,
              theta=500000.0, tied=True, max_pos=1024,
              yarn={"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 256},
              positions=["rope", "repo", "rope"], write_layer_positions=False, B=2, T=16, n_ignore=3,
              docs=[[5, 7, 4], [3, 3, 10]],
              embed_std=0.3, head_std=None, gain=0.8, norm_noise=0.1, repo_in_std=0.4, repo_out_std=0.4)
    return [(olmo, hp_olmo, 1234), (llama, hp_llama, 5678), (doc, hp_llama, 4321)]


def main():
    check_rotation()
    inv, m = check_yarn_table()
    print("YaRN table (factor 2, L0 8, hd 8, theta 5e5): inv_freq %s, m %.16f" % (inv.tolist(), m))
    inv, a = check_llama3_table()
    print("llama3 table (factor 4, low 1, high 4, L0 256, hd 8, theta 5e5): inv_freq %s, blend a %.16f"
          % (inv.tolist(), a))
    total = sum(make_fixture(c, hp, seed) for c, hp, seed in fixtures())
    print("total fixture bytes: %d" % total)
    assert total < 2 * 1024 * 1024


if __name__ == "__main__":
    sys.exit(main())
