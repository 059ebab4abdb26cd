#!/usr/bin/python3
"""tools/reference.py - float64 PyTorch reference for repoc's model and AdamW step.

The model itself is tools/reference_model.py (docs/design.md, docs/backward.md,
docs/formats.md). This script checks it (the YaRN, llama3 and linear tables, the
rotation, Gemma's RMSNorm, GELU-tanh and sliding-window mask, finite differences,
the tied head) and writes the committed fixtures
under tests/fixtures/ (see tests/fixtures/README.md). It needs only torch and
numpy.

Run from the repository root:  /usr/bin/python3 tools/reference.py [fixture name ...]
"""
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_model import (  # noqa: E402
    Cfg, adamw_manual, adamw_run, bf16_bits_rne, doc_ids, f32_storage_floor, forward, gelu_tanh,
    exempt, init_params, layer_rope_tables, loss_and_grads, make_batch, mlp, norm, rel_l2, rope_tables, rotate,
    sliding, st_read, st_write, visible, wd_of,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures")

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


def check_linear_table():
    """linear factor 2, hd 16, theta 1e6: inv_freq[i] = 1e6^(-i/8) / 2 (10^(-3i/4) / 2), m = 1."""
    c = Cfg(D=32, H=4, KVH=2, head_dim=16, theta=1000000.0, yarn={"rope_type": "linear", "factor": 2.0})
    inv, m = rope_tables(c)
    expect = [0.5 * 10.0 ** (-0.75 * i) for i in range(8)]
    assert inv.shape == (8,) and m == 1.0 and inv[0].item() == 0.5 and abs(inv[4].item() - 5e-4) < 1e-19
    for x, y in zip(inv.tolist(), expect):
        assert abs(x - y) <= 2e-16 * y, (inv, expect)
    return inv


def check_gemma_norm():
    """Gemma's RMSNorm scales by 1 + w: w = 0 is the plain normalisation x / sqrt(mean(x^2) + eps), and
    weight w there is weight 1 + w of the other blocks' RMSNorm."""
    g = torch.Generator().manual_seed(11)
    x = 3 * torch.randn(6, 16, generator=g, dtype=torch.float64)
    w = 0.1 * torch.randn(16, generator=g, dtype=torch.float64)
    gem, qwen = Cfg(D=16, H=1, KVH=1, arch="gemma3", eps=1e-6), Cfg(D=16, H=1, KVH=1, arch="qwen3", eps=1e-6)
    plain = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6)
    y0 = norm(gem, x, torch.zeros(16, dtype=torch.float64))
    assert torch.allclose(y0, plain, rtol=1e-14, atol=0) and ((y0 * y0).mean(-1) - 1).abs().max() < 1e-6
    assert torch.allclose(norm(gem, x, w), plain * (1 + w), rtol=1e-14, atol=0)
    assert torch.equal(norm(gem, x, w), norm(qwen, x, 1 + w))


def check_gelu_tanh():
    """gelu_pytorch_tanh = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), not the erf GELU."""
    x = torch.linspace(-6, 6, 241, dtype=torch.float64)
    formula = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    assert torch.allclose(gelu_tanh(x), formula, rtol=1e-14, atol=1e-15)
    assert (gelu_tanh(x) - torch.nn.functional.gelu(x)).abs().max() > 1e-4


def check_sliding_mask(T=16, W=5):
    """Query i sees keys i - W < j <= i: min(i + 1, W) of them, the last W including itself; a window >= T is
    the causal mask; and the mask is causal minus tril(diagonal = -W), the older transformers construction."""
    v = visible(T, W)
    for i in range(T):
        assert torch.nonzero(v[i])[:, 0].tolist() == list(range(max(0, i - W + 1), i + 1)), (i, v[i])
    assert v.sum().item() == sum(min(i + 1, W) for i in range(T))
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    assert torch.equal(visible(T), causal) and torch.equal(visible(T, T), causal)
    assert torch.equal(visible(T, T + 7), causal) and not torch.equal(visible(T, T - 1), causal)
    assert torch.equal(v, causal & ~torch.ones(T, T, dtype=torch.bool).tril(diagonal=-W))
    assert torch.equal(visible(T, 1), torch.eye(T, dtype=torch.bool))


def check_gemma(c, P, batch, z_loss, loss, hidden):
    """The fixture's Gemma pieces matter: the embedding is scaled by sqrt(D); the pad token's lookup adds
    nothing to its row (untied copy: exactly 0); the window hides keys (window T changes the loss), and so
    do the scale (query_pre_attn_scalar = hd) and the norm offsets (all w = 0)."""
    tokens = batch[0]
    E = P["model.embed_tokens.weight"]
    assert torch.equal(hidden[0], E[tokens.long()] * math.sqrt(c.D))
    n_pad = int((tokens == c.pad).sum())
    cu = Cfg(**{**c.__dict__, "tied": False})
    gu = loss_and_grads(cu, {**P, "lm_head.weight": E.clone()}, batch, z_loss)[1]
    assert n_pad >= 3 and torch.count_nonzero(gu["model.embed_tokens.weight"][c.pad]) == 0, n_pad
    moved, P0 = {}, {k: (0 * v if k.endswith("norm.weight") else v) for k, v in P.items()}
    for label, kw, Q in (("sliding_window T", {"sliding_window": c.T}, P),
                         ("query_pre_attn_scalar hd", {"query_pre_attn_scalar": c.hd}, P),
                         ("norm weights 0", {}, P0)):
        other = forward(Cfg(**{**c.__dict__, **kw}), Q, *batch, z_loss)[0].item()
        moved[label] = abs(other - loss.item())
        assert moved[label] > 1e-3, (label, other, loss.item())
    norms = torch.cat([v for k, v in P.items() if k.endswith("norm.weight")])
    assert norms.abs().min() > 0 and 0.05 < norms.std().item() < 0.2
    return n_pad, moved


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
    gemma = ("pre_feedforward", "post_attention", "layers.2.self_attn.q_proj", "layers.3.mlp.up") \
        if c.arch == "gemma3" else ()
    picks = [n for n in P if any(s in n for s in (
        "embed_tokens", "lm_head", "layers.0.self_attn.q_proj", "q_norm", "k_norm", "gate_map",
        "content_map", "final_map", "layers.1.self_attn.k_proj", "v_proj", "o_proj",
        "input_layernorm", "post_feedforward", "layers.2.mlp.down", "model.norm", "bias") + gemma)]
    h, worst = 1e-6, 0.0
    for name in picks:
        g = grads[name].reshape(-1)
        for idx in (int(g.abs().argmax()), int(torch.randint(g.numel(), (1,)))):
            if name == "model.embed_tokens.weight" and idx // c.D == getattr(c, "pad", None):
                continue                          # padding_idx: autograd leaves out the lookup's share
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


ARCHS = {"olmo2": "Olmo2ForCausalLM", "llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
         "qwen3": "Qwen3ForCausalLM", "gemma3": "Gemma3ForCausalLM", "mistral": "MistralForCausalLM"}


def pe_config(c):
    repo_layers = [i for i, m in enumerate(c.positions) if m == "repo"]
    if not repo_layers:                         # nothing to describe (mistral_sw: no RePo layer)
        return None
    ids = ",".join(str(i) for i in repo_layers)
    return {"dynamic_pe_mode": "swigluex_multihead",
            "dynamic_pe_start_layer": repo_layers[0], "dynmaic_pe_start_layer": repo_layers[0],
            "dynamic_pe_layer_ids": ids, "dynmaic_pe_layer_ids": ids}


def hf_config_gemma3(c, dtype):
    """A Gemma3TextConfig config.json (transformers 4.5x keys: layer_types, rope_local_base_freq)."""
    cfg = {
        "architectures": [ARCHS[c.arch]],
        "model_type": "gemma3_text", "vocab_size": c.V, "hidden_size": c.D,
        "intermediate_size": c.F, "num_hidden_layers": c.L, "num_attention_heads": c.H,
        "num_key_value_heads": c.KVH, "head_dim": c.hd, "query_pre_attn_scalar": c.query_pre_attn_scalar,
        "sliding_window": c.sliding_window, "layer_types": list(c.layer_types), "rope_theta": c.theta,
        "rope_local_base_freq": c.local_theta, "rope_scaling": c.yarn, "rms_norm_eps": c.eps,
        "hidden_activation": "gelu_pytorch_tanh", "attn_logit_softcapping": None, "final_logit_softcapping": None,
        "attention_bias": False, "tie_word_embeddings": c.tied, "pad_token_id": c.pad, "bos_token_id": 2,
        "eos_token_id": 1, "max_position_embeddings": c.max_pos, "torch_dtype": dtype, "pe_config": pe_config(c),
    }
    if c.write_layer_positions:
        cfg["repoc_layer_positions"] = list(c.positions)
    return json.dumps(cfg, indent=2) + "\n"


def hf_config(c, dtype):
    if c.arch == "gemma3":
        return hf_config_gemma3(c, dtype)
    cfg = {
        "architectures": [ARCHS[c.arch]],
        "model_type": c.arch, "vocab_size": c.V, "hidden_size": c.D,
        "intermediate_size": c.F, "num_hidden_layers": c.L, "num_attention_heads": c.H,
        "num_key_value_heads": c.KVH, "rms_norm_eps": c.eps, "rope_theta": c.theta,
        "rope_scaling": c.yarn, "tie_word_embeddings": c.tied,
        "max_position_embeddings": c.max_pos, "hidden_act": "silu", "attention_bias": False,
        "torch_dtype": dtype,
        "pe_config": pe_config(c),
    }
    if c.arch == "mistral":                     # MistralConfig keys: the window, no attention_bias; no RePo layer
        del cfg["attention_bias"], cfg["pe_config"]
        cfg["sliding_window"] = c.sliding_window
    if c.arch.startswith("qwen"):               # Qwen2Config / Qwen3Config keys
        del cfg["attention_bias"]
        cfg.update({"use_sliding_window": False, "sliding_window": None, "max_window_layers": c.L,
                    "pad_token_id": getattr(c, "pad", None)})
        if c.arch == "qwen3":
            cfg.update({"head_dim": c.hd, "attention_bias": c.attn_bias})
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
    decayed = [k for k in P if not exempt(k)]
    assert max(cond.values()) <= 5e-6 and max(st["floor"][k] for k in decayed) <= 1e-5, st
    assert min(st["upd_rel"][k] for k in decayed) >= 1e-2, st["upd_rel"]
    assert max(st["floor"][k] for k in P if exempt(k)) <= 5e-5, st["floor"]
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
    for i, mode in enumerate(c.positions):                  # RePo on layers without a window only
        assert not sliding(c, i) or mode != "repo", (c.name, i, mode)
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
    gemma = check_gemma(c, P, batch, hp["z_loss"], loss, hidden) if c.arch == "gemma3" else None
    if c.arch == "mistral":                                 # the window matters: seeing every key moves the loss
        unwindowed = forward(Cfg(**{**c.__dict__, "sliding_window": None}), P, *batch, hp["z_loss"])[0].item()
        assert abs(unwindowed - loss.item()) > 1e-3, (unwindowed, loss.item())
        print("  without the window the loss would be %.6f" % unwindowed)

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
                 "f32_weight_rounding_error": "%.3e" % max(v for k, v in st["floor"].items() if not exempt(k)),
                 "f32_weight_rounding_error_exempt": "%.3e" % max(v for k, v in st["floor"].items() if exempt(k)),
                 "inv_freq": ",".join(repr(x) for x in inv.tolist()), "rope_scale_m": repr(m),
                 "n_valid": int((targets != -1).sum()), "ignore_index": -1,
                 "loss_def": "mean_valid(lse - logit[target]) + z_loss * mean_valid(lse^2)",
                 "adamw": "torch.optim.AdamW: w -= lr*wd*w; m,v EMA; "
                          "w -= (lr/(1-b1^t)) * m / (sqrt(v)/sqrt(1-b2^t) + eps); t = 1,2,3",
                 "decay_exempt": ",".join(k for k in P if exempt(k))})
    if c.arch == "mistral":                                 # inv_freq above is every layer's table
        meta.update({"sliding_window": c.sliding_window})
    if c.arch == "gemma3":                                  # inv_freq above is the full layers' table
        meta.update({"layer_types": ",".join(c.layer_types), "sliding_window": c.sliding_window,
                     "inv_freq_sliding": ",".join(repr(x) for x in layer_rope_tables(c)[
                         c.layer_types.index("sliding_attention")][0].tolist()),
                     "query_pre_attn_scalar": c.query_pre_attn_scalar, "embed_scale": repr(math.sqrt(c.D)),
                     "pad_token_id": c.pad})
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
    if gemma:
        print("  pad token %d appears %d times; loss moves with %s" % (c.pad, gemma[0], ", ".join(
            "%s by %.3e" % kv for kv in gemma[1].items())))
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
    # Qwen2: q, k, v biases, tied; pad_token_id 3 (padding_idx) appears 5 times among the tokens
    qwen2 = Cfg(name="qwen2_pad", arch="qwen2", V=64, D=32, L=2, H=4, KVH=2, F=32, eps=1e-6,
                theta=1000000.0, yarn=None, tied=True, max_pos=64, positions=["rope", "repo"],
                write_layer_positions=False, B=2, T=16, n_ignore=3, pad=3, n_pad=5,
                embed_std=0.3, head_std=None, gain=0.8, norm_noise=0.1, repo_in_std=0.4, repo_out_std=0.4,
                bias_std=0.1)
    # Qwen3: per-head QK-norm, head_dim 12 (not D/H = 8), attention_bias, untied; pad_token_id 7 appears 4 times
    qwen3 = Cfg(name="qwen3_hd", arch="qwen3", V=48, D=32, L=2, H=4, KVH=2, head_dim=12, attn_bias=True, F=32,
                eps=1e-6, theta=1000000.0, yarn=None, tied=False, max_pos=64, positions=["repo", "rope"],
                write_layer_positions=False, B=2, T=16, n_ignore=3, pad=7, n_pad=4,
                embed_std=0.8, head_std=0.2, gain=0.5, norm_noise=0.1, repo_in_std=0.4, repo_out_std=0.4,
                bias_std=0.1)
    # Gemma-3 text: scaled embedding, (1 + w) sandwich norms, GELU-tanh, per-head QK-norm, head_dim 16 and
    # query_pre_attn_scalar 10 (neither D/H nor hd), sliding window 5 < T on layers 0 and 2 (rope base 1e4),
    # full layers 1 and 3 (rope base 1e6, linear factor 2), layer 3 RePo; tied; pad_token_id 0 appears 5 times
    gemma = Cfg(name="gemma3_sw", arch="gemma3", V=48, D=32, L=4, H=4, KVH=2, head_dim=16, F=48, eps=1e-6,
                query_pre_attn_scalar=10, sliding_window=5,
                layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
                theta=1000000.0, local_theta=10000.0, yarn={"rope_type": "linear", "factor": 2.0}, tied=True,
                max_pos=64, positions=["rope", "rope", "rope", "repo"], write_layer_positions=False, B=2, T=16,
                n_ignore=3, pad=0, n_pad=5, embed_std=0.3, head_std=None, gain=0.8, norm_noise=0.1,
                repo_in_std=0.4, repo_out_std=0.4)
    # Mistral: Llama's block with a sliding window of 5 < T on every layer, rotated by rope_theta's table (rope,
    # nope, rope: RePo is for layers without a window), GQA, untied; rope_theta 1e6 (Mistral-7B-v0.2's), not the
    # 1e4 of the unused local table
    mistral = Cfg(name="mistral_sw", arch="mistral", V=48, D=32, L=3, H=4, KVH=2, F=32, eps=1e-5, theta=1000000.0,
                  yarn=None, tied=False, max_pos=64, sliding_window=5, positions=["rope", "nope", "rope"],
                  write_layer_positions=True, B=2, T=16, n_ignore=3, embed_std=0.8, head_std=0.2, gain=0.8,
                  norm_noise=0.1, repo_in_std=0.4, repo_out_std=0.4)
    return [(olmo, hp_olmo, 1234), (llama, hp_llama, 5678), (doc, hp_llama, 4321), (qwen2, hp_llama, 12),
            (qwen3, hp_olmo, 1357), (gemma, hp_olmo, 2718), (mistral, hp_olmo, 3141)]


def main():
    check_rotation()
    inv, m = check_yarn_table()
    print("YaRN table (factor 2, L0 8, hd 8, theta 5e5): inv_freq %s, m %.16f" % (inv.tolist(), m))
    inv, a = check_llama3_table()
    print("llama3 table (factor 4, low 1, high 4, L0 256, hd 8, theta 5e5): inv_freq %s, blend a %.16f"
          % (inv.tolist(), a))
    print("linear table (factor 2, hd 16, theta 1e6): inv_freq %s" % check_linear_table().tolist())
    check_gemma_norm()
    check_gelu_tanh()
    check_sliding_mask()
    print("Gemma RMSNorm (1 + w), GELU-tanh and the sliding-window mask (T 16, window 5) checked")
    only = sys.argv[1:]                                     # fixture names to write (default: all)
    total = sum(make_fixture(c, hp, seed) for c, hp, seed in fixtures() if not only or c.name in only)
    print("total fixture bytes: %d" % total)
    assert total < 3 * 1024 * 1024


if __name__ == "__main__":
    sys.exit(main())
