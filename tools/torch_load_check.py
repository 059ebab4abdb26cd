"""Check that PyTorch reads what repoc writes: load a checkpoint directory saved
by repoc (build/tools/resave) with this script's own safetensors reader into the
float64 reference model of tools/reference.py, and compare the loss on the
fixture batch with the fixture's PyTorch loss (F32: equal to float64 rounding;
BF16: equal to the fixture's loss_bf16).

    build/tools/resave tests/fixtures/olmo2_mix/ckpt /tmp/o32 f32
    build/tools/resave tests/fixtures/olmo2_mix/ckpt /tmp/o16 bf16
    /usr/bin/python3 tools/torch_load_check.py olmo2_mix /tmp/o32 /tmp/o16
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import reference as ref  # noqa: E402


def main():
    name, f32_dir, bf16_dir = sys.argv[1:4]
    cfg = {c.name: c for c, _, _ in ref.fixtures()}[name]
    hp = {c.name: h for c, h, _ in ref.fixtures()}[name]
    fixture = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", name)
    R, _ = ref.st_read(os.path.join(fixture, "reference.safetensors"))
    batch = (R["tokens"], R["targets"])
    for d, key, tol in ((f32_dir, "loss", 1e-12), (bf16_dir, "loss_bf16", 1e-12)):
        with open(os.path.join(d, "config.json")) as f:
            json.load(f)  # well-formed
        W, meta = ref.st_read(os.path.join(d, "model.safetensors"))
        P = {k: v.to(torch.float64) for k, v in W.items()}
        loss = ref.forward(cfg, P, *batch, hp["z_loss"])[0].item()
        want = R[key].item()
        ok = abs(loss - want) <= tol * abs(want)
        print("%-7s %s: PyTorch loss from repoc's file %.15f, fixture %s %.15f  %s"
              % ("OK" if ok else "NOT OK", d, loss, key, want, meta))
        if not ok:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
