#!/usr/bin/python3
"""train_ref.py — a float64 PyTorch reference of `qwenchat train --sequential`.

Written from the rules of `qwenchat train --help` and the Hugging Face Qwen3 model
(transformers' modeling_qwen3.py), not from qwenchat's code: the forward pass in
float64 (embedding, RMSNorm, q/k/v projections, q/k RMSNorm per head, RoPE with
rotate-half, causal grouped-query softmax attention, SwiGLU MLP, residuals, final
norm, tied or untied lm_head), the mean cross-entropy over every target of a step's
micro-batches, gradients by autograd, torch.nn.utils.clip_grad_norm_, and
torch.optim.AdamW in float64 with weight decay on the 2-D tensors only, at the
learning rate of the documented schedule.

  train_ref.py run --init DIR --data FILE.u32 [options] --out REF.safetensors
      trains from DIR's config.json and F32 model.safetensors on the token ids of
      FILE.u32 with the sequential windows; prints one JSON object per step (step,
      loss, grad_norm, lr) and writes the final weights (F64).
  train_ref.py eval --init DIR --data FILE.u32 --ctx T
      prints the mean cross-entropy of DIR's weights over FILE.u32 cut into consecutive
      windows of T tokens (window k: inputs [kT, (k+1)T), targets one token later), every
      window whose targets fit: `--val`'s loss as the man page defines it.
  train_ref.py compare --log LOG --ref-log REF.jsonl --init DIR --ref REF.safetensors
                       --model MODEL.safetensors [--loss-rtol 1e-5] [--weight-tol 2e-3]
      checks qwenchat's train-log.jsonl against the reference's steps (loss and
      grad_norm within loss-rtol relative, lr equal to 1e-12) and every tensor of
      qwenchat's final model against the reference's update:
      ||w - w_ref|| / ||w_ref - w_0|| < weight-tol. Exit 1 on a mismatch.

Exit 77 when torch or numpy is missing (the test is skipped).
"""
import argparse
import json
import math
import struct
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e} (Debian: python3-torch, python3-numpy)", file=sys.stderr)
    sys.exit(77)

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16}


def read_safetensors(path):
    """name -> float64 array (F32, F64, F16 or BF16)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = data[8 + n + b:8 + n + end]
        if e["dtype"] == "BF16":
            a = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            a = a.view(np.float32)
        else:
            a = np.frombuffer(raw, dtype=np.dtype(DTYPES[e["dtype"]]).newbyteorder("<"))
        out[name] = a.astype(np.float64).reshape(e["shape"])
    return out


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f8").tobytes()
        header[name] = {"dtype": "F64", "shape": list(a.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def lr_at(s, o):
    """The schedule of `qwenchat train --help`, s = 0, 1, ..."""
    if s < o.warmup:
        return s / o.warmup * o.lr
    if s > o.cosine_steps:
        return o.min_lr
    if o.cosine_steps == o.warmup:
        return o.lr
    r = (s - o.warmup) / (o.cosine_steps - o.warmup)
    return o.min_lr + 0.5 * (1 + math.cos(math.pi * r)) * (o.lr - o.min_lr)


class Qwen3:
    """Qwen3ForCausalLM's forward in float64 on a dict of parameters."""

    def __init__(self, cfg, p):
        self.c, self.p = cfg, p
        self.L = cfg["num_hidden_layers"]
        self.H = cfg["num_attention_heads"]
        self.KV = cfg.get("num_key_value_heads", self.H)
        self.hd = cfg.get("head_dim", cfg["hidden_size"] // self.H)
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        self.theta = cfg.get("rope_theta", 10000.0)
        rs = cfg.get("rope_scaling")
        if rs and rs.get("rope_type", rs.get("type")) not in (None, "default"):
            raise SystemExit("train_ref.py: only the default RoPE")

    def norm(self, x, w):
        var = (x * x).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + self.eps) * w

    def rope(self, x, pos):
        """x (B, heads, T, hd) rotated at positions pos (B, T)."""
        hd = self.hd
        inv = 1.0 / (self.theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        f = pos.to(torch.float64)[:, :, None] * inv[None, None, :]
        emb = torch.cat([f, f], -1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]
        x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def loss_sum(self, ids, targets, pos=None):
        """pos (B, T): position_ids as Hugging Face's padding-free packing gives them, a
        document starting at each 0; a token attends to the tokens of its document up to
        itself. None: 0 .. T-1 in every row."""
        p, B, T = self.p, ids.shape[0], ids.shape[1]
        x = p["model.embed_tokens.weight"][ids]
        if pos is None:
            pos = torch.arange(T).expand(B, T)
        doc = torch.cumsum((pos == 0).to(torch.int64), 1)  # (B, T) document of each token
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        allowed = causal[None] & (doc[:, :, None] == doc[:, None, :])
        mask = torch.zeros(B, 1, T, T, dtype=torch.float64).masked_fill(~allowed[:, None], float("-inf"))
        for l in range(self.L):
            pre = f"model.layers.{l}."
            h = self.norm(x, p[pre + "input_layernorm.weight"])
            q = (h @ p[pre + "self_attn.q_proj.weight"].T).view(B, T, self.H, self.hd)
            k = (h @ p[pre + "self_attn.k_proj.weight"].T).view(B, T, self.KV, self.hd)
            v = (h @ p[pre + "self_attn.v_proj.weight"].T).view(B, T, self.KV, self.hd)
            q = self.norm(q, p[pre + "self_attn.q_norm.weight"]).transpose(1, 2)
            k = self.norm(k, p[pre + "self_attn.k_norm.weight"]).transpose(1, 2)
            v = v.transpose(1, 2)
            q, k = self.rope(q, pos), self.rope(k, pos)
            g = self.H // self.KV
            k = k.repeat_interleave(g, dim=1)
            v = v.repeat_interleave(g, dim=1)
            a = torch.softmax(q @ k.transpose(-1, -2) * self.hd ** -0.5 + mask, -1) @ v
            a = a.transpose(1, 2).reshape(B, T, self.H * self.hd)
            x = x + a @ p[pre + "self_attn.o_proj.weight"].T
            h = self.norm(x, p[pre + "post_attention_layernorm.weight"])
            m = torch.nn.functional.silu(h @ p[pre + "mlp.gate_proj.weight"].T) * (
                h @ p[pre + "mlp.up_proj.weight"].T)
            x = x + m @ p[pre + "mlp.down_proj.weight"].T
        x = self.norm(x, p["model.norm.weight"])
        head = p.get("lm_head.weight", p["model.embed_tokens.weight"])
        logits = x @ head.T
        return torch.nn.functional.cross_entropy(
            logits.reshape(B * T, -1), targets.reshape(-1), reduction="sum")


def sequential(stream, s, A, a, B, T):
    """Row b of micro-batch a of step s: window ((s*A + a)*B + b) mod W at k*T."""
    W = (len(stream) - 1) // T
    rows = [((s * A + a) * B + b) % W for b in range(B)]
    ids = np.stack([stream[k * T:k * T + T] for k in rows])
    tg = np.stack([stream[k * T + 1:k * T + T + 1] for k in rows])
    return torch.from_numpy(ids.astype(np.int64)), torch.from_numpy(tg.astype(np.int64))


def model_weights(init):
    """init's config and weights, as transformers loads them: a tied model's stray
    lm_head.weight is not used (the output projection is the embedding)."""
    cfg = json.load(open(f"{init}/config.json"))
    w = read_safetensors(f"{init}/model.safetensors")
    if cfg.get("tie_word_embeddings", False):
        w.pop("lm_head.weight", None)
    return cfg, w


def train(o, init, batch):
    """The steps from init's weights, batch(s, a) giving micro-batch a of step s as
    (inputs, targets) with -100 where a target is not scored, or (inputs, targets,
    position_ids); prints one JSON object a step and writes the final weights to o.out."""
    cfg, w0 = model_weights(init)
    params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in w0.items()}
    steps(o, Qwen3(cfg, params), params, batch)


def steps(o, model, params, batch):
    """The steps of train() on model, whose trained tensors are params (a dict by
    name, written to o.out at the end)."""
    decay = [t for t in params.values() if t.dim() == 2]
    no_decay = [t for t in params.values() if t.dim() != 2]
    groups = [{"params": decay, "weight_decay": o.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    opt = torch.optim.AdamW([g for g in groups if g["params"]],
                            lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps)
    for s in range(o.steps):
        opt.zero_grad(set_to_none=False)
        total, count = 0.0, 0
        for a in range(o.accum):
            ids, tg, *pos = batch(s, a)
            ls = model.loss_sum(ids, tg, *pos)  # cross_entropy ignores the targets -100
            ls.backward()
            total += ls.item()
            count += int((tg != -100).sum())
        for t in params.values():
            t.grad /= count  # the mean over every scored target of the step
        all_params = list(params.values())
        if o.clip > 0:
            norm = torch.nn.utils.clip_grad_norm_(all_params, o.clip).item()
        else:
            norm = torch.norm(torch.stack([t.grad.norm() for t in all_params])).item()
        lr = lr_at(s, o)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        print(json.dumps({"step": s + 1, "loss": total / count, "grad_norm": norm, "lr": lr}))
    write_safetensors(o.out, {k: v.detach().numpy() for k, v in params.items()})


def run(o):
    stream = np.fromfile(o.data, dtype="<u4").astype(np.int64)
    train(o, o.init, lambda s, a: sequential(stream, s, o.accum, a, o.batch, o.ctx))


def evaluate(o):
    stream = np.fromfile(o.data, dtype="<u4").astype(np.int64)
    cfg, w = model_weights(o.init)
    model = Qwen3(cfg, {k: torch.tensor(v, dtype=torch.float64) for k, v in w.items()})
    W = (len(stream) - 1) // o.ctx
    ids = torch.from_numpy(stream[:W * o.ctx].reshape(W, o.ctx))
    tg = torch.from_numpy(stream[1:W * o.ctx + 1].reshape(W, o.ctx))
    with torch.no_grad():
        print(repr(model.loss_sum(ids, tg).item() / (W * o.ctx)))


def compare(o):
    ours = [json.loads(l) for l in open(o.log) if l.strip()]
    ours = [r for r in ours if "loss" in r]
    ref = [json.loads(l) for l in open(o.ref_log) if l.strip()]
    bad = 0
    if len(ours) != len(ref):
        print(f"train-log has {len(ours)} steps, the reference {len(ref)}")
        return 1
    for a, b in zip(ours, ref):
        for key, tol in (("loss", o.loss_rtol), ("grad_norm", o.loss_rtol), ("lr", 1e-12)):
            err = abs(a[key] - b[key]) / max(abs(b[key]), 1e-30)
            ok = err <= tol or (b[key] == 0 and a[key] == 0)
            print(f"step {b['step']} {key}: {a[key]:.10g} vs {b[key]:.10g} (rel {err:.2e})"
                  f"{'' if ok else '  <-- FAIL'}")
            bad += not ok
    _, w0 = model_weights(o.init)
    wr = read_safetensors(o.ref)
    wq = read_safetensors(o.model)
    if set(wq) != set(wr):
        print(f"tensors differ: {sorted(set(wq) ^ set(wr))}")
        return 1
    for name in sorted(wr):
        upd = np.linalg.norm(wr[name] - w0[name])
        dev = np.linalg.norm(wq[name] - wr[name])
        rel = dev / upd if upd > 0 else (0.0 if dev == 0 else math.inf)
        ok = rel < o.weight_tol
        print(f"{name}: |w - w_ref| / |w_ref - w_0| = {rel:.2e}{'' if ok else '  <-- FAIL'}")
        bad += not ok
    return 1 if bad else 0


def options(r):
    """The rules' options of `run` (and of sft_ref.py's)."""
    for name, typ, default in (("ctx", int, 256), ("batch", int, 8), ("accum", int, 1),
                               ("steps", int, 3), ("lr", float, 6e-4), ("min-lr", float, None),
                               ("warmup", int, 0), ("cosine-steps", int, None),
                               ("weight-decay", float, 0.1), ("beta1", float, 0.9),
                               ("beta2", float, 0.95), ("eps", float, 1e-8), ("clip", float, 1.0)):
        r.add_argument(f"--{name}", type=typ, default=default)


def resolve(o):
    if o.min_lr is None:
        o.min_lr = o.lr / 10
    if o.cosine_steps is None:
        o.cosine_steps = o.steps
    torch.set_grad_enabled(True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--init", required=True)
    r.add_argument("--data", required=True)
    r.add_argument("--out", required=True)
    options(r)
    e = sub.add_parser("eval")
    for name in ("init", "data"):
        e.add_argument(f"--{name}", required=True)
    e.add_argument("--ctx", type=int, required=True)
    c = sub.add_parser("compare")
    for name in ("log", "ref-log", "init", "ref", "model"):
        c.add_argument(f"--{name}", required=True)
    c.add_argument("--loss-rtol", type=float, default=1e-5)
    c.add_argument("--weight-tol", type=float, default=2e-3)
    o = ap.parse_args()
    if o.cmd == "compare":
        sys.exit(compare(o))
    if o.cmd == "eval":
        evaluate(o)
        return
    resolve(o)
    run(o)


if __name__ == "__main__":
    main()
