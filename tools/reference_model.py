#!/usr/bin/python3
"""tools/reference_model.py - the float64 PyTorch model and AdamW step behind tools/reference.py.

An independent implementation of the model of docs/design.md and docs/positions.md (block, positions),
docs/backward.md and docs/formats.md: OLMo-2, Llama, Qwen2 (q, k, v biases), Qwen3
(per-head q/k RMSNorm, explicit head_dim, attention_bias), Gemma-3 text (scaled
embedding, (1 + w) RMSNorms around both sublayers, sliding-window layers with their own
RoPE base, query_pre_attn_scalar, GELU-tanh) and Mistral (the Llama block with a sliding
window on every layer, transformers' MistralModel) blocks, the embedding's
padding_idx (pad_token_id, Qwen, Gemma), RoPE / RePo / NoPE
positions in the HF rotate_half layout, YaRN and llama3 rope_scaling, document
masking of packed rows, tied head, cross-entropy with ignore index -1, optional
z-loss, AdamW, and the small safetensors reader and writer the fixtures use.
It needs only torch and numpy. tools/reference.py checks it and writes the
fixtures from it; tools/torch_load_check.py loads checkpoints with it.
"""
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn.functional as Fn

torch.set_num_threads(1)                 # fixed reduction order: identical files on every run

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
        self.hd = getattr(self, "head_dim", None) or self.D // self.H
        self.dp = self.D // 8
        self.G = self.H // self.KVH


def rope_tables(c):
    """inv_freq[hd/2] and the cos/sin scale m (DESIGN section 2, HF semantics)."""
    half = c.hd // 2
    base = [c.theta ** (-2.0 * i / c.hd) for i in range(half)]
    if c.yarn is None:
        return torch.tensor(base, dtype=torch.float64), 1.0
    if c.yarn["rope_type"] == "linear":         # position interpolation: every frequency divided by the factor
        return torch.tensor([f / float(c.yarn["factor"]) for f in base], dtype=torch.float64), 1.0
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


def sliding(c, i):
    """Layer i attends within its sliding window: Gemma-3's layer_types[i] == "sliding_attention", every layer of
    a Mistral with a sliding_window (rotated by the global table, layer_rope_tables)."""
    if c.arch == "mistral":
        return bool(c.sliding_window)
    return c.arch == "gemma3" and c.layer_types[i] == "sliding_attention"


def layer_rope_tables(c):
    """(inv_freq, m) of each layer. Gemma-3's sliding layers rotate with rope_local_base_freq and no
    rope_scaling; its full layers, and every layer of the other blocks, with rope_theta and rope_scaling."""
    full = rope_tables(c)
    if c.arch != "gemma3":
        return [full] * c.L
    local = rope_tables(Cfg(**{**c.__dict__, "theta": c.local_theta, "yarn": None}))
    return [local if sliding(c, i) else full for i in range(c.L)]


def biases(c):
    """(q, k, v, o) carry biases: Qwen2 q, k, v always; Qwen3 all four with attention_bias."""
    qkv = c.arch == "qwen2" or (c.arch == "qwen3" and getattr(c, "attn_bias", False))
    return qkv, c.arch == "qwen3" and getattr(c, "attn_bias", False)


def param_shapes(c):
    D, hd, F = c.D, c.hd, c.F
    qkv_bias, o_bias = biases(c)
    S = {"model.embed_tokens.weight": (c.V, D)}
    for i in range(c.L):
        p = "model.layers.%d." % i
        for name, rows, cols, bias in (("q", c.H * hd, D, qkv_bias), ("k", c.KVH * hd, D, qkv_bias),
                                       ("v", c.KVH * hd, D, qkv_bias), ("o", D, c.H * hd, o_bias)):
            S[p + "self_attn.%s_proj.weight" % name] = (rows, cols)
            if bias:
                S[p + "self_attn.%s_proj.bias" % name] = (rows,)
        if c.arch == "olmo2":
            S[p + "self_attn.q_norm.weight"] = (c.H * hd,)
            S[p + "self_attn.k_norm.weight"] = (c.KVH * hd,)
        if c.arch in ("qwen3", "gemma3"):         # one [hd] weight shared by every head
            S[p + "self_attn.q_norm.weight"] = (hd,)
            S[p + "self_attn.k_norm.weight"] = (hd,)
        if c.positions[i] == "repo":
            S[p + "self_attn.gate_map.weight"] = (c.dp, D)
            S[p + "self_attn.content_map.weight"] = (c.dp, D)
            S[p + "self_attn.final_map.weight"] = (c.KVH, c.dp)
        if c.arch != "olmo2":
            S[p + "input_layernorm.weight"] = (D,)
        S[p + "post_attention_layernorm.weight"] = (D,)
        if c.arch == "gemma3":
            S[p + "pre_feedforward_layernorm.weight"] = (D,)
        if c.arch in ("olmo2", "gemma3"):
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
        if name.endswith("norm.weight"):         # Gemma stores the offset: its norms scale by 1 + w
            w = (0.0 if c.arch == "gemma3" else 1.0) + c.norm_noise * torch.randn(shape, dtype=torch.float64)
        elif name == "model.embed_tokens.weight":
            w = c.embed_std * torch.randn(shape, dtype=torch.float64)
        elif name == "lm_head.weight":
            w = c.head_std * torch.randn(shape, dtype=torch.float64)
        elif "gate_map" in name or "content_map" in name:
            w = c.repo_in_std * torch.randn(shape, dtype=torch.float64)
        elif "final_map" in name:
            w = c.repo_out_std * torch.randn(shape, dtype=torch.float64)
        elif name.endswith(".bias"):
            w = c.bias_std * torch.randn(shape, dtype=torch.float64)
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
    """tokens [B,T] and next-token targets [B,T] (int32), n_ignore targets set to -1; with c.pad, c.n_pad
    tokens set to the pad id (as padded rows would hold it)."""
    seq = torch.randint(0, c.V, (c.B, c.T + 1))
    if getattr(c, "pad", None) is not None:
        seq.view(-1)[torch.randperm(c.B * (c.T + 1))[:c.n_pad]] = c.pad
    tokens, targets = seq[:, :-1].to(torch.int32), seq[:, 1:].to(torch.int32).clone()
    targets.view(-1)[torch.randperm(c.B * c.T)[:c.n_ignore]] = -1
    return tokens, targets


def rmsnorm(x, w, eps):
    return w * (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps))


def norm(c, x, w):
    """The block's RMSNorm; Gemma's weight is an offset: x rsqrt(mean(x^2) + eps) (1 + w)."""
    return rmsnorm(x, 1.0 + w if c.arch == "gemma3" else w, c.eps)


def visible(T, window=None):
    """[T,T] bool: key j is visible to query i iff j <= i and, with a sliding window, i - window < j
    (the query sees the last `window` keys, itself included)."""
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    v = j <= i
    return v if window is None else v & (i - j < window)


def rotate(x, p, inv_freq, m):
    """x [B,T,n,hd], p [B,T,n] float64: pair i = (x[i], x[i+hd/2]), angle p*inv_freq[i]."""
    half = x.shape[-1] // 2
    ang = p[..., None] * inv_freq
    cs, sn = (m * torch.cos(ang)).to(x.dtype), (m * torch.sin(ang)).to(x.dtype)  # float32 weights: float32 math
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cs - x2 * sn, x2 * cs + x1 * sn], dim=-1)


def mlp(h, P, p, act=Fn.silu):
    g = h @ P[p + "mlp.gate_proj.weight"].T
    u = h @ P[p + "mlp.up_proj.weight"].T
    return (act(g) * u) @ P[p + "mlp.down_proj.weight"].T


def gelu_tanh(x):
    """hidden_activation "gelu_pytorch_tanh" (Gemma)."""
    return Fn.gelu(x, approximate="tanh")


def proj(x, P, name):
    """x W^T, plus the bias when the checkpoint has one."""
    y = x @ P[name + ".weight"].T
    return y + P[name + ".bias"] if name + ".bias" in P else y


def attention(c, h, P, p, i, inv_freq, m, zs):
    B, T, _ = h.shape
    H, KVH, hd = c.H, c.KVH, c.hd
    q = proj(h, P, p + "self_attn.q_proj")
    k = proj(h, P, p + "self_attn.k_proj")
    v = proj(h, P, p + "self_attn.v_proj")
    if c.arch == "olmo2":                        # QK-norm over the whole H*hd / KVH*hd vector
        q = rmsnorm(q, P[p + "self_attn.q_norm.weight"], c.eps)
        k = rmsnorm(k, P[p + "self_attn.k_norm.weight"], c.eps)
    q, k, v = q.view(B, T, H, hd), k.view(B, T, KVH, hd), v.view(B, T, KVH, hd)
    if c.arch in ("qwen3", "gemma3"):            # QK-norm per head, over its hd features, before the rotation
        q = norm(c, q, P[p + "self_attn.q_norm.weight"])
        k = norm(c, k, P[p + "self_attn.k_norm.weight"])
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
    if c.arch == "gemma3":                       # Gemma: 1/sqrt(query_pre_attn_scalar), not 1/sqrt(hd)
        s = torch.einsum("bthd,bshd->bhts", q, k) * c.query_pre_attn_scalar ** -0.5
    else:
        s = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(hd)
    causal = visible(T, c.sliding_window if sliding(c, i) else None)[None] & same_doc
    s = s.masked_fill(~causal[:, None], float("-inf"))
    a = torch.einsum("bhts,bshd->bthd", torch.softmax(s, dim=-1), v).reshape(B, T, H * hd)
    return proj(a, P, p + "self_attn.o_proj")


def forward(c, P, tokens, targets, z_loss):
    """Returns loss (0-dim), logits [B,T,V], {layer: z [B,T,KVH]}, block inputs list."""
    tables = layer_rope_tables(c)
    # nn.Embedding(padding_idx=pad_token_id), as transformers' Qwen2/Qwen3/Gemma3 build it: no gradient into that row
    x = Fn.embedding(tokens.long(), P["model.embed_tokens.weight"], padding_idx=getattr(c, "pad", None))
    if c.arch == "gemma3":                       # Gemma3TextScaledWordEmbedding: times sqrt(hidden_size)
        x = x * math.sqrt(c.D)
    zs, hidden = {}, []
    for i in range(c.L):
        hidden.append(x)
        p = "model.layers.%d." % i
        inv_freq, m = tables[i]
        if c.arch == "gemma3":                   # sandwich norms: each sublayer's output is normed before the add
            o = attention(c, norm(c, x, P[p + "input_layernorm.weight"]), P, p, i, inv_freq, m, zs)
            x = x + norm(c, o, P[p + "post_attention_layernorm.weight"])
            f = mlp(norm(c, x, P[p + "pre_feedforward_layernorm.weight"]), P, p, gelu_tanh)
            x = x + norm(c, f, P[p + "post_feedforward_layernorm.weight"])
        elif c.arch == "olmo2":
            o = attention(c, x, P, p, i, inv_freq, m, zs)
            x = x + rmsnorm(o, P[p + "post_attention_layernorm.weight"], c.eps)
            x = x + rmsnorm(mlp(x, P, p), P[p + "post_feedforward_layernorm.weight"], c.eps)
        else:
            h = rmsnorm(x, P[p + "input_layernorm.weight"], c.eps)
            x = x + attention(c, h, P, p, i, inv_freq, m, zs)
            x = x + mlp(rmsnorm(x, P[p + "post_attention_layernorm.weight"], c.eps), P, p)
    hidden.append(x)
    xf = norm(c, x, P["model.norm.weight"])
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
# Biases (Qwen) are exempt too, as transformers' Trainer groups them (repoc's optim.decay_biases false).
NO_DECAY = ("model.embed_tokens.weight",)


def exempt(k):
    return k in NO_DECAY or k.endswith(".bias")


def wd_of(k, hp):
    return 0.0 if exempt(k) else hp["weight_decay"]


def adamw_run(c, P, batch, hp):
    Q = {k: v.clone().requires_grad_(True) for k, v in P.items()}
    names = list(Q)
    groups = [{"params": [Q[k] for k in names if not exempt(k)], "weight_decay": hp["weight_decay"]},
              {"params": [Q[k] for k in names if exempt(k)], "weight_decay": 0.0}]
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
