#!/usr/bin/python3
# train-torch.py — what a PyTorch user gets training a small Qwen3, the side of
# BENCHMARKS.md's training tables that qwenchat is compared with: the same shape,
# optimizer (AdamW, clipping), schedule and thread count, float32 (or bf16 autocast),
# written the way a PyTorch 1.13 user writes a Qwen3 block (Debian's python3-torch has
# no scaled_dot_product_attention).
#
#   /usr/bin/python3 benchmarks/train-torch.py [--threads 2] [--layers 4] [--hidden 256]
#       [--heads 4] [--kv-heads 2] [--head-dim 64] [--inter 768] [--vocab 8192]
#       [--rope-theta 1e6] [--batch 8] [--ctx 256] [--steps 8] [--device cpu|cuda]
#       [--dtype f32|bf16] [--sdpa] [--lora R]
#       [--data TRAIN.u32 --val VAL.u32 --lr X --min-lr X --warmup N --eval-every N]
#
# Without --data: random tokens, tokens/s of each step and the best. With --data: the
# recipe of `qwenchat train --sequential` on the same token streams (the files qwenchat
# caches in DIR/train-state/): step s, row b reads the window at ((s B + b) T), wrapping;
# lr warm-up then cosine to --min-lr at the last step; the held-out loss is the mean over
# the validation stream cut in consecutive windows of T, printed every --eval-every
# steps and at the end. --lora R freezes the model and trains rank-R adapters of every
# linear layer of the blocks (alpha R), as PEFT's LoraConfig(target_modules=
# "all-linear") wraps them.
import argparse, math, time

import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser()
for name, default in [("threads", 2), ("layers", 4), ("hidden", 256), ("heads", 4),
                      ("kv-heads", 2), ("head-dim", 64), ("inter", 768), ("vocab", 8192),
                      ("batch", 8), ("ctx", 256), ("steps", 8)]:
    ap.add_argument("--" + name, type=int, default=default)
ap.add_argument("--device", default="cpu")
ap.add_argument("--dtype", default="f32")
ap.add_argument("--rope-theta", type=float, default=1e6)
ap.add_argument("--data")
ap.add_argument("--val")
ap.add_argument("--lr", type=float, default=1e-3)
ap.add_argument("--min-lr", type=float)
ap.add_argument("--warmup", type=int, default=0)
ap.add_argument("--eval-every", type=int, default=100)
# PyTorch 2's own fast path: scaled_dot_product_attention (flash attention on a GPU)
# and the fused AdamW, what a PyTorch 2 user on a GPU writes
ap.add_argument("--sdpa", action="store_true")
ap.add_argument("--lora", type=int, default=0)
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
dev = torch.device(a.device)


class RMSNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


def rope(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., h:], x[..., :h]), -1) * sin


class LoraLinear(nn.Module):
    """PEFT's lora.Linear: the frozen base layer plus (x A^T) B^T alpha / r."""

    def __init__(self, base, r):
        super().__init__()
        self.base, self.scale = base, 1.0  # alpha = r
        self.A = nn.Parameter(torch.empty(r, base.in_features))
        self.B = nn.Parameter(torch.zeros(base.out_features, r))
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))

    def forward(self, x):
        return self.base(x) + (x @ self.A.t()) @ self.B.t() * self.scale


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        D, hd = a.hidden, a.head_dim
        self.norm1, self.norm2 = RMSNorm(D), RMSNorm(D)
        self.q = nn.Linear(D, a.heads * hd, bias=False)
        self.k = nn.Linear(D, a.kv_heads * hd, bias=False)
        self.v = nn.Linear(D, a.kv_heads * hd, bias=False)
        self.o = nn.Linear(a.heads * hd, D, bias=False)
        self.qn, self.kn = RMSNorm(hd), RMSNorm(hd)
        self.gate = nn.Linear(D, a.inter, bias=False)
        self.up = nn.Linear(D, a.inter, bias=False)
        self.down = nn.Linear(a.inter, D, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        h = self.norm1(x)
        q = self.qn(self.q(h).view(B, T, a.heads, a.head_dim)).transpose(1, 2)
        k = self.kn(self.k(h).view(B, T, a.kv_heads, a.head_dim)).transpose(1, 2)
        v = self.v(h).view(B, T, a.kv_heads, a.head_dim).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        g = a.heads // a.kv_heads
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
        if a.sdpa:
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q @ k.transpose(-1, -2)) / math.sqrt(a.head_dim) + mask
            att = s.softmax(-1) @ v
        att = att.transpose(1, 2).reshape(B, T, -1)
        x = x + self.o(att)
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(a.vocab, a.hidden)
        self.blocks = nn.ModuleList(Block() for _ in range(a.layers))
        self.norm = RMSNorm(a.hidden)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)

    def forward(self, ids, cos, sin, mask):
        x = self.embed(ids)
        for b in self.blocks:
            x = b(x, cos, sin, mask)
        return self.norm(x) @ self.embed.weight.t()  # tied lm_head


dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
model = Model()
if a.lora:
    for p in model.parameters():
        p.requires_grad_(False)
    for b in model.blocks:
        for name in ("q", "k", "v", "o", "gate", "up", "down"):
            setattr(b, name, LoraLinear(getattr(b, name), a.lora))
model = model.to(dev)
trained = [p for p in model.parameters() if p.requires_grad]
inv = 1.0 / (a.rope_theta ** (torch.arange(0, a.head_dim, 2, device=dev).float() / a.head_dim))
ang = torch.arange(a.ctx, device=dev).float()[:, None] * inv[None]
cos, sin = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()
mask = torch.full((a.ctx, a.ctx), float("-inf"), device=dev).triu(1)
opt = torch.optim.AdamW(trained, lr=a.lr, betas=(0.9, 0.95), weight_decay=0.1,
                        **({"fused": True} if a.sdpa else {}))


def loss_of(ids):
    with torch.autocast(a.device, dtype=torch.bfloat16, enabled=dtype != torch.float32):
        logits = model(ids[:, :-1], cos, sin, mask)
        return F.cross_entropy(logits.float().reshape(-1, a.vocab), ids[:, 1:].reshape(-1))


def u32(path):
    import numpy as np
    return torch.from_numpy(np.fromfile(path, dtype="<u4").astype("int64")).to(dev)


if a.data:
    train, val = u32(a.data), u32(a.val)
    windows = (len(train) - 1) // a.ctx
    min_lr = a.min_lr if a.min_lr is not None else a.lr / 10

    def lr_at(s):
        if s < a.warmup:
            return s / a.warmup * a.lr
        if s > a.steps:
            return min_lr
        return min_lr + 0.5 * (1 + math.cos(math.pi * (s - a.warmup) / (a.steps - a.warmup))) * (a.lr - min_lr)

    def evaluate():
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            n = (len(val) - 1) // a.ctx
            for w0 in range(0, n, a.batch):
                rows = [val[w * a.ctx:w * a.ctx + a.ctx + 1] for w in range(w0, min(n, w0 + a.batch))]
                l = loss_of(torch.stack(rows))
                total += l.item() * len(rows) * a.ctx
                count += len(rows) * a.ctx
        model.train()
        return total / count

    t0 = time.perf_counter()
    for step in range(a.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        rows = [train[((step * a.batch + b) % windows) * a.ctx:][:a.ctx + 1] for b in range(a.batch)]
        loss = loss_of(torch.stack(rows))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        opt.step()
        if (step + 1) % a.eval_every == 0 or step + 1 == a.steps:
            print("step %d loss %.4f val_loss %.4f (%.0f s)" % (step + 1, loss.item(), evaluate(),
                                                               time.perf_counter() - t0), flush=True)
    raise SystemExit(0)

data = torch.randint(0, a.vocab, (a.batch, a.ctx + 1), device=dev)
best = 0.0
for step in range(a.steps):
    t0 = time.perf_counter()
    loss = loss_of(data)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(trained, 1.0)
    opt.step()
    if a.device == "cuda":
        torch.cuda.synchronize()
    tok_s = a.batch * a.ctx / (time.perf_counter() - t0)
    if step > 0:
        best = max(best, tok_s)
    print("step %d loss %.4f %.0f tok/s" % (step, loss.item(), tok_s), flush=True)
print("best %.0f tok/s (torch %s, %d threads)" % (best, torch.__version__, a.threads))
