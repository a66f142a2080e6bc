#!/usr/bin/python3
"""lora_ref.py — a float64 PyTorch reference of `qwenchat train --lora --sequential`.

Written from the rules of `qwenchat train --lora` and from PEFT's LoRA (peft's
tuners/lora/layer.py) on the Hugging Face Qwen3 model, not from qwenchat's code:
train_ref.py's float64 Qwen3 forward with each targeted linear computing
y = x W^T + (alpha / r) (x A^T) B^T (A: (r, in), B: (out, r), PEFT's lora_A and
lora_B), every other tensor (embedding, norms, lm_head, untargeted linears) the
base's and frozen; the mean cross-entropy over every target of a step's
micro-batches in train_ref.py's sequential windows; gradients by autograd over the
adapters only, torch.nn.utils.clip_grad_norm_ over them and torch.optim.AdamW in
float64 with weight decay on all of them (they are 2-D), at train_ref.py's schedule.
The merged model is W + (alpha / r) B A for each targeted W, the base elsewhere.

  lora_ref.py run --init RUN0 [--base MODEL] --data FILE.u32 [options] --out REF.safetensors
      trains from RUN0's config.json, model.safetensors and train-state/ (PEFT's
      adapter_config.json and adapter_model.safetensors, written by --steps 0);
      the frozen weights are MODEL's model.safetensors where RUN0's adapters do not
      start at B = 0 (RUN0's model is merged then);
      prints one JSON object per step (step, loss, grad_norm, lr) and writes the
      final adapter tensors (F64) under PEFT's names.
  lora_ref.py compare --log LOG --ref-log REF.jsonl --init RUN0 [--base MODEL]
                      --ref REF.safetensors --run RUN [--loss-rtol 1e-5] [--weight-tol 2e-3]
      checks qwenchat's train-log.jsonl against the reference's steps (loss and
      grad_norm within loss-rtol relative, lr to 1e-12); every tensor of
      RUN/train-state/adapter_model.safetensors against the reference's
      (||w - w_ref|| / ||w_ref - w_0|| < weight-tol); RUN/model.safetensors, merged:
      each targeted weight against W_0 + (alpha / r) B_ref A_ref (F32: the same
      relative rule; BF16: each element within one bf16 ulp of it), every other
      tensor the base's (F32: bit for bit; BF16: the base rounded to bf16); and
      RUN/train-state/adapter_config.json against RUN0's. Exit 1 on a mismatch.

Exit 77 when torch or numpy is missing (the test is skipped).
"""
import argparse
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
    import train_ref
    from train_ref import Qwen3, read_safetensors
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e} (Debian: python3-torch, python3-numpy)", file=sys.stderr)
    sys.exit(77)

BLOCK = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn",
         "o_proj": "self_attn", "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}


def adapter_name(weight, ab):
    """PEFT's name of the lora_A or lora_B of the base weight `weight`."""
    return f"base_model.model.{weight[:-len('.weight')]}.lora_{ab}.weight"


def modules(ac):
    m = ac["target_modules"]
    return [m] if isinstance(m, str) else m


def adapter_config(run):
    """run's adapter_config.json and the base weights it targets."""
    ac = json.load(open(f"{run}/train-state/adapter_config.json"))
    cfg = json.load(open(f"{run}/config.json"))
    mods = modules(ac)
    if ac.get("use_rslora") or ac.get("use_dora") or set(mods) - set(BLOCK):
        raise SystemExit(f"lora_ref.py: unsupported adapter_config.json: {ac}")
    targets = [f"model.layers.{l}.{BLOCK[m]}.{m}.weight"
               for l in range(cfg["num_hidden_layers"]) for m in mods]
    return ac, targets


class LoraQwen3(Qwen3):
    """train_ref.Qwen3 with LoRA in the targeted linears: lora[W's name] = (A, B)."""

    def __init__(self, cfg, p, lora, scale):
        super().__init__(cfg, p)
        self.lora, self.scale = lora, scale

    def linear(self, x, name):
        y = x @ self.p[name].T
        if name in self.lora:
            a, b = self.lora[name]
            y = y + self.scale * ((x @ a.T) @ b.T)
        return y

    def loss_sum(self, ids, targets):
        """train_ref.Qwen3.loss_sum (rows at positions 0 .. T-1) through self.linear."""
        p, B, T = self.p, ids.shape[0], ids.shape[1]
        x = p["model.embed_tokens.weight"][ids]
        pos = torch.arange(T).expand(B, T)
        mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
        for l in range(self.L):
            pre = f"model.layers.{l}."
            h = self.norm(x, p[pre + "input_layernorm.weight"])
            q = self.linear(h, pre + "self_attn.q_proj.weight").view(B, T, self.H, self.hd)
            k = self.linear(h, pre + "self_attn.k_proj.weight").view(B, T, self.KV, self.hd)
            v = self.linear(h, pre + "self_attn.v_proj.weight").view(B, T, self.KV, self.hd)
            q = self.norm(q, p[pre + "self_attn.q_norm.weight"]).transpose(1, 2)
            k = self.norm(k, p[pre + "self_attn.k_norm.weight"]).transpose(1, 2)
            q, k, v = self.rope(q, pos), self.rope(k, pos), v.transpose(1, 2)
            g = self.H // self.KV
            k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
            a = torch.softmax(q @ k.transpose(-1, -2) * self.hd ** -0.5 + mask, -1) @ v
            a = a.transpose(1, 2).reshape(B, T, self.H * self.hd)
            x = x + self.linear(a, pre + "self_attn.o_proj.weight")
            h = self.norm(x, p[pre + "post_attention_layernorm.weight"])
            m = torch.nn.functional.silu(self.linear(h, pre + "mlp.gate_proj.weight")) * \
                self.linear(h, pre + "mlp.up_proj.weight")
            x = x + self.linear(m, pre + "mlp.down_proj.weight")
        x = self.norm(x, p["model.norm.weight"])
        head = p.get("lm_head.weight", p["model.embed_tokens.weight"])
        return torch.nn.functional.cross_entropy(
            (x @ head.T).reshape(B * T, -1), targets.reshape(-1), reduction="sum")


def load(init, base_dir):
    """(model, adapters) of the run directory init on base_dir's weights: adapters maps
    PEFT's names to the trainable float64 tensors, the base's are frozen."""
    cfg, w0 = train_ref.model_weights(base_dir)
    ac, targets = adapter_config(init)
    ad = read_safetensors(f"{init}/train-state/adapter_model.safetensors")
    if set(ad) != {adapter_name(t, ab) for t in targets for ab in "AB"}:
        raise SystemExit(f"lora_ref.py: {init}/adapter holds other tensors than its config's")
    adapters = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in ad.items()}
    lora = {t: (adapters[adapter_name(t, "A")], adapters[adapter_name(t, "B")]) for t in targets}
    for t, (a, b) in lora.items():  # PEFT's shapes: A (r, in), B (out, r)
        assert a.shape == (ac["r"], w0[t].shape[1]) and b.shape == (w0[t].shape[0], ac["r"]), t
    base = {k: torch.tensor(v, dtype=torch.float64) for k, v in w0.items()}
    return LoraQwen3(cfg, base, lora, ac["lora_alpha"] / ac["r"]), adapters


def run(o):
    stream = np.fromfile(o.data, dtype="<u4").astype(np.int64)
    model, adapters = load(o.init, o.base or o.init)
    # train_ref's steps over the adapters alone: all 2-D, so all decayed
    train_ref.steps(o, model, adapters,
                    lambda s, a: train_ref.sequential(stream, s, o.accum, a, o.batch, o.ctx))


def dtypes(path):
    with open(path, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    return {k: e["dtype"] for k, e in header.items() if k != "__metadata__"}


def bf16(a):
    """float64 array of F32 values rounded to bf16 (to nearest, ties to even)."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def report(what, ok):
    print(f"{what}{'' if ok else '  <-- FAIL'}")
    return not ok


def relative(w, w_ref, w_0):
    upd, dev = np.linalg.norm(w_ref - w_0), np.linalg.norm(w - w_ref)
    return dev / upd if upd > 0 else (0.0 if dev == 0 else math.inf)


def compare(o):
    ours = [r for r in (json.loads(l) for l in open(o.log) if l.strip()) if "loss" in r]
    ref = [json.loads(l) for l in open(o.ref_log) if l.strip()]
    if len(ours) != len(ref):
        print(f"train-log has {len(ours)} steps, the reference {len(ref)}  <-- FAIL")
        return 1
    bad = 0
    for a, b in zip(ours, ref):
        for key, tol in (("loss", o.loss_rtol), ("grad_norm", o.loss_rtol), ("lr", 1e-12)):
            err = abs(a[key] - b[key]) / max(abs(b[key]), 1e-30)
            bad += report(f"step {b['step']} {key}: {a[key]:.10g} vs {b[key]:.10g} "
                          f"(rel {err:.2e})", err <= tol or a[key] == b[key] == 0)
    ac0, targets = adapter_config(o.init)
    ac = json.load(open(f"{o.run}/train-state/adapter_config.json"))
    mods = set(modules(ac)) if "target_modules" in ac else None
    for key, ok in (("peft_type", ac.get("peft_type") == "LORA"), ("r", ac.get("r") == ac0["r"]),
                    ("lora_alpha", ac.get("lora_alpha") == ac0["lora_alpha"]),
                    ("target_modules", mods == set(modules(ac0)))):
        bad += report(f"adapter_config.json {key}: {ac.get(key)!r}", ok)
    a0 = read_safetensors(f"{o.init}/train-state/adapter_model.safetensors")
    aq = read_safetensors(f"{o.run}/train-state/adapter_model.safetensors")
    ar = read_safetensors(o.ref)
    if set(aq) != set(ar):
        print(f"adapter tensors differ: {sorted(set(aq) ^ set(ar))}  <-- FAIL")
        return 1
    for name in sorted(ar):
        rel = relative(aq[name], ar[name], a0[name])
        bad += report(f"{name}: |w - w_ref| / |w_ref - w_0| = {rel:.2e}", rel < o.weight_tol)
    w0 = read_safetensors(f"{o.base or o.init}/model.safetensors")
    wq = read_safetensors(f"{o.run}/model.safetensors")
    kinds = dtypes(f"{o.run}/model.safetensors")
    if set(wq) != set(w0):
        print(f"merged tensors differ from the base's: {sorted(set(wq) ^ set(w0))}  <-- FAIL")
        return 1
    scale = ac0["lora_alpha"] / ac0["r"]
    for name, kind in sorted((k, kinds[k]) for k in w0):
        if name in targets:
            merged = w0[name] + scale * ar[adapter_name(name, "B")] @ ar[adapter_name(name, "A")]
            if kind == "BF16":
                # one bf16 ulp of W_ref: the fp32 value rounded to either neighbour
                ulp = np.ldexp(1.0, np.frexp(merged)[1] - 8)
                worst = np.max(np.abs(wq[name] - merged) / (ulp + 1e-300))
                bad += report(f"{name} (merged, BF16): max |W - W_ref| / ulp(W_ref) = "
                              f"{worst:.3f}", worst < 1)
            else:
                rel = relative(wq[name], merged, w0[name])
                bad += report(f"{name} (merged, {kind}): |W - W_ref| / |W_ref - W_0| = "
                              f"{rel:.2e}", rel < o.weight_tol)
        else:
            base = bf16(w0[name]) if kind == "BF16" else w0[name]
            bits = lambda a: a.astype(np.float32).view(np.uint32)
            same = kind in ("F32", "BF16") and np.array_equal(bits(wq[name]), bits(base))
            bad += report(f"{name} (frozen, {kind}): {'equal to' if same else 'differs from'} "
                          f"the base's", same)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r, c = sub.add_parser("run"), sub.add_parser("compare")
    for p, names in ((r, ("init", "data", "out")), (c, ("log", "ref-log", "init", "ref", "run"))):
        for name in names:
            p.add_argument(f"--{name}", required=True)
    for p in r, c:
        p.add_argument("--base")
    train_ref.options(r)
    c.add_argument("--loss-rtol", type=float, default=1e-5)
    c.add_argument("--weight-tol", type=float, default=2e-3)
    o = ap.parse_args()
    if o.cmd == "compare":
        sys.exit(compare(o))
    train_ref.resolve(o)
    run(o)


if __name__ == "__main__":
    main()
